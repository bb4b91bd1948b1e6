//! What a command line needs to show the history (`history NAME [--item N] [--since T]
//! [--failed]`): where the history lives, parsing the flags, and a table to print. Pure.

use std::path::PathBuf;

use chrono::{DateTime, NaiveDate, Utc};

use super::record::ExecutionRecord;
use super::{HistoryError, DEFAULT_SQLITE_FILE};
use crate::config::retention::parse_age;
use crate::types::ShardItem;

/// Where a history lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HistoryTarget {
    /// A SQLite file.
    Sqlite(PathBuf),
    /// A PostgreSQL URL.
    Postgres(String),
}

impl HistoryTarget {
    /// `postgres://…` or `postgresql://…` is PostgreSQL; `sqlite://PATH`, `sqlite:PATH` or a plain
    /// path is a SQLite file; an empty string is [`DEFAULT_SQLITE_FILE`].
    ///
    /// ```
    /// use shardcron::history::HistoryTarget;
    /// assert_eq!(
    ///     HistoryTarget::parse("/var/lib/shardcron/history.db"),
    ///     HistoryTarget::Sqlite("/var/lib/shardcron/history.db".into())
    /// );
    /// assert!(matches!(HistoryTarget::parse("postgres://db/jobs"), HistoryTarget::Postgres(_)));
    /// ```
    pub fn parse(target: &str) -> Self {
        let target = target.trim();
        if target.starts_with("postgres://") || target.starts_with("postgresql://") {
            return Self::Postgres(target.to_owned());
        }
        let path = target
            .strip_prefix("sqlite://")
            .or_else(|| target.strip_prefix("sqlite:"))
            .unwrap_or(target);
        if path.is_empty() {
            Self::Sqlite(PathBuf::from(DEFAULT_SQLITE_FILE))
        } else {
            Self::Sqlite(PathBuf::from(path))
        }
    }
}

/// Why a history cannot be read from where the command line points.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HistoryLookupError {
    /// The SQLite file does not exist (reading never creates one).
    #[error(
        "no history database at {path}: it does not exist (nodes started with a history create it; \
         give --db PATH or a postgres:// URL)"
    )]
    NoDatabase {
        /// The file looked for.
        path: PathBuf,
    },
    /// The SQLite file's folder does not exist.
    #[error("no history database at {path}: folder {folder} does not exist")]
    NoFolder {
        /// The file looked for.
        path: PathBuf,
        /// Its missing folder.
        folder: PathBuf,
    },
}

/// The environment variable a history target may come from instead of a flag, so that a
/// PostgreSQL URL with its password stays out of the process's arguments.
pub const HISTORY_ENV: &str = "SHARDCRON_HISTORY";

/// A history target given as a command-line flag: refused when it carries a password (the
/// refusal shows the URL redacted), which every
/// user of the machine would see in `ps`. The password goes in `PGPASSWORD` or `~/.pgpass` (the
/// driver reads both when the URL has none), or the whole URL in [`HISTORY_ENV`].
///
/// ```
/// use shardcron::history::history_flag;
/// assert!(history_flag("postgres://app@db/jobs").is_ok());
/// let refused = history_flag("postgres://app:hunter2@db/jobs").unwrap_err();
/// assert!(refused.contains("PGPASSWORD") && !refused.contains("hunter2"));
/// ```
pub fn history_flag(value: &str) -> Result<String, String> {
    if let HistoryTarget::Postgres(url) = HistoryTarget::parse(value) {
        let password = reqwest::Url::parse(&url)
            .map(|u| u.password().is_some())
            // Not a URL: a key=value string may name a password too.
            .unwrap_or_else(|_| url.contains("password"));
        if password {
            return Err(format!(
                "{}: a password in a flag is visible to every user in `ps`; leave it out and set \
                 PGPASSWORD (or ~/.pgpass), or give the whole URL in {HISTORY_ENV}",
                crate::secret::redact_url(&url)
            ));
        }
    }
    Ok(value.to_owned())
}

impl HistoryTarget {
    /// Checks that a history to *read* exists: a SQLite file must already be there (opening one
    /// for reading would otherwise create an empty database and show an empty table).
    /// PostgreSQL targets are checked by connecting.
    pub fn require_existing(&self) -> Result<(), HistoryLookupError> {
        let Self::Sqlite(path) = self else {
            return Ok(());
        };
        if path.is_file() {
            return Ok(());
        }
        match path.parent().filter(|p| !p.as_os_str().is_empty()) {
            Some(folder) if !folder.is_dir() => Err(HistoryLookupError::NoFolder {
                path: path.clone(),
                folder: folder.to_owned(),
            }),
            _ => Err(HistoryLookupError::NoDatabase { path: path.clone() }),
        }
    }
}

