//! The web console: jobs at a glance, one job's live sharding map, servers, validated config
//! editing, operations and the execution history with a chart, served over HTTP by axum from a
//! JSON API on [`crate::ops`]. `shardcronctl console` serves it; [`router`] lets any other axum
//! server (a node's admin endpoint, say) mount it.
//!
//! ```text
//! browser ── GET /, /app.js, /style.css ───────────── embedded assets (no CDN)
//!         ── GET /api/... (JSON) ──────────────────── Ops reading the mirror + History
//!         ── POST /api/login (Bearer token) ───────── a session cookie (HttpOnly, SameSite=Strict)
//!         ── POST/PUT /api/... (operator, JSON) ───── Ops writes (version-checked, audited)
//!         ◀─ GET /api/events (server-sent events) ─── Live: one recursive watch feeds one mirror;
//!                                                    one snapshot per change shared by all pages
//!         (every request first passes the filter chain: host, token or cookie, role, audit)
//! ```
//!
//! | file | what it holds |
//! | --- | --- |
//! | `mod.rs` | [`Console`], [`ConsoleOptions`], [`ConsoleError`], [`router`] |
//! | `guard.rs` | the filter chain: host, authentication, authorisation, audit; login and the security headers |
//! | `auth.rs` | tokens and their [`Role`]s, login sessions, the delay after wrong tokens |
//! | `api.rs` | the JSON endpoints |
//! | `audit.rs` | the audit log's endpoint |
//! | `create.rs` | the "new job" form's endpoint: a SCRIPT or HTTP job for adopting nodes |
//! | `logs.rs` | a run's captured output for the History tab's viewer, and its live tail |
//! | `live.rs` | the session (re-opened when it expires), its mirror every page reads, and the change signal |
//! | `shared.rs` | one snapshot per change shared by every open page's event stream |
//! | `workflow.rs` | the workflow view's endpoint: the graph with each step's state in the workflow's newest run |
//! | `schedule.rs` | next fire times and trigger delays for the chart (pure) |
//! | `assets.rs` | the page, its script and style, compiled into the binary |
//!
//! Served within the bounds of the operations endpoints (`admin::serve`): request heads, their
//! timeout, the number and age of connections.
//!
//! Security (the filter chain in `guard.rs`): the console answers only the host names it serves
//! (its listen address, `localhost`, `127.0.0.1`, `[::1]`, `--allowed-host` names), so a page
//! reached through DNS rebinding gets `421`; every answer forbids framing and sniffing. Two roles:
//! the operator token reads and writes, the viewer token only reads. Tokens come from files or
//! the environment, never from a URL; the page logs in once (`POST /api/login` with the token) and
//! then carries an `HttpOnly`, `SameSite=Strict` session cookie that never holds the token. With
//! no token configured (allowed on loopback only) everyone who can reach the port is an operator,
//! but a state-changing request must be JSON and, when a browser names its `Origin`, come from the
//! console's own origin, so another web page cannot forge one. Config secrets are redacted in
//! every answer, and every write is recorded in the audit log of the history (when one is given).

mod api;
mod assets;
mod audit;
mod auth;
mod create;
mod guard;
mod live;
mod logs;
pub mod schedule;
mod shared;
mod stats;
mod workflow;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Router;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::history::{History, HistoryError};
use crate::registry::{Connector, RegistryError};
use crate::secret::Secret;

pub use auth::Role;
pub use live::Live;

/// How the console is served.
#[derive(Debug, Clone)]
pub struct ConsoleOptions {
    /// Where to listen (`127.0.0.1:0` picks a free port).
    pub listen: SocketAddr,
    /// The operator's token: reads and writes. Required when `listen` is not a loopback address.
    pub token: Option<Secret<String>>,
    /// The viewer's token: reads only.
    pub viewer_token: Option<Secret<String>>,
    /// More host names the console answers to (`name` on any port, `name:port`), e.g. the name
    /// of a reverse proxy in front of it.
    pub allowed_hosts: Vec<String>,
    /// The execution history to show (SQLite file or PostgreSQL URL); the audit log is written
    /// there too.
    pub history: Option<String>,
    /// The namespace shown in the page's title.
    pub namespace: String,
}

