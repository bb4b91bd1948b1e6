//! The web console: jobs at a glance, one job's live sharding map, servers, validated config
//! editing, operations and the execution history with a chart, served over HTTP by axum from a
//! JSON API on [`crate::ops`]. `shardcronctl console` serves it; [`router`] lets any other axum
//! server (a node's admin endpoint, say) mount it.
//!
//! ```text
//! browser ── GET /, /app.js, /style.css ───────────── embedded assets (no CDN)
//!         ── GET /api/... (JSON) ──────────────────── Ops (listings of the registry) + History
//!         ── POST/PUT /api/... (token, JSON) ──────── Ops writes (version-checked config)
//!         ◀─ GET /api/events (server-sent events) ─── Live: one recursive watch on the namespace
//! ```
//!
//! | file | what it holds |
//! | --- | --- |
//! | `mod.rs` | [`Console`], [`ConsoleOptions`], [`ConsoleError`], [`router`], the write guard |
//! | `api.rs` | the JSON endpoints |
//! | `live.rs` | the session (re-opened when it expires) and the change signal behind the event stream |
//! | `schedule.rs` | next fire times and trigger delays for the chart (pure) |
//! | `assets.rs` | the page, its script and style, compiled into the binary |
//!
//! Served within the bounds of the operations endpoints (`admin::serve`): request heads, their
//! timeout, the number and age of connections.
//!
//! Security: the console listens on loopback unless told otherwise, and an address other than
//! loopback requires a token. When a token is set, every `/api` request must carry it
//! (`Authorization: Bearer TOKEN`; the event stream, which browsers open without headers, may take
//! `?token=`): a config may hold credentials, so reads are guarded too. Every state-changing
//! request must be JSON (`Content-Type: application/json`) and, when the browser names an
//! `Origin`, come from the console's own origin, so another web page cannot forge one.

mod api;
mod assets;
mod live;
pub mod schedule;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Router;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::history::{History, HistoryError};
use crate::registry::{Connector, RegistryError};

pub use live::Live;

/// How the console is served.
#[derive(Debug, Clone)]
pub struct ConsoleOptions {
    /// Where to listen (`127.0.0.1:0` picks a free port).
    pub listen: SocketAddr,
    /// The token requests must carry; required when `listen` is not a loopback address.
    pub token: Option<String>,
    /// The execution history to show (SQLite file or PostgreSQL URL).
    pub history: Option<String>,
    /// The namespace shown in the page's title.
    pub namespace: String,
}

impl ConsoleOptions {
    /// Refuses an address other than loopback without a token, and an empty token.
    pub fn check(&self) -> Result<(), ConsoleError> {
        match &self.token {
            Some(t) if t.trim().is_empty() => Err(ConsoleError::BadOption {
                option: "--token",
                reason: "is empty".to_owned(),
            }),
            None if !self.listen.ip().is_loopback() => Err(ConsoleError::BadOption {
                option: "--listen",
                reason: format!(
                    "{} is not a loopback address: set a token (--token or SHARDCRON_CONSOLE_TOKEN) \
                     so that no one else can operate the cluster",
                    self.listen
                ),
            }),
            _ => Ok(()),
        }
    }
}

