//! The node: [`NodeBuilder`] starts one instance, [`NodeHandle`] steers it, and the NodeActor at
//! the root of its tree restarts the RegistryActor when it fails.
//!
//! ```no_run
//! use std::sync::Arc;
//! use shardcron::config::JobConfig;
//! use shardcron::job::{FnJob, JobError, ShardingContext};
//! use shardcron::registry::embedded::EmbeddedServer;
//! use shardcron::node::NodeBuilder;
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let server = EmbeddedServer::new();
//! let node = NodeBuilder::new(Arc::new(server.connector("demo")))
//!     .instance_id("127.0.0.1@-@1".parse()?)
//!     .job(
//!         JobConfig::new("orders", 3).cron("0/5 * * * * ?"),
//!         "orders",
//!         Arc::new(FnJob(|ctx: ShardingContext| async move {
//!             println!("item {}", ctx.sharding_item);
//!             Ok::<(), JobError>(())
//!         })),
//!     )
//!     .start()
//!     .await?;
//! node.shutdown().await;
//! # Ok(()) }
//! ```

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent};

use crate::clock::{SharedClock, SystemClock};
use crate::config::JobConfig;
use crate::decide::adopt::{AdoptPolicy, Adoption};
use crate::events::{EventBus, Subscription};
use crate::job::handlers::HandlerRegistry;
use crate::job::SharedHandler;
use crate::registry::mirror::Mirror;
use crate::registry::Connector;
use crate::sharding::StrategyRegistry;
use crate::types::{InstanceId, JobName};

use super::context::NodeContext;
use super::spec::{JobSpec, JobType, NodeOptions};
use super::endpoints::{is_ready, Endpoints};
pub use super::error::EngineError;
use super::mail::RegistryMsg;
pub use super::mail::NodeMsg;
use super::registry::RegistryActor;

static NODE_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Builds and starts a node.
#[derive(Debug)]
pub struct NodeBuilder {
    connector: Arc<dyn Connector>,
    instance_id: Option<InstanceId>,
    jobs: Vec<JobSpec>,
    clock: SharedClock,
    strategies: StrategyRegistry,
    handlers: HandlerRegistry,
    options: NodeOptions,
    events: EventBus,
    metrics_addr: Option<std::net::SocketAddr>,
    admin_addr: Option<std::net::SocketAddr>,
    labels: Vec<String>,
    adopt: Option<AdoptPolicy>,
}

impl NodeBuilder {
    /// A node on the registry `connector` reaches (embedded or ZooKeeper).
    pub fn new(connector: Arc<dyn Connector>) -> Self {
        Self {
            connector,
            instance_id: None,
            jobs: Vec::new(),
            clock: Arc::new(SystemClock),
            strategies: StrategyRegistry::new(),
            handlers: HandlerRegistry::new(),
            options: NodeOptions::default(),
            events: EventBus::new(),
            metrics_addr: None,
            admin_addr: None,
            labels: Vec::new(),
            adopt: None,
        }
    }

