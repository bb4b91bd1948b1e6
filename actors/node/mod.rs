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

mod builder;
mod handle;

use std::sync::Arc;

use ractor::{Actor, ActorCell, ActorProcessingErr, ActorRef};

use super::context::NodeContext;
use super::mail::RegistryMsg;
use super::registry::RegistryActor;

pub use super::error::EngineError;
pub use super::mail::NodeMsg;
use super::Handled;
pub use builder::NodeBuilder;
pub use handle::NodeHandle;

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

supervisor_actor!(NodeActor: NodeMsg, NodeState, Arc<NodeContext>);

impl NodeState {
    /// The state of a new NodeActor, its RegistryActor spawned.
    async fn started(
        myself: &ActorRef<NodeMsg>,
        node: Arc<NodeContext>,
    ) -> Result<Self, ActorProcessingErr> {
        let mut state = NodeState {
            node,
            registry: None,
            restarts: Default::default(),
        };
        state.spawn_registry(myself).await?;
        Ok(state)
    }

    /// Reply ports go on to the current RegistryActor; none while it restarts.
    async fn handle(&mut self, _myself: &ActorRef<NodeMsg>, msg: NodeMsg) -> Handled {
        let Some(registry) = &self.registry else {
            answer_without_registry(msg);
            return Ok(());
        };
        // A registry actor that just ended drops the reply port: the caller hears "no reply".
        let _ = registry.send_message(RegistryMsg::Request(msg));
        Ok(())
    }

    /// A child ended: when it is the current RegistryActor, it is restarted (one helper for failed
    /// and terminated alike; past the restart intensity this returns an error, which fails the
    /// node and tells the host's supervisor).
    async fn child_ended(
        &mut self,
        myself: &ActorRef<NodeMsg>,
        cell: ActorCell,
        why: String,
    ) -> Handled {
        if self.registry.as_ref().map(|r| r.get_id()) != Some(cell.get_id()) {
            return Ok(());
        }
        let why = if why.is_empty() {
            "terminated".to_owned()
        } else {
            why
        };
        self.restart_registry(myself, &why).await
    }

    /// The registry actor drains the executors and closes the session in its post_stop.
    async fn stopping(&mut self, _myself: &ActorRef<NodeMsg>) -> Handled {
        if let Some(r) = self.registry.take() {
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
