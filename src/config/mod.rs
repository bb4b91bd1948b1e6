//! A job's configuration: the ElasticJob 3.x `config` node, field for field.
//!
//! | file | what it holds |
//! | --- | --- |
//! | `mod.rs` | [`JobConfig`], the serde model with ElasticJob's camelCase names and defaults |
//! | `builder.rs` | the fluent builder and the [`JobConfig::test`] fixture |
//! | `yaml.rs` | [`JobConfig::from_yaml`] / [`JobConfig::to_yaml`] in the Java side's layout |
//! | `items.rs` | `shardingItemParameters` (`0=a,1=b`): [`parse_item_parameters`] |
//! | `policy.rs` | [`RunPolicy`]: timeout, retry, overlap and catch-up from `shardcron.` props |
//! | `output.rs` | [`OutputLimit`]: how much of an item run's output is captured (`shardcron.output`) |
//! | `duration.rs` | [`parse_duration`]: `500ms`, `2s`, `5m`, `1h` |
//! | `java.rs` | [`JobConfig::check_java_readable`]: what a Java ElasticJob 3.0.x instance loads |
//! | `validate.rs` | [`JobConfig::validate`]: every problem at once, or a [`ValidatedConfig`] |
//! | [`untrusted`] (`src/untrusted.rs`) | [`untrusted::check_yaml`]: size and alias bounds on YAML from outside, before it is parsed |
//!
//! A [`JobConfig`] is what the registry holds, possibly invalid and possibly written by another
//! tool; a [`ValidatedConfig`] is what the engine runs, with the cron expression, time zone and
//! item parameters already parsed.

pub mod after;
mod builder;
mod concurrency;
mod duration;
mod items;
mod java;
pub mod notify;
mod output;
pub mod policy;
mod redact;
pub mod retention;
/// The bounds on YAML from outside, shared with the sharding labels: [`crate::untrusted`].
pub use crate::untrusted;
mod validate;
mod yaml;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use concurrency::{ItemConcurrency, LEGACY_POOL_FIELD, POOL_SIZE_FIELD};
pub use duration::{format_duration, parse_duration, MAX_DURATION};
pub use items::{parse_item_parameters, ItemParameterError};
pub use java::{java_accepts_time_zone, SHARDCRON_ONLY};
pub use output::{OutputLimit, MAX_OUTPUT_KIB, OUTPUT_PROP};
pub use policy::{Notify, Overlap, Retry, RunPolicy, Timeout, DEFAULT_GRACE, POLICY_KEYS};
pub use redact::redact_config_yaml;
pub use validate::{
    ConfigError, ConfigErrors, JobKind, ValidatedConfig, ValidationContext,
    MAX_SHARDING_TOTAL_COUNT,
};
pub use yaml::ConfigYamlError;

/// The built-in sharding strategies; an absent `jobShardingStrategyType` means the first.
pub const BUILTIN_STRATEGIES: [&str; 5] = [
    "AVG_ALLOCATION",
    "ODEVITY",
    "ROUND_ROBIN",
    "SINGLE_SHARDING_BALANCE",
    "NAMESPACE_BALANCE",
];

/// The built-in error handlers; an absent `jobErrorHandlerType` means the first. The last four
/// notify (see [`crate::job::handlers::notify`]) and need their `props`.
pub const BUILTIN_ERROR_HANDLERS: [&str; 7] = [
    "LOG", "THROW", "IGNORE", "EMAIL", "WECHAT", "DINGTALK", "WEBHOOK",
];

/// The `props` key holding a SCRIPT job's command line.
pub const SCRIPT_COMMAND_LINE: &str = "script.command.line";

