//! The embedded registry: an in-process tree with ZooKeeper's semantics, used when no ZooKeeper is
//! configured and in tests.
//!
//! - [`EmbeddedServer`] holds one tree (cheap to clone, shared by every session).
//! - [`EmbeddedConnector`] opens [`EmbeddedSession`]s on a namespace, which they see as their root,
//!   like a ZooKeeper chroot.
//! - Fault injection for tests: [`EmbeddedServer::expire`], [`EmbeddedServer::disconnect`],
//!   [`EmbeddedServer::reconnect`], [`EmbeddedServer::fail_next`]; [`EmbeddedServer::op_counts`]
//!   counts the traffic for benchmarks.
//!
//! Internals: `tree` (nodes and atomic transactions), `state` (sessions, watches, faults, all behind
//! one `std::sync::Mutex` that is never held across an await), `session` (the [`Registry`](crate::registry::Registry) impl).
//!
//! ```
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! use shardcron::registry::{embedded::EmbeddedServer, CreateMode, Registry};
//! let server = EmbeddedServer::new();
//! let session = server.connector("demo").open();
//! session.create("/orders", b"SCRIPT", CreateMode::Persistent).await.unwrap();
//! assert_eq!(session.get("/orders").await.unwrap().0, b"SCRIPT");
//! # });
//! ```

mod session;
mod state;
#[cfg(test)]
mod tests;
mod tree;
#[cfg(test)]
mod tree_tests;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub use session::EmbeddedSession;

use self::state::{Fault, ServerState};
use crate::registry::{OpKind, SessionState};

/// The session timeout a connector negotiates unless told otherwise (ZooKeeper's usual 10 s).
pub const DEFAULT_SESSION_TIMEOUT: Duration = Duration::from_secs(10);

/// One in-process registry tree. Clones share the tree.
#[derive(Debug, Clone, Default)]
pub struct EmbeddedServer {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    state: Mutex<ServerState>,
    counts: [AtomicU64; OpKind::ALL.len()],
}

impl Default for Inner {
    fn default() -> Self {
        Self {
            state: Mutex::new(ServerState::new()),
            counts: Default::default(),
        }
    }
}

impl EmbeddedServer {
    /// A server holding only the root node.
    pub fn new() -> Self {
        Self::default()
    }

    /// A connector whose sessions see `/{namespace}` as their root. The namespace may be empty (the
    /// whole tree) or nested (`a/b`).
    pub fn connector(&self, namespace: &str) -> EmbeddedConnector {
        let trimmed = namespace.trim_matches('/');
        EmbeddedConnector {
            server: self.clone(),
            chroot: if trimmed.is_empty() {
                String::new()
            } else {
                format!("/{trimmed}")
            },
            session_timeout: DEFAULT_SESSION_TIMEOUT,
        }
    }

    /// Ends a session as a server-side timeout would: its ephemerals are deleted (with events to
    /// other sessions), its state becomes `Expired`, its watch streams get `Session(Expired)` and
    /// end, and every later call returns [`crate::registry::RegistryError::SessionExpired`].
    pub fn expire(&self, session_id: i64) {
        self.lock()
            .transition(session_id, SessionState::Expired, now_millis());
    }

    /// Ends a session's watch streams without a session state, as a ZooKeeper client does when it
    /// cannot renew a recursive watch after a reconnect; the session itself lives on.
    pub fn end_watches(&self, session_id: i64) {
        self.lock().end_watches(session_id);
    }

    /// Cuts a session's connection: calls fail fast with `ConnectionLoss`, node events for its
    /// watches are lost (as in ZooKeeper), and unless [`Self::reconnect`] comes first the session
    /// expires after its negotiated timeout, measured on `tokio::time` so paused-time tests can
    /// advance it. Without a tokio runtime there is no timer and the session waits for a reconnect.
    pub fn disconnect(&self, session_id: i64) {
        let armed = {
            let mut state = self.lock();
            state.transition(session_id, SessionState::Disconnected, now_millis());
            state
                .sessions
                .get(&session_id)
                .filter(|s| s.state == SessionState::Disconnected)
                .map(|s| (s.timeout, s.disconnects))
        };
        let (Some((timeout, epoch)), Ok(runtime)) = (armed, tokio::runtime::Handle::try_current())
        else {
            return;
        };
        let weak: Weak<Inner> = Arc::downgrade(&self.inner);
        runtime.spawn(async move {
            tokio::time::sleep(timeout).await;
            let Some(inner) = weak.upgrade() else { return };
            let server = EmbeddedServer { inner };
            let mut state = server.lock();
            let still_cut = state
                .sessions
                .get(&session_id)
                .is_some_and(|s| s.state == SessionState::Disconnected && s.disconnects == epoch);
            if still_cut {
                state.transition(session_id, SessionState::Expired, now_millis());
            }
        });
    }

