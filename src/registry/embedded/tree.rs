//! The node tree of the embedded registry: ZooKeeper's node semantics and atomic transactions,
//! with no notion of sessions or watches (those live in [`super::state`]).
//!
//! Every change goes through [`Tree::apply`], which runs a list of operations as one transaction
//! under one zxid and rolls back on the first failure, so a single call and a multi-op share one
//! code path and one set of rules.

use std::collections::HashMap;

use crate::registry::{
    join_path, parent_path, CreateMode, NodeEventKind, Op, OpResult, RegistryError, Result, Stat,
    ANY_VERSION,
};

/// One node: data, metadata and the sorted names of its children.
#[derive(Debug, Clone)]
pub(super) struct Node {
    pub(super) data: Vec<u8>,
    pub(super) stat: Stat,
    pub(super) children: Children,
    /// How many children were ever created here: the next sequence number. Observed on ZooKeeper
    /// 3.8, deletes bump `cversion` but not this, so the two differ once a child is deleted.
    pub(super) child_creates: i32,
}

/// The sorted names of a node's children. A sorted vector, not a `BTreeSet`: most nodes have one
/// or two children, and a tree node costs hundreds of bytes however few keys it holds (ten
/// thousand jobs mean about 70,000 parents).
#[derive(Debug, Clone, Default)]
pub(super) struct Children(Vec<Box<str>>);

impl Children {
    fn search(&self, name: &str) -> std::result::Result<usize, usize> {
        self.0.binary_search_by(|k| (**k).cmp(name))
    }

    pub(super) fn contains(&self, name: &str) -> bool {
        self.search(name).is_ok()
    }

    pub(super) fn insert(&mut self, name: &str) {
        if let Err(at) = self.search(name) {
            self.0.insert(at, name.into());
        }
    }