/// Parses `--since`: an RFC 3339 instant (`2026-03-02T10:00:00Z`), a UTC date (`2026-03-02`,
/// midnight), or an age before `now` (`90s`, `15m`, `2h`, `7d`).
///
/// ```
/// use chrono::{TimeZone, Utc};
/// use shardcron::history::parse_since;
/// let now = Utc.with_ymd_and_hms(2026, 3, 2, 10, 0, 0).unwrap();
/// assert_eq!(parse_since("2h", now).unwrap(), Utc.with_ymd_and_hms(2026, 3, 2, 8, 0, 0).unwrap());
/// ```
pub fn parse_since(value: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>, HistoryError> {
    let invalid = || HistoryError::InvalidSince {
        value: value.to_owned(),
    };
    let v = value.trim();
    if let Ok(at) = DateTime::parse_from_rfc3339(v) {
        return Ok(at.to_utc());
    }
    if let Ok(day) = NaiveDate::parse_from_str(v, "%Y-%m-%d") {
        return Ok(day.and_hms_opt(0, 0, 0).ok_or_else(invalid)?.and_utc());
    }
    let age = parse_age(v).ok_or_else(invalid)?;
    now.checked_sub_signed(age).ok_or_else(invalid)
}

/// Parses `--item`.
pub fn parse_item(value: &str) -> Result<ShardItem, HistoryError> {
    value
        .trim()
        .parse()
        .map(ShardItem)
        .map_err(|_| HistoryError::InvalidItem {
            value: value.to_owned(),
        })
}

/// The records as an aligned text table, newest first as given: start, duration, item, attempt
/// (`-` for a row written without one), source, host, result (`OK`, `FAILED`, `TIMEOUT`,
/// `CANCELLED` or `RUNNING`) and failure cause.
pub fn render_executions(records: &[ExecutionRecord]) -> String {
    let header = [
        "START (UTC)",
        "TOOK",
        "ITEM",
        "ATTEMPT",
        "SOURCE",
        "HOST",
        "RESULT",
        "CAUSE",
    ];
    let rows: Vec<[String; 8]> = records
        .iter()
        .map(|r| {
            let took = match r.complete_time {
                Some(end) => format!("{}ms", (end - r.start_time).num_milliseconds()),
                None => "-".to_owned(),
            };
            let result = match r.status() {
                "success" => "OK".to_owned(),
                other => other.to_uppercase(),
            };
            [
                r.start_time.format("%Y-%m-%d %H:%M:%S%.3f").to_string(),
                took,
                r.sharding_item.to_string(),
                r.attempt.map_or_else(|| "-".to_owned(), |a| a.to_string()),
                r.execution_source.clone(),
                format!("{} ({})", r.hostname, r.ip),
                result,
                // One line per record: a multi-line cause would break the table.
                r.failure_cause
                    .as_deref()
                    .unwrap_or("")
                    .replace(['\n', '\r'], " "),
            ]
        })
        .collect();
    render_table(&header, &rows)
}

/// Rows under a header as left-aligned columns two spaces apart, one line each (trailing spaces
/// trimmed): the text tables of `shardcronctl history` and `stats`.
pub(super) fn render_table<R: AsRef<[String]>>(header: &[&str], rows: &[R]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row.as_ref()) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        padded.join("  ").trim_end().to_owned() + "\n"
    };
    let mut out = line(header.to_vec());
    for row in rows {
        out += &line(row.as_ref().iter().map(String::as_str).collect());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 3, 2, 10, 0, 0).unwrap()
    }

    #[test]
    fn since_takes_an_instant_a_date_or_an_age() {
        let table = [
            (
                "2026-03-01T08:30:00Z",
                Utc.with_ymd_and_hms(2026, 3, 1, 8, 30, 0),
            ),
            (
                "2026-03-01T10:30:00+02:00",
                Utc.with_ymd_and_hms(2026, 3, 1, 8, 30, 0),
            ),
            ("2026-03-01", Utc.with_ymd_and_hms(2026, 3, 1, 0, 0, 0)),
            ("90s", Utc.with_ymd_and_hms(2026, 3, 2, 9, 58, 30)),
            ("15m", Utc.with_ymd_and_hms(2026, 3, 2, 9, 45, 0)),
            ("7d", Utc.with_ymd_and_hms(2026, 2, 23, 10, 0, 0)),
        ];
        for (input, expected) in table {
            assert_eq!(
                parse_since(input, now()).unwrap(),
                expected.unwrap(),
                "{input}"
            );
        }
    }

    #[test]
    fn a_bad_since_or_item_is_refused_naming_the_flag() {
        for bad in ["", "yesterday", "5w", "-5m", "h"] {
            let err = parse_since(bad, now()).unwrap_err();
            assert!(err.to_string().starts_with("--since"), "{bad}: {err}");
        }
        assert!(parse_item("x")
            .unwrap_err()
            .to_string()
            .starts_with("--item"));
        assert_eq!(parse_item(" 3 ").unwrap(), ShardItem(3));
    }

    #[test]
    fn reading_a_missing_history_database_is_refused_without_creating_one() {
        let dir = tempfile::tempdir().unwrap();
        let missing_folder = dir.path().join("missing/dir/x.db");
        let err = HistoryTarget::Sqlite(missing_folder.clone())
            .require_existing()
            .unwrap_err();
        assert!(err.to_string().contains("does not exist"), "{err}");
        assert!(matches!(err, HistoryLookupError::NoFolder { .. }));
        let missing_file = dir.path().join("x.db");
        let err = HistoryTarget::Sqlite(missing_file.clone())
            .require_existing()
            .unwrap_err();
        assert_eq!(
            err,
            HistoryLookupError::NoDatabase {
                path: missing_file.clone()
            }
        );
        assert!(
            !missing_file.exists() && !missing_folder.exists(),
            "nothing created"
        );
        std::fs::write(&missing_file, b"").unwrap();
        assert_eq!(
            HistoryTarget::Sqlite(missing_file).require_existing(),
            Ok(())
        );
        assert_eq!(
            HistoryTarget::parse("postgres://db/jobs").require_existing(),
            Ok(())
        );
    }

    #[test]
    fn a_since_ending_in_a_multibyte_character_is_refused_not_a_panic() {
        for value in ["5€", "€", "1é", "2h€"] {
            let err = parse_since(value, now()).unwrap_err();
            assert!(err.to_string().contains(value), "{err}");
        }
    }

    #[test]
    fn targets_are_told_apart_by_their_scheme() {
        assert_eq!(
            HistoryTarget::parse(""),
            HistoryTarget::Sqlite(DEFAULT_SQLITE_FILE.into())
        );
        assert_eq!(
            HistoryTarget::parse("sqlite:///tmp/h.db"),
            HistoryTarget::Sqlite("/tmp/h.db".into())
        );
        assert_eq!(
            HistoryTarget::parse("postgresql://u@db/jobs"),
            HistoryTarget::Postgres("postgresql://u@db/jobs".into())
        );
    }

    #[test]
    fn the_table_shows_one_aligned_line_per_record() {
        let record = |item, cause: Option<&str>, attempt| ExecutionRecord {
            id: format!("t@-@{item}"),
            job_name: "orders".into(),
            task_id: "t".into(),
            hostname: "h1".into(),
            ip: "10.0.0.1".into(),
            sharding_item: item,
            execution_source: "NORMAL_TRIGGER".into(),
            failure_cause: cause.map(str::to_owned),
            is_success: cause.is_none(),
            start_time: now(),
            complete_time: Some(now() + chrono::Duration::milliseconds(1500)),
            scheduled_time: None,
            attempt,
            workflow_run: None,
            outcome: None,
        };
        let mut timed_out = record(2, Some("timed out after 1s"), Some(3));
        timed_out.outcome = Some("timeout".into());
        let table = render_executions(&[
            timed_out,
            record(1, Some("boom\nagain"), Some(1)),
            record(0, None, None),
        ]);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 4);
        assert!(lines[1].ends_with("TIMEOUT  timed out after 1s"), "{table}");
        assert!(lines[2].contains("1500ms") && lines[2].ends_with("FAILED   boom again"));
        assert!(lines[3].ends_with("OK"));
        assert_eq!(lines[0].find("ITEM"), lines[2].find("1  "));
        assert_eq!(lines[0].find("ATTEMPT"), lines[1].find("3  "), "{table}");
        assert_eq!(lines[0].find("ATTEMPT"), lines[3].find("-  "), "{table}");
    }
}
