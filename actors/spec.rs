//! The public types a node is given: a job's spec (its config, kind and handler) and the node's
//! tunables; and the job name a spec's config names, checked.

use std::sync::Arc;
use std::time::Duration;

use crate::config::JobConfig;
use crate::job::SharedHandler;
use crate::types::JobName;

use super::error::EngineError;

/// What kind of handler a job has: it decides the job root's data and config validation.
///
/// The job root (`/{namespace}/{job}`) names the job's type, and an instance refuses to join a job
/// whose root names another: ElasticJob writes a class-based job's class name there (and a script
/// job's `SCRIPT`). A shardcron job that shares a job with Java ElasticJob instances declares that
/// class with [`JobType::Java`] ([`JobSpec::shared_with_java`], `javaClass:` in a jobs file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobType {
    /// A job run by a command line from `props.script.command.line` (root data `SCRIPT`, as Java's
    /// script jobs write it).
    Script,
    /// A job compiled into the program, known by this name (written to the job root).
    Named(String),
    /// A job shared with Java ElasticJob instances running class `class` (e.g.
    /// `com.acme.OrdersJob`): the root holds the class name, as the Java side writes it, and the
    /// Rust handler runs the items this instance gets.
    Java {
        /// The Java job's fully qualified class name.
        class: String,
        /// What the Rust handler is, for config validation (a script handler needs its command).
        kind: crate::config::JobKind,
    },
}

impl JobType {
    /// The job root's data.
    pub fn root_data(&self) -> &str {
        match self {
            Self::Script => "SCRIPT",
            Self::Named(n) => n,
            Self::Java { class, .. } => class,
        }
    }
}

/// A job as the node was given it: its configuration and its handler.
#[derive(Debug, Clone)]
pub struct JobSpec {
    /// The configuration this instance starts with (the registry's wins unless `overwrite`).
    /// Shared: the job's validated config holds the same one while the registry has it too.
    pub config: Arc<JobConfig>,
    /// What kind of job it is.
    pub job_type: JobType,
    /// Runs its items.
    pub handler: SharedHandler,
}

impl JobSpec {
    /// Declares that this job is the Java ElasticJob job of class `class`, which Java instances
    /// run on the same namespace: the job root then holds the class name, so both sides join one
    /// job. The handler and its kind stay as they are.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use shardcron::config::JobConfig;
    /// # use shardcron::job::script::ScriptJob;
    /// # use shardcron::{JobSpec, JobType};
    /// let spec = JobSpec {
    ///     config: Arc::new(JobConfig::new("orders", 4).cron("0/5 * * * * ?").script_command_line("true")),
    ///     job_type: JobType::Script,
    ///     handler: Arc::new(ScriptJob::new("true").unwrap()),
    /// }
    /// .shared_with_java("com.acme.OrdersJob");
    /// assert_eq!(spec.job_type.root_data(), "com.acme.OrdersJob");
    /// ```
    pub fn shared_with_java(mut self, class: impl Into<String>) -> Self {
        let kind = match self.job_type {
            JobType::Script => crate::config::JobKind::Script,
            JobType::Named(_) => crate::config::JobKind::Simple,
            JobType::Java { kind, .. } => kind,
        };
        self.job_type = JobType::Java {
            class: class.into(),
            kind,
        };
        self
    }
}

/// Tunables of a node.
#[derive(Debug, Clone)]
pub struct NodeOptions {
    /// How long a graceful shutdown waits for running items before cancelling them.
    pub shutdown_timeout: Duration,
    /// First delay before reconnecting after a failed connect; doubles up to `reconnect_max`.
    pub reconnect_initial: Duration,
    /// Longest delay between reconnect attempts.
    pub reconnect_max: Duration,
    /// How often the registry clock is compared with the local one (jobs with `maxTimeDiffSeconds`).
    pub clock_check_interval: Duration,
}

impl Default for NodeOptions {
    fn default() -> Self {
        Self {
            shutdown_timeout: Duration::from_secs(30),
            reconnect_initial: Duration::from_millis(200),
            reconnect_max: Duration::from_secs(10),
            clock_check_interval: Duration::from_secs(60),
        }
    }
}

/// The config's job name, checked.
pub(crate) fn job_name(config: &JobConfig) -> Result<JobName, EngineError> {
    JobName::new(config.job_name.as_str()).map_err(|e| EngineError::InvalidConfig {
        job: config.job_name.clone(),
        reason: format!("jobName: {e}"),
    })
}
