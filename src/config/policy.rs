//! Run policies: timeout, retries, overlap and catch-up, read once from a job's `props` under the
//! `shardcron.` prefix (a Java ElasticJob 3.0.x instance loads them as plain properties and keeps
//! its own semantics). [`RunPolicy::from_config`] parses them when a config is validated, so a bad
//! value is refused when the config is written, naming its key; the engine reads the typed value.
//!
//! | key | value | default |
//! | --- | --- | --- |
//! | `shardcron.timeout` | a duration: an item run longer is cancelled | none |
//! | `shardcron.timeout.grace` | a duration: after the cancel, the item is ended for good | `10s` |
//! | `shardcron.retry.max` | attempts after the first, 0-100 | `0` |
//! | `shardcron.retry.backoff` | the first retry's delay | `1s` |
//! | `shardcron.retry.backoff.factor` | each next delay is the last times this, 1-100 | `2` |
//! | `shardcron.retry.backoff.max` | no delay is longer | `5m` |
//! | `shardcron.retry.backoff.jitter` | a fraction 0-1: a delay is shortened by up to that share | `0` |
//! | `shardcron.retry.notify` | `final` (the last failure only) or `every` attempt's | `final` |
//! | `shardcron.overlap` | `skip`, `buffer_one`, `buffer_all`, `cancel_other`, `allow_all` | from `misfire` |
//! | `shardcron.overlap.buffer` | with `buffer_all`: fires kept at most, 1-1000 | `100` |
//! | `shardcron.catchup.window` | a duration: the latest instant missed while no instance ran an item, if not older, runs once when an owner returns ([`crate::decide::catchup`]) | `0s` |
//! | `shardcron.after` | the upstream job, or a comma-separated list: the job runs once per workflow run after them ([`crate::decide::workflow`]) | none |
//! | `shardcron.after.on` | `success` (every upstream item succeeded, else the run is skipped) or `completed` (every item ended, whatever its outcome) | `success` |
//!
//! Durations are a whole number and a unit: `500ms`, `2s`, `5m`, `1h` (at most [`super::MAX_DURATION`], 720h).
//! The overlap default follows ElasticJob's `misfire`: `true` is `buffer_one` (the missed fire
//! runs once after), `false` is `skip`, so an existing config keeps its meaning.
//!
//! Refused combinations (each names the key that makes it incoherent):
//! - `shardcron.timeout.grace` without `shardcron.timeout`: nothing would start the grace.
//! - any `shardcron.retry.*` key but `retry.max` while `shardcron.retry.max` is absent or 0.
//! - `shardcron.retry.backoff.max` below `shardcron.retry.backoff`.
//! - `shardcron.overlap.buffer` with an overlap other than `buffer_all`.
//! - `shardcron.overlap: allow_all` with `monitorExecution: true`: an item's `running` marker
//!   records one run of it, which two runs at once cannot share.
//! - `shardcron.overlap: allow_all` with `failover: true`: failover re-runs what a crashed
//!   instance was running, which only `running` markers record.
//! - `shardcron.catchup.window` on a job without a cron (nothing is ever missed).
//! - `shardcron.after.on` without `shardcron.after`; a job in its own `shardcron.after`.
//! - an unknown key under `shardcron.timeout`, `shardcron.retry`, `shardcron.overlap`,
//!   `shardcron.catchup` or `shardcron.after` (a typo would otherwise be silently ignored).

mod read;

use std::num::NonZeroU32;
use std::time::Duration;

use super::after::{dependency_from_props, Dependency, DependencyError, AFTER_KEY, AFTER_ON_KEY};
use super::duration::parse_duration;
use super::{ConfigError, JobConfig};
use read::Reader;

/// `shardcron.timeout`.
pub const TIMEOUT: &str = "shardcron.timeout";
/// `shardcron.timeout.grace`.
pub const TIMEOUT_GRACE: &str = "shardcron.timeout.grace";
/// `shardcron.retry.max`.
pub const RETRY_MAX: &str = "shardcron.retry.max";
/// `shardcron.retry.backoff`.
pub const RETRY_BACKOFF: &str = "shardcron.retry.backoff";
/// `shardcron.retry.backoff.factor`.
pub const RETRY_FACTOR: &str = "shardcron.retry.backoff.factor";
/// `shardcron.retry.backoff.max`.
pub const RETRY_BACKOFF_MAX: &str = "shardcron.retry.backoff.max";
/// `shardcron.retry.backoff.jitter`.
pub const RETRY_JITTER: &str = "shardcron.retry.backoff.jitter";
/// `shardcron.retry.notify`.
pub const RETRY_NOTIFY: &str = "shardcron.retry.notify";
/// `shardcron.overlap`.
pub const OVERLAP: &str = "shardcron.overlap";
/// `shardcron.overlap.buffer`.
pub const OVERLAP_BUFFER: &str = "shardcron.overlap.buffer";
/// `shardcron.catchup.window`.
pub const CATCHUP_WINDOW: &str = "shardcron.catchup.window";

