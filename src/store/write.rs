//! The store's writers, which only the feed calls: a node upserted or removed as its event
//! comes, a lazily created node recorded as pending, a re-listed subtree built aside and swapped
//! in whole, and the synced flag.

use super::*;

impl Mirror {
    pub(crate) fn set_synced(&self, synced: bool) {
        self.inner
            .synced
            .send_if_modified(|s| std::mem::replace(s, synced) != synced);
    }

    /// Applies a read after an event: only when not older than what the mirror holds (a fresh
    /// listing goes through [`Mirror::replace_subtree`] instead, and wins).
    pub(crate) fn upsert(&self, path: &str, data: Vec<u8>, stat: Stat) -> Upserted {
        let stat = MirrorStat::from(&stat);
        let mut tree = self.inner.tree.write();
        let outcome = match tree.get(path) {
            None => Upserted::Created,
            // The first read of a node known only from its creation event: its data arrives.
            Some(old) if old.pending => Upserted::Changed,
            Some(old) => {
                let older = stat.czxid < old.stat.czxid
                    || (stat.czxid == old.stat.czxid && stat.mzxid < old.stat.mzxid);
                if older {
                    return Upserted::Stale;
                }
                if stat.czxid != old.stat.czxid {
                    self.inner.removed.lock().note(path, old);
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
            data: tree.share(data),
            stat,
            pending: false,
        };
        tree.set(path, node);
        outcome
    }

    /// Swaps `listing` in as the complete content of the subtree at `root`, so a reader sees the
    /// subtree before the listing or after it, never a mix. For the whole namespace (`/`) a new tree
    /// is built aside (readers go on reading the old one meanwhile) and replaces the old one under
    /// one write lock; for one job's subtree the differences are applied in place under one write
    /// lock, so re-listing one job costs that job's nodes, not the namespace's. Returns what
    /// changed: removals deepest first, then each listed node's change, in listing order.
    pub(crate) fn replace_subtree(
        &self,
        root: &str,
        listing: Vec<ListedNode>,
    ) -> Vec<(String, Upserted)> {
        // Only the feed writes, and it is here: the tree read now is the tree swapped out.
        let old = self.inner.tree.upgradable_read();
        let listed: std::collections::HashSet<&str> =
            listing.iter().map(|n| n.path.as_str()).collect();
        let mut changes: Vec<(String, Upserted)> = old
            .subtree(root)
            .into_iter()
            .rev()
            .filter(|p| old.get(p).is_some() && !listed.contains(p.as_str()))
            .map(|p| (p, Upserted::Stale))
            .collect();
        drop(listed);
        let mut removed = self.inner.removed.lock();
        for (p, _) in &changes {
            if let Some(node) = old.get(p) {
                removed.note(p, node);
            }
        }
        let mut nodes = Vec::with_capacity(listing.len());
        for ListedNode { path, data, stat } in listing {
            let stat = MirrorStat::from(&stat);
            let outcome = match old.get(&path) {
                None => Upserted::Created,
                Some(was) if was.pending => Upserted::Changed,
                Some(was) if was.stat.czxid != stat.czxid => {
                    removed.note(&path, was);
                    Upserted::Replaced
                }
                Some(was)
                    if was.stat.mzxid == stat.mzxid
                        && was.stat.version == stat.version
                        && *was.data == data[..] =>
                {
                    Upserted::Unchanged
                }
                Some(_) => Upserted::Changed,
            };
            nodes.push((path, data, stat, outcome));
        }
        drop(removed);
        let fill = |tree: &mut tree::Tree, changes: &mut Vec<(String, Upserted)>| {
            for (path, data, stat, outcome) in nodes {
                let node = MirrorNode {
                    data: tree.share(data),
                    stat,
                    pending: false,
                };
                tree.set(&path, node);
                changes.push((path, outcome));
            }
        };
        if root == "/" {
            let mut new = tree::Tree::default();
            fill(&mut new, &mut changes);
            *parking_lot::RwLockUpgradableReadGuard::upgrade(old) = new;
        } else {
            let mut tree = parking_lot::RwLockUpgradableReadGuard::upgrade(old);
            for (path, _) in &changes {
                tree.remove(path);
            }
            fill(&mut tree, &mut changes);
        }
        changes
    }

    /// Records a node known to exist from its creation event, with its data still unread. Returns
    /// false (and changes nothing) when the node is mirrored already.
    pub(crate) fn insert_pending(&self, path: &str) -> bool {
        let mut tree = self.inner.tree.write();
        if tree.get(path).is_some() {
            return false;
        }
        let node = MirrorNode {
            data: tree.share(Vec::new()),
            stat: MirrorStat::default(),
            pending: true,
        };
        tree.set(path, node);
        true
    }

    /// Removes one node (not its children) and returns whether it was mirrored.
    pub(crate) fn remove(&self, path: &str) -> bool {
        let removed = self.inner.tree.write().remove(path);
        if let Some(node) = &removed {
            self.inner.removed.lock().note(path, node);
        }
        removed.is_some()
    }
}