impl ConsoleOptions {
    /// Loopback on a free port, no token, no history: for tests and embedding.
    pub fn loopback(namespace: &str) -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            token: None,
            viewer_token: None,
            allowed_hosts: Vec::new(),
            history: None,
            namespace: namespace.to_owned(),
        }
    }

    /// Refuses an address other than loopback without an operator token, an empty token, one
    /// token for both roles, and an allowed host that is not a host name.
    pub fn check(&self) -> Result<(), ConsoleError> {
        let bad = |option, reason: &str| {
            Err(ConsoleError::BadOption {
                option,
                reason: reason.to_owned(),
            })
        };
        if self
            .token
            .as_ref()
            .is_some_and(|t| t.expose().trim().is_empty())
        {
            return bad("--token-file", "holds an empty token");
        }
        if self
            .viewer_token
            .as_ref()
            .is_some_and(|t| t.expose().trim().is_empty())
        {
            return bad("--viewer-token-file", "holds an empty token");
        }
        if self.token.is_some() && self.token == self.viewer_token {
            return bad(
                "--viewer-token-file",
                "holds the operator's token: give each role its own",
            );
        }
        if let Some(host) = self
            .allowed_hosts
            .iter()
            .find(|h| guard::split_host(h).is_none())
        {
            return bad(
                "--allowed-host",
                &format!("{host:?} is not a host name or host:port"),
            );
        }
        if self.token.is_none() && !self.listen.ip().is_loopback() {
            return bad(
                "--listen",
                &format!(
                    "{} is not a loopback address: set an operator token (--token-file or \
                     SHARDCRON_CONSOLE_TOKEN) so that no one else can operate the cluster",
                    self.listen
                ),
            );
        }
        Ok(())
    }
}

/// Why the console could not start or serve.
#[derive(Debug, thiserror::Error)]
pub enum ConsoleError {
    /// An option is refused.
    #[error("{option} {reason}")]
    BadOption {
        /// The option (`--listen`, `--token-file`, ...).
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

/// The console's access control: the names it serves, the tokens, the sessions and the delay
/// after wrong tokens.
#[derive(Debug)]
pub(crate) struct Access {
    pub(crate) hosts: guard::Hosts,
    pub(crate) tokens: auth::Tokens,
    pub(crate) sessions: auth::Sessions,
    pub(crate) throttle: auth::Throttle,
}

/// What the handlers share.
#[derive(Debug, Clone)]
pub(crate) struct ConsoleState {
    pub(crate) live: Live,
    pub(crate) history: Option<History>,
    pub(crate) access: Arc<Access>,
    pub(crate) shared: Arc<shared::Shared>,
    pub(crate) namespace: Arc<str>,
}

/// The console's routes over `live` (and `history`), behind the filter chain described in the
/// module docs, for mounting in another axum server that listens on `served`; `options` gives
/// the tokens, the extra host names and the namespace.
pub fn router(
    live: Live,
    history: Option<History>,
    options: &ConsoleOptions,
    served: SocketAddr,
) -> Router {
    let access = Access {
        hosts: guard::Hosts::new(served, &options.allowed_hosts),
        tokens: auth::Tokens::new(options.token.as_ref(), options.viewer_token.as_ref()),
        sessions: auth::Sessions::default(),
        throttle: auth::Throttle::default(),
    };
    let state = ConsoleState {
        live,
        history,
        access: Arc::new(access),
        shared: Arc::default(),
        namespace: Arc::from(options.namespace.as_str()),
    };
    Router::new()
        .nest("/api", api::routes())
        .merge(assets::routes())
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            guard::chain,
        ))
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
        if history.is_none() {
            tracing::warn!("the console has no --history: its operations are not audited");
        }
        let app = router(live.clone(), history.clone(), &options, addr);
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
            token: token.map(|t| Secret::new(t.to_owned())),
            ..ConsoleOptions::loopback("ns")
        }
    }

    #[test]
    fn an_address_off_loopback_needs_an_operator_token() {
        assert!(options("127.0.0.1:0", None).check().is_ok());
        assert!(options("[::1]:0", None).check().is_ok());
        let err = options("0.0.0.0:8899", None).check().unwrap_err();
        assert!(err.is_bad_input() && err.to_string().starts_with("--listen"));
        assert!(options("0.0.0.0:8899", Some("s3cret")).check().is_ok());
        let err = options("127.0.0.1:0", Some(" ")).check().unwrap_err();
        assert!(err.to_string().starts_with("--token-file"));
        let mut viewer_only = options("0.0.0.0:8899", None);
        viewer_only.viewer_token = Some(Secret::new("v".into()));
        assert!(
            viewer_only.check().is_err(),
            "a viewer token cannot write: no operator"
        );
        let mut same = options("127.0.0.1:0", Some("t"));
        same.viewer_token = Some(Secret::new("t".into()));
        assert!(same.check().unwrap_err().to_string().contains("each role"));
        let mut host = options("127.0.0.1:0", None);
        host.allowed_hosts = vec!["a/b".into()];
        assert!(host
            .check()
            .unwrap_err()
            .to_string()
            .starts_with("--allowed-host"));
    }
}