    /// Runs the jobs created at runtime ([`crate::ops::Ops::create`], `shardcronctl create`, the
    /// console's form) whose type `policy` names, from within one fire of their creation: their
    /// config changes apply as any job's, and when one is removed its running items end before
    /// the node leaves it. A policy limited to a label ([`AdoptPolicy::only_labelled`]) adopts
    /// only jobs with that `label`, and gives this node the label. Jobs this node cannot run are
    /// left alone, and said so once in the log.
    ///
    /// ```no_run
    /// # use std::sync::Arc;
    /// # use shardcron::node::NodeBuilder;
    /// # use shardcron::registry::embedded::EmbeddedServer;
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// let node = NodeBuilder::new(Arc::new(EmbeddedServer::new().connector("demo")))
    ///     .adopt("script,http".parse()?)
    ///     .start()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn adopt(mut self, policy: AdoptPolicy) -> Self {
        self.adopt = Some(policy);
        self
    }

    /// This instance's labels (ElasticJob's `JobInstance.labels`), written in its
    /// `instances/{id}` node of every job: a job whose `label` names one of them may run here, a
    /// job with another label does not. Each label is ASCII letters, digits, `-`, `_` or `.`;
    /// [`NodeBuilder::start`] refuses others.
    pub fn labels<S: Into<String>>(mut self, labels: impl IntoIterator<Item = S>) -> Self {
        self.labels = labels.into_iter().map(Into::into).collect();
        self.labels.dedup();
        self
    }

    /// Serves Prometheus metrics (`GET /metrics`) on `addr`; off unless asked. Unauthenticated:
    /// pass a loopback address such as `127.0.0.1:0` (a free port, see
    /// [`NodeHandle::metrics_addr`]) unless scrapers must reach it from elsewhere. See
    /// [`crate::admin`].
    pub fn metrics(mut self, addr: std::net::SocketAddr) -> Self {
        self.metrics_addr = Some(addr);
        self
    }

    /// Serves `/healthz`, `/readyz` and `/dump/{job}` on `addr`; off unless asked. Unauthenticated
    /// and a dump shows every node's data: pass a loopback address such as `127.0.0.1:0` (see
    /// [`NodeHandle::admin_addr`]). See [`crate::admin`].
    pub fn admin(mut self, addr: std::net::SocketAddr) -> Self {
        self.admin_addr = Some(addr);
        self
    }

    /// The bus the node emits its events on (share one bus among several nodes, or subscribe
    /// later through [`NodeHandle::subscribe`]).
    pub fn event_bus(mut self, bus: EventBus) -> Self {
        self.events = bus;
        self
    }

    /// The instance id (default `{local ip}@-@{pid}`).
    pub fn instance_id(mut self, id: InstanceId) -> Self {
        self.instance_id = Some(id);
        self
    }

    /// Adds a job whose handler is compiled in, known by `type_name` in the job root.
    pub fn job(mut self, config: JobConfig, type_name: &str, handler: SharedHandler) -> Self {
        self.jobs.push(JobSpec {
            config: Arc::new(config),
            job_type: JobType::Named(type_name.to_owned()),
            handler,
        });
        self
    }

    /// Adds a job shared with Java ElasticJob instances that run class `class` on the same
    /// namespace (see [`JobSpec::shared_with_java`]); `handler` runs this instance's items.
    pub fn java_job(self, config: JobConfig, class: &str, handler: SharedHandler) -> Self {
        self.job_spec(
            JobSpec {
                config: Arc::new(config),
                job_type: JobType::Named(class.to_owned()),
                handler,
            }
            .shared_with_java(class),
        )
    }

    /// Adds a job described by a full spec (script jobs, for instance).
    pub fn job_spec(mut self, spec: JobSpec) -> Self {
        self.jobs.push(spec);
        self
    }

    /// The wall clock (tests use [`crate::clock::TokioClock`]).
    pub fn clock(mut self, clock: SharedClock) -> Self {
        self.clock = clock;
        self
    }

    /// The sharding strategies jobs may name (built-ins plus the user's).
    pub fn strategies(mut self, strategies: StrategyRegistry) -> Self {
        self.strategies = strategies;
        self
    }

    /// The error handlers and listeners jobs may name.
    pub fn handlers(mut self, handlers: HandlerRegistry) -> Self {
        self.handlers = handlers;
        self
    }

    /// Tunables.
    pub fn options(mut self, options: NodeOptions) -> Self {
        self.options = options;
        self
    }

    /// Validates the jobs, checks that the registry answers, and starts the node's actor tree.
    pub async fn start(self) -> Result<NodeHandle, EngineError> {
        self.start_under(None).await
    }

    /// Like [`NodeBuilder::start`], with the node's root actor linked under `supervisor`: the host
    /// receives the usual supervision events when the shardcron subtree fails or ends. For a graceful
    /// stop with the host's tree, the host calls `myself.stop_children_and_wait(..)` in its own
    /// `post_stop` (ractor kills children without their `post_stop` otherwise); the node then drains
    /// its running items (bounded by the shutdown timeout) and removes its ephemeral nodes.
    pub async fn start_linked(
        self,
        supervisor: ractor::ActorCell,
    ) -> Result<NodeHandle, EngineError> {
        self.start_under(Some(supervisor)).await
    }

    async fn start_under(
        self,
        supervisor: Option<ractor::ActorCell>,
    ) -> Result<NodeHandle, EngineError> {
        let instance_id = match self.instance_id {
            Some(id) => id,
            None => default_instance_id(),
        };
        let n = NODE_COUNTER.fetch_add(1, Ordering::Relaxed);
        let (metrics_addr, admin_addr) = (self.metrics_addr, self.admin_addr);
        let mut jobs = BTreeMap::new();
        let mut labels = self.labels;
        if let Some(label) = self.adopt.as_ref().and_then(AdoptPolicy::label) {
            if !labels.iter().any(|l| l == label) {
                labels.push(label.to_owned());
            }
        }
        for label in &labels {
            crate::sharding::check_label(label).map_err(EngineError::InvalidLabel)?;
        }
        check_workflow(&self.jobs)?;
        let adoption = self
            .adopt
            .map(|policy| Mutex::new(Adoption::new(policy, labels.clone())));
        let labels: Arc<[String]> = labels.into();
        let node = Arc::new(NodeContext {
            instance_id: instance_id.clone(),
            connector: self.connector.clone(),
            clock: self.clock,
            strategies: Arc::new(self.strategies),
            handlers: Arc::new(self.handlers),
            mirror: Mirror::new(),
            jobs: Mutex::new(BTreeMap::new()),
            options: self.options,
            name_prefix: format!("shardcron/{instance_id}/{n}"),
            events: self.events,
            clock_skew_ms: Default::default(),
            adoption,
        });
        for mut spec in self.jobs {
            with_labels(&mut spec, &labels);
            let v = super::context::validate(&node, &spec.config, &spec.job_type)?;
            jobs.insert(v.job_name().clone(), Arc::new(spec));
        }
        *node.jobs.lock().unwrap_or_else(|p| p.into_inner()) = jobs;
        // Fail with a clear error when the registry stays unreachable at start; later outages are
        // retried by the RegistryActor.
        probe_registry(&*node.connector)
            .await
            .map_err(|source| EngineError::Connect {
                target: node.connector.describe(),
                source,
            })?;
        // Bound before the actors start, so a taken port fails the start with nothing to undo.
        let endpoints = Arc::new(Endpoints::start(&node, metrics_addr, admin_addr).await?);
        let name = Some(node.actor_name("node"));
        let spawned = match supervisor {
            Some(sup) => Actor::spawn_linked(name, NodeActor, node.clone(), sup).await,
            None => Actor::spawn(name, NodeActor, node.clone()).await,
        };
        let (actor, _) = spawned.map_err(|e| EngineError::Actor(e.to_string()))?;
        endpoints.attach(actor.clone());
        Ok(NodeHandle {
            actor,
            node,
            endpoints,
            labels,
        })
    }
}

