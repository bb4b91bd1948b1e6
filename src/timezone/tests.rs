//! Tests of the job time zones: IANA names, Java's `GMT+hh:mm` offsets and what Java accepts of
//! them, the local zone, and instants read across DST changes.

use super::*;

fn at(s: &str) -> DateTime<Utc> {
    s.parse().unwrap()
}

#[test]
fn accepted_spellings_give_their_offset_and_display_as_written() {
    let winter = at("2025-01-15T00:00:00Z");
    let table: &[(&str, i32)] = &[
        ("UTC", 0),
        ("GMT", 0),
        ("Asia/Shanghai", 8 * 3600),
        ("America/New_York", -5 * 3600),
        ("Etc/GMT-8", 8 * 3600),
        ("GMT+08:00", 8 * 3600),
        ("GMT+8", 8 * 3600),
        ("GMT-5", -5 * 3600),
        ("GMT-05:30", -(5 * 3600 + 1800)),
        ("GMT+0530", 5 * 3600 + 1800),
        ("GMT+00:00", 0),
    ];
    for &(input, seconds) in table {
        let tz = JobTimeZone::parse(input).unwrap_or_else(|e| panic!("{input}: {e}"));
        assert_eq!(tz.offset_at(winter).local_minus_utc(), seconds, "{input}");
        assert_eq!(tz.to_string(), input);
        assert_eq!(tz.spelling(), Some(input));
    }
}

#[test]
fn refused_spellings_name_the_input_and_never_panic_on_multibyte_characters() {
    let table: &[(&str, &str)] = &[
        ("", "neither"),
        ("Mars/Olympus", "neither"),
        ("asia/shanghai", "neither"),
        ("UTC8", "neither"),
        ("GMT+", "neither"),
        ("GMT+123", "neither"),
        ("GMT+8:0", "neither"),
        ("GMT+ab", "neither"),
        ("GMT+1€", "neither"),
        ("GMT-€€", "neither"),
        ("GMT+€:00", "neither"),
        ("GMT+24", "out of range"),
        ("GMT+08:60", "out of range"),
    ];
    for &(input, problem) in table {
        let err = JobTimeZone::parse(input).expect_err(input).to_string();
        assert!(err.contains(&format!("{input:?}")), "{err}");
        assert!(err.contains(problem), "{input}: {err}");
    }
}

#[test]
fn fixed_zones_written_other_ways_get_their_java_spelling() {
    let table: &[(&str, Option<&str>)] = &[
        ("UTC", Some("GMT")),
        ("Etc/UTC", Some("GMT")),
        ("Z", Some("GMT")),
        ("Zulu", Some("GMT")),
        ("Etc/GMT", Some("GMT")),
        ("+08:00", Some("GMT+08:00")),
        ("+8", Some("GMT+08:00")),
        ("-0530", Some("GMT-05:30")),
        ("+00:00", Some("GMT")),
        ("UTC+8", Some("GMT+08:00")),
        ("UTC-03:30", Some("GMT-03:30")),
        ("Etc/GMT-8", Some("GMT+08:00")),
        ("Etc/GMT+5", Some("GMT-05:00")),
        // Already Java's, or with daylight saving, or unknown: nothing to rewrite.
        ("GMT", None),
        ("GMT+8", None),
        ("GMT+08:00", None),
        ("Europe/Berlin", None),
        ("Asia/Shanghai", None),
        ("America/New_York", None),
        ("+24:00", None),
        ("Etc/GMT-15", None),
        ("Etc/GMTx", None),
        ("utc", None),
        ("", None),
        ("+€", None),
    ];
    for &(input, java) in table {
        assert_eq!(java_spelling(input).as_deref(), java, "{input}");
        if let Some(java) = java {
            let moment = at("2025-07-01T00:00:00Z");
            let as_written = JobTimeZone::parse(input).unwrap_or_else(|e| panic!("{e}"));
            let as_java = JobTimeZone::parse(java).unwrap();
            assert_eq!(
                as_written.offset_at(moment),
                as_java.offset_at(moment),
                "{input}"
            );
            assert_eq!(as_written.to_string(), input);
        }
    }
    assert!(JobTimeZone::parse("+24:00")
        .unwrap_err()
        .to_string()
        .contains("out of range"));
}

#[test]
fn an_absent_time_zone_is_the_local_zone() {
    let tz = JobTimeZone::from_config(None).unwrap();
    assert!(tz.is_local());
    assert_eq!(tz.spelling(), None);
    assert_eq!(tz.to_string(), "local");
    let now = at("2025-06-01T12:00:00Z");
    assert_eq!(
        tz.offset_at(now),
        Local.offset_from_utc_datetime(&now.naive_utc()).fix()
    );
}

#[test]
fn wall_clock_follows_daylight_saving_time() {
    let berlin = JobTimeZone::parse("Europe/Berlin").unwrap();
    let summer = at("2025-07-01T10:00:00Z");
    assert_eq!(berlin.wall_clock(summer).to_string(), "2025-07-01 12:00:00");
    let winter = at("2025-01-01T10:00:00Z");
    assert_eq!(berlin.wall_clock(winter).to_string(), "2025-01-01 11:00:00");
    assert_eq!(
        berlin.to_fixed(winter).to_rfc3339(),
        "2025-01-01T11:00:00+01:00"
    );
}
