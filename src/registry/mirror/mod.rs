//! The mirror: an in-memory copy of a namespace subtree, readable from any task without a
//! registry call.
//!
//! A [`Mirror`] is fed by one recursive watch plus a listing ([`Mirror::feed`], in `feed.rs`), in
//! the manner of kube-runtime's watcher and reflector store: watch first, list, swap the listing in
//! by diffing, then apply events in order; re-list after every gap (ZooKeeper loses the events of a
//! disconnect). Consumers learn what changed from the [`MirrorEvent`]s of the [`MirrorFeed`], and
//! decide from the mirror, which is already updated when an event arrives.
//!
//! Reads are lock-free in the sense that matters: a `DashMap` shard lock for one key, never a lock
//! over the whole copy. One feed writes; several readers may observe a multi-node change half
//! applied, exactly as they would observe a registry between two reads.
//!
//! ```
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! use std::sync::Arc;
//! use shardcron::registry::{embedded::EmbeddedServer, mirror::Mirror, CreateMode, Registry};
//! let session = Arc::new(EmbeddedServer::new().connector("demo").open());
//! session.create("/orders", b"SCRIPT", CreateMode::Persistent).await.unwrap();
//! let mirror = Mirror::new();
//! let _feed = mirror.feed(session, "/").await.unwrap();
//! assert!(mirror.is_synced());
//! assert_eq!(mirror.children("/"), ["orders"]);
//! # });
//! ```

mod feed;

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};

use dashmap::DashMap;
use tokio::sync::watch;

pub use feed::{FeedHandle, FeedOptions, LazyPaths, MirrorError, MirrorEvent, MirrorFeed};

use crate::registry::{join_path, parent_path, Stat};

/// One mirrored node. Cloning is cheap: the data is shared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MirrorNode {
    /// The node's data.
    pub data: Arc<[u8]>,
    /// Its metadata as of the read that last changed the data. `cversion` and `num_children` are
    /// not kept current (ZooKeeper sends no event for them): use [`Mirror::children`].
    pub stat: Stat,
    /// The node is known to exist but its data has not been read yet: a node the feed's
    /// [`FeedOptions::lazy_data`] lets it read late. Data and stat are empty until then.
    pub pending: bool,
}

/// A local copy of a registry subtree. Clones share the copy.
#[derive(Debug, Clone)]
pub struct Mirror {
    inner: Arc<Store>,
}

#[derive(Debug)]
struct Store {
    nodes: DashMap<Box<str>, MirrorNode>,
    /// Names of the children of each path that has any, sorted, so listing children never scans
    /// `nodes`. A sorted vector, not a tree: most parents have one or two children, and a tree
    /// node costs hundreds of bytes however few keys it holds (ten thousand jobs hold ~70,000
    /// such lists).
    children: DashMap<Box<str>, Vec<Box<str>>>,
    synced: watch::Sender<bool>,
}

impl Default for Mirror {
    fn default() -> Self {
        Self::new()
    }
}

/// What an upsert did, so the feed knows which events to emit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Upserted {
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

/// Whether an upsert may overwrite a newer-looking node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Freshness {
    /// A fresh listing: it wins.
    Authoritative,
    /// A read after an event: applied only when not older than what the mirror holds.
    IfNotOlder,
}

impl Mirror {
    /// An empty mirror, not synced.
    pub fn new() -> Self {
        Self {
            inner: Arc::new(Store {
                nodes: DashMap::new(),
                children: DashMap::new(),
                synced: watch::channel(false).0,
            }),
        }
    }

    /// The node at `path`.
    pub fn get(&self, path: &str) -> Option<MirrorNode> {
        self.inner.nodes.get(path).map(|n| n.clone())
    }

    /// The data of the node at `path`.
    pub fn data(&self, path: &str) -> Option<Arc<[u8]>> {
        self.inner.nodes.get(path).map(|n| n.data.clone())
    }

    /// Whether a node is mirrored at `path`.
    pub fn exists(&self, path: &str) -> bool {
        self.inner.nodes.contains_key(path)
    }

    /// Names of the children of `path`, sorted ascending (empty when it has none or is absent).
    pub fn children(&self, path: &str) -> Vec<String> {
        self.inner
            .children
            .get(path)
            .map(|c| c.iter().map(|k| k.to_string()).collect())
            .unwrap_or_default()
    }

    /// The number of mirrored nodes.
    pub fn len(&self) -> usize {
        self.inner.nodes.len()
    }

