//! The mirror's store: an in-memory copy of a namespace subtree ([`Mirror`]), readable from any
//! task without a registry call. The core reads it (a job's [`view`](crate::view) is read from
//! it); the registry adapter fills it: the feed in [`registry::mirror`](crate::registry::mirror)
//! applies one recursive watch and the listings after each gap through the store's writers
//! (`upsert`, `replace_subtree`, `insert_pending`, `remove`, `set_synced`, in `write.rs`), which
//! only that feed calls.
//!
//! Reads take a shared lock for the time of one lookup, never across an await: the copy is a
//! compact path trie (`tree.rs` over `trie.rs`), one slot per node, because a node with ten
//! thousand jobs mirrors about 150,000 nodes. One feed writes. Events apply one node at a time
//! (readers may observe a multi-node change half applied, exactly as they would observe a registry
//! between two reads), but a re-list is built aside as a complete new tree and swapped in under one
//! write lock, as kube-runtime's store does at `InitDone`: no reader sees a namespace half old,
//! half new.

pub(crate) mod shared_data;
mod tree;
pub(crate) mod trie;
mod write;

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::RwLock;
use tokio::sync::watch;

use crate::model::{ListedNode, Stat};

/// One mirrored node. Cloning is cheap: the data is shared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MirrorNode {
    /// The node's data.
    pub data: Arc<[u8]>,
    /// Its metadata as of the read that last changed the data: the fields the engine decides on.
    /// Child counts are not kept (ZooKeeper sends no event for them): use [`Mirror::children`].
    pub stat: MirrorStat,
    /// The node is known to exist but its data has not been read yet: a node the feed's
    /// [`FeedOptions::lazy_data`](crate::registry::mirror::FeedOptions::lazy_data) lets it read late. Data and stat are empty until then.
    pub pending: bool,
}

/// A subtree of the mirror as [`Mirror::read_under`] lends it: paths are relative to its base,
/// the lock is held while it lives (it cannot be kept past the closure).
#[derive(Clone, Copy)]
pub struct Under<'a> {
    tree: &'a tree::Tree,
    /// The base's slot; `None` when nothing is at the base (every read then finds nothing).
    at: Option<u32>,
}

impl<'a> Under<'a> {
    fn slot(&self, rel: &str) -> Option<u32> {
        self.tree.slot(Some(self.at?), rel)
    }

    /// The node at `rel` (`""`: the base itself).
    pub fn get(&self, rel: &str) -> Option<&'a MirrorNode> {
        self.tree.node(self.slot(rel)?)
    }

    /// The data of the node at `rel`.
    pub fn data(&self, rel: &str) -> Option<Arc<[u8]>> {
        self.get(rel).map(|n| n.data.clone())
    }

    /// Whether a node is mirrored at `rel`.
    pub fn exists(&self, rel: &str) -> bool {
        self.get(rel).is_some()
    }

    /// The children of `rel`, sorted by name, each as the subtree below it.
    pub fn children(&self, rel: &str) -> impl Iterator<Item = (&'a str, Under<'a>)> + 'a {
        let tree = self.tree;
        self.slot(rel)
            .into_iter()
            .flat_map(move |at| tree.kids(at))
            .map(move |(name, at)| (name, Under { tree, at: Some(at) }))
    }
}

impl std::fmt::Debug for Under<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Under").field("at", &self.at).finish()
    }
}

/// The part of a node's [`Stat`] the mirror keeps.
///
/// Packed to 4-byte alignment: 28 bytes, so that [`MirrorNode`]'s `pending` flag fits beside it
/// in 48 bytes instead of 56 (each of the ~150,000 nodes of ten thousand jobs is a trie slot of
/// 88 bytes rather than 96). Read the fields by value; a reference to one does not compile.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(C, packed(4))]
pub struct MirrorStat {
    /// Transaction id that created the node: a new incarnation has a new one.
    pub czxid: i64,
    /// Transaction id that last changed the node's data.
    pub mzxid: i64,
    /// Owning session for an ephemeral node, 0 otherwise.
    pub ephemeral_owner: i64,
    /// Data version, incremented by every set.
    pub version: i32,
}

impl From<&Stat> for MirrorStat {
    fn from(s: &Stat) -> Self {
        Self {
            czxid: s.czxid,
            mzxid: s.mzxid,
            ephemeral_owner: s.ephemeral_owner,
            version: s.version,
        }
    }
}

/// A local copy of a registry subtree. Clones share the copy.
#[derive(Debug, Clone)]
pub struct Mirror {
    inner: Arc<Store>,
}

#[derive(Debug)]
struct Store {
    tree: RwLock<tree::Tree>,
    synced: watch::Sender<bool>,
    removed: parking_lot::Mutex<Removed>,
}

