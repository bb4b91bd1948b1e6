//! History retention: how long a job's rows are kept, and the purge that deletes older ones.
//!
//! A window comes from the node (`--history-retention 30d`, [`Retention::default_window`]) and
//! can be overridden per job with the `shardcron.history.retention` prop ([`RETENTION_PROP`]),
//! read through [`Retention::per_job`] (the example node reads it from its mirror of the
//! registry). Without a window a job's rows are kept for ever, as ElasticJob keeps them.
//!
//! The purge deletes in batches of [`Retention::batch`] rows, one short statement each, with a
//! pause between them, so writers (other nodes included: each node that purges does the same
//! idempotent work) never wait on it for longer than one batch. After each job it records the
//! window it applied in `SHARDCRON_HISTORY_RETENTION`, a table ElasticJob never reads, so that
//! `shardcronctl history` and the console can say which window the rows they show were kept for.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::clock::{SharedClock, SystemClock};
pub use crate::config::retention::{RetentionError, RetentionWindow, RETENTION_PROP};
use crate::config::JobConfig;
use crate::paths::JobNode;
use crate::registry::mirror::Mirror;
use crate::types::JobName;

/// Rows one purge statement deletes at most.
pub const DEFAULT_PURGE_BATCH: u32 = 500;

/// How often a node purges.
pub const DEFAULT_PURGE_EVERY: Duration = Duration::from_secs(600);

/// A job's own window, looked up by job name at each purge (`None`: the default applies).
pub type JobRetention = Arc<dyn Fn(&str) -> Option<RetentionWindow> + Send + Sync>;

/// What a purge keeps and how it deletes.
#[derive(Clone)]
pub struct Retention {
    /// The window of a job without its own; `None` keeps such jobs' rows for ever.
    pub default_window: Option<RetentionWindow>,
    /// A job's own window (the `shardcron.history.retention` prop), when it has one.
    pub per_job: Option<JobRetention>,
    /// Rows one statement deletes at most.
    pub batch: u32,
    /// The pause between two batches, in which writers go first.
    pub pause: Duration,
    /// How often [`History::purge_periodically`] purges.
    pub every: Duration,
    /// What "now" is.
    pub clock: SharedClock,
}

impl std::fmt::Debug for Retention {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Retention")
            .field("default_window", &self.default_window)
            .field("per_job", &self.per_job.is_some())
            .field("batch", &self.batch)
            .field("pause", &self.pause)
            .field("every", &self.every)
            .finish()
    }
}

impl Retention {
    /// Keeps every job's rows for `window` unless the job says otherwise.
    pub fn window(window: RetentionWindow) -> Self {
        Self {
            default_window: Some(window),
            ..Self::keep_forever()
        }
    }

    /// Keeps rows for ever, except for jobs given a window by [`Retention::per_job`].
    pub fn keep_forever() -> Self {
        Self {
            default_window: None,
            per_job: None,
            batch: DEFAULT_PURGE_BATCH,
            pause: Duration::from_millis(20),
            every: DEFAULT_PURGE_EVERY,
            clock: Arc::new(SystemClock),
        }
    }

    /// The window of `job`: its own, else the default.
    pub fn window_of(&self, job: &str) -> Option<RetentionWindow> {
        self.per_job
            .as_ref()
            .and_then(|own| own(job))
            .or(self.default_window)
    }
}

/// What one purge did for one job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JobPurge {
    /// The job.
    pub job_name: String,
    /// The window applied.
    pub window: RetentionWindow,
    /// Rows started (or status changes made) before this instant were deleted.
    pub purged_before: DateTime<Utc>,
    /// Execution rows deleted.
    pub executions: u64,
    /// Status rows deleted.
    pub statuses: u64,
    /// Output rows deleted (`shardcron.output`).
    pub outputs: u64,
}

/// The window the last purge applied to a job, as `SHARDCRON_HISTORY_RETENTION` records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RetentionRecord {
    /// The window.
    pub window: RetentionWindow,
    /// Rows older than this were gone after that purge.
    pub purged_before: DateTime<Utc>,
    /// When that purge ran.
    pub purged_at: DateTime<Utc>,
}

impl RetentionRecord {
    /// One line for a reader: what the rows shown were kept for.
    pub fn describe(record: Option<&Self>) -> String {
        match record {
            Some(r) => format!(
                "kept {} (rows before {} purged at {})",
                r.window,
                r.purged_before.format("%Y-%m-%d %H:%M:%S"),
                r.purged_at.format("%Y-%m-%d %H:%M:%S UTC"),
            ),
            None => "kept for ever (no retention window has purged this job)".to_owned(),
        }
    }
}

/// A job's own window as the registry holds it: the [`RETENTION_PROP`] of its config node in
/// `mirror` (a node's [`crate::node::NodeHandle::mirror`]), read at each purge, so a change of the
/// prop applies from the next purge on. A job without the prop, or with a value that does not
/// parse (configs are validated when written), has none.
pub fn windows_in(mirror: Mirror) -> JobRetention {
    Arc::new(move |job: &str| {
        let job = JobName::new(job).ok()?;
        let data = mirror.data(&JobNode::Config.to_path(&job))?;
        let config = JobConfig::from_yaml(std::str::from_utf8(&data).ok()?).ok()?;
        RetentionWindow::parse(config.props.get(RETENTION_PROP)?).ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_parse_in_four_units_and_print_in_the_largest_that_divides() {
        let table: &[(&str, Option<i64>, &str)] = &[
            ("30d", Some(30 * 86_400), "30d"),
            ("36h", Some(36 * 3_600), "36h"),
            ("48h", Some(2 * 86_400), "2d"),
            ("90m", Some(5_400), "90m"),
            ("45s", Some(45), "45s"),
            (" 7d ", Some(7 * 86_400), "7d"),
            ("0d", None, ""),
            ("-1d", None, ""),
            ("30", None, ""),
            ("d", None, ""),
            ("30w", None, ""),
            ("9999999999999999d", None, ""),
            ("", None, ""),
            ("3€", None, ""),
        ];
        for &(input, seconds, shown) in table {
            match (RetentionWindow::parse(input), seconds) {
                (Ok(w), Some(s)) => {
                    assert_eq!(w.seconds(), s, "{input}");
                    assert_eq!(w.to_string(), shown, "{input}");
                }
                (Err(e), None) => assert!(e.to_string().contains(RETENTION_PROP), "{e}"),
                (got, want) => panic!("{input}: got {got:?}, expected {want:?}"),
            }
        }
    }

    #[test]
    fn a_jobs_own_window_wins_over_the_default_and_none_keeps_for_ever() {
        let mut retention = Retention::window(RetentionWindow::parse("30d").unwrap());
        retention.per_job = Some(Arc::new(|job: &str| {
            (job == "short").then(|| RetentionWindow::parse("1h").unwrap())
        }));
        assert_eq!(retention.window_of("short").unwrap().to_string(), "1h");
        assert_eq!(retention.window_of("other").unwrap().to_string(), "30d");
        retention.default_window = None;
        assert_eq!(retention.window_of("other"), None);
        let now: DateTime<Utc> = "2026-03-02T10:00:00Z".parse().unwrap();
        let cutoff = RetentionWindow::parse("1d").unwrap().cutoff(now);
        assert_eq!(
            cutoff,
            "2026-03-01T10:00:00Z".parse::<DateTime<Utc>>().unwrap()
        );
    }
}
