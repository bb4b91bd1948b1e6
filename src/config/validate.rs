//! Validation: every problem of a [`JobConfig`] at once, each naming its YAML field, or a
//! [`ValidatedConfig`] with the parsed pieces the engine runs on.
//!
//! Range decisions (ElasticJob checks neither):
//! - `maxTimeDiffSeconds`: -1 turns the check off (Java treats any negative value so); values below
//!   -1 are refused as likely typos.
//! - `reconcileIntervalMinutes`: 0 or -1 turn the reconcile off (Java: any value <= 0); values
//!   below -1 are refused likewise.

mod check;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};

use super::{
    parse_item_parameters, JobConfig, BUILTIN_ERROR_HANDLERS, BUILTIN_STRATEGIES,
    SCRIPT_COMMAND_LINE,
};
use crate::cron::CronSchedule;
use crate::timezone::JobTimeZone;
use crate::{JobName, ShardItem};

/// The largest `shardingTotalCount` accepted. Every item costs at least two registry nodes and a
/// share of every sharding commit; past this the registry, not the jobs, becomes the work, and a
/// count this large is far more likely a typo than a plan.
pub const MAX_SHARDING_TOTAL_COUNT: u32 = 10_000;

/// What kind of job the config belongs to; only SCRIPT jobs need a command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JobKind {
    /// A job that runs a handler per item.
    Simple,
    /// A job that fetches and processes data per item.
    Dataflow,
    /// A job that runs `props.script.command.line` per item.
    Script,
}

/// What validation needs to know beyond the config: the names registered elsewhere.
#[derive(Debug, Clone, Copy)]
pub struct ValidationContext<'a> {
    /// Sharding strategies registered by the user, in addition to [`BUILTIN_STRATEGIES`].
    pub strategies: &'a [&'a str],
    /// Error handlers registered by the user, in addition to [`BUILTIN_ERROR_HANDLERS`].
    pub error_handlers: &'a [&'a str],
    /// The kind of the job.
    pub kind: JobKind,
}

impl ValidationContext<'static> {
    /// A context knowing only the built-in strategies and error handlers.
    pub fn builtin(kind: JobKind) -> Self {
        Self {
            strategies: &[],
            error_handlers: &[],
            kind,
        }
    }
}

/// One problem of a config, naming its YAML field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {problem}")]
pub struct ConfigError {
    /// The YAML field (`shardingTotalCount`, `props.script.command.line`, ...).
    pub field: &'static str,
    /// What is wrong with it.
    pub problem: String,
}

/// Every problem of a config; never empty.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ConfigErrors(pub Vec<ConfigError>);

impl ConfigErrors {
    /// The fields named by the problems, in order (a field may appear more than once).
    pub fn fields(&self) -> Vec<&'static str> {
        self.0.iter().map(|e| e.field).collect()
    }
}

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid job config ({} problems):", self.0.len())?;
        for error in &self.0 {
            write!(f, "\n  - {error}")?;
        }
        Ok(())
    }
}

/// The policies of jobs that set none (statics: a policy holds an `Arc`, which a constant
/// cannot lend for `'static`).
static MISFIRE_POLICY: super::RunPolicy = super::RunPolicy::MISFIRE;
static NO_MISFIRE_POLICY: super::RunPolicy = super::RunPolicy::NO_MISFIRE;

/// A config that passed validation, with the pieces the engine needs already parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidatedConfig {
    /// Shared with the job's spec when it is the same config (the usual case): one copy per job.
    config: Arc<JobConfig>,
    job_name: JobName,
    total: u32,
    schedule: Option<CronSchedule>,
    time_zone: JobTimeZone,
    item_parameters: BTreeMap<ShardItem, String>,
    concurrency: super::ItemConcurrency,
    /// `None` for a job whose policy is ElasticJob's (the usual case): nothing held per job.
    policy: Option<Box<super::RunPolicy>>,
    /// `None` for a job that captures no output (the usual case).
    output: Option<super::OutputLimit>,
}

impl ValidatedConfig {
    /// The config as read (to write back, and for the flags: `failover`, `misfire`, ...).
    pub fn config(&self) -> &JobConfig {
        &self.config
    }

    /// The job's name.
    pub fn job_name(&self) -> &JobName {
        &self.job_name
    }

    /// `shardingTotalCount`, at least 1.
    pub fn sharding_total_count(&self) -> u32 {
        self.total
    }

