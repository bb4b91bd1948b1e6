//! The registry: one async trait ([`Registry`]) for one session on a coordination tree, two backends
//! ([`zookeeper`] for production, [`embedded`] in process), and the [`mirror`] that keeps a local copy of
//! a subtree so that reads never leave the process.
//!
//! A [`Registry`] value is *one session*. Ephemeral nodes belong to it; when it expires it is dead for
//! good and every call returns [`RegistryError::SessionExpired`]. A new session comes from the
//! [`Connector`] that made the old one. All paths are absolute within the namespace the session was
//! opened on (`/orders/config`, not `/ns/orders/config`).

pub mod embedded;
pub mod mirror;
mod shared_data;
mod trie;
pub mod zookeeper;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::{mpsc, watch};

/// How a node lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CreateMode {
    /// Stays until deleted.
    Persistent,
    /// Deleted when the session that created it ends.
    Ephemeral,
    /// Persistent, with a 10-digit sequence number appended to the name.
    PersistentSequential,
    /// Ephemeral, with a 10-digit sequence number appended to the name.
    EphemeralSequential,
}

impl CreateMode {
    /// Whether nodes of this mode die with their session.
    pub fn is_ephemeral(self) -> bool {
        matches!(self, Self::Ephemeral | Self::EphemeralSequential)
    }

    /// Whether the name gets a sequence suffix.
    pub fn is_sequential(self) -> bool {
        matches!(self, Self::PersistentSequential | Self::EphemeralSequential)
    }
}

/// The metadata of a node (the subset of ZooKeeper's `Stat` that shardcron uses).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stat {
    /// Transaction id that created the node.
    pub czxid: i64,
    /// Transaction id that last changed the node's data.
    pub mzxid: i64,
    /// Creation time, milliseconds since the Unix epoch (registry clock).
    pub ctime: i64,
    /// Last modification time, milliseconds since the Unix epoch (registry clock).
    pub mtime: i64,
    /// Data version, incremented by every set.
    pub version: i32,
    /// Child version, incremented by every child create/delete.
    pub cversion: i32,
    /// Owning session for an ephemeral node, 0 otherwise.
    pub ephemeral_owner: i64,
    /// Number of children.
    pub num_children: i32,
}

/// The version that [`Op::Check`] accepts whatever the node's version is (ZooKeeper's `-1`).
pub const ANY_VERSION: i32 = -1;

/// One operation of an atomic [`Registry::multi`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// Create a node.
    Create {
        /// Path of the node.
        path: String,
        /// Its data.
        data: Vec<u8>,
        /// How it lives.
        mode: CreateMode,
    },
    /// Replace a node's data, optionally only at `version`.
    Set {
        /// Path of the node.
        path: String,
        /// New data.
        data: Vec<u8>,
        /// Expected version, `None` for any.
        version: Option<i32>,
    },
    /// Delete a node (it must have no children), optionally only at `version`.
    Delete {
        /// Path of the node.
        path: String,
        /// Expected version, `None` for any.
        version: Option<i32>,
    },
    /// Fail the whole multi-op unless the node exists at `version` ([`ANY_VERSION`]: at any).
    Check {
        /// Path of the node.
        path: String,
        /// Expected version, or [`ANY_VERSION`].
        version: i32,
    },
}

impl Op {
    /// Creates a node: shorthand for [`Op::Create`].
    pub fn create(path: impl Into<String>, data: impl Into<Vec<u8>>, mode: CreateMode) -> Self {
        Self::Create {
            path: path.into(),
            data: data.into(),
            mode,
        }
    }

    /// Sets a node's data regardless of version.
    pub fn set(path: impl Into<String>, data: impl Into<Vec<u8>>) -> Self {
        Self::Set {
            path: path.into(),
            data: data.into(),
            version: None,
        }
    }

    /// Deletes a node regardless of version.
    pub fn delete(path: impl Into<String>) -> Self {
        Self::Delete {
            path: path.into(),
            version: None,
        }
    }

    /// The path the operation works on.
    pub fn path(&self) -> &str {
        match self {
            Self::Create { path, .. }
            | Self::Set { path, .. }
            | Self::Delete { path, .. }
            | Self::Check { path, .. } => path,
        }
    }

    /// The operation's kind, for counters and error messages.
    pub fn kind(&self) -> OpKind {
        match self {
            Self::Create { .. } => OpKind::Create,
            Self::Set { .. } => OpKind::Set,
            Self::Delete { .. } => OpKind::Delete,
            Self::Check { .. } => OpKind::Check,
        }
    }
}

/// The outcome of one operation of a successful multi-op, in the order of the operations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpResult {
    /// The node was created at this path (with its sequence suffix for sequential modes).
    Created(String),
    /// The data was set; the node's new stat.
    Set(Stat),
    /// The node was deleted.
    Deleted,
    /// The version check passed.
    Checked,
}

