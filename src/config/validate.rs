//! Validation: every problem of a [`JobConfig`] at once, each naming its YAML field, or a
//! [`ValidatedConfig`] with the parsed pieces the engine runs on.
//!
//! Range decisions (ElasticJob checks neither):
//! - `maxTimeDiffSeconds`: -1 turns the check off (Java treats any negative value so); values below
//!   -1 are refused as likely typos.
//! - `reconcileIntervalMinutes`: 0 or -1 turn the reconcile off (Java: any value <= 0); values
//!   below -1 are refused likewise.

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

    fn check(
        &self,
        ctx: &ValidationContext<'_>,
        config: impl FnOnce() -> Arc<JobConfig>,
    ) -> Result<ValidatedConfig, ConfigErrors> {
        let mut errors = Vec::new();
        let mut report = |field: &'static str, problem: String| {
            errors.push(ConfigError { field, problem });
        };

        let job_name = JobName::new(self.job_name.as_str())
            .map_err(|e| report("jobName", e.to_string()))
            .ok();
        let total = u32::try_from(self.sharding_total_count)
            .ok()
            .filter(|t| (1..=MAX_SHARDING_TOTAL_COUNT).contains(t));
        if total.is_none() {
            report(
                "shardingTotalCount",
                format!(
                    "must be between 1 and {MAX_SHARDING_TOTAL_COUNT}, is {}",
                    self.sharding_total_count
                ),
            );
        }
        let schedule = match self.cron_expr().map(CronSchedule::parse) {
            Some(Err(e)) => {
                report("cron", e.to_string());
                None
            }
            Some(Ok(schedule)) => Some(schedule),
            None => None,
        };
        let time_zone = JobTimeZone::from_config(self.time_zone.as_deref())
            .map_err(|e| report("timeZone", e.to_string()))
            .ok();
        // Without a valid total every key would be out of range: that problem is reported once,
        // above, instead of once per entry.
        let text = self.sharding_item_parameters.as_deref().unwrap_or("");
        let item_parameters = match parse_item_parameters(text, total.unwrap_or(u32::MAX)) {
            Ok(items) => items,
            Err(entries) => {
                for entry in entries {
                    report("shardingItemParameters", entry.to_string());
                }
                BTreeMap::new()
            }
        };
        let handler = self.error_handler_name();
        let plugins = [
            (
                "jobShardingStrategyType",
                "sharding strategy",
                self.strategy_name(),
                &BUILTIN_STRATEGIES[..],
                ctx.strategies,
            ),
            (
                "jobErrorHandlerType",
                "error handler",
                handler,
                &BUILTIN_ERROR_HANDLERS[..],
                ctx.error_handlers,
            ),
        ];
        for (field, what, name, builtin, registered) in plugins {
            if let Some(problem) = unknown_name(what, name, builtin, registered) {
                report(field, problem);
            }
        }
        let notifier = super::notify::NotifierSettings::from_props(handler, &self.props);
        if let Some(Err(problems)) = notifier {
            for p in problems {
                report(p.field, p.problem);
            }
        }
        let command = self.props.get(SCRIPT_COMMAND_LINE).map(|c| c.trim());
        if ctx.kind == JobKind::Script && command.is_none_or(str::is_empty) {
            report(
                "props.script.command.line",
                "a SCRIPT job needs the command to run".to_owned(),
            );
        }
        if let Some(label) = self.label.as_deref().filter(|l| !l.is_empty()) {
            if let Err(e) = crate::sharding::check_label(label) {
                report("label", e.to_string());
            }
        }
        for label in &self.instance_labels {
            if let Err(e) = crate::sharding::check_label(label) {
                report("instance labels", e.to_string());
            }
        }
        if self.max_time_diff_seconds < -1 {
            report(
                "maxTimeDiffSeconds",
                format!(
                    "must be -1 (off) or at least 0, is {}",
                    self.max_time_diff_seconds
                ),
            );
        }
        if self.reconcile_interval_minutes < -1 {
            report(
                "reconcileIntervalMinutes",
                format!(
                    "must be -1 or 0 (off) or at least 1, is {}",
                    self.reconcile_interval_minutes
                ),
            );
        }
        if let Some(window) = self.props.get(super::retention::RETENTION_PROP) {
            if let Err(e) = super::retention::RetentionWindow::parse(window) {
                report("props.shardcron.history.retention", e.to_string());
            }
        }
        let output = self
            .output_limit()
            .map_err(|e| report(e.field, e.problem))
            .unwrap_or_default();
        let concurrency = self
            .item_concurrency()
            .map_err(|e| report(e.field, e.problem))
            .unwrap_or_default();
        let policy = super::RunPolicy::from_config(self).unwrap_or_else(|problems| {
            for p in problems {
                report(p.field, p.problem);
            }
            super::RunPolicy::from_misfire(self.misfire)
        });
        let policy =
            (policy != super::RunPolicy::from_misfire(self.misfire)).then(|| Box::new(policy));

        match (job_name, total, time_zone) {
            (Some(job_name), Some(total), Some(time_zone)) if errors.is_empty() => {
                Ok(ValidatedConfig {
                    config: config(),
                    job_name,
                    total,
                    schedule,
                    time_zone,
                    item_parameters,
                    concurrency,
                    policy,
                    output,
                })
            }
            _ => Err(ConfigErrors(errors)),
        }
    }
}

/// `None` when `name` is built in or registered; else the problem, listing the known names.
fn unknown_name(what: &str, name: &str, builtin: &[&str], registered: &[&str]) -> Option<String> {
    if builtin.contains(&name) || registered.contains(&name) {
        return None;
    }
    let mut known: Vec<&str> = Vec::new();
    for name in builtin.iter().chain(registered) {
        if !known.contains(name) {
            known.push(name);
        }
    }
    Some(format!(
        "unknown {what} {name:?}; known: {}",
        known.join(", ")
    ))
}
