//! Operations endpoints of a node: a Prometheus scrape endpoint and an admin endpoint, each on its
//! own address and off unless asked for (`NodeBuilder::metrics(addr)`, `NodeBuilder::admin(addr)`).
//!
//! | endpoint | answer |
//! | --- | --- |
//! | `GET /metrics` (metrics address) | the process's counters and histograms, then this node's gauges |
//! | `GET /healthz` (admin address) | `200 ok` while the process serves |
//! | `GET /readyz` | `200` when the session is connected and the mirror synced, else `503` |
//! | `GET /dump/{job}[?format=json]` | the job's nodes in the mirror beside the registry's, differences marked; `404` for an unknown job |
//!
//! Neither endpoint authenticates: bind them to loopback (`127.0.0.1:0` picks a free port, read it
//! back with `NodeHandle::metrics_addr` / `admin_addr`) or to an interface only operators reach.
//! A dump reads the registry and shows every node's data, configuration included.
//!
//! Layout: `http` is a tiny HTTP/1.1 server (one `GET` per connection); `scrape` holds the
//! recorder and the gauges; [`dump`] the pure mirror/registry comparison; this file the routes.
//! The admin layer sees the node only through [`NodeProbe`], so it does not import the actor layer.

pub mod dump;
mod http;
mod scrape;

use std::fmt;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::paths::JobNode;
use crate::registry::mirror::Mirror;
use crate::registry::{Connector, RegistryError};
use crate::types::{InstanceId, JobName};

use self::dump::{diff, JobDump, NodeCopy};
use self::http::{Handler, Request, Response};
pub use self::scrape::{prometheus_handle, render_node_gauges, RecorderError, SECONDS_BUCKETS};

/// How long `/readyz` waits for the engine's answer before reporting not ready: a node too busy
/// to answer within it is not ready to be sent work either.
const READY_TIMEOUT: Duration = Duration::from_secs(2);

/// What the endpoints read from a node.
#[async_trait]
pub trait NodeProbe: Send + Sync + fmt::Debug + 'static {
    /// The node's instance id (the `instance` label of the gauges).
    fn instance_id(&self) -> &InstanceId;
    /// The node's mirror of the namespace.
    fn mirror(&self) -> &Mirror;
    /// The jobs the node runs.
    fn jobs(&self) -> Vec<JobName>;
    /// Whether a session is connected and the mirror synced with it.
    async fn is_ready(&self) -> bool;
    /// Opens sessions for reads that must reach the registry itself (dumps).
    fn connector(&self) -> Arc<dyn Connector>;
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

/// Errors of a dump, each naming the step; answered with `502`.
#[derive(Debug, thiserror::Error)]
enum DumpError {
    #[error("opening a registry session for the dump failed")]
    Connect(#[source] RegistryError),
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
        Self::start(
            "metrics",
            addr,
            Arc::new(MetricsRoutes { handle, probe }),
            stop,
        )
        .await
    }

    /// Serves `/healthz`, `/readyz` and `/dump/{job}` on `addr` for `probe`'s node.
    pub async fn admin(addr: SocketAddr, probe: Arc<dyn NodeProbe>) -> Result<Self, AdminError> {
        let stop = CancellationToken::new();
        Self::start("admin", addr, Arc::new(AdminRoutes { probe }), stop).await
    }

