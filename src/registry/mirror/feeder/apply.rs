//! How the feed applies what it hears to the mirror: batches of node events in order, the pending
//! reads of lazily created nodes, and whole listings swapped in.

use std::collections::{HashSet, VecDeque};

use tokio::time::Instant;

use crate::registry::mirror::feed::MirrorEvent;
use crate::registry::{ListedNode, NodeEventKind, RegistryError, Stat};
use crate::store::Upserted;

use super::{covering, Feeder, Flow, Step};

impl Feeder {
    /// Applies a batch of node events in order. A deletion needs no read (events come in order);
    /// a lazy node's creation is recorded as pending, unless the batch holds another kind of event,
    /// in which case every pending node and every node of the batch is read first; any other
    /// event's node is read. The reads are issued together and applied in event order; a read
    /// newer than its event is harmless (the mirror keeps the newest state it saw).
    pub(super) async fn node_events(&mut self, batch: Vec<(NodeEventKind, String)>) -> Flow {
        let is_lazy = |p: &str| self.options.lazy_data.as_ref().is_some_and(|f| f(p));
        let lazy: Vec<bool> = batch.iter().map(|(_, p)| is_lazy(p)).collect();
        let all_lazy = lazy.iter().all(|l| *l);
        if !all_lazy {
            if let Flow::End = self.flush(None).await {
                return Flow::End;
            }
        }
        // What each event needs, decided before anything is applied.
        let plan: Vec<Step> = batch
            .iter()
            .zip(&lazy)
            .map(|((kind, path), lazy)| match kind {
                NodeEventKind::Deleted => Step::Remove,
                NodeEventKind::Created if *lazy && all_lazy && !self.mirror.exists(path) => {
                    Step::Pending
                }
                _ => Step::Read,
            })
            .collect();
        let reads = batch
            .iter()
            .zip(&plan)
            .filter(|(_, step)| **step == Step::Read)
            .map(|((_, path), _)| path.clone())
            .collect();
        let mut results = self.read_all(reads).await.into_iter();
        let count = batch.len();
        for (n, ((_, path), step)) in batch.into_iter().zip(plan).enumerate() {
            let read = match step {
                Step::Remove => {
                    self.remove_subtree(&path);
                    continue;
                }
                Step::Pending if self.mirror.insert_pending(&path) => {
                    self.pending_set.insert(path.clone());
                    self.pending.push_back((Instant::now(), path.clone()));
                    self.emit(MirrorEvent::Created { path });
                    continue;
                }
                // Mirrored meanwhile (cannot happen without a deletion in between): read it.
                Step::Pending => self.registry.get(&path).await,
                Step::Read => results.next().expect("one read per read step").1,
            };
            if let Err(e) = self.apply_read(&path, read) {
                let Some(root) = covering(&self.roots, &path) else {
                    continue; // a root dropped meanwhile
                };
                let flow = self.failed("reading a changed node", e, &root);
                // The events after the failed read are the "next event" that closes the gap:
                // re-list now rather than wait for another.
                if matches!(flow, Flow::Continue) && n + 1 < count {
                    return self.retry_relist(&root).await;
                }
                return flow;
            }
        }
        Flow::Continue
    }

    /// Reads `paths` in one `get_many` (multi-read requests on ZooKeeper) and returns the results
    /// in order. When the call itself fails, only the first path is returned, with the error:
    /// callers stop at the first failed read.
    pub(super) async fn read_all(
        &self,
        paths: Vec<String>,
    ) -> Vec<(String, Result<(Vec<u8>, Stat), RegistryError>)> {
        if paths.is_empty() {
            return Vec::new();
        }
        match self.registry.get_many(&paths).await {
            Ok(results) => paths.into_iter().zip(results).collect(),
            Err(e) => vec![(paths.into_iter().next().expect("a path"), Err(e))],
        }
    }

