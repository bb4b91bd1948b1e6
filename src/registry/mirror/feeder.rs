//! The feed task: applies the events of one recursive watch per root, all on one channel
//! ([`Registry::watch_recursive_into`]), to the mirror in order, re-lists the roots after a gap,
//! and takes requests to add or drop roots.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::registry::{
    ListedNode, NodeEventKind, Registry, RegistryError, SessionState, Stat, WatchEvent, WatchGuard,
};
use crate::store::{Mirror, Upserted};

use super::feed::{Control, Done, FeedOptions, MirrorError, MirrorEvent};

/// The most node events applied as one batch.
const MAX_BATCH: usize = 1024;

/// A watched root.
struct Root {
    /// Its watch may have missed changes (a disconnect, a failed read) since its last listing.
    gap: bool,
    /// Keeps its watch.
    _watch: WatchGuard,
}

/// The feed task's state.
pub(super) struct Feeder {
    mirror: Mirror,
    registry: Arc<dyn Registry>,
    tx: mpsc::UnboundedSender<MirrorEvent>,
    options: FeedOptions,
    roots: HashMap<Arc<str>, Root>,
    /// How many roots have a gap.
    gaps: usize,
    /// Every root's watch sends here. Weak: when every watch has ended (the registry dropped
    /// them without a terminal state), the channel closes and the feed ends.
    sender: mpsc::WeakUnboundedSender<WatchEvent>,
    /// The channel's receiving end; `None` while no watch holds a sender (no root).
    watched: Option<mpsc::UnboundedReceiver<WatchEvent>>,
    /// The last session state told to the consumer (each root's watch reports every change).
    told: SessionState,
    /// Nodes recorded from creation events with their data unread, oldest first (entries whose
    /// node went meanwhile are skipped when reached).
    pending: VecDeque<(Instant, String)>,
    pending_set: HashSet<String>,
}

/// What one event of a batch needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Remove the node and what is below it.
    Remove,
    /// Record the lazy node as pending, unread.
    Pending,
    /// Read the node and apply what the registry holds.
    Read,
}

/// Whether the feed goes on after a step.
enum Flow {
    Continue,
    End,
}

/// The roots that `roots` adds to `watched`: not covered by a watched root (itself or an
/// ancestor), without duplicates; `/` alone when it is among them.
fn uncovered(watched: &HashMap<Arc<str>, Root>, roots: Vec<String>) -> Vec<String> {
    let mut new: Vec<String> = Vec::new();
    for root in roots {
        if covering(watched, &root).is_none() && !new.contains(&root) {
            new.push(root);
        }
    }
    if new.iter().any(|r| r == "/") {
        new.retain(|r| r == "/");
    }
    new
}

/// The watched root at or above `path`.
fn covering(roots: &HashMap<Arc<str>, Root>, path: &str) -> Option<Arc<str>> {
    if let Some((root, _)) = roots.get_key_value("/") {
        return Some(root.clone());
    }
    // Each prefix ending before a '/' (and the path itself), shortest first.
    let ends = path.match_indices('/').map(|(i, _)| i).skip(1);
    ends.chain([path.len()])
        .find_map(|end| roots.get_key_value(&path[..end]))
        .map(|(root, _)| root.clone())
}

/// Lists `root` for the mirror: an absent root is an empty subtree (its watch reports the
/// creation).
async fn list(registry: &dyn Registry, root: &str) -> Result<Vec<ListedNode>, RegistryError> {
    match registry.list_subtree(root).await {
        Err(e) if e.is_no_node() => Ok(Vec::new()),
        other => other,
    }
}

