//! The endpoints' routes and handlers, as axum routers: `GET /metrics` on the metrics address,
//! `GET /healthz`, `/readyz` and `/dump/{job}` on the admin address. axum answers `HEAD` for every
//! `GET` route (same head, no body) and `405` with an `Allow` header for other methods.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::{header, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use metrics_exporter_prometheus::PrometheusHandle;

use super::dump::{diff, mirror_only, JobDump, NodeCopy};
use super::scrape::{render_node_gauges, NodeSeries, ProcessSeriesTurn};
use super::stream::streamed;
use super::{ready, DumpError, NodeProbe};
use crate::paths::JobNode;
use crate::types::JobName;

/// How long `/readyz` (and a scrape's session gauges) wait for the engine's answer: a node too
/// busy to answer within it is not ready to be sent work either.
const READY_TIMEOUT: Duration = Duration::from_secs(2);

/// The Prometheus text format's content type.
const METRICS_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// What the metrics routes read.
pub(crate) struct MetricsState {
    pub(crate) handle: PrometheusHandle,
    pub(crate) probe: Arc<dyn NodeProbe>,
    pub(crate) turn: ProcessSeriesTurn,
}

/// `GET /metrics`; anything else is `404`.
pub(crate) fn metrics(state: Arc<MetricsState>) -> Router {
    Router::new()
        .route("/metrics", get(scrape))
        .fallback(|| async {
            text(
                StatusCode::NOT_FOUND,
                "not found: this endpoint serves /metrics\n".to_owned(),
            )
        })
        .with_state(state)
}

/// `GET /healthz`, `/readyz`, `/dump/{job}`; anything else is `404`.
pub(crate) fn admin(probe: Arc<dyn NodeProbe>) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .route("/dump/{job}", get(dump))
        .fallback(|uri: Uri| async move {
            text(
                StatusCode::NOT_FOUND,
                format!("not found: {}\n", uri.path()),
            )
        })
        .with_state(probe)
}

fn text(status: StatusCode, body: String) -> Response {
    (status, body).into_response()
}

/// A scrape: the recorder's rendering through this node's filter, then the gauges, rendered on a
/// blocking thread and streamed in chunks as they are written, so that at ten thousand jobs no
/// copy of the answer is held (the exporter's own snapshot of its series is). A `HEAD` renders
/// nothing: a streamed body left unread would cost the connection.
async fn scrape(method: Method, State(state): State<Arc<MetricsState>>) -> Response {
    let head = [(header::CONTENT_TYPE, METRICS_CONTENT_TYPE)];
    if method == Method::HEAD {
        return head.into_response();
    }
    let session = tokio::time::timeout(READY_TIMEOUT, state.probe.ready_session())
        .await
        .unwrap_or(None);
    let body = streamed("metrics", move |out| {
        let probe = &state.probe;
        state.handle.run_upkeep();
        let mut series = NodeSeries::new(
            &mut *out,
            probe.instance_id(),
            state.turn.serves_process_series(),
        );
        state.handle.render_to_write(&mut series)?;
        series.finish()?;
        render_node_gauges(
            out,
            probe.mirror(),
            probe.instance_id(),
            &probe.jobs(),
            session,
        )
    });
    (head, body).into_response()
}

async fn readyz(State(probe): State<Arc<dyn NodeProbe>>) -> Response {
    let Ok(session) = tokio::time::timeout(READY_TIMEOUT, probe.ready_session()).await else {
        return text(
            StatusCode::SERVICE_UNAVAILABLE,
            "not ready: the engine did not answer in time\n".to_owned(),
        );
    };
    let readiness = ready::read(probe.mirror(), probe.instance_id(), session, &probe.jobs());
    let status = if readiness.is_ready() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    text(status, format!("{readiness}\n"))
}

async fn dump(
    State(probe): State<Arc<dyn NodeProbe>>,
    Path(job): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let json = match query.get("format").map(String::as_str) {
        None | Some("text") => false,
        Some("json") => true,
        Some(other) => {
            return text(
                StatusCode::BAD_REQUEST,
                format!("format {other:?}: use text or json\n"),
            )
        }
    };
    let Ok(job) = JobName::new(&job) else {
        return text(StatusCode::NOT_FOUND, format!("no job named {job:?}\n"));
    };
    let root = JobNode::Root.to_path(&job);
    // Whether the mirror claims sync is read before the copy, so a dump that says "in sync"
    // really was taken from a synced mirror.
    let synced = probe.mirror().is_synced();
    let mirrored = probe.mirror().snapshot(&root);
    let listed = match list(probe.as_ref(), &root).await {
        Ok(listed) => Ok(listed),
        Err(e @ DumpError::Busy) => return text(StatusCode::SERVICE_UNAVAILABLE, format!("{e}\n")),
        Err(e) => Err(crate::secret::error_chain(&e)),
    };
    if mirrored.is_empty() && listed.as_ref().is_ok_and(Vec::is_empty) {
        return text(
            StatusCode::NOT_FOUND,
            format!("no job named {job} in the registry\n"),
        );
    }
    let mirrored = mirrored
        .into_iter()
        .map(|(path, n)| (path, NodeCopy::new(&n.data, &n.stat)));
    let (entries, unread) = match listed {
        Ok(listed) => (
            diff(
                mirrored,
                listed
                    .into_iter()
                    .map(|n| (n.path, NodeCopy::new(&n.data, &(&n.stat).into()))),
            ),
            None,
        ),
        Err(why) => (mirror_only(mirrored), Some(why)),
    };
    let config = JobNode::Config.to_path(&job);
    let entries = entries
        .into_iter()
        .map(|entry| super::dump::redact(entry, &config))
        .collect();
    let mut dump = JobDump::new(
        job.to_string(),
        probe.instance_id().to_string(),
        synced,
        entries,
    );
    if let Some(why) = unread {
        dump = dump.registry_unread(why);
    }
    if !json {
        return text(StatusCode::OK, dump.to_text());
    }
    match serde_json::to_string_pretty(&dump) {
        Ok(body) => ([(header::CONTENT_TYPE, "application/json")], body).into_response(),
        Err(e) => text(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("rendering the dump as JSON failed: {e}\n"),
        ),
    }
}

/// Lists `root` through the node's own session (no session of its own per request), one dump at
/// a time per process and within [`DUMP_TIMEOUT`](super::DUMP_TIMEOUT): a dump must show what the
/// registry holds, not only what this node believes, without letting its clients load the
/// registry.
async fn list(
    probe: &dyn NodeProbe,
    root: &str,
) -> Result<Vec<crate::registry::ListedNode>, DumpError> {
    static ONE_AT_A_TIME: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(1);
    let _turn = ONE_AT_A_TIME.try_acquire().map_err(|_| DumpError::Busy)?;
    let session = probe.session().await.ok_or(DumpError::NoSession)?;
    let listed = tokio::time::timeout(super::DUMP_TIMEOUT, session.list_subtree(root))
        .await
        .map_err(|_| DumpError::TimedOut {
            path: root.to_owned(),
        })?;
    match listed {
        Ok(nodes) => Ok(nodes),
        Err(e) if e.is_no_node() => Ok(Vec::new()),
        Err(source) => Err(DumpError::List {
            path: root.to_owned(),
            source,
        }),
    }
}
