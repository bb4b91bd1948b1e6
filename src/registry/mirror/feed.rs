//! The feed: one recursive watch plus listings, applied to a [`Mirror`], with the changes told to
//! a consumer as [`MirrorEvent`]s.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::registry::{
    NodeEventKind, Registry, RegistryError, SessionState, WatchEvent, WatchStream,
};
use crate::store::{Mirror, Upserted};

/// The most node events applied as one batch.
const MAX_BATCH: usize = 1024;

/// Which paths a feed may read late.
pub type LazyPaths = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// How a feed reads the data of the nodes its events name.
///
/// By default every created or changed node is read at once. Short-lived nodes whose data nobody
/// needs at once (`running` markers: created and deleted around every run) can be read late: a
/// creation event then records the node as [`MirrorNode::pending`](crate::store::MirrorNode) and the read
/// happens only if the node is still there after `settle`, or before the feed applies any other
/// kind of event (so a consumer reacting to, say, an instance's departure sees every pending node's
/// data). A node created and deleted within `settle` costs no read at all.
#[derive(Clone, Default)]
pub struct FeedOptions {
    /// Which paths may be read late; `None` reads everything at once.
    pub lazy_data: Option<LazyPaths>,
    /// How long a lazily created node may stay unread.
    pub settle: Duration,
}

impl std::fmt::Debug for FeedOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FeedOptions")
            .field("lazy_data", &self.lazy_data.is_some())
            .field("settle", &self.settle)
            .finish()
    }
}

/// Why a feed could not start. Errors after the start end the feed with a
/// [`MirrorEvent::Session`] of the terminal state instead.
#[derive(Debug, thiserror::Error)]
pub enum MirrorError {
    /// Starting the recursive watch failed.
    #[error("starting the recursive watch on {root}")]
    Watch {
        /// The mirrored root.
        root: String,
        /// The registry's error.
        #[source]
        source: RegistryError,
    },
    /// The first listing failed.
    #[error("listing {root} for the mirror")]
    List {
        /// The mirrored root.
        root: String,
        /// The registry's error.
        #[source]
        source: RegistryError,
    },
}

/// What changed in the mirror. Each event is sent after the mirror was updated, so a consumer
/// reading the mirror on receipt sees the new state (or a later one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MirrorEvent {
    /// A node appeared.
    Created {
        /// Its path.
        path: String,
    },
    /// A node's data changed.
    Changed {
        /// Its path.
        path: String,
    },
    /// A node disappeared (children before parents).
    Deleted {
        /// Its path.
        path: String,
    },
    /// A listing was swapped in; the differences it found were sent just before.
    Resynced,
    /// The feed's session changed state; after a terminal state the feed has ended.
    Session(SessionState),
}

/// A running feed: its events and the handle that stops it (on drop, too).
///
/// The event channel is unbounded on purpose: the feed must neither drop an event (consumers
/// would miss a change until the next reconcile) nor stall on a slow consumer while the registry's
/// own unbounded watch stream keeps filling. Events are one short path each.
#[derive(Debug)]
pub struct MirrorFeed {
    events: mpsc::UnboundedReceiver<MirrorEvent>,
    handle: FeedHandle,
}

impl MirrorFeed {
    /// The next event; `None` after the feed ended and every event was received.
    pub async fn recv(&mut self) -> Option<MirrorEvent> {
        self.events.recv().await
    }

    /// The event receiver, for `select!` or helpers that take one.
    pub fn events(&mut self) -> &mut mpsc::UnboundedReceiver<MirrorEvent> {
        &mut self.events
    }

    /// Splits the feed into its event receiver and the handle that keeps it running.
    pub fn split(self) -> (mpsc::UnboundedReceiver<MirrorEvent>, FeedHandle) {
        (self.events, self.handle)
    }

    /// Stops the feed; the mirror is no longer synced.
    pub fn stop(self) {}
}

/// Keeps a feed task running; dropping it stops the task and marks the mirror not synced.
#[derive(Debug)]
pub struct FeedHandle {
    task: JoinHandle<()>,
    mirror: Mirror,
}