/// Why the console could not start or serve.
#[derive(Debug, thiserror::Error)]
pub enum ConsoleError {
    /// An option is refused.
    #[error("{option} {reason}")]
    BadOption {
        /// The option (`--listen`, `--token`).
        option: &'static str,
        /// Why.
        reason: String,
    },
    /// Opening the registry session.
    #[error("connecting to the registry {target}: {source}")]
    Connect {
        /// The connector's description.
        target: String,
        /// The registry's error.
        #[source]
        source: RegistryError,
    },
    /// Watching the namespace for changes.
    #[error("watching the namespace")]
    Watch(#[source] crate::registry::mirror::MirrorError),
    /// Opening the history.
    #[error("opening the history")]
    History(#[source] HistoryError),
    /// Binding the listener.
    #[error("listening on {addr}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

impl ConsoleError {
    /// Whether the error is the caller's input (exit code 2 in the CLI).
    pub fn is_bad_input(&self) -> bool {
        matches!(self, Self::BadOption { .. })
    }
}

/// What the handlers share.
#[derive(Debug, Clone)]
pub(crate) struct ConsoleState {
    pub(crate) live: Live,
    pub(crate) history: Option<History>,
    pub(crate) token: Option<Arc<str>>,
    pub(crate) namespace: Arc<str>,
}

/// The console's routes over `live` (and `history`), for mounting in another axum server.
/// `token`, when given, guards every `/api` request as described in the module docs.
pub fn router(
    live: Live,
    history: Option<History>,
    token: Option<String>,
    namespace: &str,
) -> Router {
    let state = ConsoleState {
        live,
        history,
        token: token.map(Arc::from),
        namespace: Arc::from(namespace),
    };
    let api = api::routes().layer(axum::middleware::from_fn_with_state(state.clone(), guard));
    Router::new()
        .nest("/api", api)
        .merge(assets::routes())
        .with_state(state)
}

/// A running console.
#[derive(Debug)]
pub struct Console {
    addr: SocketAddr,
    stop: CancellationToken,
    server: JoinHandle<()>,
    live: Live,
    history: Option<History>,
}

impl Console {
    /// Checks the options, opens the registry session (and the history), binds and serves.
    pub async fn start(
        connector: Arc<dyn Connector>,
        options: ConsoleOptions,
    ) -> Result<Self, ConsoleError> {
        options.check()?;
        let history = match &options.history {
            Some(target) => Some(History::open(target).await.map_err(ConsoleError::History)?),
            None => None,
        };
        let live = Live::start(connector).await?;
        let listener =
            TcpListener::bind(options.listen)
                .await
                .map_err(|source| ConsoleError::Bind {
                    addr: options.listen,
                    source,
                })?;
        let addr = listener.local_addr().map_err(|source| ConsoleError::Bind {
            addr: options.listen,
            source,
        })?;
        let app = router(
            live.clone(),
            history.clone(),
            options.token.clone(),
            &options.namespace,
        );
        let stop = CancellationToken::new();
        let shutdown = stop.clone();
        // The operations endpoints' bounded server: request heads of at most 8 KiB within 5 s,
        // 32 connections, each closed after two minutes (an open page's event stream then
        // reconnects by itself). Bodies are bounded by axum's 2 MB default.
        let server = tokio::spawn(crate::admin::serve::serve(listener, app, shutdown));
        Ok(Self {
            addr,
            stop,
            server,
            live,
            history,
        })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops serving (open event streams end), closes the session and the history.
    pub async fn stop(self) {
        self.stop.cancel();
        self.live.stop().await;
        let _ = self.server.await;
        if let Some(history) = self.history {
            history.close().await;
        }
    }
}

/// Refuses `/api` requests without the token (when one is set) and forged writes.
async fn guard(State(state): State<ConsoleState>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    if let Some(token) = &state.token {
        let query_token = (request.uri().path() == "/events")
            .then(|| query_token(request.uri().query()))
            .flatten();
        let given = bearer(headers).or(query_token);
        if !given.is_some_and(|g| same(g.as_bytes(), token.as_bytes())) {
            return api::refusal(
                StatusCode::UNAUTHORIZED,
                "a token is required: Authorization: Bearer TOKEN",
            );
        }
    }
    if request.method() != Method::GET && request.method() != Method::HEAD {
        if let Err(why) = same_origin_json(headers) {
            return api::refusal(StatusCode::FORBIDDEN, why);
        }
    }
    next.run(request).await
}

fn bearer(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    value.strip_prefix("Bearer ").map(|t| t.trim().to_owned())
}

fn query_token(query: Option<&str>) -> Option<String> {
    query?.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        (k == "token").then(|| percent_decode(v))
    })
}

fn percent_decode(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push((h * 16 + l) as u8);
                    i += 3;
                    continue;
                }
                _ => out.push(b'%'),
            },
            b'+' => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Compares in time independent of where the inputs differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A write must be JSON (a cross-site form cannot send it without a preflight this server never
/// answers) and, when the browser names its origin, come from this console's own host.
fn same_origin_json(headers: &HeaderMap) -> Result<(), &'static str> {
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !json {
        return Err("a state-changing request must be sent as application/json");
    }
    if let Some(origin) = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()) {
        let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
        let origin_host = origin.split_once("://").map(|(_, h)| h);
        if origin_host.is_none() || origin_host != host {
            return Err("a state-changing request must come from the console's own page");
        }
    }
    Ok(())
}

impl IntoResponse for ConsoleError {
    fn into_response(self) -> Response {
        api::refusal(StatusCode::INTERNAL_SERVER_ERROR, &self.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(listen: &str, token: Option<&str>) -> ConsoleOptions {
        ConsoleOptions {
            listen: listen.parse().unwrap(),
            token: token.map(str::to_owned),
            history: None,
            namespace: "ns".into(),
        }
    }

    #[test]
    fn an_address_off_loopback_needs_a_token() {
        assert!(options("127.0.0.1:0", None).check().is_ok());
        assert!(options("[::1]:0", None).check().is_ok());
        let err = options("0.0.0.0:8899", None).check().unwrap_err();
        assert!(err.is_bad_input() && err.to_string().starts_with("--listen"));
        assert!(options("0.0.0.0:8899", Some("s3cret")).check().is_ok());
        let err = options("127.0.0.1:0", Some(" ")).check().unwrap_err();
        assert!(err.to_string().starts_with("--token"));
    }

    #[test]
    fn writes_must_be_json_from_the_consoles_own_origin() {
        let mut h = HeaderMap::new();
        assert!(same_origin_json(&h).is_err());
        h.insert(header::CONTENT_TYPE, "application/json".parse().unwrap());
        assert!(same_origin_json(&h).is_ok());
        h.insert(header::HOST, "127.0.0.1:8899".parse().unwrap());
        h.insert(header::ORIGIN, "http://127.0.0.1:8899".parse().unwrap());
        assert!(same_origin_json(&h).is_ok());
        h.insert(header::ORIGIN, "http://evil.example".parse().unwrap());
        assert!(same_origin_json(&h).is_err());
    }

    #[test]
    fn tokens_come_from_the_header_or_the_event_streams_query() {
        let mut h = HeaderMap::new();
        h.insert(header::AUTHORIZATION, "Bearer a b".parse().unwrap());
        assert_eq!(bearer(&h).as_deref(), Some("a b"));
        assert_eq!(
            query_token(Some("job=x&token=a%20b")).as_deref(),
            Some("a b")
        );
        assert_eq!(query_token(Some("job=x")), None);
        assert!(same(b"abc", b"abc") && !same(b"abc", b"abd") && !same(b"ab", b"abc"));
    }
}
