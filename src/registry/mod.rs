//! The registry: one async trait ([`Registry`]) for one session on a coordination tree, two backends
//! ([`zookeeper`] for production, [`embedded`] in process), and the [`mirror`] that keeps a local copy of
//! a subtree so that reads never leave the process.
//!
//! A [`Registry`] value is *one session*. Ephemeral nodes belong to it; when it expires it is dead for
//! good and every call returns [`RegistryError::SessionExpired`]. A new session comes from the
//! [`Connector`] that made the old one. All paths are absolute within the namespace the session was
//! opened on (`/orders/config`, not `/ns/orders/config`).
//!
//! The vocabulary of the trait (operations, stats, session states, watch events, errors, path
//! helpers) lives in the core's [`model`](crate::model), re-exported here.

pub mod embedded;
pub mod mirror;
pub mod zookeeper;

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

pub use crate::model::error::{RegistryError, Result};
pub use crate::model::ops::{CreateMode, ListedNode, Op, OpKind, OpResult, Stat, ANY_VERSION};
pub use crate::model::path::{join_path, parent_path, validate_path};
pub use crate::model::session::{NodeEventKind, SessionInfo, SessionState, WatchEvent};

/// A recursive watch: events in the order the registry applied them. The stream ends (returns
/// `None`) when the session ends.
pub type WatchStream = mpsc::UnboundedReceiver<WatchEvent>;

/// Keeps a watch started by [`Registry::watch_recursive_into`]; dropping it ends the watch.
#[derive(Debug)]
pub struct WatchGuard(Option<CancellationToken>);

impl WatchGuard {
    /// A guard that ends its watch when dropped, or when `stop` is cancelled.
    pub fn new(stop: CancellationToken) -> Self {
        Self(Some(stop))
    }

    /// Lets the watch outlive the guard: it ends with its session, or when its sender's
    /// receiver is gone.
    pub fn detach(mut self) {
        self.0 = None;
    }
}

impl Drop for WatchGuard {
    fn drop(&mut self) {
        if let Some(stop) = &self.0 {
            stop.cancel();
        }
    }
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

    /// [`Registry::watch_recursive`] into a sender several watches may share: one consumer
    /// follows many subtrees on one channel (a node watching each of its jobs). Session states
    /// reach the sender too (once per watch, or once per sender: consumers take repeats as
    /// nothing new); the watch lasts while the guard does. The default forwards a stream of its
    /// own from a task; ZooKeeper forwards every watch of a session from one task, and the
    /// embedded registry sends straight into the sender.
    async fn watch_recursive_into(
        &self,
        path: &str,
        into: mpsc::UnboundedSender<WatchEvent>,
    ) -> Result<WatchGuard> {
        let mut stream = self.watch_recursive(path).await?;
        let stop = CancellationToken::new();
        let guard = WatchGuard::new(stop.clone());
        tokio::spawn(async move {
            loop {
                let event = tokio::select! {
                    event = stream.recv() => event,
                    () = stop.cancelled() => return,
                };
                let Some(event) = event else { return };
                if into.send(event).is_err() {
                    return;
                }
            }
        });
        Ok(guard)
    }

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

    /// How long the session has waited on its calls without an answer, when it keeps count
    /// ([`Silence`](crate::model::Silence)); `None` for a registry that cannot stall (the embedded one).
    fn silence(&self) -> Option<&crate::model::Silence> {
        None
    }

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