impl Feeder {
    /// Watches every root, then lists each into the mirror: on return the mirror is synced.
    pub(super) async fn start(
        mirror: Mirror,
        registry: Arc<dyn Registry>,
        tx: mpsc::UnboundedSender<MirrorEvent>,
        options: FeedOptions,
        roots: Vec<String>,
    ) -> Result<Self, MirrorError> {
        let (sender, watched) = mpsc::unbounded_channel::<WatchEvent>();
        let mut feeder = Feeder {
            mirror,
            registry,
            tx,
            options,
            roots: HashMap::new(),
            gaps: 0,
            sender: sender.downgrade(),
            watched: Some(watched),
            told: SessionState::Connected,
            pending: VecDeque::new(),
            pending_set: HashSet::new(),
        };
        let roots = uncovered(&feeder.roots, roots);
        for (root, watch) in roots.iter().zip(feeder.watch(&roots).await) {
            let watch = watch.map_err(|source| MirrorError::Watch {
                root: root.clone(),
                source,
            })?;
            feeder.roots.insert(
                Arc::from(root.as_str()),
                Root {
                    gap: false,
                    _watch: watch,
                },
            );
            feeder.open_gap(root);
        }
        let listings = roots.iter().map(|r| list(&*feeder.registry, r));
        for (root, listing) in roots.iter().zip(futures::future::join_all(listings).await) {
            let listing = listing.map_err(|source| MirrorError::List {
                root: root.clone(),
                source,
            })?;
            feeder.swap_in(root, listing);
        }
        if roots.is_empty() {
            feeder.emit(MirrorEvent::Resynced);
            feeder.mirror.set_synced(true);
        }
        Ok(feeder)
    }

    /// Starts the watches of `roots`, side by side, into the feed's channel (a new one when no
    /// watch held the old one).
    async fn watch(&mut self, roots: &[String]) -> Vec<Result<WatchGuard, RegistryError>> {
        let sender = match self.sender.upgrade() {
            Some(sender) => sender,
            None => {
                let (sender, watched) = mpsc::unbounded_channel();
                self.sender = sender.downgrade();
                self.watched = Some(watched);
                sender
            }
        };
        let registry = &self.registry;
        let watches = (roots.iter()).map(|r| registry.watch_recursive_into(r, sender.clone()));
        futures::future::join_all(watches).await
    }

    /// Marks `root` as possibly behind the registry.
    fn open_gap(&mut self, root: &str) {
        if let Some(r) = self.roots.get_mut(root).filter(|r| !r.gap) {
            r.gap = true;
            self.gaps += 1;
        }
        self.mirror.set_synced(false);
    }

    pub(super) async fn run(mut self, mut requests: mpsc::UnboundedReceiver<Control>) {
        // A watch event taken from the channel while collecting a batch of node events.
        let mut held: Option<WatchEvent> = None;
        let mut requests_open = true;
        loop {
            let event = match held.take() {
                Some(event) => event,
                None => {
                    let settle_at = self.settle_deadline();
                    tokio::select! {
                        event = recv(&mut self.watched) => match event {
                            Some(event) => event,
                            // Every watch ended without saying why: the session is gone, so is
                            // the mirror's freshness.
                            None if !self.roots.is_empty() => {
                                self.mirror.set_synced(false);
                                return;
                            }
                            // No root, no watch: nothing to hear until a root comes.
                            None => {
                                self.watched = None;
                                continue;
                            }
                        },
                        request = requests.recv(), if requests_open => {
                            let Some(request) = request else {
                                requests_open = false;
                                continue;
                            };
                            if let Flow::End = self.requests(request, &mut requests).await {
                                return;
                            }
                            continue;
                        }
                        () = sleep_until_some(settle_at) => {
                            let due = Instant::now() - self.options.settle;
                            if let Flow::End = self.flush(Some(due)).await {
                                return;
                            }
                            continue;
                        }
                    }
                }
            };
            let flow = match event {
                WatchEvent::Node { path, kind } => match covering(&self.roots, &path) {
                    // From a root dropped meanwhile.
                    None => Flow::Continue,
                    Some(root) if self.roots.get(&root).is_some_and(|r| r.gap) => {
                        tracing::debug!(%path, "mirror re-lists before applying events after a gap");
                        self.retry_relist(&root).await
                    }
                    Some(_) => {
                        // Every node event already queued goes in one batch, so that their
                        // reads travel together instead of one round trip after another.
                        let mut batch = vec![(kind, path)];
                        while batch.len() < MAX_BATCH {
                            let Some(watched) = self.watched.as_mut() else {
                                break;
                            };
                            match watched.try_recv() {
                                Ok(WatchEvent::Node { kind, path }) => batch.push((kind, path)),
                                Ok(session) => {
                                    held = Some(session);
                                    break;
                                }
                                Err(_) => break,
                            }
                        }
                        self.node_events(batch).await
                    }
                },
                WatchEvent::Session(SessionState::Disconnected) => {
                    let roots: Vec<Arc<str>> = self.roots.keys().cloned().collect();
                    for root in roots {
                        self.open_gap(&root);
                    }
                    self.tell(SessionState::Disconnected);
                    Flow::Continue
                }
                WatchEvent::Session(SessionState::Connected) => {
                    self.tell(SessionState::Connected);
                    self.relist_gaps().await
                }
                WatchEvent::Session(terminal) => self.end(terminal),
            };
            if let Flow::End = flow {
                return;
            }
        }
    }

