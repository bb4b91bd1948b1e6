//! One transaction on the tree: each operation checked by ZooKeeper's rules and applied under
//! one zxid, and every change undone, in reverse, at the first failure.

use super::*;

impl Tree {
    /// Applies `ops` (absolute paths) as one transaction owned by `session` at wall-clock `now_ms`.
    /// On failure nothing is applied and the error carries the index of the failing operation.
    pub(in crate::registry::embedded) fn apply(
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

    pub(super) fn step(
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
                let slot = self.existing(path, *version)?;
                let data = self.shared.share(data);
                let node = self.node_mut(slot);
                undo.push(Undo::Set {
                    path: path.clone(),
                    data: std::mem::replace(&mut node.data, data),
                    meta: node.meta,
                });
                node.meta.version += 1;
                node.meta.mzxid = zxid;
                node.meta.mtime = now_ms;
                let stat = self.view(slot).stat;
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
                let slot = self.existing(path, *version)?;
                if !self.trie.kids(slot).is_empty() {
                    return Err(RegistryError::NotEmpty { path: path.clone() });
                }
                let (parent, Ok(at)) = self.place(path) else {
                    unreachable!("{path} was found above");
                };
                let node = self.trie.remove_child(parent, at).expect("checked above");
                self.nodes -= 1;
                let parent_meta = &mut self.node_mut(parent).meta;
                let before = *parent_meta;
                parent_meta.cversion += 1;
                changes.push(Change {
                    kind: NodeEventKind::Deleted,
                    path: path.clone(),
                    ephemeral_owner: node.meta.ephemeral_owner,
                });
                undo.push(Undo::Deleted {
                    path: path.clone(),
                    node,
                    parent: before,
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
    pub(super) fn create(
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
            .slot(parent_path)
            .ok_or_else(|| RegistryError::NoNode {
                path: parent_path.to_owned(),
            })?;
        let before = self.node_mut(parent).meta;
        if before.ephemeral_owner != 0 {
            return Err(RegistryError::NoChildrenForEphemerals {
                path: parent_path.to_owned(),
            });
        }
        // Like ZooKeeper, the sequence number counts the parent's child creates, so numbers only
        // grow and a rolled-back multi-op reuses none.
        let created = if mode.is_sequential() {
            format!("{path}{:010}", before.child_creates)
        } else {
            path.to_owned()
        };
        let name = name_of(&created);
        let Err(at) = self.trie.search(parent, name) else {
            return Err(RegistryError::NodeExists { path: created });
        };
        let parent_meta = &mut self.node_mut(parent).meta;
        parent_meta.cversion += 1;
        parent_meta.child_creates += 1;
        let owner = if mode.is_ephemeral() { session } else { 0 };
        let node = Node {
            data: self.shared.share(data),
            meta: Meta {
                czxid: zxid,
                mzxid: zxid,
                ctime: now_ms,
                mtime: now_ms,
                ephemeral_owner: owner,
                version: 0,
                cversion: 0,
                child_creates: 0,
            },
        };
        self.trie.add_child(parent, at, name, Some(node));
        self.nodes += 1;
        undo.push(Undo::Created {
            path: created.clone(),
            parent: before,
        });
        Ok((created, owner))
    }

    pub(super) fn rollback(&mut self, undo: Vec<Undo>) {
        for step in undo.into_iter().rev() {
            match step {
                Undo::Created { path, parent } => {
                    let (slot, Ok(at)) = self.place(&path) else {
                        unreachable!("{path} was created in this transaction");
                    };
                    self.trie.remove_child(slot, at);
                    self.nodes -= 1;
                    self.node_mut(slot).meta = parent;
                }
                Undo::Set { path, data, meta } => {
                    let slot = self.slot(&path).expect("set node still exists");
                    *self.node_mut(slot) = Node { data, meta };
                }
                Undo::Deleted { path, node, parent } => {
                    let (slot, Err(at)) = self.place(&path) else {
                        unreachable!("{path} was deleted in this transaction");
                    };
                    self.trie.add_child(slot, at, name_of(&path), Some(node));
                    self.nodes += 1;
                    self.node_mut(slot).meta = parent;
                }
            }
        }
    }
}
