//! How long a job's history is kept: the `shardcron.history.retention` prop ([`RETENTION_PROP`])
//! and its value ([`RetentionWindow`]), parsed here so config validation refuses a bad window with
//! the prop's name; the history adapter purges by it.

use chrono::{DateTime, Utc};
use serde::Serialize;

/// The `props` key of a job's own window (`30d`, `12h`, `90m`).
pub const RETENTION_PROP: &str = "shardcron.history.retention";

/// A retention window that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "history retention {value:?}: expected a window such as 30d, 12h, 90m or 3600s \
     (--history-retention, props shardcron.history.retention)"
)]
pub struct RetentionError {
    /// The value given.
    pub value: String,
}

/// How long a job's history is kept: a positive whole number of seconds, minutes, hours or days.
///
/// ```
/// use shardcron::history::RetentionWindow;
/// let w = RetentionWindow::parse("30d").unwrap();
/// assert_eq!(w.seconds(), 30 * 86_400);
/// assert_eq!(w.to_string(), "30d");
/// assert!(RetentionWindow::parse("0d").is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct RetentionWindow(i64);

impl RetentionWindow {
    /// Parses `90s`, `15m`, `12h`, `30d`; refuses zero, negative and unitless values.
    pub fn parse(value: &str) -> Result<Self, RetentionError> {
        let invalid = || RetentionError {
            value: value.to_owned(),
        };
        let age = parse_age(value.trim()).ok_or_else(invalid)?;
        Some(age.num_seconds())
            .filter(|s| *s > 0)
            .map(Self)
            .ok_or_else(invalid)
    }

    /// A window of `seconds` (at least one).
    pub fn from_seconds(seconds: i64) -> Self {
        Self(seconds.max(1))
    }

    /// The window in seconds.
    pub fn seconds(self) -> i64 {
        self.0
    }

    /// The first instant still kept when it is `now`.
    pub fn cutoff(self, now: DateTime<Utc>) -> DateTime<Utc> {
        now.checked_sub_signed(chrono::Duration::seconds(self.0))
            .unwrap_or(DateTime::<Utc>::MIN_UTC)
    }
}

impl std::fmt::Display for RetentionWindow {
    /// The largest unit that divides the window: `30d`, `36h`, `90m`, `45s`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.0;
        match () {
            () if s % 86_400 == 0 => write!(f, "{}d", s / 86_400),
            () if s % 3_600 == 0 => write!(f, "{}h", s / 3_600),
            () if s % 60 == 0 => write!(f, "{}m", s / 60),
            () => write!(f, "{s}s"),
        }
    }
}

/// An age or a window: a whole number and a unit, `90s`, `15m`, `2h` or `7d`; `None` otherwise
/// (negative or overflowing included).
pub fn parse_age(v: &str) -> Option<chrono::Duration> {
    // The unit is the last character, which may be several bytes (`5€` once panicked here).
    let unit_at = v.char_indices().last()?.0;
    let (number, unit) = v.split_at(unit_at);
    let n: i64 = number.parse().ok()?;
    match unit {
        "s" => chrono::Duration::try_seconds(n),
        "m" => chrono::Duration::try_minutes(n),
        "h" => chrono::Duration::try_hours(n),
        "d" => chrono::Duration::try_days(n),
        _ => None,
    }
    .filter(|d| *d >= chrono::Duration::zero())
}
