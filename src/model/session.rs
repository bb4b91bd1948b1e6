//! What a session tells its client: its state ([`SessionState`]), its identity ([`SessionInfo`]),
//! and the events of a recursive watch ([`WatchEvent`], [`NodeEventKind`]).

use std::time::Duration;

/// The state of a session, as seen by its client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum SessionState {
    /// Connected to a server; calls go through.
    Connected,
    /// Connection lost; the session may still be alive on the server and calls wait or fail with
    /// [`RegistryError::ConnectionLoss`](super::RegistryError::ConnectionLoss). Events in this window are lost.
    Disconnected,
    /// The server ended the session: its ephemerals are gone and this value is dead.
    Expired,
    /// Authentication failed; the session is dead.
    AuthFailed,
    /// Closed by its owner.
    Closed,
}

impl SessionState {
    /// Whether the session can never work again.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Expired | Self::AuthFailed | Self::Closed)
    }
}

/// What changed on a node under a recursive watch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NodeEventKind {
    /// The node was created.
    Created,
    /// The node's data was set.
    DataChanged,
    /// The node was deleted.
    Deleted,
}

/// One event of a recursive watch. Node events carry no data (ZooKeeper's do not): read the node,
/// or better, read the [`mirror`](crate::registry::mirror).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchEvent {
    /// A node under the watched path changed.
    Node {
        /// What happened.
        kind: NodeEventKind,
        /// The node's absolute path within the namespace.
        path: String,
    },
    /// The session changed state. After `Disconnected` and a later `Connected`, events in between
    /// were lost and a watcher must re-list.
    Session(SessionState),
}

/// Identity and health of a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionInfo {
    /// The session id the server assigned.
    pub id: i64,
    /// The timeout the server negotiated.
    pub timeout: Duration,
}