/// How long a node's start waits for the registry to answer, trying again meanwhile, as
/// ElasticJob's registry center waits at its init (`maxSleepTimeMilliseconds` x `maxRetries`,
/// 3 s x 3). A registry that is briefly away (an ensemble electing a leader refuses clients for a
/// second or two) does not fail the start; one still unreachable after it does.
pub(crate) const START_CONNECT_WITHIN: std::time::Duration = std::time::Duration::from_secs(9);

/// The first pause between two connection attempts at start; each later one doubles, up to
/// [`MAX_START_PAUSE`].
const FIRST_START_PAUSE: std::time::Duration = std::time::Duration::from_millis(200);
const MAX_START_PAUSE: std::time::Duration = std::time::Duration::from_secs(2);

/// Opens a session and closes it again: the start's check that the registry answers. A refused
/// connection is tried again until [`START_CONNECT_WITHIN`] has passed; the last error is returned.
async fn probe_registry(connector: &dyn Connector) -> Result<(), crate::registry::RegistryError> {
    let deadline = tokio::time::Instant::now() + START_CONNECT_WITHIN;
    let mut pause = FIRST_START_PAUSE;
    loop {
        match connector.connect().await {
            Ok(probe) => {
                probe.close().await;
                return Ok(());
            }
            Err(e @ crate::registry::RegistryError::Connect { .. })
                if tokio::time::Instant::now() + pause < deadline =>
            {
                tracing::warn!(target = %connector.describe(), error = %e, retry_in = ?pause,
                    "the registry does not answer yet; trying again");
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(MAX_START_PAUSE);
            }
            Err(e) => return Err(e),
        }
    }
}

