//! What the actors of one node share: the node's identity and registries of strategies and
//! handlers ([`NodeContext`], lives as long as the node), and per session the registry session,
//! its write batcher and the jobs' current configs ([`SessionCtx`]). No actor refs: those are
//! handed down the tree.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dashmap::DashMap;

use crate::clock::SharedClock;
use crate::config::{JobConfig, ValidatedConfig};
use crate::decide::lifecycle::WriteMode;
use crate::events::EventBus;
use crate::job::handlers::HandlerRegistry;
use crate::job::SharedHandler;
use crate::paths::JobNode;
use crate::registry::mirror::Mirror;
use crate::registry::{Connector, NodeEventKind, Op, Registry, RegistryError};
use crate::sharding::StrategyRegistry;
use crate::types::{InstanceId, JobName};

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

/// Everything that lives as long as the node.
#[derive(Debug)]
pub struct NodeContext {
    /// This instance.
    pub instance_id: InstanceId,
    /// Opens sessions.
    pub connector: Arc<dyn Connector>,
    /// Wall-clock time.
    pub clock: SharedClock,
    /// Sharding strategies by name.
    pub strategies: Arc<StrategyRegistry>,
    /// Error handlers and listeners by name.
    pub handlers: Arc<HandlerRegistry>,
    /// The local copy of the namespace, fed by the current session.
    pub mirror: Mirror,
    /// The jobs this node runs; replayed on every new session.
    pub jobs: Mutex<BTreeMap<JobName, Arc<JobSpec>>>,
    /// Tunables.
    pub options: NodeOptions,
    /// Engine events to subscribers (history, host actors).
    pub events: EventBus,
    /// Prefix of this node's actor names, so several nodes share a process without collisions.
    pub name_prefix: String,
    /// The last measured difference between the local and the registry's clock, in milliseconds
    /// (`u64::MAX` until measured).
    pub clock_skew_ms: AtomicU64Default,
    /// Which jobs created at runtime this node adopts, and what it did with each (`None`: it
    /// adopts none).
    pub(crate) adoption: super::adopt::AdoptionSlot,
}

/// An `AtomicU64` that starts at `u64::MAX` ("not measured").
#[derive(Debug)]
pub struct AtomicU64Default(pub AtomicU64);

impl Default for AtomicU64Default {
    fn default() -> Self {
        Self(AtomicU64::new(u64::MAX))
    }
}

impl NodeContext {
    /// The last measured clock skew, if any.
    pub fn clock_skew(&self) -> Option<Duration> {
        match self.clock_skew_ms.0.load(Ordering::Relaxed) {
            u64::MAX => None,
            ms => Some(Duration::from_millis(ms)),
        }
    }

    /// A scoped actor name: `{prefix}/{what}`.
    pub fn actor_name(&self, what: &str) -> String {
        format!("{}/{what}", self.name_prefix)
    }
}

/// A registry change on one node of one job, as the actors receive it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct JobEvent {
    /// The job.
    pub(crate) job: JobName,
    /// The node.
    pub(crate) node: JobNode,
    /// What happened to it.
    pub(crate) kind: NodeEventKind,
}

/// The configuration each job of the session runs with now (its last valid one), written by the
/// job's executor, read by the leader, sharding and failover actors. Data, not actor refs: actors
/// reach each other only through the handles they were given.
pub(crate) type JobConfigs = DashMap<JobName, Arc<ValidatedConfig>>;

/// What the actors of one session share.
#[derive(Debug, Clone)]
pub(crate) struct SessionCtx {
    /// The node.
    pub(crate) node: Arc<NodeContext>,
    /// The session.
    pub(crate) registry: Arc<dyn Registry>,
    /// The jobs' current configs.
    pub(crate) configs: Arc<JobConfigs>,
    /// Run markers of concurrent runs, combined into multi-ops.
    pub(crate) writes: super::batch::WriteBatcher,
}

impl SessionCtx {
    /// This instance.
    pub(crate) fn me(&self) -> &InstanceId {
        &self.node.instance_id
    }

    /// The mirror.
    pub(crate) fn mirror(&self) -> &Mirror {
        &self.node.mirror
    }

    /// What a job's machine reads: the mirror and the clock, no registry call.
    pub(crate) fn facts<'a>(&'a self, job: &'a JobName) -> crate::view::MirrorFacts<'a> {
        crate::view::MirrorFacts {
            mirror: self.mirror(),
            job,
            me: self.me(),
            clock: &self.node.clock,
            skew: self.node.clock_skew(),
            view: std::cell::OnceCell::new(),
        }
    }

    pub(crate) fn config(&self, job: &JobName) -> Option<Arc<ValidatedConfig>> {
        self.configs.get(job).map(|c| c.clone())
    }

    /// Applies operations: nothing for none, a plain call for one, a multi-op for several.
    pub(crate) async fn apply(&self, ops: &[Op]) -> Result<(), RegistryError> {
        apply_ops(&*self.registry, ops).await
    }

    /// Raises `job`'s resharding flag with `op` (`leader/sharding/necessary`): true when the flag is
    /// up now, created here or already there; a failure is logged and answers false.
    pub(crate) async fn raise_flag(&self, job: &JobName, op: Op) -> bool {
        match self.apply(&[op]).await {
            Ok(()) => true,
            Err(e) if e.is_node_exists() => true,
            Err(e) => {
                tracing::warn!(%job, error = %e, "raising the resharding flag failed");
                false
            }
        }
    }

    /// Applies operations as a job's machine asked: batched with the session's other writes of
    /// the moment, directly, or op by op tolerating nodes already as wanted.
    pub(crate) async fn write(&self, ops: Vec<Op>, mode: WriteMode) -> Result<(), RegistryError> {
        match mode {
            WriteMode::Batched => self.writes.apply(ops).await,
            WriteMode::Direct => self.apply(&ops).await,
            WriteMode::Tolerant => apply_each_tolerant(&*self.registry, &ops).await,
        }
    }
}

/// Applies operations: nothing for none, a plain call for one, a multi-op for several. The
/// result is the registry's error, typed, so callers can tell a lost race from a failure.
pub(crate) async fn apply_ops(registry: &dyn Registry, ops: &[Op]) -> Result<(), RegistryError> {
    match ops {
        [] => Ok(()),
        [Op::Create { path, data, mode }] => registry.create(path, data, *mode).await.map(|_| ()),
        [Op::Set {
            path,
            data,
            version,
        }] => registry.set(path, data, *version).await.map(|_| ()),
        [Op::Delete { path, version }] => registry.delete(path, *version).await,
        _ => registry.multi(ops).await.map(|_| ()),
    }
}

/// Applies operations one by one, tolerating nodes that are already as wanted (created by someone
/// else, or already gone). For clean-ups after a failed multi-op, where markers may have vanished
/// with an old session.
pub(crate) async fn apply_each_tolerant(
    registry: &dyn Registry,
    ops: &[Op],
) -> Result<(), RegistryError> {
    for op in ops {
        match apply_ops(registry, std::slice::from_ref(op)).await {
            Ok(()) => {}
            Err(e) if e.is_no_node() || e.is_node_exists() => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