impl FeedHandle {
    /// Whether the feed ended (its session ended, or it was stopped).
    pub fn is_finished(&self) -> bool {
        self.task.is_finished()
    }
}

impl Drop for FeedHandle {
    fn drop(&mut self) {
        self.task.abort();
        self.mirror.set_synced(false);
    }
}

impl Mirror {
    /// Feeds this mirror from `registry`'s subtree at `root`: starts the recursive watch first, so
    /// nothing after the listing is missed, lists and swaps the listing in (emitting the
    /// differences from what the mirror held, then [`MirrorEvent::Resynced`]), and spawns a task
    /// that applies the watch's events in order. On return the mirror is synced. Into an empty
    /// mirror, the first listing reports every node as [`MirrorEvent::Created`].
    ///
    /// One feed per mirror at a time: after a session expired (the feed ends with
    /// `Session(Expired)`), call `feed` again with the new session; it re-lists into the same
    /// mirror and emits what changed in between.
    pub async fn feed(
        &self,
        registry: Arc<dyn Registry>,
        root: &str,
    ) -> Result<MirrorFeed, MirrorError> {
        self.feed_with(registry, root, FeedOptions::default()).await
    }

    /// [`Mirror::feed`] with options: which nodes' data may be read late.
    pub async fn feed_with(
        &self,
        registry: Arc<dyn Registry>,
        root: &str,
        options: FeedOptions,
    ) -> Result<MirrorFeed, MirrorError> {
        self.set_synced(false);
        let stream = registry
            .watch_recursive(root)
            .await
            .map_err(|source| MirrorError::Watch {
                root: root.to_owned(),
                source,
            })?;
        let (tx, events) = mpsc::unbounded_channel();
        let mut feeder = Feeder {
            mirror: self.clone(),
            registry,
            root: root.to_owned(),
            tx,
            options,
            pending: VecDeque::new(),
            pending_set: HashSet::new(),
        };
        feeder.relist().await.map_err(|source| MirrorError::List {
            root: root.to_owned(),
            source,
        })?;
        let task = tokio::spawn(feeder.run(stream));
        Ok(MirrorFeed {
            events,
            handle: FeedHandle {
                task,
                mirror: self.clone(),
            },
        })
    }
}

/// The feed task's state.
struct Feeder {
    mirror: Mirror,
    registry: Arc<dyn Registry>,
    root: String,
    tx: mpsc::UnboundedSender<MirrorEvent>,
    options: FeedOptions,
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

impl Feeder {
    async fn run(mut self, mut stream: WatchStream) {
        // Set when the mirror may have missed changes (a disconnect, a failed read); cleared by
        // the next successful listing.
        let mut gap = false;
        // A session event taken from the stream while collecting a batch of node events.
        let mut held: Option<WatchEvent> = None;
        loop {
            let event = match held.take() {
                Some(event) => event,
                None => {
                    let settle_at = self.settle_deadline();
                    tokio::select! {
                        event = stream.recv() => match event {
                            Some(event) => event,
                            None => break,
                        },
                        () = sleep_until_some(settle_at) => {
                            let due = Instant::now() - self.options.settle;
                            if let Flow::End = self.flush(Some(due), &mut gap).await {
                                return;
                            }
                            continue;
                        }
                    }
                }
            };
            let flow = match event {
                WatchEvent::Node { path, .. } if gap => {
                    tracing::debug!(%path, "mirror re-lists before applying events after a gap");
                    self.retry_relist(&mut gap).await
                }
                WatchEvent::Node { kind, path } => {
                    // Every node event already queued goes in one batch, so that their reads
                    // travel together instead of one round trip after another.
                    let mut batch = vec![(kind, path)];
                    while batch.len() < MAX_BATCH {
                        match stream.try_recv() {
                            Ok(WatchEvent::Node { kind, path }) => batch.push((kind, path)),
                            Ok(session) => {
                                held = Some(session);
                                break;
                            }
                            Err(_) => break,
                        }
                    }
                    self.node_events(batch, &mut gap).await
                }
                WatchEvent::Session(SessionState::Disconnected) => {
                    gap = true;
                    self.mirror.set_synced(false);
                    self.emit(MirrorEvent::Session(SessionState::Disconnected));
                    Flow::Continue
                }
                WatchEvent::Session(SessionState::Connected) => {
                    self.emit(MirrorEvent::Session(SessionState::Connected));
                    if gap {
                        self.retry_relist(&mut gap).await
                    } else {
                        Flow::Continue
                    }
                }
                WatchEvent::Session(terminal) => self.end(terminal),
            };
            if let Flow::End = flow {
                return;
            }
        }
        // The stream ended without saying why: the session is gone, so is the mirror's freshness.
        self.mirror.set_synced(false);
    }