    pub(super) fn remove(&mut self, name: &str) {
        if let Ok(at) = self.search(name) {
            self.0.remove(at);
            if self.0.is_empty() {
                self.0 = Vec::new();
            }
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The names, ascending.
    pub(super) fn iter(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|k| &**k)
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

/// How to undo one applied step of a transaction that later failed.
enum Undo {
    Created {
        path: String,
        parent_cversion: i32,
    },
    Set {
        path: String,
        data: Vec<u8>,
        stat: Stat,
    },
    Deleted {
        path: String,
        node: Node,
        parent_cversion: i32,
    },
}

/// The whole tree, keyed by absolute path, and the global transaction counter.
#[derive(Debug)]
pub(super) struct Tree {
    nodes: HashMap<String, Node>,
    zxid: i64,
}

impl Tree {
    /// A tree holding only the root `/`.
    pub(super) fn new() -> Self {
        let root = Node {
            data: Vec::new(),
            stat: Stat::default(),
            children: Children::default(),
            child_creates: 0,
        };
        Self {
            nodes: HashMap::from([("/".to_owned(), root)]),
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
        self.nodes.len()
    }

    /// The node at an absolute path.
    pub(super) fn node(&self, path: &str) -> Option<&Node> {
        self.nodes.get(path)
    }

    /// Applies `ops` (absolute paths) as one transaction owned by `session` at wall-clock `now_ms`.
    /// On failure nothing is applied and the error carries the index of the failing operation.
    pub(super) fn apply(
        &mut self,
        ops: &[Op],
        session: i64,
        now_ms: i64,
    ) -> std::result::Result<(Vec<OpResult>, Vec<Change>), (usize, RegistryError)> {
        // ZooKeeper gives all operations of a multi-op one zxid.
        let zxid = self.zxid + 1;
        let mut undo = Vec::with_capacity(ops.len());
        let mut results = Vec::with_capacity(ops.len());
        let mut changes = Vec::with_capacity(ops.len());
        for (index, op) in ops.iter().enumerate() {
            match self.step(op, session, zxid, now_ms, &mut undo, &mut changes) {
                Ok(r) => results.push(r),
                Err(e) => {
                    self.rollback(undo);
                    return Err((index, e));
                }
            }
        }
        self.zxid = zxid;
        Ok((results, changes))
    }

    fn step(
        &mut self,
        op: &Op,
        session: i64,
        zxid: i64,
        now_ms: i64,
        undo: &mut Vec<Undo>,
        changes: &mut Vec<Change>,
    ) -> Result<OpResult> {
        match op {
            Op::Create { path, data, mode } => {
                let (created, owner) =
                    self.create(path, data, *mode, session, zxid, now_ms, undo)?;
                changes.push(Change {
                    kind: NodeEventKind::Created,
                    path: created.clone(),
                    ephemeral_owner: owner,
                });
                Ok(OpResult::Created(created))
            }
            Op::Set {
                path,
                data,
                version,
            } => {
                let node = self.existing(path, *version)?;
                undo.push(Undo::Set {
                    path: path.clone(),
                    data: std::mem::replace(&mut node.data, data.clone()),
                    stat: node.stat,
                });
                node.stat.version += 1;
                node.stat.mzxid = zxid;
                node.stat.mtime = now_ms;
                let stat = node.stat;
                changes.push(Change {
                    kind: NodeEventKind::DataChanged,
                    path: path.clone(),
                    ephemeral_owner: stat.ephemeral_owner,
                });
                Ok(OpResult::Set(stat))
            }
            Op::Delete { path, version } => {
                if path == "/" {
                    return Err(RegistryError::InvalidPath {
                        path: path.clone(),
                        reason: "the root cannot be deleted".to_owned(),
                    });
                }
                let node = self.existing(path, *version)?;
                if !node.children.is_empty() {
                    return Err(RegistryError::NotEmpty { path: path.clone() });
                }
                let node = self.nodes.remove(path).expect("checked above");
                let parent = self.parent_mut(path);
                let parent_cversion = parent.stat.cversion;
                parent.children.remove(name_of(path));
                parent.stat.cversion += 1;
                parent.stat.num_children -= 1;
                changes.push(Change {
                    kind: NodeEventKind::Deleted,
                    path: path.clone(),
                    ephemeral_owner: node.stat.ephemeral_owner,
                });
                undo.push(Undo::Deleted {
                    path: path.clone(),
                    node,
                    parent_cversion,
                });
                Ok(OpResult::Deleted)
            }
            Op::Check { path, version } => {
                self.existing(path, (*version != ANY_VERSION).then_some(*version))?;
                Ok(OpResult::Checked)
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn create(
        &mut self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
        session: i64,
        zxid: i64,
        now_ms: i64,
        undo: &mut Vec<Undo>,
    ) -> Result<(String, i64)> {
        if path == "/" {
            return Err(RegistryError::NodeExists {
                path: path.to_owned(),
            });
        }
        let parent_path = parent_path(path);
        let parent = self
            .nodes
            .get_mut(parent_path)
            .ok_or_else(|| RegistryError::NoNode {
                path: parent_path.to_owned(),
            })?;
        if parent.stat.ephemeral_owner != 0 {
            return Err(RegistryError::NoChildrenForEphemerals {
                path: parent_path.to_owned(),
            });
        }
        // Like ZooKeeper, the sequence number counts the parent's child creates, so numbers only
        // grow and a rolled-back multi-op reuses none.
        let created = if mode.is_sequential() {
            format!("{path}{:010}", parent.child_creates)
        } else {
            path.to_owned()
        };
        let name = name_of(&created);
        if parent.children.contains(name) {
            return Err(RegistryError::NodeExists { path: created });
        }
        let parent_cversion = parent.stat.cversion;
        parent.children.insert(name);
        parent.stat.cversion += 1;
        parent.child_creates += 1;
        parent.stat.num_children += 1;
        let owner = if mode.is_ephemeral() { session } else { 0 };
        let stat = Stat {
            czxid: zxid,
            mzxid: zxid,
            ctime: now_ms,
            mtime: now_ms,
            version: 0,
            cversion: 0,
            ephemeral_owner: owner,
            num_children: 0,
        };
        let node = Node {
            data: data.to_vec(),
            stat,
            children: Children::default(),
            child_creates: 0,
        };
        self.nodes.insert(created.clone(), node);
        undo.push(Undo::Created {
            path: created.clone(),
            parent_cversion,
        });
        Ok((created, owner))
    }

    /// The node at `path`, checked against an expected version (`-1` means any, as in ZooKeeper).
    fn existing(&mut self, path: &str, version: Option<i32>) -> Result<&mut Node> {
        let node = self
            .nodes
            .get_mut(path)
            .ok_or_else(|| RegistryError::NoNode {
                path: path.to_owned(),
            })?;
        match version {
            Some(v) if v != -1 && v != node.stat.version => Err(RegistryError::BadVersion {
                path: path.to_owned(),
                expected: v,
            }),
            _ => Ok(node),
        }
    }

    fn parent_mut(&mut self, path: &str) -> &mut Node {
        self.nodes
            .get_mut(parent_path(path))
            .expect("a node's parent exists while the node does")
    }

    fn rollback(&mut self, undo: Vec<Undo>) {
        for step in undo.into_iter().rev() {
            match step {
                Undo::Created {
                    path,
                    parent_cversion,
                } => {
                    self.nodes.remove(&path);
                    let parent = self.parent_mut(&path);
                    parent.children.remove(name_of(&path));
                    parent.stat.cversion = parent_cversion;
                    parent.child_creates -= 1;
                    parent.stat.num_children -= 1;
                }
                Undo::Set { path, data, stat } => {
                    let node = self.nodes.get_mut(&path).expect("set node still exists");
                    node.data = data;
                    node.stat = stat;
                }
                Undo::Deleted {
                    path,
                    node,
                    parent_cversion,
                } => {
                    let parent = self.parent_mut(&path);
                    parent.children.insert(name_of(&path));
                    parent.stat.cversion = parent_cversion;
                    parent.stat.num_children += 1;
                    self.nodes.insert(path, node);
                }
            }
        }
    }

    /// Every node at and below `path`, parents before children (breadth first), or `None` when
    /// `path` does not exist.
    pub(super) fn subtree(&self, path: &str) -> Option<Vec<(String, &Node)>> {
        let root = self.nodes.get(path)?;
        let mut out = vec![(path.to_owned(), root)];
        let mut next = 0;
        while next < out.len() {
            let (p, node) = (out[next].0.clone(), out[next].1);
            for name in node.children.iter() {
                let child = join_path(&p, name);
                let child_node = self
                    .nodes
                    .get(&child)
                    .expect("child index matches the tree");
                out.push((child, child_node));
            }
            next += 1;
        }
        Some(out)
    }
}

/// The last segment of an absolute path.
fn name_of(path: &str) -> &str {
    &path[path.rfind('/').map_or(0, |i| i + 1)..]
}
