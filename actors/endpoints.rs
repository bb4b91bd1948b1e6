//! The node's HTTP endpoints (metrics, health, dump), started and stopped with it.

use std::sync::{Arc, OnceLock};

use crate::registry::mirror::Mirror;
use crate::registry::Registry;
use crate::types::{InstanceId, JobName};

use ractor::ActorRef;

use super::context::NodeContext;
use super::error::EngineError;
use super::mail::NodeMsg;

/// The node's operations endpoints, those it was asked for.
#[derive(Debug, Default)]
pub(crate) struct Endpoints {
    pub(crate) metrics: Option<crate::admin::EndpointServer>,
    pub(crate) admin: Option<crate::admin::EndpointServer>,
    /// The NodeActor the probes ask, set once it runs (the servers bind before it starts, so a
    /// taken port fails the start with nothing to undo).
    node_actor: Arc<OnceLock<ActorRef<NodeMsg>>>,
}

impl Endpoints {
    pub(crate) async fn start(
        node: &Arc<NodeContext>,
        metrics: Option<std::net::SocketAddr>,
        admin: Option<std::net::SocketAddr>,
    ) -> Result<Self, EngineError> {
        use crate::admin::EndpointServer;
        let mut out = Self::default();
        let probe: Arc<dyn crate::admin::NodeProbe> =
            Arc::new(Probe(node.clone(), out.node_actor.clone()));
        if let Some(addr) = metrics {
            let server = EndpointServer::metrics(addr, probe.clone()).await;
            out.metrics = Some(server.map_err(EngineError::Endpoint)?);
        }
        if let Some(addr) = admin {
            out.admin = Some(
                EndpointServer::admin(addr, probe)
                    .await
                    .map_err(EngineError::Endpoint)?,
            );
        }
        Ok(out)
    }

    /// The NodeActor started: the probes ask it from now on.
    pub(crate) fn attach(&self, actor: ActorRef<NodeMsg>) {
        let _ = self.node_actor.set(actor);
    }

    pub(crate) async fn shutdown(&self) {
        for server in self.metrics.iter().chain(&self.admin) {
            server.shutdown().await;
        }
    }
}

/// What the endpoints read from the node (the admin layer does not know the actors).
#[derive(Debug)]
struct Probe(Arc<NodeContext>, Arc<OnceLock<ActorRef<NodeMsg>>>);

#[async_trait::async_trait]
impl crate::admin::NodeProbe for Probe {
    fn instance_id(&self) -> &InstanceId {
        &self.0.instance_id
    }

    fn mirror(&self) -> &Mirror {
        &self.0.mirror
    }

    fn jobs(&self) -> Vec<JobName> {
        let jobs = self.0.jobs.lock().unwrap_or_else(|p| p.into_inner());
        jobs.keys().cloned().collect()
    }

    async fn ready_session(&self) -> Option<i64> {
        ready_session(self.1.get()?).await
    }

    async fn session(&self) -> Option<Arc<dyn Registry>> {
        ractor::call!(self.1.get()?, NodeMsg::Session).unwrap_or(None)
    }
}

/// The connected session's id while the mirror is synced with it.
async fn ready_session(actor: &ActorRef<NodeMsg>) -> Option<i64> {
    ractor::call!(actor, NodeMsg::ReadySession).unwrap_or(None)
}

/// Whether the node is ready, as `/readyz` answers: a connected session with a synced mirror, and
/// every job of the node registered on that session.
pub(crate) async fn is_ready(node: &NodeContext, actor: &ActorRef<NodeMsg>) -> bool {
    let session = ready_session(actor).await;
    let jobs: Vec<JobName> = {
        let jobs = node.jobs.lock().unwrap_or_else(|p| p.into_inner());
        jobs.keys().cloned().collect()
    };
    crate::admin::ready::read(&node.mirror, &node.instance_id, session, &jobs).is_ready()
}