    /// Applies one read of `path`: its data, or its removal when it is gone.
    pub(super) fn apply_read(
        &mut self,
        path: &str,
        read: Result<(Vec<u8>, Stat), RegistryError>,
    ) -> Result<(), RegistryError> {
        match read {
            Ok((data, stat)) => {
                self.upsert(path, data, stat);
                Ok(())
            }
            Err(e) if e.is_no_node() => {
                self.remove_subtree(path);
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// When the oldest pending node is due for its read.
    pub(super) fn settle_deadline(&mut self) -> Option<Instant> {
        while let Some((at, path)) = self.pending.front() {
            if self.pending_set.contains(path) && self.mirror.is_pending(path) {
                return Some(*at + self.options.settle);
            }
            let (_, path) = self.pending.pop_front().expect("a front entry");
            self.pending_set.remove(&path);
        }
        self.give_back_pending();
        None
    }

    /// Frees the pending tables once empty: a fire of ten thousand jobs sizes them for ten
    /// thousand markers, and an empty `HashSet` or `VecDeque` keeps its capacity.
    pub(super) fn give_back_pending(&mut self) {
        if self.pending.is_empty() {
            self.pending = VecDeque::new();
            self.pending_set = HashSet::new();
        }
    }

    /// Reads the pending nodes created at or before `due` (all of them for `None`), several at a
    /// time, and applies what the registry holds.
    pub(super) async fn flush(&mut self, due: Option<Instant>) -> Flow {
        let mut paths = Vec::new();
        while let Some((at, _)) = self.pending.front() {
            if due.is_some_and(|d| *at > d) {
                break;
            }
            let (_, path) = self.pending.pop_front().expect("a front entry");
            if self.pending_set.remove(&path) && self.mirror.is_pending(&path) {
                paths.push(path);
            }
        }
        self.give_back_pending();
        if paths.is_empty() {
            return Flow::Continue;
        }
        for (path, read) in self.read_all(paths).await {
            if let Err(e) = self.apply_read(&path, read) {
                if let Some(root) = covering(&self.roots, &path) {
                    return self.failed("reading a node created earlier", e, &root);
                }
            }
        }
        Flow::Continue
    }

    /// Swaps a listing of `root` in whole ([`Mirror::replace_subtree`]), then emits each
    /// difference (removals deepest first). When it closed the last gap: `Resynced`, and the
    /// mirror is synced.
    pub(super) fn swap_in(&mut self, root: &str, listing: Vec<ListedNode>) {
        if root == "/" {
            self.pending.clear();
            self.pending_set.clear();
        }
        // The whole new subtree is swapped in before any event goes out: a consumer that reacts
        // to the first one reads the subtree as listed.
        for (path, change) in self.mirror.replace_subtree(root, listing) {
            match change {
                // A mirrored node the listing no longer has.
                Upserted::Stale => self.emit(MirrorEvent::Deleted { path }),
                Upserted::Created => self.emit(MirrorEvent::Created { path }),
                Upserted::Changed => self.emit(MirrorEvent::Changed { path }),
                Upserted::Replaced => {
                    self.emit(MirrorEvent::Deleted { path: path.clone() });
                    self.emit(MirrorEvent::Created { path });
                }
                Upserted::Unchanged => {}
            }
        }
        let closed = self
            .roots
            .get_mut(root)
            .is_some_and(|r| std::mem::take(&mut r.gap));
        if closed {
            self.gaps -= 1;
            if self.gaps == 0 {
                self.emit(MirrorEvent::Resynced);
            }
        }
        if self.gaps == 0 {
            self.mirror.set_synced(true);
        }
    }

    pub(super) fn upsert(&mut self, path: &str, data: Vec<u8>, stat: Stat) {
        let path = path.to_owned();
        match self.mirror.upsert(&path, data, stat) {
            Upserted::Created => self.emit(MirrorEvent::Created { path }),
            Upserted::Changed => self.emit(MirrorEvent::Changed { path }),
            Upserted::Replaced => {
                self.emit(MirrorEvent::Deleted { path: path.clone() });
                self.emit(MirrorEvent::Created { path });
            }
            Upserted::Unchanged | Upserted::Stale => {}
        }
    }

    /// Removes a node that is gone, with anything still mirrored below it (deepest first).
    pub(super) fn remove_subtree(&mut self, path: &str) {
        for p in self.mirror.subtree(path).into_iter().rev() {
            if self.mirror.remove(&p) {
                self.emit(MirrorEvent::Deleted { path: p });
            }
        }
    }
}