/// One job's configuration, as stored in `/{namespace}/{job}/config`.
///
/// Fields keep ElasticJob's names (camelCase in YAML) and defaults, and are not checked until
/// [`JobConfig::validate`], so that a config written by another tool can be read, reported on and
/// written back. Fields that the Java side writes as `null` are `Option`s here.
///
/// Its `Debug` shows the config [`redacted`](JobConfig::redacted) (see `redact.rs`).
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobConfig {
    /// `jobName`: one registry path segment, fixed for the job's life.
    pub job_name: String,
    /// `cron`: a Quartz expression; absent (or empty, as in Java) for a one-off job that only runs
    /// when triggered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cron: Option<String>,
    /// `timeZone`: an IANA name or a Java `GMT+hh:mm` id; absent means the process's local zone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_zone: Option<String>,
    /// `shardingTotalCount`: the number of items, at least 1. Absent reads as 0, which validation
    /// reports, rather than failing the parse (Java's `int` default).
    #[serde(default)]
    pub sharding_total_count: i32,
    /// `shardingItemParameters`: `0=Beijing,1=Shanghai`, see [`parse_item_parameters`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sharding_item_parameters: Option<String>,
    /// `jobParameter`: one string handed to every item.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_parameter: Option<String>,
    /// `monitorExecution` (true): record `running` nodes, which misfire and failover rely on.
    #[serde(default = "yes")]
    pub monitor_execution: bool,
    /// `failover` (false): survivors take over the running items of a crashed instance.
    #[serde(default)]
    pub failover: bool,
    /// `misfire` (true): a fire missed because items were still running runs once afterwards.
    #[serde(default = "yes")]
    pub misfire: bool,
    /// `maxTimeDiffSeconds` (-1 = off): the tolerated skew between this host and the registry.
    #[serde(default = "minus_one")]
    pub max_time_diff_seconds: i32,
    /// `reconcileIntervalMinutes` (10; 0 or -1 = off): how often the leader re-checks sharding.
    #[serde(default = "ten")]
    pub reconcile_interval_minutes: i32,
    /// `jobShardingStrategyType`: a built-in name ([`BUILTIN_STRATEGIES`]) or a registered one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_sharding_strategy_type: Option<String>,
    /// `jobExecutorThreadPoolSizeProviderType` (Java's thread-pool choice, `CPU` or
    /// `SINGLE_THREAD`). ElasticJob 3.0.0-3.0.4 called it `jobExecutorServiceHandlerType`: that name
    /// is read too, and written under the new one, since 3.0.5+ refuses the old name.
    #[serde(
        default,
        rename = "jobExecutorThreadPoolSizeProviderType",
        alias = "jobExecutorServiceHandlerType",
        skip_serializing_if = "Option::is_none"
    )]
    pub job_executor_thread_pool_size_provider_type: Option<String>,
    /// `jobErrorHandlerType`: a built-in name ([`BUILTIN_ERROR_HANDLERS`]) or a registered one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_error_handler_type: Option<String>,
    /// `jobListenerTypes`: names of registered job listeners.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub job_listener_types: Vec<String>,
    /// `description`: free text for operators.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `props`: string properties; YAML scalars of any type are read as their text.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "yaml::scalar_props"
    )]
    pub props: BTreeMap<String, String>,
    /// `disabled` (false): registered instances start with their server disabled.
    #[serde(default)]
    pub disabled: bool,
    /// `overwrite` (false): the local config replaces the registry's at start-up.
    #[serde(default)]
    pub overwrite: bool,
    /// `label`: only instances carrying this label take the job's items (sharding sees only them,
    /// and only they take failed-over items). An instance's labels are set with
    /// `NodeBuilder::labels` and written in its `instances/{id}` node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// `staticSharding` (false): once items have owners they keep them; instances joining or
    /// leaving move nothing, except the items of an owner that is gone, disabled, or no longer
    /// carries the job's label, which go to the eligible instances holding the fewest items.
    #[serde(default)]
    pub static_sharding: bool,
    /// The labels of the instance that registers this config, written in its `instances/{id}`
    /// node (ElasticJob's `JobInstance.labels`); not part of the registry's `config`. The node
    /// sets them from `NodeBuilder::labels`.
    #[serde(skip)]
    pub instance_labels: Vec<String>,
    /// Fields this crate does not know, written by other tools (or newer versions); kept so that
    /// a rewrite does not drop them.
    #[serde(skip)]
    pub unknown_fields: BTreeMap<String, serde_yaml_ng::Value>,
}

fn yes() -> bool {
    true
}

fn minus_one() -> i32 {
    -1
}

fn ten() -> i32 {
    10
}

impl JobConfig {
    /// A config with ElasticJob's defaults, no cron (a one-off job) and the local time zone.
    ///
    /// ```
    /// use shardcron::config::JobConfig;
    /// let config = JobConfig::new("orders", 3).cron("0/5 * * * * ?").failover(true);
    /// assert_eq!(config.sharding_total_count, 3);
    /// assert!(config.misfire && config.monitor_execution && config.failover);
    /// ```
    pub fn new(job_name: impl Into<String>, sharding_total_count: i32) -> Self {
        Self {
            job_name: job_name.into(),
            cron: None,
            time_zone: None,
            sharding_total_count,
            sharding_item_parameters: None,
            job_parameter: None,
            monitor_execution: yes(),
            failover: false,
            misfire: yes(),
            max_time_diff_seconds: minus_one(),
            reconcile_interval_minutes: ten(),
            job_sharding_strategy_type: None,
            job_executor_thread_pool_size_provider_type: None,
            job_error_handler_type: None,
            job_listener_types: Vec::new(),
            description: None,
            props: BTreeMap::new(),
            disabled: false,
            overwrite: false,
            label: None,
            static_sharding: false,
            instance_labels: Vec::new(),
            unknown_fields: BTreeMap::new(),
        }
    }

    /// The cron expression, `None` for a one-off job (absent or empty, as Java reads it).
    pub fn cron_expr(&self) -> Option<&str> {
        self.cron.as_deref().filter(|c| !c.trim().is_empty())
    }

    /// The sharding strategy's name, the default when absent or empty (as Java reads it).
    pub fn strategy_name(&self) -> &str {
        non_empty(&self.job_sharding_strategy_type).unwrap_or(BUILTIN_STRATEGIES[0])
    }

    /// The problem when this config is stored under another job's path: `jobName` must name the
    /// job whose `config` node holds it (a job cannot be renamed by rewriting its config). ctl
    /// refuses such a write, and the engine refuses such a config found in the registry.
    ///
    /// ```
    /// use shardcron::{config::JobConfig, JobName};
    /// let orders = JobName::new("orders").unwrap();
    /// assert!(JobConfig::new("orders", 1).job_name_mismatch(&orders).is_none());
    /// let err = JobConfig::new("billing", 1).job_name_mismatch(&orders).unwrap();
    /// assert_eq!(err.field, "jobName");
    /// ```
    pub fn job_name_mismatch(&self, job: &crate::JobName) -> Option<ConfigError> {
        (self.job_name != job.as_str()).then(|| ConfigError {
            field: "jobName",
            problem: format!(
                "is {:?}, but the config is stored for job {:?}; a job cannot be renamed",
                self.job_name,
                job.as_str()
            ),
        })
    }

    /// The error handler's name, the default when absent or empty (as Java reads it).
    pub fn error_handler_name(&self) -> &str {
        non_empty(&self.job_error_handler_type).unwrap_or(BUILTIN_ERROR_HANDLERS[0])
    }
}

fn non_empty(value: &Option<String>) -> Option<&str> {
    value.as_deref().filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests;