    /// Re-lists every root with a gap, the listings side by side.
    async fn relist_gaps(&mut self) -> Flow {
        let roots: Vec<Arc<str>> = (self.roots.iter())
            .filter(|(_, r)| r.gap)
            .map(|(root, _)| root.clone())
            .collect();
        let listings = roots.iter().map(|r| list(&*self.registry, r));
        for (root, listing) in roots.iter().zip(futures::future::join_all(listings).await) {
            match listing {
                Ok(listing) => self.swap_in(root, listing),
                Err(e) => {
                    if let Flow::End = self.failed("re-listing after a gap", e, root) {
                        return Flow::End;
                    }
                }
            }
        }
        Flow::Continue
    }

    /// Tells the consumer a session state once, however many watches report it.
    fn tell(&mut self, state: SessionState) {
        if std::mem::replace(&mut self.told, state) != state {
            self.emit(MirrorEvent::Session(state));
        }
    }

    /// Carries out `first` and every request already queued behind it, in order: the roots of
    /// consecutive additions are watched and listed together.
    async fn requests(
        &mut self,
        first: Control,
        queue: &mut mpsc::UnboundedReceiver<Control>,
    ) -> Flow {
        let mut next = Some(first);
        while let Some(request) = next.take() {
            match request {
                Control::Add(mut roots, done) => {
                    let mut dones: Vec<Done> = vec![done];
                    while let Ok(request) = queue.try_recv() {
                        match request {
                            Control::Add(more, done) => {
                                roots.extend(more);
                                dones.push(done);
                            }
                            other => {
                                next = Some(other);
                                break;
                            }
                        }
                    }
                    let flow = self.add(roots).await;
                    dones.into_iter().for_each(|done| done());
                    if let Flow::End = flow {
                        return flow;
                    }
                }
                Control::Remove(root, done) => {
                    self.remove(&root);
                    done();
                    next = queue.try_recv().ok();
                }
            }
        }
        Flow::Continue
    }

    /// Watches and lists the roots not covered yet. A watch that cannot start ends the feed (its
    /// subtree would go stale unseen; a new session starts every watch again).
    async fn add(&mut self, roots: Vec<String>) -> Flow {
        let roots = uncovered(&self.roots, roots);
        if roots.is_empty() {
            return Flow::Continue;
        }
        for (root, watch) in roots.iter().zip(self.watch(&roots).await) {
            match watch {
                Ok(watch) => {
                    let root = Arc::from(root.as_str());
                    self.roots.insert(
                        root,
                        Root {
                            gap: false,
                            _watch: watch,
                        },
                    );
                }
                Err(e) => {
                    tracing::warn!(%root, error = %e, "cannot watch a new root; ending the feed");
                    self.mirror.set_synced(false);
                    return Flow::End;
                }
            }
        }
        let listings = roots.iter().map(|r| list(&*self.registry, r));
        for (root, listing) in roots.iter().zip(futures::future::join_all(listings).await) {
            match listing {
                Ok(listing) => self.swap_in(root, listing),
                Err(e) => {
                    self.open_gap(root);
                    if let Flow::End = self.failed("listing a new root", e, root) {
                        return Flow::End;
                    }
                }
            }
        }
        if roots.iter().any(|r| r == "/") {
            // The namespace's watch covers every other root: theirs would only double events.
            let others: Vec<Arc<str>> = self
                .roots
                .keys()
                .filter(|r| &***r != "/")
                .cloned()
                .collect();
            for root in others {
                self.forget(&root);
            }
        }
        Flow::Continue
    }