/// Every kind of registry call, for counters, metrics and error messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OpKind {
    /// `create`.
    Create,
    /// `get`.
    Get,
    /// `set`.
    Set,
    /// `delete`.
    Delete,
    /// `children`.
    Children,
    /// `exists`.
    Exists,
    /// `multi`.
    Multi,
    /// A version check inside a multi-op.
    Check,
    /// `watch_recursive`.
    Watch,
    /// `list_subtree`.
    List,
    /// `get_many`: one call reading several nodes (on ZooKeeper, multi-read requests of up to 128
    /// paths); counted once per call.
    GetMany,
}

impl OpKind {
    /// A short lowercase name (`create`, `get`, ...), used as a metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Create => "create",
            Self::Get => "get",
            Self::Set => "set",
            Self::Delete => "delete",
            Self::Children => "children",
            Self::Exists => "exists",
            Self::Multi => "multi",
            Self::Check => "check",
            Self::Watch => "watch",
            Self::List => "list",
            Self::GetMany => "get_many",
        }
    }
}

impl fmt::Display for OpKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The state of a session, as seen by its client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum SessionState {
    /// Connected to a server; calls go through.
    Connected,
    /// Connection lost; the session may still be alive on the server and calls wait or fail with
    /// [`RegistryError::ConnectionLoss`]. Events in this window are lost.
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
/// or better, read the [`mirror`].
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

/// A recursive watch: events in the order the registry applied them. The stream ends (returns
/// `None`) when the session ends.
pub type WatchStream = mpsc::UnboundedReceiver<WatchEvent>;

/// Errors of registry calls. Outcomes that callers branch on are variants of their own.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// The node (or, for a create, its parent) does not exist.
    #[error("node {path} does not exist")]
    NoNode {
        /// The missing path.
        path: String,
    },
    /// A create found the node already there.
    #[error("node {path} already exists")]
    NodeExists {
        /// The existing path.
        path: String,
    },
    /// A versioned set, delete or check found another version.
    #[error("node {path} is not at the expected version {expected}")]
    BadVersion {
        /// The node.
        path: String,
        /// The version the caller expected.
        expected: i32,
    },
    /// A delete found children under the node.
    #[error("node {path} has children")]
    NotEmpty {
        /// The node.
        path: String,
    },
    /// A create under an ephemeral node.
    #[error("node {path} is ephemeral and cannot have children")]
    NoChildrenForEphemerals {
        /// The ephemeral parent.
        path: String,
    },
    /// The path is not a valid registry path.
    #[error("invalid path {path:?}: {reason}")]
    InvalidPath {
        /// The refused path.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The caller's credentials do not allow the operation (ZooKeeper's `NoAuth`: the node's ACL
    /// admits other credentials only).
    #[error(
        "NoAuth on {op} {path}: the node's ACL refuses this session's credentials; give the \
         namespace's digest credentials (SHARDCRON_ZK_AUTH=digest:USER:PASSWORD or --zk-auth-file \
         FILE in the shipped tools, ZkConfig::with_digest when embedding)"
    )]
    NoAuth {
        /// The operation.
        op: OpKind,
        /// The node.
        path: String,
    },
    /// One operation of a multi-op failed, so none was applied.
    #[error("multi-op failed at operation {index} ({kind} {path}), nothing applied: {source}")]
    MultiFailed {
        /// Index of the failed operation.
        index: usize,
        /// Its kind.
        kind: OpKind,
        /// Its path.
        path: String,
        /// Why it failed (one of the node-level variants above).
        #[source]
        source: Box<RegistryError>,
    },
    /// The connection was lost while the call was in flight; it may or may not have been applied.
    #[error("connection lost during {op} on {path}")]
    ConnectionLoss {
        /// The operation.
        op: OpKind,
        /// The node.
        path: String,
    },
    /// The call did not complete within its bound.
    #[error("{op} on {path} timed out after {after:?}")]
    Timeout {
        /// The operation.
        op: OpKind,
        /// The node.
        path: String,
        /// The bound.
        after: Duration,
    },
    /// The session expired: this registry value is dead, build a new session. Fatal tier.
    #[error("registry session expired")]
    SessionExpired,
    /// The session was closed by its owner. Fatal tier.
    #[error("registry session closed")]
    Closed,
    /// Connecting failed.
    #[error("cannot connect to {target}: {reason}")]
    Connect {
        /// What we tried to reach (connect string, "embedded").
        target: String,
        /// Why it failed.
        reason: String,
    },
    /// A fault injected by a test through the embedded registry.
    #[error("injected fault on {op} {path}")]
    Injected {
        /// The operation.
        op: OpKind,
        /// The node.
        path: String,
    },
    /// Any other backend failure.
    #[error("{op} on {path} failed: {reason}")]
    Backend {
        /// The operation.
        op: OpKind,
        /// The node.
        path: String,
        /// The backend's description.
        reason: String,
    },
}

