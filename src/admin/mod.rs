//! Operations endpoints of a node: a Prometheus scrape endpoint and an admin endpoint, each on its
//! own address and off unless asked for (`NodeBuilder::metrics(addr)`, `NodeBuilder::admin(addr)`).
//!
//! | endpoint | answer |
//! | --- | --- |
//! | `GET /metrics` (metrics address) | this node's counters and histograms (and the process's, on the process's oldest metrics endpoint), then its gauges |
//! | `GET /healthz` (admin address) | `200 ok` while the process serves |
//! | `GET /readyz` | `200` when the session is connected, the mirror synced and every job of the node registered on that session, else `503` naming what is missing |
//! | `GET /dump/{job}[?format=json]` | the job's nodes in the mirror beside the registry's, differences marked; `404` for an unknown job |
//!
//! `HEAD` works wherever `GET` does; other methods get `405`. Neither endpoint authenticates: bind
//! them to loopback (`127.0.0.1:0` picks a free port, read it back with `NodeHandle::metrics_addr`
//! / `admin_addr`) or to an interface only operators reach. A dump reads the registry and shows
//! every node's data, configuration included.
//!
//! Layout: `serve` runs an axum router on hyper within size and time bounds; `routes` holds the
//! routers and handlers; `scrape` the recorder, each node's share of it and the gauges; `stream`
//! a response body rendered on a blocking thread and sent in chunks as it is written; [`ready`]
//! the readiness decision; [`dump`] the pure mirror/registry comparison; this file the server's
//! life. The admin layer sees the node only through [`NodeProbe`], so it does not import the
//! actor layer.

pub mod dump;
pub mod ready;
mod routes;
mod scrape;
pub(crate) mod serve;
mod stream;

use std::fmt;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use axum::Router;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::registry::mirror::Mirror;
use crate::registry::{Registry, RegistryError};
use crate::types::{InstanceId, JobName};

pub use self::scrape::{
    prometheus_handle, render_node_gauges, NodeSeries, RecorderError, SECONDS_BUCKETS,
};

/// What the endpoints read from a node.
#[async_trait]
pub trait NodeProbe: Send + Sync + fmt::Debug + 'static {
    /// The node's instance id (the `instance_id` label of its series).
    fn instance_id(&self) -> &InstanceId;
    /// The node's mirror of the namespace.
    fn mirror(&self) -> &Mirror;
    /// The jobs the node runs.
    fn jobs(&self) -> Vec<JobName>;
    /// The id of the connected registry session, when the mirror is synced with it; `None`
    /// while there is no such session.
    async fn ready_session(&self) -> Option<i64>;
    /// The node's own registry session, for reads that must reach the registry itself (dumps);
    /// `None` while the node has none.
    async fn session(&self) -> Option<Arc<dyn Registry>>;
}

/// Errors of starting an endpoint, each naming the step.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    /// The address could not be bound.
    #[error("binding the {endpoint} endpoint to {addr} failed")]
    Bind {
        /// `metrics` or `admin`.
        endpoint: &'static str,
        /// The address asked for.
        addr: SocketAddr,
        /// The socket error.
        #[source]
        source: std::io::Error,
    },
    /// The Prometheus recorder could not be installed.
    #[error("starting the metrics endpoint failed")]
    Recorder(#[source] RecorderError),
}

/// How long a dump may read the registry.
const DUMP_TIMEOUT: Duration = Duration::from_secs(10);

/// Errors of a dump, each naming the step; answered with `502`.
#[derive(Debug, thiserror::Error)]
enum DumpError {
    #[error("the node has no registry session now")]
    NoSession,
    #[error("listing {path} in the registry took longer than {} s", DUMP_TIMEOUT.as_secs())]
    TimedOut { path: String },
    #[error("another dump is being read; try again")]
    Busy,
    #[error("listing {path} in the registry failed")]
    List {
        path: String,
        #[source]
        source: RegistryError,
    },
}

/// One running endpoint server. Stopped by [`EndpointServer::shutdown`], or when dropped.
#[derive(Debug)]
pub struct EndpointServer {
    addr: SocketAddr,
    stop: CancellationToken,
    task: Mutex<Option<JoinHandle<()>>>,
}

impl EndpointServer {
    /// Serves `GET /metrics` on `addr`: the process's Prometheus recorder (installed on first use)
    /// and the gauges of `probe`'s node.
    pub async fn metrics(addr: SocketAddr, probe: Arc<dyn NodeProbe>) -> Result<Self, AdminError> {
        let handle = prometheus_handle().map_err(AdminError::Recorder)?;
        let stop = CancellationToken::new();
        // Without the exporter's own HTTP listener nothing drains histogram samples into their
        // buckets; each metrics server does it, so it happens while anyone may scrape.
        let upkeep = handle.clone();
        let upkeep_stop = stop.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(5));
            loop {
                tokio::select! {
                    _ = upkeep_stop.cancelled() => return,
                    _ = tick.tick() => upkeep.run_upkeep(),
                }
            }
        });
        let state = routes::MetricsState {
            handle,
            probe,
            turn: scrape::ProcessSeriesTurn::join(),
        };
        Self::start("metrics", addr, routes::metrics(Arc::new(state)), &[], stop).await
    }

    /// Serves `/healthz`, `/readyz` and `/dump/{job}` on `addr` for `probe`'s node.
    pub async fn admin(addr: SocketAddr, probe: Arc<dyn NodeProbe>) -> Result<Self, AdminError> {
        let stop = CancellationToken::new();
        Self::start(
            "admin",
            addr,
            routes::admin(probe),
            serve::HEALTH_PROBES,
            stop,
        )
        .await
    }

    async fn start(
        endpoint: &'static str,
        addr: SocketAddr,
        router: Router,
        probes: &'static [&'static str],
        stop: CancellationToken,
    ) -> Result<Self, AdminError> {
        let bind = |source| AdminError::Bind {
            endpoint,
            addr,
            source,
        };
        let listener = TcpListener::bind(addr).await.map_err(bind)?;
        let bound = listener.local_addr().map_err(bind)?;
        tracing::info!(%bound, endpoint, "operations endpoint listening");
        let task = tokio::spawn(serve::serve_with_probes(
            listener,
            router,
            probes,
            stop.clone(),
        ));
        Ok(Self {
            addr: bound,
            stop,
            task: Mutex::new(Some(task)),
        })
    }

    /// The address bound (the actual port when port 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting and waits until the listener is closed. Open connections are asked to close
    /// once their current response is written.
    pub async fn shutdown(&self) {
        self.stop.cancel();
        let task = self.task.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(task) = task {
            let _ = task.await;
        }
    }
}

impl Drop for EndpointServer {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}
