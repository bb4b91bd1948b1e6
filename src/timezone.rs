//! The time zone a job's cron expression is read in: an IANA name, one of Java's fixed `GMT+hh:mm`
//! offsets, or the process's local zone.
//!
//! ElasticJob passes `timeZone` to Java's `TimeZone.getTimeZone`, so configs in the wild hold both
//! IANA names (`Asia/Shanghai`, `UTC`) and Java's custom ids (`GMT+08:00`, `GMT-5`, `GMT+0530`).
//! Java silently falls back to GMT for a name it does not know; we refuse it instead, because a job
//! that quietly fires eight hours off is worse than one that does not start.
//!
//! People also write fixed zones in other spellings: `UTC`, `Etc/UTC`, `Z`, `+08:00`, `UTC+8`,
//! `Etc/GMT-8`. [`java_spelling`] gives each its Java spelling (`GMT`, `GMT+08:00`), which every
//! config writer stores instead (a Java instance loads nothing else), and [`JobTimeZone::parse`]
//! reads them too. A zone with daylight saving has no Java spelling: it stays an IANA name.
//!
//! An absent `timeZone` means the process's local zone, as in Java (`TimeZone.getDefault()`). It is
//! [`chrono::Local`]: read from `TZ`, else `/etc/localtime`, so two hosts with different local
//! zones fire the same job at different instants. Set `timeZone` for jobs that run on several hosts.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, FixedOffset, Local, NaiveDateTime, Offset, TimeZone, Utc};
use chrono_tz::Tz;

/// Why a time zone spelling was refused. Each variant names the input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimeZoneError {
    /// Neither an IANA name nor a `GMT` offset.
    #[error(
        "time zone {input:?} is neither an IANA name (Asia/Shanghai, UTC) \
         nor a Java GMT offset (GMT+08:00, GMT-5, GMT+0530)"
    )]
    Unknown {
        /// The refused spelling.
        input: String,
    },
    /// A `GMT` offset whose hours exceed 23 or whose minutes exceed 59 (Java's limits).
    #[error("time zone {input:?}: offset out of range (hours 0-23, minutes 00-59)")]
    OffsetOutOfRange {
        /// The refused spelling.
        input: String,
    },
}

/// Which clock a zone reads; kept apart from the spelling so that `Display` can give the input back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Zone {
    /// An IANA zone with its daylight-saving rules.
    Iana(Tz),
    /// A fixed offset from UTC (Java's `GMT+hh:mm`).
    Fixed(FixedOffset),
    /// The process's local zone, [`chrono::Local`].
    Local,
}

/// The time zone of one job.
///
/// ```
/// use shardcron::timezone::JobTimeZone;
/// let tz = JobTimeZone::parse("GMT+08:00").unwrap();
/// assert_eq!(tz.to_string(), "GMT+08:00");
/// assert!(JobTimeZone::parse("Mars/Olympus").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobTimeZone {
    /// The configured spelling, `None` for the local zone (no `timeZone` in the config).
    spelling: Option<String>,
    zone: Zone,
}

impl JobTimeZone {
    /// Parses an IANA name (`Asia/Shanghai`, `UTC`, `Etc/GMT-8`) or a Java custom id (`GMT`,
    /// `GMT+8`, `GMT-05`, `GMT+08:00`, `GMT+0800`). Names are case-sensitive, as in Java.
    pub fn parse(input: &str) -> Result<Self, TimeZoneError> {
        let out_of_range = || TimeZoneError::OffsetOutOfRange {
            input: input.to_owned(),
        };
        let zone = match parse_java_gmt_offset(input) {
            Some(offset) => Zone::Fixed(offset.ok_or_else(out_of_range)?),
            None => match Tz::from_str(input) {
                Ok(tz) => Zone::Iana(tz),
                // `Z`, `+08:00`, `UTC+8`: read as the Java spelling they stand for.
                Err(_) => match bare_offset(input) {
                    Some(offset) => Zone::Fixed(offset.ok_or_else(out_of_range)?),
                    None if input == "Z" => Zone::Fixed(Utc.fix()),
                    None => {
                        return Err(TimeZoneError::Unknown {
                            input: input.to_owned(),
                        })
                    }
                },
            },
        };
        Ok(Self {
            spelling: Some(input.to_owned()),
            zone,
        })
    }

    /// The zone of a config's `timeZone` field: absent means the process's local zone.
    pub fn from_config(time_zone: Option<&str>) -> Result<Self, TimeZoneError> {
        time_zone.map_or_else(|| Ok(Self::local()), Self::parse)
    }

    /// The process's local zone (see the module docs for what that means on a host).
    pub fn local() -> Self {
        Self {
            spelling: None,
            zone: Zone::Local,
        }
    }

    /// UTC, spelled `UTC`: the zone tests and multi-host deployments should use.
    pub fn utc() -> Self {
        Self {
            spelling: Some("UTC".to_owned()),
            zone: Zone::Iana(Tz::UTC),
        }
    }

    /// The configured spelling, to write back as `timeZone`; `None` for the local zone.
    pub fn spelling(&self) -> Option<&str> {
        self.spelling.as_deref()
    }

    /// Whether this is the process's local zone (no `timeZone` configured).
    pub fn is_local(&self) -> bool {
        self.zone == Zone::Local
    }

    /// The offset from UTC in force at `instant`.
    pub fn offset_at(&self, instant: DateTime<Utc>) -> FixedOffset {
        match self.zone {
            Zone::Iana(tz) => tz.offset_from_utc_datetime(&instant.naive_utc()).fix(),
            Zone::Fixed(offset) => offset,
            Zone::Local => Local.offset_from_utc_datetime(&instant.naive_utc()).fix(),
        }
    }

