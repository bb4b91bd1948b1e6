//! The node tree of the embedded registry: ZooKeeper's node semantics and atomic transactions,
//! with no notion of sessions or watches (those live in [`super::state`]).
//!
//! Every change goes through [`Tree::apply`], which runs a list of operations as one transaction
//! under one zxid and rolls back on the first failure, so a single call and a multi-op share one
//! code path and one set of rules.
//!
//! Storage: the mirror's path trie (`store/trie.rs`), one 112-byte slot per node: its name
//! inline when up to 22 bytes, up to two children inline and more as an exact boxed slice of slot
//! indices sorted by name, its data (shared with every node holding the same value when short, see
//! `store/shared_data.rs`; never with spare capacity) and its metadata. A [`Stat`] is assembled
//! on read: `num_children` is the length of the children slice, not a second copy. Ten thousand
//! jobs mean about 150,000 nodes; the hash map keyed by full paths this replaced paid for each a
//! bucket of 136 bytes (plus the load factor's slack), its path string, a boxed copy of its name
//! in its parent's child list and its own copy of its data: about 6.1 KB of resident heap per job
//! of 15 nodes where this costs about 2.3 KB (see ARCHITECTURE.md).

mod apply;

use std::sync::Arc;

use crate::registry::{
    parent_path, CreateMode, NodeEventKind, Op, OpResult, RegistryError, Result, Stat, ANY_VERSION,
};
use crate::store::shared_data::SharedData;
use crate::store::trie::Trie;

/// What the tree keeps of a node's [`Stat`] (all but the child count, which the trie holds),
/// plus its sequence counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Meta {
    czxid: i64,
    mzxid: i64,
    ctime: i64,
    mtime: i64,
    ephemeral_owner: i64,
    version: i32,
    cversion: i32,
    /// How many children were ever created here: the next sequence number. Observed on ZooKeeper
    /// 3.8, deletes bump `cversion` but not this, so the two differ once a child is deleted.
    child_creates: i32,
}

/// One stored node: its data and metadata (its name and children are its trie slot's).
#[derive(Debug)]
pub(super) struct Node {
    data: Arc<[u8]>,
    meta: Meta,
}

/// A node as read: its data, its [`Stat`] and the names of its children.
#[derive(Debug, Clone, Copy)]
pub(super) struct NodeView<'a> {
    pub(super) data: &'a [u8],
    pub(super) stat: Stat,
    pub(super) children: Children<'a>,
}

/// The names of a node's children, ascending.
#[derive(Debug, Clone, Copy)]
pub(super) struct Children<'a> {
    trie: &'a Trie<Node>,
    slot: u32,
}

impl<'a> Children<'a> {
    /// The names, ascending.
    pub(super) fn iter(self) -> impl Iterator<Item = &'a str> + 'a {
        self.trie.kid_names(self.slot)
    }
}

/// One applied change, for the watch dispatcher and the session's ephemeral bookkeeping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Change {
    pub(super) kind: NodeEventKind,
    /// Absolute path of the node.
    pub(super) path: String,
    /// The session owning the node when it is ephemeral, 0 otherwise.
    pub(super) ephemeral_owner: i64,
}

/// How to undo one applied step of a transaction that later failed. Steps are undone last first,
/// so restoring a parent's metadata as it was before the step is exact.
enum Undo {
    Created {
        path: String,
        parent: Meta,
    },
    Set {
        path: String,
        data: Arc<[u8]>,
        meta: Meta,
    },
    Deleted {
        path: String,
        node: Node,
        parent: Meta,
    },
}

/// The whole tree and the global transaction counter.
#[derive(Debug)]
pub(super) struct Tree {
    trie: Trie<Node>,
    /// Small data values, stored once for all the nodes that hold them.
    shared: SharedData,
    /// Nodes, root included: every slot but the free ones (the tree makes no placeholders).
    nodes: usize,
    zxid: i64,
}

impl Tree {
    /// A tree holding only the root `/`.
    pub(super) fn new() -> Self {
        let mut shared = SharedData::default();
        let root = Node {
            data: shared.share(&[]),
            meta: Meta {
                czxid: 0,
                mzxid: 0,
                ctime: 0,
                mtime: 0,
                ephemeral_owner: 0,
                version: 0,
                cversion: 0,
                child_creates: 0,
            },
        };
        Self {
            trie: Trie::new(Some(root)),
            shared,
            nodes: 1,
            zxid: 0,
        }
    }

    /// The last committed transaction id.
    #[cfg(test)]
    pub(super) fn zxid(&self) -> i64 {
        self.zxid
    }

    /// The number of nodes, root included.
    pub(super) fn len(&self) -> usize {
        self.nodes
    }

    /// The node at an absolute path.
    pub(super) fn node(&self, path: &str) -> Option<NodeView<'_>> {
        self.slot(path).map(|slot| self.view(slot))
    }

    /// Every node at and below `path`, parents before children (breadth first), or `None` when
    /// `path` does not exist.
    pub(super) fn subtree(&self, path: &str) -> Option<Vec<(String, NodeView<'_>)>> {
        let slot = self.slot(path)?;
        let below = self.trie.below(slot, path);
        Some(below.into_iter().map(|(p, s)| (p, self.view(s))).collect())
    }

    /// The slot of the node at `path`.
    fn slot(&self, path: &str) -> Option<u32> {
        self.trie
            .find(path)
            .filter(|s| self.trie.value(*s).is_some())
    }

    /// The slot at `path`, checked against an expected version (`-1` means any, as in ZooKeeper).
    fn existing(&self, path: &str, version: Option<i32>) -> Result<u32> {
        let slot = self.slot(path).ok_or_else(|| RegistryError::NoNode {
            path: path.to_owned(),
        })?;
        match version {
            Some(v) if v != -1 && v != self.view(slot).stat.version => {
                Err(RegistryError::BadVersion {
                    path: path.to_owned(),
                    expected: v,
                })
            }
            _ => Ok(slot),
        }
    }

    /// The slot of `path`'s parent and where `path`'s name is (`Ok`), or goes (`Err`), among its
    /// children.
    fn place(&self, path: &str) -> (u32, std::result::Result<usize, usize>) {
        let parent = self
            .slot(parent_path(path))
            .expect("a node's parent exists while the node does");
        (parent, self.trie.search(parent, name_of(path)))
    }

    fn node_mut(&mut self, slot: u32) -> &mut Node {
        self.trie.value_mut(slot).expect("every slot holds a node")
    }

    fn view(&self, slot: u32) -> NodeView<'_> {
        let node = self.trie.value(slot).expect("every slot holds a node");
        let m = &node.meta;
        NodeView {
            data: &node.data,
            stat: Stat {
                czxid: m.czxid,
                mzxid: m.mzxid,
                ctime: m.ctime,
                mtime: m.mtime,
                version: m.version,
                cversion: m.cversion,
                ephemeral_owner: m.ephemeral_owner,
                num_children: i32::try_from(self.trie.kids(slot).len()).unwrap_or(i32::MAX),
            },
            children: Children {
                trie: &self.trie,
                slot,
            },
        }
    }
}

/// The last segment of an absolute path.
fn name_of(path: &str) -> &str {
    &path[path.rfind('/').map_or(0, |i| i + 1)..]
}