fn default_instance_id() -> InstanceId {
    let ip = std::net::UdpSocket::bind("0.0.0.0:0")
        .and_then(|s| s.connect("192.0.2.1:9").map(|_| s))
        .and_then(|s| s.local_addr())
        .map(|a| a.ip().to_string())
        .unwrap_or_else(|_| "127.0.0.1".to_owned());
    InstanceId::new(&ip, &std::process::id().to_string())
        .unwrap_or_else(|_| InstanceId::parse("127.0.0.1@-@0").expect("constant id parses"))
}

/// Steers a running node.
#[derive(Debug, Clone)]
pub struct NodeHandle {
    actor: ActorRef<NodeMsg>,
    node: Arc<NodeContext>,
    endpoints: Arc<Endpoints>,
    labels: Arc<[String]>,
}

/// Gives a job's spec the node's labels, unless the spec names its own, and a fixed time zone
/// its Java spelling (`UTC` is written `GMT`: see [`JobConfig::spell_time_zone_for_java`]).
fn with_labels(spec: &mut JobSpec, labels: &[String]) {
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

/// The NodeActor: the root of a node's tree.
#[derive(Debug)]
pub struct NodeActor;

/// State of the NodeActor.
#[derive(Debug)]
pub struct NodeState {
    node: Arc<NodeContext>,
    registry: Option<ActorRef<RegistryMsg>>,
    restarts: std::collections::VecDeque<tokio::time::Instant>,
}

/// More restarts of the registry actor than this within [`RESTART_WINDOW`] fail the node, so the
/// host's supervisor learns that the subtree cannot recover on its own.
const MAX_RESTARTS: usize = 5;
/// See [`MAX_RESTARTS`].
const RESTART_WINDOW: std::time::Duration = std::time::Duration::from_secs(30);

impl NodeState {
    async fn restart_registry(
        &mut self,
        myself: &ActorRef<NodeMsg>,
        why: &str,
    ) -> Result<(), ActorProcessingErr> {
        let now = tokio::time::Instant::now();
        self.restarts
            .retain(|t| now.duration_since(*t) < RESTART_WINDOW);
        if self.restarts.len() >= MAX_RESTARTS {
            return Err(format!(
                "registry actor ended {} times within {RESTART_WINDOW:?} (last: {why}); giving up",
                self.restarts.len() + 1
            )
            .into());
        }
        self.restarts.push_back(now);
        tracing::warn!(reason = %why, "registry actor ended; restarting it with a new session");
        self.spawn_registry(myself).await
    }

    async fn spawn_registry(
        &mut self,
        myself: &ActorRef<NodeMsg>,
    ) -> Result<(), ActorProcessingErr> {
        let (r, _) = Actor::spawn_linked(
            Some(self.node.actor_name("registry")),
            RegistryActor,
            self.node.clone(),
            myself.get_cell(),
        )
        .await?;
        self.registry = Some(r);
        Ok(())
    }
}

impl Actor for NodeActor {
    type Msg = NodeMsg;
    type State = NodeState;
    type Arguments = Arc<NodeContext>;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        node: Arc<NodeContext>,
    ) -> Result<Self::State, ActorProcessingErr> {
        let mut state = NodeState {
            node,
            registry: None,
            restarts: Default::default(),
        };
        state.spawn_registry(&myself).await?;
        Ok(state)
    }

    async fn handle(
        &self,
        _myself: ActorRef<Self::Msg>,
        msg: NodeMsg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        // Reply ports go on to the current RegistryActor; none while it restarts.
        let Some(registry) = &state.registry else {
            answer_without_registry(msg);
            return Ok(());
        };
        let forwarded = match msg {
            NodeMsg::AddJob(spec, reply) => RegistryMsg::AddJob(spec, reply),
            NodeMsg::RemoveJob(job, reply) => RegistryMsg::RemoveJob(job, reply),
            NodeMsg::Trigger(job, reply) => RegistryMsg::Trigger(job, reply),
            NodeMsg::Executor(job, reply) => RegistryMsg::Executor(job, reply),
            NodeMsg::ReadySession(reply) => RegistryMsg::ReadySession(reply),
            NodeMsg::Session(reply) => RegistryMsg::Session(reply),
        };
        // A registry actor that just ended drops the reply port: the caller hears "no reply".
        let _ = registry.send_message(forwarded);
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<Self::Msg>,
        evt: SupervisionEvent,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        let current = state.registry.as_ref().map(|r| r.get_id());
        let why = match &evt {
            SupervisionEvent::ActorFailed(cell, e) if Some(cell.get_id()) == current => {
                e.to_string()
            }
            SupervisionEvent::ActorTerminated(cell, _, reason)
                if Some(cell.get_id()) == current =>
            {
                reason.clone().unwrap_or_else(|| "terminated".to_owned())
            }
            _ => return Ok(()),
        };
        // One helper for failed and terminated alike; past the restart intensity this returns an
        // error, which fails the node and tells the host's supervisor.
        state.restart_registry(&myself, &why).await?;
        Ok(())
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<Self::Msg>,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        if let Some(r) = state.registry.take() {
            // The registry actor drains the executors and closes the session in its post_stop.
            let _ = r.stop_and_wait(Some("node stopping".into()), None).await;
        }
        Ok(())
    }
}