    /// The wall-clock reading of `instant` in this zone.
    pub fn wall_clock(&self, instant: DateTime<Utc>) -> NaiveDateTime {
        instant.naive_utc() + self.offset_at(instant)
    }

    /// `instant` carrying this zone's offset, for logs and messages that show local time.
    pub fn to_fixed(&self, instant: DateTime<Utc>) -> DateTime<FixedOffset> {
        instant.with_timezone(&self.offset_at(instant))
    }

    /// The clock behind the zone, for the cron search (which is generic over chrono zones).
    pub(crate) fn zone(&self) -> Zone {
        self.zone
    }
}

impl fmt::Display for JobTimeZone {
    /// The configured spelling, or `local` when none was configured.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.spelling.as_deref().unwrap_or("local"))
    }
}

impl FromStr for JobTimeZone {
    type Err = TimeZoneError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// The names of UTC that Java's ElasticJob does not load (it loads `GMT` and `GMT0`).
const UTC_NAMES: [&str; 14] = [
    "UTC",
    "Etc/UTC",
    "Etc/GMT",
    "Etc/GMT0",
    "Etc/GMT+0",
    "Etc/GMT-0",
    "Etc/UCT",
    "UCT",
    "Universal",
    "Etc/Universal",
    "Zulu",
    "Etc/Zulu",
    "Greenwich",
    "Z",
];

/// The Java spelling (`GMT`, `GMT+08:00`) of a fixed zone written another way: a name of UTC
/// (`UTC`, `Etc/UTC`, `Z`), an offset (`+08:00`, `-5`, `+0530`, `UTC+8`) or an `Etc/GMT±h` zone
/// (whose sign is POSIX's, the reverse of the offset). `None` for a spelling Java already loads,
/// a zone with daylight saving (it has no fixed offset to write) and anything unknown.
///
/// ```
/// use shardcron::timezone::java_spelling;
/// assert_eq!(java_spelling("UTC").as_deref(), Some("GMT"));
/// assert_eq!(java_spelling("+08:00").as_deref(), Some("GMT+08:00"));
/// assert_eq!(java_spelling("Etc/GMT+5").as_deref(), Some("GMT-05:00"));
/// assert_eq!(java_spelling("Europe/Berlin"), None);
/// assert_eq!(java_spelling("GMT+8"), None); // already Java's
/// ```
pub fn java_spelling(input: &str) -> Option<String> {
    if UTC_NAMES.contains(&input) {
        return Some("GMT".to_owned());
    }
    let offset = match input.strip_prefix("Etc/GMT") {
        // POSIX signs: `Etc/GMT-8` is eight hours east of Greenwich.
        Some(posix) => {
            let hours: i32 = posix
                .parse()
                .ok()
                .filter(|h: &i32| (-14..=12).contains(h))?;
            if !posix.starts_with(['+', '-']) {
                return None;
            }
            FixedOffset::west_opt(hours * 3600)?
        }
        None => bare_offset(input)??,
    };
    Some(gmt_spelling(offset))
}

/// `GMT`, or `GMT` sign `hh:mm` (Java's normalised custom id).
fn gmt_spelling(offset: FixedOffset) -> String {
    let seconds = offset.local_minus_utc();
    if seconds == 0 {
        return "GMT".to_owned();
    }
    let sign = if seconds < 0 { '-' } else { '+' };
    let minutes = seconds.unsigned_abs() / 60;
    format!("GMT{sign}{:02}:{:02}", minutes / 60, minutes % 60)
}

/// An offset written without `GMT`: `+08:00`, `-5`, `+0530`, or after `UTC` (`UTC+8`).
/// `None`: not of that shape; `Some(None)`: of that shape but out of range.
fn bare_offset(input: &str) -> Option<Option<FixedOffset>> {
    let rest = input.strip_prefix("UTC").unwrap_or(input);
    if !rest.starts_with(['+', '-']) {
        return None;
    }
    parse_java_gmt_offset(&format!("GMT{rest}"))
}

/// Java's custom time zone ids: `GMT` then a sign, then `h`, `hh`, `hh:mm` or `hhmm`.
///
/// `None`: not of that shape (try IANA). `Some(None)`: of that shape but out of range.
fn parse_java_gmt_offset(input: &str) -> Option<Option<FixedOffset>> {
    let rest = input.strip_prefix("GMT")?;
    let (sign, digits) = match rest.as_bytes().first()? {
        b'+' => (1, &rest[1..]),
        b'-' => (-1, &rest[1..]),
        _ => return None,
    };
    // Only ASCII digits and one ':' from here on, so that byte positions are char boundaries
    // (`GMT+1€` once split inside the euro sign and panicked).
    if !digits.bytes().all(|b| b.is_ascii_digit() || b == b':') {
        return None;
    }
    let (hours, minutes) = match digits.split_once(':') {
        Some((h, m)) if (1..=2).contains(&h.len()) && m.len() == 2 => (h, m),
        Some(_) => return None,
        None if (1..=2).contains(&digits.len()) => (digits, "0"),
        None if digits.len() == 4 => digits.split_at(2),
        None => return None,
    };
    if !hours
        .bytes()
        .chain(minutes.bytes())
        .all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let (hours, minutes): (i32, i32) = (hours.parse().ok()?, minutes.parse().ok()?);
    if hours > 23 || minutes > 59 {
        return Some(None);
    }
    Some(FixedOffset::east_opt(sign * (hours * 3600 + minutes * 60)))
}

#[cfg(test)]
mod tests;