/// Every policy key.
pub const POLICY_KEYS: [&str; 13] = [
    super::after::AFTER_KEY,
    super::after::AFTER_ON_KEY,
    TIMEOUT,
    TIMEOUT_GRACE,
    RETRY_MAX,
    RETRY_BACKOFF,
    RETRY_FACTOR,
    RETRY_BACKOFF_MAX,
    RETRY_JITTER,
    RETRY_NOTIFY,
    OVERLAP,
    OVERLAP_BUFFER,
    CATCHUP_WINDOW,
];

/// The prefixes a policy key starts with: an unknown key under one is a typo.
const POLICY_PREFIXES: [&str; 5] = [
    "shardcron.after",
    "shardcron.timeout",
    "shardcron.retry",
    "shardcron.overlap",
    "shardcron.catchup",
];

/// The grace after a timeout's cancel when `shardcron.timeout.grace` is absent.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(10);
/// The most retries a job may ask for.
pub const MAX_RETRIES: u32 = 100;
/// The most fires `buffer_all` may keep.
pub const MAX_BUFFER: u32 = 1000;
/// The fires `buffer_all` keeps when `shardcron.overlap.buffer` is absent.
pub const DEFAULT_BUFFER: u32 = 100;

/// A job's run policies, as parsed from its `props`.
#[derive(Debug, Clone, PartialEq)]
pub struct RunPolicy {
    /// `shardcron.timeout` and its grace; `None` when absent.
    pub timeout: Option<Timeout>,
    /// `shardcron.retry.*`; `None` when no retry is asked for.
    pub retry: Option<Retry>,
    /// `shardcron.overlap` (or the default `misfire` implies).
    pub overlap: Overlap,
    /// `shardcron.catchup.window`; zero when off.
    pub catchup_window: Duration,
    /// `shardcron.after` and `shardcron.after.on`; `None` for a job that runs after no job.
    pub after: Option<std::sync::Arc<Dependency>>,
}

/// An item run's time limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeout {
    /// How long an item may run before it is cancelled.
    pub after: Duration,
    /// How long a cancelled item has to end before it is ended for good.
    pub grace: Duration,
}

/// Retries of a failed item.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Retry {
    /// Attempts after the first.
    pub max: u32,
    /// The first retry's delay.
    pub initial: Duration,
    /// Each next delay is the last times this.
    pub factor: f64,
    /// No delay is longer.
    pub max_backoff: Duration,
    /// A delay is shortened by up to this share (0-1).
    pub jitter: f64,
    /// Which failures the job's error handler hears.
    pub notify: Notify,
}

impl Retry {
    /// The backoff before retry `retry` (1 for the first): `initial` times `factor` to the
    /// `retry - 1`, at most `max_backoff`, shortened by up to `jitter` of itself as `seed` draws.
    pub fn delay(&self, retry: u32, seed: u64) -> Duration {
        let power = i32::try_from(retry.saturating_sub(1))
            .unwrap_or(i32::MAX)
            .min(1000);
        let max = self.max_backoff.as_secs_f64();
        let base = (self.initial.as_secs_f64() * self.factor.powi(power)).min(max);
        // 53 random bits as a fraction in [0, 1).
        let draw = (seed >> 11) as f64 / (1u64 << 53) as f64;
        Duration::from_secs_f64((base * (1.0 - self.jitter * draw)).clamp(0.0, max))
    }
}

/// Which failed attempts the error handler hears.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Notify {
    /// Only the last attempt's failure (no retry left).
    #[default]
    Final,
    /// Every failed attempt.
    Every,
}