    /// The items `0..shardingTotalCount`.
    pub fn items(&self) -> impl Iterator<Item = ShardItem> {
        (0..self.total).map(ShardItem)
    }

    /// The cron schedule; `None` for a one-off job, which runs only when triggered.
    pub fn schedule(&self) -> Option<&CronSchedule> {
        self.schedule.as_ref()
    }

    /// The zone the schedule is read in.
    pub fn time_zone(&self) -> &JobTimeZone {
        &self.time_zone
    }

    /// The first fire strictly after `now`; `None` for a one-off job or a schedule that has ended.
    pub fn next_fire_after(&self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.schedule
            .as_ref()?
            .next_fire_after(now, &self.time_zone)
    }

    /// [`Self::next_fire_after`] through `memo` ([`CronSchedule::next_fire_after_memo`]).
    pub fn next_fire_after_memo(
        &self,
        now: DateTime<Utc>,
        memo: &mut crate::cron::NextFireMemo,
    ) -> Option<DateTime<Utc>> {
        self.schedule
            .as_ref()?
            .next_fire_after_memo(now, &self.time_zone, memo)
    }

    /// Item parameters by item (items without one are absent).
    pub fn item_parameters(&self) -> &BTreeMap<ShardItem, String> {
        &self.item_parameters
    }

    /// The parameter of one item, if it has one.
    pub fn item_parameter(&self, item: ShardItem) -> Option<&str> {
        self.item_parameters.get(&item).map(String::as_str)
    }

    /// The sharding strategy's name, the default resolved.
    pub fn strategy(&self) -> &str {
        self.config.strategy_name()
    }

    /// The error handler's name, the default resolved.
    pub fn error_handler(&self) -> &str {
        self.config.error_handler_name()
    }

    /// How often the leader reconciles; `None` when off.
    pub fn reconcile_interval(&self) -> Option<Duration> {
        let minutes = u64::try_from(self.config.reconcile_interval_minutes).ok()?;
        (minutes > 0).then(|| Duration::from_secs(minutes * 60))
    }

    /// How many items may run at once on one instance (`jobExecutorThreadPoolSizeProviderType`).
    pub fn item_concurrency(&self) -> super::ItemConcurrency {
        self.concurrency
    }

    /// The run policies (timeout, retry, overlap, catch-up) from the `shardcron.` props.
    pub fn policy(&self) -> &super::RunPolicy {
        match &self.policy {
            Some(policy) => policy,
            None if self.config.misfire => &MISFIRE_POLICY,
            None => &NO_MISFIRE_POLICY,
        }
    }

    /// How much of each item run's output is captured (`shardcron.output`); `None` when off.
    pub fn output_limit(&self) -> Option<super::OutputLimit> {
        self.output
    }

    /// The tolerated clock skew against the registry; `None` when the check is off.
    pub fn max_time_diff(&self) -> Option<Duration> {
        let seconds = u64::try_from(self.config.max_time_diff_seconds).ok()?;
        Some(Duration::from_secs(seconds))
    }
}

impl JobConfig {
    /// Checks every field and reports every problem, or returns the parsed pieces.
    ///
    /// ```
    /// use shardcron::config::{JobConfig, JobKind, ValidationContext};
    /// let ctx = ValidationContext::builtin(JobKind::Simple);
    /// let valid = JobConfig::test("orders").item_parameters("0=a").validate(&ctx).unwrap();
    /// assert_eq!(valid.sharding_total_count(), 3);
    /// let errors = JobConfig::new("", 0).cron("* * * * *").validate(&ctx).unwrap_err();
    /// assert_eq!(errors.fields(), ["jobName", "shardingTotalCount", "cron"]);
    /// ```
    pub fn validate(&self, ctx: &ValidationContext<'_>) -> Result<ValidatedConfig, ConfigErrors> {
        self.check(ctx, || Arc::new(self.clone()))
    }

    /// The config validated as a simple job knowing only the built-in plugins, shared: a fixture
    /// of the decision tests.
    #[cfg(test)]
    pub(crate) fn validated(self) -> Arc<ValidatedConfig> {
        let ctx = ValidationContext::builtin(JobKind::Simple);
        Arc::new(self.validate(&ctx).expect("a valid test config"))
    }

    /// [`validate`](Self::validate) for a shared config: the validated one holds `this` itself,
    /// not a copy.
    pub fn validate_shared(
        this: &Arc<Self>,
        ctx: &ValidationContext<'_>,
    ) -> Result<ValidatedConfig, ConfigErrors> {
        this.check(ctx, || this.clone())
    }
}