    /// Whether nothing is mirrored.
    pub fn is_empty(&self) -> bool {
        self.inner.nodes.is_empty()
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

    fn set_synced(&self, synced: bool) {
        self.inner
            .synced
            .send_if_modified(|s| std::mem::replace(s, synced) != synced);
    }

    /// Paths at and below `path` that are mirrored or have mirrored children, parents first.
    fn subtree(&self, path: &str) -> Vec<String> {
        let mut out = vec![path.to_owned()];
        let mut next = 0;
        while next < out.len() {
            let kids = self.children(&out[next]);
            let parent = out[next].clone();
            out.extend(kids.iter().map(|k| join_path(&parent, k)));
            next += 1;
        }
        out
    }

    fn upsert(&self, path: &str, data: Vec<u8>, stat: Stat, freshness: Freshness) -> Upserted {
        let outcome = match self.inner.nodes.get(path).map(|n| n.clone()) {
            None => Upserted::Created,
            // The first read of a node known only from its creation event: its data arrives.
            Some(old) if old.pending => Upserted::Changed,
            Some(old) => {
                let older = stat.czxid < old.stat.czxid
                    || (stat.czxid == old.stat.czxid && stat.mzxid < old.stat.mzxid);
                if older && freshness == Freshness::IfNotOlder {
                    return Upserted::Stale;
                }
                if stat.czxid != old.stat.czxid {
                    Upserted::Replaced
                } else if stat.mzxid == old.stat.mzxid
                    && stat.version == old.stat.version
                    && *old.data == data[..]
                {
                    Upserted::Unchanged
                } else {
                    Upserted::Changed
                }
            }
        };
        let node = MirrorNode {
            data: shared_data(data),
            stat,
            pending: false,
        };
        self.inner.nodes.insert(path.into(), node);
        if outcome == Upserted::Created {
            self.link_to_parent(path);
        }
        outcome
    }

    /// Enters a newly mirrored node in its parent's child index.
    fn link_to_parent(&self, path: &str) {
        if path != "/" {
            let (parent, name) = split(path);
            let mut kids = self.inner.children.entry(parent.into()).or_default();
            if let Err(at) = kids.binary_search_by(|k| (**k).cmp(name)) {
                kids.insert(at, name.into());
            }
        }
    }

    /// Records a node known to exist from its creation event, with its data still unread. Returns
    /// false (and changes nothing) when the node is mirrored already.
    fn insert_pending(&self, path: &str) -> bool {
        if self.inner.nodes.contains_key(path) {
            return false;
        }
        let node = MirrorNode {
            data: shared_data(Vec::new()),
            stat: Stat::default(),
            pending: true,
        };
        self.inner.nodes.insert(path.into(), node);
        self.link_to_parent(path);
        true
    }

    /// Whether the node at `path` is mirrored with its data still unread.
    pub fn is_pending(&self, path: &str) -> bool {
        self.inner.nodes.get(path).is_some_and(|n| n.pending)
    }

    /// Removes one node (not its children) and returns whether it was mirrored.
    fn remove(&self, path: &str) -> bool {
        if self.inner.nodes.remove(path).is_none() {
            return false;
        }
        if path != "/" {
            let (parent, name) = split(path);
            self.inner.children.remove_if_mut(parent, |_, kids| {
                if let Ok(at) = kids.binary_search_by(|k| (**k).cmp(name)) {
                    kids.remove(at);
                }
                kids.is_empty()
            });
        }
        true
    }
}

/// `data` as shared bytes; empty data (most coordination nodes) shares one allocation.
fn shared_data(data: Vec<u8>) -> Arc<[u8]> {
    static EMPTY: LazyLock<Arc<[u8]>> = LazyLock::new(|| Arc::from(&[][..]));
    if data.is_empty() {
        EMPTY.clone()
    } else {
        data.into()
    }
}

/// `(parent, name)` of an absolute path other than `/`.
fn split(path: &str) -> (&str, &str) {
    let parent = parent_path(path);
    (parent, &path[path.rfind('/').map_or(0, |i| i + 1)..])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(czxid: i64, mzxid: i64, version: i32) -> Stat {
        Stat {
            czxid,
            mzxid,
            version,
            ..Stat::default()
        }
    }

    #[test]
    fn upserts_ignore_older_reads_and_spot_new_incarnations() {
        let m = Mirror::new();
        assert_eq!(
            m.upsert("/a", b"1".to_vec(), stat(5, 5, 0), Freshness::IfNotOlder),
            Upserted::Created
        );
        assert_eq!(
            m.upsert("/a", b"2".to_vec(), stat(5, 7, 1), Freshness::IfNotOlder),
            Upserted::Changed
        );
        assert_eq!(
            m.upsert("/a", b"1".to_vec(), stat(5, 5, 0), Freshness::IfNotOlder),
            Upserted::Stale
        );
        assert_eq!(&*m.data("/a").unwrap(), b"2");
        assert_eq!(
            m.upsert("/a", b"2".to_vec(), stat(5, 7, 1), Freshness::IfNotOlder),
            Upserted::Unchanged
        );
        assert_eq!(
            m.upsert("/a", b"3".to_vec(), stat(9, 9, 0), Freshness::IfNotOlder),
            Upserted::Replaced
        );
        assert_eq!(
            m.upsert("/a", b"0".to_vec(), stat(1, 1, 0), Freshness::Authoritative),
            Upserted::Replaced
        );
    }

    #[test]
    fn the_child_index_follows_inserts_and_removals() {
        let m = Mirror::new();
        for p in ["/", "/a", "/a/c", "/a/b", "/z"] {
            m.upsert(p, Vec::new(), stat(1, 1, 0), Freshness::IfNotOlder);
        }
        assert_eq!(m.children("/a"), ["b", "c"]);
        assert_eq!(m.children("/"), ["a", "z"]);
        assert_eq!(m.subtree("/a"), ["/a", "/a/b", "/a/c"]);
        assert!(m.remove("/a/b"));
        assert!(!m.remove("/a/b"));
        assert_eq!(m.children("/a"), ["c"]);
        assert!(m.remove("/a/c"));
        assert!(m.children("/a").is_empty());
        assert_eq!(
            m.snapshot("/").keys().collect::<Vec<_>>(),
            ["/", "/a", "/z"]
        );
        assert_eq!(m.len(), 3);
    }
}
