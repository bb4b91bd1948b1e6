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
use crate::config::{JobConfig, JobKind, ValidatedConfig, ValidationContext};
use crate::decide::lifecycle::WriteMode;
use crate::events::EventBus;
use crate::job::handlers::HandlerRegistry;
use crate::paths::JobNode;
use crate::registry::mirror::{FeedRoots, Mirror};
use crate::registry::{Connector, NodeEventKind, Op, Registry, RegistryError};
use crate::sharding::StrategyRegistry;
use crate::types::{InstanceId, JobName};

use super::error::EngineError;
use super::spec::{JobSpec, JobType, NodeOptions};
use super::writes::{apply_each_tolerant, apply_ops, WriteBatcher};

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
    pub(crate) adoption: AdoptionSlot,
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

/// The decisions on jobs created at runtime, when the node adopts such jobs.
pub(crate) type AdoptionSlot = Option<Mutex<crate::decide::adopt::Adoption>>;

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
    pub(crate) writes: WriteBatcher,
    /// What the mirror watches: a job's config that names upstreams or balances over the
    /// namespace widens it ([`crate::decide::scope`]).
    pub(crate) roots: FeedRoots,
    /// Permits of the executors registering their jobs ([`REGISTERING_AT_ONCE`]).
    pub(crate) registering: Arc<tokio::sync::Semaphore>,
}

/// Jobs that register side by side on a session: their writes pipelined, not one after another;
/// a few hundred at a time fill the pipeline without holding every job's registration in memory
/// at once. 512 at a time left about 18 MB more freed-but-retained heap behind at 10,000 jobs
/// (bench scenario 4: 159 MB resident against 142 MB at 128) for no faster start: the
/// registrations share the same batched writes either way.
pub(crate) const REGISTERING_AT_ONCE: usize = 128;

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
            silence: self.registry.silence(),
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
            // (The executor queues a `Submitted` write and hears its outcome as a message.)
            WriteMode::Batched | WriteMode::Submitted => self.writes.apply(ops).await,
            WriteMode::Direct => self.apply(&ops).await,
            WriteMode::Tolerant => apply_each_tolerant(&*self.registry, &ops).await,
        }
    }
}

/// Validates a config with the names this node knows; the validated config shares `config`.
pub(crate) fn validate(
    node: &NodeContext,
    config: &Arc<JobConfig>,
    job_type: &JobType,
) -> Result<ValidatedConfig, EngineError> {
    let strategies = node.strategies.names();
    let handler_names = node.handlers.error_handler_names();
    let handlers: Vec<&str> = handler_names.iter().map(String::as_str).collect();
    let kind = match job_type {
        JobType::Script => JobKind::Script,
        JobType::Named(_) => JobKind::Simple,
        JobType::Java { kind, .. } => *kind,
    };
    let ctx = ValidationContext {
        strategies: &strategies,
        error_handlers: &handlers,
        kind,
    };
    let valid =
        JobConfig::validate_shared(config, &ctx).map_err(|e| EngineError::InvalidConfig {
            job: config.job_name.clone(),
            reason: e.to_string(),
        })?;
    // The notifier follows the config validated last: the local one at start, the registry's
    // at registration and at every change.
    node.handlers.notifiers().configure(
        valid.job_name(),
        valid.error_handler(),
        &valid.config().props,
    );
    Ok(valid)
}

/// The node's jobs, locked (a poisoned lock is taken over: the map holds no invariant a panic
/// could break).
pub(crate) fn lock_jobs(
    node: &NodeContext,
) -> std::sync::MutexGuard<'_, std::collections::BTreeMap<JobName, Arc<JobSpec>>> {
    node.jobs.lock().unwrap_or_else(|p| p.into_inner())
}