/// The owners of ephemeral nodes the mirror removed lately, by path: an event about a deletion
/// may be handled after the mirror moved on (a newer node at the same path seen, or gone too), and
/// whose node was deleted is then known from here. Entries older than [`REMOVED_KEPT`] are
/// pruned each time the table has doubled.
#[derive(Debug, Default)]
struct Removed {
    by_path: std::collections::HashMap<String, (i64, tokio::time::Instant)>,
    pruned_at: usize,
}

/// How long the owner of a removed ephemeral node is kept.
const REMOVED_KEPT: std::time::Duration = std::time::Duration::from_secs(60);

impl Removed {
    fn note(&mut self, path: &str, node: &MirrorNode) {
        let owner = node.stat.ephemeral_owner;
        if owner == 0 {
            return;
        }
        let now = tokio::time::Instant::now();
        if self.by_path.len() >= 2 * self.pruned_at.max(64) {
            self.by_path
                .retain(|_, (_, at)| now.duration_since(*at) < REMOVED_KEPT);
            self.pruned_at = self.by_path.len();
        }
        self.by_path.insert(path.to_owned(), (owner, now));
    }
}

impl Default for Mirror {
    fn default() -> Self {
        Self::new()
    }
}

/// What an upsert did, so the feed knows which events to emit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Upserted {
    /// The node was not mirrored.
    Created,
    /// Its data or data version changed.
    Changed,
    /// A newer incarnation (deleted and created again) replaced it.
    Replaced,
    /// Nothing a consumer cares about changed.
    Unchanged,
    /// The read was older than what the mirror holds, so it was ignored.
    Stale,
}

impl Mirror {
    /// An empty mirror, not synced.
    pub fn new() -> Self {
        Self {
            inner: Arc::new(Store {
                tree: RwLock::default(),
                synced: watch::channel(false).0,
                removed: parking_lot::Mutex::default(),
            }),
        }
    }

    /// The node at `path`.
    pub fn get(&self, path: &str) -> Option<MirrorNode> {
        self.inner.tree.read().get(path).cloned()
    }

    /// The ephemeral owner (session id) of the last node at `path` the mirror removed within the
    /// last minute; `None` when it removed none, or the removed node's owner was never read.
    pub fn removed_owner(&self, path: &str) -> Option<i64> {
        self.inner.removed.lock().by_path.get(path).map(|(o, _)| *o)
    }

    /// The data of the node at `path`.
    pub fn data(&self, path: &str) -> Option<Arc<[u8]>> {
        self.inner.tree.read().get(path).map(|n| n.data.clone())
    }

    /// Whether a node is mirrored at `path`.
    pub fn exists(&self, path: &str) -> bool {
        self.inner.tree.read().get(path).is_some()
    }

    /// Names of the children of `path`, sorted ascending (empty when it has none or is absent).
    pub fn children(&self, path: &str) -> Vec<String> {
        self.inner.tree.read().children(path)
    }

    /// Whether the node at `path` has a child (no name is copied: a question asked at every
    /// run's end of every job).
    pub fn has_children(&self, path: &str) -> bool {
        self.read_under(path, |at| at.children("").next().is_some())
    }

    /// Reads the subtree at `base` under one read lock: `read` gets an [`Under`], whose paths are
    /// relative to `base` and looked up from its slot, not from the root. A job's whole view is
    /// one lookup of the job and short walks below it, and one consistent snapshot.
    pub fn read_under<R>(&self, base: &str, read: impl FnOnce(Under<'_>) -> R) -> R {
        let tree = self.inner.tree.read();
        let at = tree.slot(None, base);
        read(Under { tree: &tree, at })
    }

    /// The number of mirrored nodes.
    pub fn len(&self) -> usize {
        self.inner.tree.read().len()
    }

    /// Whether nothing is mirrored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every node at and below `prefix` (segment-aware), by path; for dumps and tests.
    pub fn snapshot(&self, prefix: &str) -> BTreeMap<String, MirrorNode> {
        self.subtree(prefix)
            .into_iter()
            .filter_map(|p| self.get(&p).map(|n| (p, n)))
            .collect()
    }

    /// Whether the mirror reflects the registry: false before the first listing, while
    /// disconnected, and after the feed ended.
    pub fn is_synced(&self) -> bool {
        *self.inner.synced.borrow()
    }

    /// The synced flag and its changes.
    pub fn synced(&self) -> watch::Receiver<bool> {
        self.inner.synced.subscribe()
    }

    /// Paths at and below `path` that are mirrored or have mirrored children, parents first.
    pub(crate) fn subtree(&self, path: &str) -> Vec<String> {
        self.inner.tree.read().subtree(path)
    }

    /// Whether the node at `path` is mirrored with its data still unread.
    pub fn is_pending(&self, path: &str) -> bool {
        self.inner.tree.read().get(path).is_some_and(|n| n.pending)
    }
}

#[cfg(test)]
mod tests;
