//! [`NodeBuilder`]: a node's jobs, registry, identity and endpoints, checked and started.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use ractor::Actor;

use crate::clock::{SharedClock, SystemClock};
use crate::config::JobConfig;
use crate::decide::adopt::{AdoptPolicy, Adoption};
use crate::events::EventBus;
use crate::job::handlers::HandlerRegistry;
use crate::job::SharedHandler;
use crate::registry::mirror::Mirror;
use crate::registry::Connector;
use crate::sharding::StrategyRegistry;
use crate::types::InstanceId;

use super::handle::{with_labels, NodeHandle};
use super::{EngineError, NodeActor};
use crate::actors::context::NodeContext;
use crate::actors::endpoints::Endpoints;
use crate::actors::spec::{JobSpec, JobType, NodeOptions};

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
            let v = crate::actors::context::validate(&node, &spec.config, &spec.job_type)?;
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