impl RegistryError {
    /// Whether the session is dead and must be rebuilt (the fatal tier).
    pub fn is_fatal(&self) -> bool {
        matches!(self, Self::SessionExpired | Self::Closed)
    }

    /// The node-level cause: for [`RegistryError::MultiFailed`] the failing operation's error,
    /// otherwise `self`. Lets callers match `NoNode`/`NodeExists` whether or not it came from a multi.
    pub fn cause(&self) -> &RegistryError {
        match self {
            Self::MultiFailed { source, .. } => source.cause(),
            other => other,
        }
    }

    /// Whether the cause is [`RegistryError::NoNode`].
    pub fn is_no_node(&self) -> bool {
        matches!(self.cause(), Self::NoNode { .. })
    }

    /// Whether the cause is [`RegistryError::NodeExists`].
    pub fn is_node_exists(&self) -> bool {
        matches!(self.cause(), Self::NodeExists { .. })
    }

    /// Whether the cause is [`RegistryError::BadVersion`].
    pub fn is_bad_version(&self) -> bool {
        matches!(self.cause(), Self::BadVersion { .. })
    }
}

/// Result of a registry call.
pub type Result<T, E = RegistryError> = std::result::Result<T, E>;

/// Identity and health of a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionInfo {
    /// The session id the server assigned.
    pub id: i64,
    /// The timeout the server negotiated.
    pub timeout: Duration,
}

/// One node of a subtree listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedNode {
    /// Absolute path within the namespace.
    pub path: String,
    /// Data.
    pub data: Vec<u8>,
    /// Metadata.
    pub stat: Stat,
}