/// Answers a request that came while the RegistryActor restarts.
fn answer_without_registry(msg: NodeMsg) {
    match msg {
        NodeMsg::AddJob(_, r) | NodeMsg::RemoveJob(_, r) | NodeMsg::Trigger(_, r) => {
            let _ = r.send(Err(EngineError::NoSession));
        }
        NodeMsg::Executor(_, r) => drop(r.send(Err(EngineError::NoSession))),
        NodeMsg::ReadySession(r) => drop(r.send(None)),
        NodeMsg::Session(r) => drop(r.send(None)),
    }
}

/// Refuses to start jobs whose `shardcron.after` make a cycle among themselves, naming it (a
/// cycle through jobs of other nodes is refused when a config is written through the ops API).
fn check_workflow(jobs: &[JobSpec]) -> Result<(), EngineError> {
    use crate::decide::workflow::graph::{dependency_from_props, Graph, GraphError};
    let declared = jobs.iter().filter_map(|spec| {
        let name = crate::types::JobName::new(spec.config.job_name.as_str()).ok()?;
        let dependency = dependency_from_props(&spec.config.props).unwrap_or_default();
        Some((name, dependency))
    });
    Graph::new(declared).map(|_| ()).map_err(|e| {
        let job = match &e {
            GraphError::SelfDependency { job } => job.to_string(),
            GraphError::Cycle { path } => path.first().map(|j| j.to_string()).unwrap_or_default(),
        };
        EngineError::InvalidConfig {
            job,
            reason: e.to_string(),
        }
    })
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use async_trait::async_trait;

    use super::*;
    use crate::registry::embedded::EmbeddedServer;
    use crate::registry::{Registry, RegistryError};

    /// Refuses `refusals` connections (as an ensemble electing a leader does), then connects.
    #[derive(Debug)]
    struct Refusing {
        refusals: usize,
        tried: AtomicUsize,
        registry: EmbeddedServer,
    }

    #[async_trait]
    impl Connector for Refusing {
        async fn connect(&self) -> Result<Arc<dyn Registry>, RegistryError> {
            if self.tried.fetch_add(1, Ordering::Relaxed) < self.refusals {
                return Err(RegistryError::Connect {
                    target: self.describe(),
                    reason: "no available hosts".into(),
                });
            }
            self.registry.connector("probe").connect().await
        }

        fn describe(&self) -> String {
            "refusing".into()
        }
    }

    fn refusing(refusals: usize) -> Refusing {
        Refusing {
            refusals,
            tried: AtomicUsize::new(0),
            registry: EmbeddedServer::new(),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_start_waits_out_a_registry_that_refuses_connections_for_a_few_seconds() {
        let connector = refusing(4);
        let started = tokio::time::Instant::now();
        probe_registry(&connector)
            .await
            .expect("connected on the fifth try");
        assert_eq!(connector.tried.load(Ordering::Relaxed), 5);
        // 0.2 + 0.4 + 0.8 + 1.6 s of pauses.
        assert_eq!(started.elapsed(), std::time::Duration::from_millis(3000));
    }

    #[tokio::test(start_paused = true)]
    async fn a_start_fails_with_the_last_error_once_the_registry_stayed_unreachable() {
        let connector = refusing(usize::MAX);
        let started = tokio::time::Instant::now();
        let err = probe_registry(&connector).await.unwrap_err();
        assert!(matches!(err, RegistryError::Connect { .. }), "{err:?}");
        assert!(started.elapsed() <= START_CONNECT_WITHIN);
        assert!(started.elapsed() >= START_CONNECT_WITHIN - MAX_START_PAUSE);
    }
}