    async fn start(
        endpoint: &'static str,
        addr: SocketAddr,
        handler: Arc<dyn Handler>,
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
        let task = tokio::spawn(http::serve(listener, handler, stop.clone()));
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

    /// Stops accepting and waits until the listener is closed. Requests being answered finish on
    /// their own.
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

/// `GET /metrics`.
struct MetricsRoutes {
    handle: metrics_exporter_prometheus::PrometheusHandle,
    probe: Arc<dyn NodeProbe>,
}

#[async_trait]
impl Handler for MetricsRoutes {
    async fn get(&self, req: Request) -> Response {
        if req.path != "/metrics" {
            return Response::text(404, "not found: this endpoint serves /metrics\n");
        }
        self.handle.run_upkeep();
        let mut body = self.handle.render();
        render_node_gauges(
            &mut body,
            self.probe.mirror(),
            self.probe.instance_id(),
            &self.probe.jobs(),
        );
        Response {
            status: 200,
            content_type: "text/plain; version=0.0.4; charset=utf-8",
            body,
        }
    }
}

/// `GET /healthz`, `/readyz`, `/dump/{job}`.
struct AdminRoutes {
    probe: Arc<dyn NodeProbe>,
}

#[async_trait]
impl Handler for AdminRoutes {
    async fn get(&self, req: Request) -> Response {
        match req.path.as_str() {
            "/healthz" => Response::text(200, "ok\n"),
            "/readyz" => match tokio::time::timeout(READY_TIMEOUT, self.probe.is_ready()).await {
                Ok(true) => Response::text(200, "ready\n"),
                Ok(false) => Response::text(
                    503,
                    "not ready: no connected registry session with a synced mirror\n",
                ),
                Err(_) => Response::text(503, "not ready: the engine did not answer in time\n"),
            },
            path => match path.strip_prefix("/dump/") {
                Some(job) => self.dump(job, req.query_param("format")).await,
                None => Response::text(404, format!("not found: {path}\n")),
            },
        }
    }
}

impl AdminRoutes {
    async fn dump(&self, job: &str, format: Option<&str>) -> Response {
        let json = match format {
            None | Some("text") => false,
            Some("json") => true,
            Some(other) => {
                return Response::text(400, format!("format {other:?}: use text or json\n"))
            }
        };
        let Ok(job) = JobName::new(job) else {
            return Response::text(404, format!("no job named {job:?}\n"));
        };
        let root = JobNode::Root.to_path(&job);
        // Whether the mirror claims sync is read before the copy, so a dump that says "in sync"
        // really was taken from a synced mirror.
        let synced = self.probe.mirror().is_synced();
        let mirrored = self.probe.mirror().snapshot(&root);
        let listed = match self.list(&root).await {
            Ok(listed) => listed,
            Err(e) => return Response::text(502, format!("{}\n", error_chain(&e))),
        };
        if mirrored.is_empty() && listed.is_empty() {
            return Response::text(404, format!("no job named {job} in the registry\n"));
        }
        let entries = diff(
            mirrored
                .into_iter()
                .map(|(path, n)| (path, NodeCopy::new(&n.data, &n.stat))),
            listed
                .into_iter()
                .map(|n| (n.path, NodeCopy::new(&n.data, &(&n.stat).into()))),
        );
        let dump = JobDump::new(
            job.to_string(),
            self.probe.instance_id().to_string(),
            synced,
            entries,
        );
        if json {
            match serde_json::to_string_pretty(&dump) {
                Ok(body) => Response::json(200, body),
                Err(e) => Response::text(500, format!("rendering the dump as JSON failed: {e}\n")),
            }
        } else {
            Response::text(200, dump.to_text())
        }
    }

    /// Lists `root` through a session of its own: the node's session belongs to its actors, and a
    /// dump must show what the registry holds, not what this node believes.
    async fn list(&self, root: &str) -> Result<Vec<crate::registry::ListedNode>, DumpError> {
        let session = self
            .probe
            .connector()
            .connect()
            .await
            .map_err(DumpError::Connect)?;
        let listed = session.list_subtree(root).await;
        session.close().await;
        match listed {
            Ok(nodes) => Ok(nodes),
            Err(e) if e.is_no_node() => Ok(Vec::new()),
            Err(source) => Err(DumpError::List {
                path: root.to_owned(),
                source,
            }),
        }
    }
}

/// An error and its sources, `: `-separated, for a plain-text answer.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut next = e.source();
    while let Some(s) = next {
        out.push_str(": ");
        out.push_str(&s.to_string());
        next = s.source();
    }
    out
}