/// One session on a coordination tree. See the module docs.
#[async_trait]
pub trait Registry: Send + Sync + fmt::Debug + 'static {
    /// Creates a node and returns its path (with the sequence suffix for sequential modes). The parent
    /// must exist ([`RegistryError::NoNode`] otherwise).
    async fn create(&self, path: &str, data: &[u8], mode: CreateMode) -> Result<String>;

    /// Reads a node's data and stat.
    async fn get(&self, path: &str) -> Result<(Vec<u8>, Stat)>;

    /// Replaces a node's data, only at `version` when given.
    async fn set(&self, path: &str, data: &[u8], version: Option<i32>) -> Result<Stat>;

    /// Deletes a childless node, only at `version` when given.
    async fn delete(&self, path: &str, version: Option<i32>) -> Result<()>;

    /// Names (not paths) of a node's children, sorted ascending.
    async fn children(&self, path: &str) -> Result<Vec<String>>;

    /// The node's stat, or `None` when it does not exist.
    async fn exists(&self, path: &str) -> Result<Option<Stat>>;

    /// Applies every operation or none. On failure the error is [`RegistryError::MultiFailed`]
    /// naming the first failing operation.
    async fn multi(&self, ops: &[Op]) -> Result<Vec<OpResult>>;

    /// Starts a recursive watch on `path` and everything below it. The watch is registered before
    /// this returns, so nothing that happens afterwards is missed (except during a disconnect).
    async fn watch_recursive(&self, path: &str) -> Result<WatchStream>;

    /// Reads the data and stat of every path, one result per path in order: a node that does not
    /// exist is its own [`RegistryError::NoNode`], not a failure of the others; an error of the
    /// whole call (a lost connection) is the outer one. The default reads them side by side;
    /// ZooKeeper reads them in multi-read requests.
    async fn get_many(&self, paths: &[String]) -> Result<Vec<Result<(Vec<u8>, Stat)>>> {
        Ok(futures::future::join_all(paths.iter().map(|p| self.get(p))).await)
    }

    /// Every node at and below `path`, parents before children. Used to (re)build the mirror.
    async fn list_subtree(&self, path: &str) -> Result<Vec<ListedNode>> {
        let mut out = Vec::new();
        let mut queue = std::collections::VecDeque::from([path.to_owned()]);
        while let Some(p) = queue.pop_front() {
            let (data, stat) = match self.get(&p).await {
                Ok(v) => v,
                // Deleted between the parent's listing and this read: not part of the tree.
                Err(e) if e.is_no_node() && p != path => continue,
                Err(e) => return Err(e),
            };
            let kids = match self.children(&p).await {
                Ok(k) => k,
                Err(e) if e.is_no_node() && p != path => continue,
                Err(e) => return Err(e),
            };
            for k in kids {
                queue.push_back(join_path(&p, &k));
            }
            out.push(ListedNode {
                path: p,
                data,
                stat,
            });
        }
        Ok(out)
    }

    /// The session's id and negotiated timeout.
    fn session_info(&self) -> SessionInfo;

    /// The session's state now and its changes.
    fn session_state(&self) -> watch::Receiver<SessionState>;

    /// The registry server's current time in milliseconds since the Unix epoch, read by writing
    /// `path` and taking its `mtime` (ElasticJob's `systemTime/current`).
    async fn server_time_millis(&self, path: &str) -> Result<i64> {
        match self.set(path, b"", None).await {
            Ok(stat) => Ok(stat.mtime),
            Err(e) if e.is_no_node() => {
                self.ensure_path(parent_path(path)).await?;
                match self.create(path, b"", CreateMode::Persistent).await {
                    Ok(_) | Err(RegistryError::NodeExists { .. }) => {}
                    Err(e) => return Err(e),
                }
                Ok(self.set(path, b"", None).await?.mtime)
            }
            Err(e) => Err(e),
        }
    }

    /// Creates `path` and any missing ancestors as empty persistent nodes; existing ones are kept.
    async fn ensure_path(&self, path: &str) -> Result<()> {
        if path == "/" || path.is_empty() {
            return Ok(());
        }
        let mut current = String::new();
        for seg in path.trim_start_matches('/').split('/') {
            current.push('/');
            current.push_str(seg);
            match self.create(&current, b"", CreateMode::Persistent).await {
                Ok(_) => {}
                Err(e) if e.is_node_exists() => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Deletes `path` and everything below it; a missing node is not an error.
    async fn delete_recursive(&self, path: &str) -> Result<()> {
        let kids = match self.children(path).await {
            Ok(k) => k,
            Err(e) if e.is_no_node() => return Ok(()),
            Err(e) => return Err(e),
        };
        for k in kids {
            self.delete_recursive(&join_path(path, &k)).await?;
        }
        match self.delete(path, None).await {
            Ok(()) => Ok(()),
            Err(e) if e.is_no_node() => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Ends the session: its ephemerals go at once. Later calls return [`RegistryError::Closed`].
    async fn close(&self);
}

/// Builds sessions. The RegistryActor keeps one and asks it for a new session after an expiry.
#[async_trait]
pub trait Connector: Send + Sync + fmt::Debug + 'static {
    /// Opens a new session, creating the namespace root when it is missing.
    async fn connect(&self) -> Result<Arc<dyn Registry>>;

    /// What this connector reaches, for logs and errors ("embedded", "127.0.0.1:2181/ns").
    fn describe(&self) -> String;
}

/// `parent` + `/` + `name`, without doubling the slash under the root.
pub fn join_path(parent: &str, name: &str) -> String {
    if parent == "/" {
        format!("/{name}")
    } else {
        format!("{parent}/{name}")
    }
}

/// The parent of an absolute path (`/` for a top-level node and for `/` itself).
pub fn parent_path(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

/// Checks that `path` is absolute, has no empty, `.` or `..` segment and no trailing slash.
pub fn validate_path(path: &str) -> Result<()> {
    let bad = |reason: &str| {
        Err(RegistryError::InvalidPath {
            path: path.to_owned(),
            reason: reason.to_owned(),
        })
    };
    if path == "/" {
        return Ok(());
    }
    if !path.starts_with('/') {
        return bad("must start with '/'");
    }
    if path.ends_with('/') {
        return bad("must not end with '/'");
    }
    for seg in path[1..].split('/') {
        if seg.is_empty() {
            return bad("empty segment");
        }
        if seg == "." || seg == ".." {
            return bad("relative segment");
        }
        if seg.contains('\0') {
            return bad("NUL character");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_helpers_handle_the_root() {
        assert_eq!(join_path("/", "a"), "/a");
        assert_eq!(join_path("/a", "b"), "/a/b");
        assert_eq!(parent_path("/a"), "/");
        assert_eq!(parent_path("/a/b/c"), "/a/b");
        assert_eq!(parent_path("/"), "/");
    }

    #[test]
    fn invalid_paths_are_refused_with_a_reason() {
        for bad in ["", "a", "/a/", "//a", "/a//b", "/a/./b", "/a/.."] {
            assert!(validate_path(bad).is_err(), "{bad:?} should be refused");
        }
        for good in ["/", "/a", "/a/b-c/d_e.f"] {
            assert!(validate_path(good).is_ok(), "{good:?} should be accepted");
        }
    }

    #[test]
    fn multi_failure_exposes_its_node_level_cause() {
        let e = RegistryError::MultiFailed {
            index: 1,
            kind: OpKind::Create,
            path: "/a".into(),
            source: Box::new(RegistryError::NodeExists { path: "/a".into() }),
        };
        assert!(e.is_node_exists());
        assert!(!e.is_no_node());
    }
}
