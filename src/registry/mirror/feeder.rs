//! The feed task: applies the events of one recursive watch per root, all on one channel
//! ([`Registry::watch_recursive_into`]), to the mirror in order, re-lists the roots after a gap,
//! and takes requests to add or drop roots.
//!
//! Here the task's state, its start and its loop; in `roots.rs` the requests for roots and the
//! re-listings; in `apply.rs` how events and listings reach the mirror.

mod apply;
mod roots;

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::registry::{ListedNode, Registry, RegistryError, SessionState, WatchEvent, WatchGuard};
use crate::store::Mirror;

use super::feed::{Control, FeedOptions, MirrorError, MirrorEvent};

/// The most node events applied as one batch.
const MAX_BATCH: usize = 1024;

/// How long after a failed read or listing, the session still connected, the roots with a gap
/// are listed again: a quiet root would otherwise wait for its own next event.
pub(super) const RELIST_RETRY: std::time::Duration = std::time::Duration::from_secs(1);

/// The most roots a re-list lists side by side: an instance of a thousand jobs does not send a
/// thousand recursive listings to the ensemble in one burst.
pub const RELIST_AT_ONCE: usize = 32;

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
    /// When the roots with a gap are listed again after a failed call ([`RELIST_RETRY`]); a
    /// reconnect lists them instead.
    relist_at: Option<Instant>,
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
            relist_at: None,
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
                        () = sleep_until_some(self.relist_at) => {
                            self.relist_at = None;
                            if let Flow::End = self.relist_gaps().await {
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
                    // The reconnect lists every root again.
                    self.relist_at = None;
                    let roots: Vec<Arc<str>> = self.roots.keys().cloned().collect();
                    for root in roots {
                        self.open_gap(&root);
                    }
                    self.tell(SessionState::Disconnected);
                    Flow::Continue
                }
                WatchEvent::Session(SessionState::Connected) => {
                    self.tell(SessionState::Connected);
                    self.relist_spread().await
                }
                WatchEvent::Session(terminal) => self.end(terminal),
            };
            if let Flow::End = flow {
                return;
            }
        }
    }

    /// Tells the consumer a session state once, however many watches report it.
    fn tell(&mut self, state: SessionState) {
        if std::mem::replace(&mut self.told, state) != state {
            self.emit(MirrorEvent::Session(state));
        }
    }

    /// A registry call failed: a fatal error ends the feed, any other leaves a gap in `root`
    /// that its next event, the reconnect or, connected, the retry [`RELIST_RETRY`] later
    /// re-lists, whichever comes first.
    fn failed(&mut self, step: &str, e: RegistryError, root: &str) -> Flow {
        match e {
            RegistryError::SessionExpired => self.end(SessionState::Expired),
            RegistryError::Closed => self.end(SessionState::Closed),
            e => {
                tracing::warn!(%root, error = %e, "mirror feed failed {step}; will re-list");
                self.open_gap(root);
                if self.told == SessionState::Connected && self.relist_at.is_none() {
                    self.relist_at = Some(Instant::now() + RELIST_RETRY);
                }
                Flow::Continue
            }
        }
    }

    fn end(&mut self, state: SessionState) -> Flow {
        self.mirror.set_synced(false);
        self.emit(MirrorEvent::Session(state));
        Flow::End
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