    /// Lets a disconnected session through again: state `Connected`, its watches resume (the
    /// events of the gap stay lost). No effect on a session that is not disconnected.
    pub fn reconnect(&self, session_id: i64) {
        let mut state = self.lock();
        let cut = state
            .sessions
            .get(&session_id)
            .is_some_and(|s| s.state == SessionState::Disconnected);
        if cut {
            state.transition(session_id, SessionState::Connected, now_millis());
        }
    }

    /// Makes the next call of `session_id` that matches fail with
    /// [`crate::registry::RegistryError::Injected`], applying nothing. `kind` `None` matches any
    /// call; `Some(Multi)` a whole multi-op; `Some(Create | Set | Delete | Check)` also matches that
    /// operation inside a multi-op, which then fails as `MultiFailed` at that operation.
    /// `path_prefix` (namespace-relative, segment-aware) limits the paths that match.
    pub fn fail_next(&self, session_id: i64, kind: Option<OpKind>, path_prefix: Option<&str>) {
        self.arm(Some(session_id), kind, path_prefix);
    }

    /// Like [`Self::fail_next`], for whichever session makes the next matching call.
    pub fn fail_next_any(&self, kind: Option<OpKind>, path_prefix: Option<&str>) {
        self.arm(None, kind, path_prefix);
    }

    fn arm(&self, session: Option<i64>, kind: Option<OpKind>, path_prefix: Option<&str>) {
        self.lock().arm(Fault {
            session,
            kind,
            path_prefix: path_prefix.map(str::to_owned),
        });
    }

    /// How many calls of each kind the sessions made (a multi-op counts once, as `Multi`), for
    /// benchmarks that measure registry traffic. Kinds never called are absent.
    pub fn op_counts(&self) -> HashMap<OpKind, u64> {
        OpKind::ALL
            .iter()
            .zip(&self.inner.counts)
            .map(|(kind, n)| (*kind, n.load(Ordering::Relaxed)))
            .filter(|(_, n)| *n > 0)
            .collect()
    }

    /// The current state of a session, `None` for an unknown id.
    pub fn session_state(&self, session_id: i64) -> Option<SessionState> {
        self.lock().sessions.get(&session_id).map(|s| s.state)
    }

    /// The number of nodes in the whole tree, root included.
    pub fn node_count(&self) -> usize {
        self.lock().tree.len()
    }

    fn count(&self, kind: OpKind) {
        self.inner.counts[kind.index()].fetch_add(1, Ordering::Relaxed);
    }

    fn lock(&self) -> MutexGuard<'_, ServerState> {
        // A panic while holding the lock happens only in a failing test; the tree is still usable
        // for its report, so recover the guard instead of cascading panics.
        self.inner.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Opens sessions of an [`EmbeddedServer`] on one namespace.
#[derive(Debug, Clone)]
pub struct EmbeddedConnector {
    server: EmbeddedServer,
    chroot: String,
    session_timeout: Duration,
}

impl EmbeddedConnector {
    /// Sets the session timeout that sessions opened from now on negotiate.
    pub fn with_session_timeout(mut self, timeout: Duration) -> Self {
        self.session_timeout = timeout;
        self
    }

    /// The server this connector opens sessions on.
    pub fn server(&self) -> &EmbeddedServer {
        &self.server
    }

    /// Opens a connected session, creating the namespace root (and its ancestors) when missing.
    pub fn open(&self) -> EmbeddedSession {
        EmbeddedSession::open(
            self.server.clone(),
            self.chroot.clone(),
            self.session_timeout,
        )
    }
}

#[async_trait::async_trait]
impl crate::registry::Connector for EmbeddedConnector {
    async fn connect(&self) -> crate::registry::Result<Arc<dyn crate::registry::Registry>> {
        Ok(Arc::new(self.open()))
    }

    fn describe(&self) -> String {
        format!("embedded{}", self.chroot)
    }
}

/// The registry clock: wall-clock milliseconds since the Unix epoch, as ZooKeeper stamps ctime/mtime.
fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
