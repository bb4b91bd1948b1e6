//! [`NodeHandle`]: what a host holds of a running node; its requests go to the NodeActor.

use std::sync::Arc;

use ractor::{ActorRef, RpcReplyPort};

use crate::events::Subscription;
use crate::registry::mirror::Mirror;
use crate::types::{InstanceId, JobName};

use super::{EngineError, NodeMsg};
use crate::actors::context::NodeContext;
use crate::actors::endpoints::{is_ready, Endpoints};
use crate::actors::spec::JobSpec;

/// Steers a running node.
#[derive(Debug, Clone)]
pub struct NodeHandle {
    pub(super) actor: ActorRef<NodeMsg>,
    pub(super) node: Arc<NodeContext>,
    pub(super) endpoints: Arc<Endpoints>,
    pub(super) labels: Arc<[String]>,
}

/// Gives a job's spec the node's labels, unless the spec names its own, and a fixed time zone
/// its Java spelling (`UTC` is written `GMT`: see [`JobConfig::spell_time_zone_for_java`]).
pub(super) fn with_labels(spec: &mut JobSpec, labels: &[String]) {
    if spec.config.instance_labels.is_empty() && !labels.is_empty() {
        Arc::make_mut(&mut spec.config).instance_labels = labels.to_vec();
    }
    let zone = spec.config.time_zone.as_deref().map(str::trim);
    if zone.and_then(crate::timezone::java_spelling).is_some() {
        Arc::make_mut(&mut spec.config).spell_time_zone_for_java();
    }
}

impl NodeHandle {
    /// This node's instance id.
    pub fn instance_id(&self) -> &InstanceId {
        &self.node.instance_id
    }

    /// This node's labels ([`NodeBuilder::labels`]).
    pub fn labels(&self) -> &[String] {
        &self.labels
    }

    /// The node's mirror of the namespace (read-only use).
    pub fn mirror(&self) -> &Mirror {
        &self.node.mirror
    }

    /// The registered name of one of this node's actors: `node`, `registry`, `trigger`, `leader`,
    /// `sharding` or `failover` (names are scoped per node, so several nodes and the host's own
    /// actors share a process without collisions). The per-job executors are unnamed (a name would
    /// cost memory per job): reach one through [`NodeHandle::executor`].
    pub fn actor_name(&self, what: &str) -> String {
        self.node.actor_name(what)
    }

    /// The root actor, for linking into a host's supervision tree.
    pub fn actor(&self) -> &ActorRef<NodeMsg> {
        &self.actor
    }

    async fn ask<T: Send + 'static>(
        &self,
        make: impl FnOnce(RpcReplyPort<Result<T, EngineError>>) -> NodeMsg,
    ) -> Result<T, EngineError> {
        self.actor
            .call(make, None)
            .await
            .map_err(|e| EngineError::Actor(e.to_string()))?
            .success_or(EngineError::Actor("no reply".into()))?
    }

    /// Adds a job at runtime.
    pub async fn add_job(&self, mut spec: JobSpec) -> Result<(), EngineError> {
        with_labels(&mut spec, &self.labels);
        self.ask(|r| NodeMsg::AddJob(Box::new(spec), r)).await
    }

    /// Removes a job from this node (the job stays in the registry for the other instances).
    pub async fn remove_job(&self, job: &JobName) -> Result<(), EngineError> {
        let job = job.clone();
        self.ask(|r| NodeMsg::RemoveJob(job, r)).await
    }

    /// Runs every item this instance owns of `job` once, now (queued behind a running run).
    pub async fn trigger(&self, job: &JobName) -> Result<(), EngineError> {
        let job = job.clone();
        self.ask(|r| NodeMsg::Trigger(job, r)).await
    }

    /// The cell of `job`'s ExecutorActor on the current session, for supervision and diagnostics:
    /// a host may monitor it, read its status, or kill it to exercise the engine's restart. The
    /// executor is unnamed, so this is the way to it; the cell is that of the executor running now
    /// (a restart, or a new session, replaces it). Fails with [`EngineError::NoSession`] while no
    /// session is open and [`EngineError::UnknownJob`] for a job this node does not run.
    pub async fn executor(&self, job: &JobName) -> Result<ractor::ActorCell, EngineError> {
        let job = job.clone();
        self.ask(|r| NodeMsg::Executor(job, r)).await
    }

    /// Subscribes to the node's events with a queue of `capacity`; overflow is counted, never
    /// blocking a job.
    pub fn subscribe(&self, name: &str, capacity: usize) -> Subscription {
        self.node.events.subscribe(name, capacity)
    }

    /// Whether the node is ready as `/readyz` answers: a session is open, the mirror in sync, and
    /// every job of the node registered on that session.
    pub async fn is_ready(&self) -> bool {
        is_ready(&self.node, &self.actor).await
    }

    /// The address `GET /metrics` is served on, when [`NodeBuilder::metrics`] asked for it.
    pub fn metrics_addr(&self) -> Option<std::net::SocketAddr> {
        self.endpoints.metrics.as_ref().map(|s| s.local_addr())
    }

    /// The address of the admin endpoints, when [`NodeBuilder::admin`] asked for them.
    pub fn admin_addr(&self) -> Option<std::net::SocketAddr> {
        self.endpoints.admin.as_ref().map(|s| s.local_addr())
    }

    /// Stops gracefully: stop firing, let running items finish (up to the shutdown timeout), then
    /// close the session so this instance's ephemerals go at once.
    pub async fn shutdown(&self) {
        let _ = self
            .actor
            .stop_and_wait(Some("shutdown".into()), None)
            .await;
        // After the drain, so scrapes and probes answer while items finish.
        self.endpoints.shutdown().await;
    }
}