    /// Applies a batch of node events in order. A deletion needs no read (events come in order);
    /// a lazy node's creation is recorded as pending, unless the batch holds another kind of event,
    /// in which case every pending node and every node of the batch is read first; any other
    /// event's node is read. The reads are issued together and applied in event order; a read
    /// newer than its event is harmless (the mirror keeps the newest state it saw).
    async fn node_events(&mut self, batch: Vec<(NodeEventKind, String)>, gap: &mut bool) -> Flow {
        let is_lazy = |p: &str| self.options.lazy_data.as_ref().is_some_and(|f| f(p));
        let lazy: Vec<bool> = batch.iter().map(|(_, p)| is_lazy(p)).collect();
        let all_lazy = lazy.iter().all(|l| *l);
        if !all_lazy {
            if let Flow::End = self.flush(None, gap).await {
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
                let flow = self.failed("reading a changed node", e, gap);
                // The events after the failed read are the "next event" that closes the gap:
                // re-list now rather than wait for another.
                if matches!(flow, Flow::Continue) && n + 1 < count {
                    return self.retry_relist(gap).await;
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
    ) -> Vec<(
        String,
        Result<(Vec<u8>, crate::registry::Stat), RegistryError>,
    )> {
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
        read: Result<(Vec<u8>, crate::registry::Stat), RegistryError>,
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
    async fn flush(&mut self, due: Option<Instant>, gap: &mut bool) -> Flow {
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
                return self.failed("reading a node created earlier", e, gap);
            }
        }
        Flow::Continue
    }

    async fn retry_relist(&mut self, gap: &mut bool) -> Flow {
        match self.relist().await {
            Ok(()) => {
                *gap = false;
                Flow::Continue
            }
            Err(e) => self.failed("re-listing after a gap", e, gap),
        }
    }

    /// A registry call failed: a fatal error ends the feed, any other leaves a gap that the next
    /// event or reconnect re-lists.
    fn failed(&mut self, step: &str, e: RegistryError, gap: &mut bool) -> Flow {
        match e {
            RegistryError::SessionExpired => self.end(SessionState::Expired),
            RegistryError::Closed => self.end(SessionState::Closed),
            e => {
                tracing::warn!(root = %self.root, error = %e, "mirror feed failed {step}; will re-list");
                *gap = true;
                self.mirror.set_synced(false);
                Flow::Continue
            }
        }
    }

    fn end(&mut self, state: SessionState) -> Flow {
        self.mirror.set_synced(false);
        self.emit(MirrorEvent::Session(state));
        Flow::End
    }

    /// Lists the subtree and swaps it in whole ([`Mirror::replace_subtree`]), then emits each
    /// difference (removals deepest first), `Resynced`, and marks the mirror synced.
    async fn relist(&mut self) -> Result<(), RegistryError> {
        let listing = match self.registry.list_subtree(&self.root).await {
            Ok(listing) => listing,
            // The root itself is absent: the subtree is empty, and the watch reports its creation.
            Err(e) if e.is_no_node() => Vec::new(),
            Err(e) => return Err(e),
        };
        self.pending.clear();
        self.pending_set.clear();
        // The whole new tree is swapped in before any event goes out: a consumer that reacts to
        // the first one reads the namespace as listed.
        for (path, change) in self.mirror.replace_subtree(&self.root, listing) {
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
        self.emit(MirrorEvent::Resynced);
        self.mirror.set_synced(true);
        Ok(())
    }

    fn upsert(&mut self, path: &str, data: Vec<u8>, stat: crate::registry::Stat) {
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

/// Sleeps until `at`, or forever without one.
async fn sleep_until_some(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