    /// Stops the watch of `root` and drops its nodes from the mirror, telling nobody.
    fn remove(&mut self, root: &str) {
        if root == "/" || !self.roots.contains_key(root) {
            return;
        }
        self.forget(root);
        for path in self.mirror.subtree(root).into_iter().rev() {
            self.mirror.remove(&path);
        }
        if self.gaps == 0 {
            self.mirror.set_synced(true);
        }
    }

    /// Stops the watch of `root`, keeping its nodes.
    fn forget(&mut self, root: &str) {
        // Dropping the root drops its guard, which ends its watch.
        if let Some(r) = self.roots.remove(root) {
            if r.gap {
                self.gaps -= 1;
            }
        }
    }

    /// Applies a batch of node events in order. A deletion needs no read (events come in order);
    /// a lazy node's creation is recorded as pending, unless the batch holds another kind of event,
    /// in which case every pending node and every node of the batch is read first; any other
    /// event's node is read. The reads are issued together and applied in event order; a read
    /// newer than its event is harmless (the mirror keeps the newest state it saw).
    async fn node_events(&mut self, batch: Vec<(NodeEventKind, String)>) -> Flow {
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
    async fn read_all(
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
    fn apply_read(
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
    fn settle_deadline(&mut self) -> Option<Instant> {
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
    fn give_back_pending(&mut self) {
        if self.pending.is_empty() {
            self.pending = VecDeque::new();
            self.pending_set = HashSet::new();
        }
    }

    /// Reads the pending nodes created at or before `due` (all of them for `None`), several at a
    /// time, and applies what the registry holds.
    async fn flush(&mut self, due: Option<Instant>) -> Flow {
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

    async fn retry_relist(&mut self, root: &Arc<str>) -> Flow {
        match list(&*self.registry, root).await {
            Ok(listing) => {
                self.swap_in(root, listing);
                Flow::Continue
            }
            Err(e) => self.failed("re-listing after a gap", e, root),
        }
    }

    /// A registry call failed: a fatal error ends the feed, any other leaves a gap in `root`
    /// that its next event or reconnect re-lists.
    fn failed(&mut self, step: &str, e: RegistryError, root: &str) -> Flow {
        match e {
            RegistryError::SessionExpired => self.end(SessionState::Expired),
            RegistryError::Closed => self.end(SessionState::Closed),
            e => {
                tracing::warn!(%root, error = %e, "mirror feed failed {step}; will re-list");
                self.open_gap(root);
                Flow::Continue
            }
        }
    }

    fn end(&mut self, state: SessionState) -> Flow {
        self.mirror.set_synced(false);
        self.emit(MirrorEvent::Session(state));
        Flow::End
    }

    /// Swaps a listing of `root` in whole ([`Mirror::replace_subtree`]), then emits each
    /// difference (removals deepest first). When it closed the last gap: `Resynced`, and the
    /// mirror is synced.
    fn swap_in(&mut self, root: &str, listing: Vec<ListedNode>) {
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

    fn upsert(&mut self, path: &str, data: Vec<u8>, stat: Stat) {
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
    fn remove_subtree(&mut self, path: &str) {
        for p in self.mirror.subtree(path).into_iter().rev() {
            if self.mirror.remove(&p) {
                self.emit(MirrorEvent::Deleted { path: p });
            }
        }
    }

    fn emit(&self, event: MirrorEvent) {
        // The consumer dropped its receiver: the mirror itself still has readers, keep feeding it.
        let _ = self.tx.send(event);
    }
}

/// The next event of the watches' channel, or never without one.
async fn recv(watched: &mut Option<mpsc::UnboundedReceiver<WatchEvent>>) -> Option<WatchEvent> {
    match watched {
        Some(watched) => watched.recv().await,
        None => std::future::pending().await,
    }
}

/// Sleeps until `at`, or forever without one.
async fn sleep_until_some(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