/// What a fire does when the item's previous run is still running (Temporal's overlap policies,
/// Kubernetes' concurrency policy).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overlap {
    /// The fire is dropped for that item (Kubernetes `Forbid`; ElasticJob `misfire: false`).
    Skip,
    /// The fire runs once the previous run ends; more fires meanwhile are one (ElasticJob
    /// `misfire: true`).
    BufferOne,
    /// Every fire runs in turn once the previous run ends, up to this many kept.
    BufferAll(NonZeroU32),
    /// The previous run is cancelled and the fire runs (Kubernetes `Replace`).
    CancelOther,
    /// The fire runs beside the previous run (Kubernetes `Allow`).
    AllowAll,
}

impl Overlap {
    /// The word of `shardcron.overlap`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Skip => "skip",
            Self::BufferOne => "buffer_one",
            Self::BufferAll(_) => "buffer_all",
            Self::CancelOther => "cancel_other",
            Self::AllowAll => "allow_all",
        }
    }
}

impl RunPolicy {
    /// ElasticJob's `misfire: true`: no timeout, no retry, `buffer_one`, no catch-up.
    pub const MISFIRE: Self = Self::from_misfire(true);
    /// ElasticJob's `misfire: false`: no timeout, no retry, `skip`, no catch-up.
    pub const NO_MISFIRE: Self = Self::from_misfire(false);

    /// The policy of a job that sets no key: no timeout, no retry, the overlap `misfire` implies,
    /// no catch-up.
    pub const fn from_misfire(misfire: bool) -> Self {
        Self {
            timeout: None,
            retry: None,
            overlap: if misfire {
                Overlap::BufferOne
            } else {
                Overlap::Skip
            },
            catchup_window: Duration::ZERO,
            after: None,
        }
    }

    /// The policy `config` asks for, or every problem, each naming its key.
    ///
    /// ```
    /// use std::time::Duration;
    /// use shardcron::config::{JobConfig, Overlap, RunPolicy};
    /// let config = JobConfig::test("orders").timeout(Duration::from_secs(2)).retry(3);
    /// let policy = RunPolicy::from_config(&config).unwrap();
    /// assert_eq!(policy.timeout.unwrap().after, Duration::from_secs(2));
    /// assert_eq!(policy.retry.unwrap().max, 3);
    /// assert_eq!(policy.overlap, Overlap::BufferOne);
    /// let bad = JobConfig::test("orders").prop("shardcron.timeout", "2 minutes");
    /// assert_eq!(RunPolicy::from_config(&bad).unwrap_err()[0].field, "shardcron.timeout");
    /// ```
    pub fn from_config(config: &JobConfig) -> Result<Self, Vec<ConfigError>> {
        let mut policy = Self::from_misfire(config.misfire);
        if !config.props.keys().any(|k| k.starts_with("shardcron.")) {
            return Ok(policy);
        }
        let mut errors = Vec::new();
        let mut reader = Reader {
            config,
            errors: &mut errors,
        };
        reader.unknown_keys();
        let timeout = reader.duration(TIMEOUT);
        let grace = reader.duration(TIMEOUT_GRACE);
        match (timeout, grace) {
            (Some(after), grace) if after > Duration::ZERO => {
                policy.timeout = Some(Timeout {
                    after,
                    grace: grace.unwrap_or(DEFAULT_GRACE),
                })
            }
            (Some(_), _) => reader.refuse(TIMEOUT, "must be longer than 0".into()),
            (None, Some(_)) if reader.absent(TIMEOUT) => {
                reader.refuse(TIMEOUT_GRACE, format!("needs {TIMEOUT}"))
            }
            (None, _) => {}
        }
        policy.retry = reader.retry();
        policy.overlap = reader.overlap(policy.overlap);
        if let Some(window) = reader.duration(CATCHUP_WINDOW) {
            if window > Duration::ZERO && config.cron_expr().is_none() {
                reader.refuse(
                    CATCHUP_WINDOW,
                    "a job without a cron misses no fire to catch up".into(),
                );
            }
            policy.catchup_window = window;
        }
        policy.after = reader.after();
        if errors.is_empty() {
            Ok(policy)
        } else {
            Err(errors)
        }
    }

    /// Whether the job sets no policy beyond what ElasticJob does: its fires take no extra step.
    pub fn is_default(&self) -> bool {
        self.timeout.is_none()
            && self.retry.is_none()
            && self.catchup_window.is_zero()
            && self.after.is_none()
    }

    /// Whether the error handler hears the failure of attempt `attempt` (1 for the first run):
    /// always without retries; with them, the last attempt's, or every one's when asked.
    pub fn notifies(&self, attempt: u32) -> bool {
        self.retry
            .is_none_or(|r| r.notify == Notify::Every || attempt > r.max)
    }
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
