//! Durations in job `props`: a whole number and one unit, `500ms`, `2s`, `5m`, `1h`, as the run
//! policies ([`super::RunPolicy`]) write them.

use std::time::Duration;

/// The longest duration a policy takes (30 days): longer is a typo, not a plan.
pub const MAX_DURATION: Duration = Duration::from_secs(30 * 24 * 3600);

/// Reads a duration written `500ms`, `2s`, `5m` or `1h` (a whole number and one unit), at most
/// [`MAX_DURATION`].
///
/// ```
/// use std::time::Duration;
/// use shardcron::config::parse_duration;
/// assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
/// assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
/// assert!(parse_duration("5").is_err());
/// ```
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    let (number, unit) = text.split_at(digits);
    let millis_per = match unit {
        "ms" => 1,
        "s" => 1000,
        "m" => 60_000,
        "h" => 3_600_000,
        _ => {
            return Err(format!(
                "{text:?} is not a duration: a whole number and ms, s, m or h (500ms, 2s, 5m, 1h)"
            ))
        }
    };
    let max = MAX_DURATION.as_millis() as u64;
    number
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(millis_per))
        .filter(|ms| *ms <= max)
        .map(Duration::from_millis)
        .ok_or_else(|| format!("{text:?} is not a duration of at most 720h"))
}

/// Writes a duration as [`parse_duration`] reads it, in the largest unit that is exact.
///
/// ```
/// use std::time::Duration;
/// use shardcron::config::format_duration;
/// assert_eq!(format_duration(Duration::from_secs(120)), "2m");
/// assert_eq!(format_duration(Duration::from_millis(1500)), "1500ms");
/// ```
pub fn format_duration(d: Duration) -> String {
    let ms = d.as_millis();
    match ms {
        0 => "0s".into(),
        ms if ms % 3_600_000 == 0 => format!("{}h", ms / 3_600_000),
        ms if ms % 60_000 == 0 => format!("{}m", ms / 60_000),
        ms if ms % 1000 == 0 => format!("{}s", ms / 1000),
        ms => format!("{ms}ms"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_in_four_units_and_write_back_the_same() {
        let cases = [
            ("500ms", Some(500)),
            ("2s", Some(2000)),
            ("5m", Some(300_000)),
            ("1h", Some(3_600_000)),
            ("0s", Some(0)),
            ("720h", Some(2_592_000_000)),
            ("721h", None),
            ("5", None),
            ("-1s", None),
            ("1.5s", None),
            ("2 s", None),
            ("1d", None),
            ("", None),
            ("99999999999999999999h", None),
        ];
        for (text, millis) in cases {
            let got = parse_duration(text).ok();
            assert_eq!(got, millis.map(Duration::from_millis), "{text:?}");
            if let Some(d) = got {
                assert_eq!(parse_duration(&format_duration(d)), Ok(d), "{text:?}");
            }
        }
        assert_eq!(format_duration(Duration::from_millis(60_000)), "1m");
    }
}
