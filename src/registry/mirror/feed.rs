//! The feed: recursive watches on one or more subtrees ("roots") plus their listings, applied to
//! a [`Mirror`], with the changes told to a consumer as [`MirrorEvent`]s. The task itself is in
//! `feeder.rs`; this file holds its vocabulary and the calls that start and steer it.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::registry::{Registry, RegistryError, SessionState};
use crate::store::Mirror;

use super::feeder::Feeder;

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
    /// How the re-list after a reconnect is spread; `None` lists at once.
    pub relist_spread: Option<RelistSpread>,
}

/// How a feed spreads its re-list after a reconnect. After a ZooKeeper ensemble elects a new
/// leader every client reconnects within the same second; listing at once, every instance would
/// hit the ensemble together. Each feed waits instead for a delay of its own inside a window that
/// grows with the roots it must list (an instance of few jobs barely waits), and lists at most
/// [`RELIST_AT_ONCE`](super::RELIST_AT_ONCE) roots at a time. A root that hears an event
/// meanwhile is listed at once, before that event is applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RelistSpread {
    /// The window's length for each root with a gap.
    pub per_root: Duration,
    /// The longest window.
    pub max: Duration,
    /// Where in the window this feed lists: differs from instance to instance (a hash of the
    /// instance's id), so that the instances of a cluster spread over the window.
    pub seed: u64,
}

impl RelistSpread {
    /// How long after a reconnect a feed with `gaps` roots to list waits: a fraction of the
    /// window (`per_root` x `gaps`, at most `max`) that the seed picks.
    pub fn delay(&self, gaps: usize) -> Duration {
        let gaps = u32::try_from(gaps).unwrap_or(u32::MAX);
        let window = self.per_root.saturating_mul(gaps).min(self.max);
        let nanos = u64::try_from(window.as_nanos()).unwrap_or(u64::MAX);
        if nanos == 0 {
            return Duration::ZERO;
        }
        Duration::from_nanos(mix(self.seed) % nanos)
    }
}

/// SplitMix64's finaliser: seeds that differ in a few bits (instance ids of one host) land far
/// apart in the window.
fn mix(seed: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl std::fmt::Debug for FeedOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FeedOptions")
            .field("lazy_data", &self.lazy_data.is_some())
            .field("settle", &self.settle)
            .field("relist_spread", &self.relist_spread)
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

/// Changes the roots a running feed watches ([`Mirror::feed_roots`]). Requests are carried out
/// in the order they were made, each `done` runs after its request (or at once when the feed has
/// ended). Clones steer the same feed.
#[derive(Debug, Clone)]
pub struct FeedRoots {
    control: mpsc::UnboundedSender<Control>,
}

/// What runs after a request of [`FeedRoots`].
pub type Done = Box<dyn FnOnce() + Send>;

/// A request to the feed task.
pub(super) enum Control {
    /// Watch and list these roots (those not covered yet), then run the callback.
    Add(Vec<String>, Done),
    /// Stop watching this root and drop what the mirror holds under it, telling no consumer (its
    /// nodes are no longer of interest, not deleted), then run the callback.
    Remove(String, Done),
    /// The session reconnected: list every root again (spread as the options say), then
    /// [`MirrorEvent::Resynced`].
    Relist,
}

impl FeedRoots {
    /// Watches `roots` too: `done` runs once each is watched and listed into the mirror (its nodes
    /// told as [`MirrorEvent::Created`]). A root at or below one already watched adds nothing; `/`
    /// replaces every other root.
    pub fn add(&self, roots: Vec<String>, done: impl FnOnce() + Send + 'static) {
        self.send(Control::Add(roots, Box::new(done)));
    }

    /// Stops watching `root` (exactly as added) and drops its nodes from the mirror without
    /// telling consumers; `done` runs after.
    pub fn remove(&self, root: String, done: impl FnOnce() + Send + 'static) {
        self.send(Control::Remove(root, Box::new(done)));
    }

    /// Lists every root again (the session reconnected and the watches may have missed changes
    /// meanwhile, whether or not they reported the disconnection), spread as the feed's
    /// [`RelistSpread`] says; [`MirrorEvent::Resynced`] follows.
    pub fn relist(&self) {
        self.send(Control::Relist);
    }

    fn send(&self, control: Control) {
        if let Err(mpsc::error::SendError(control)) = self.control.send(control) {
            // The feed ended: nothing to watch any more, and nobody else would run it.
            match control {
                Control::Add(_, done) | Control::Remove(_, done) => done(),
                Control::Relist => {}
            }
        }
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
        let roots = vec![root.to_owned()];
        Ok(self.feed_roots(registry, roots, options).await?.0)
    }

    /// [`Mirror::feed_with`] on several subtrees at once, one recursive watch each, with a handle
    /// that adds and removes roots while the feed runs. Each root is re-listed on its own after a
    /// gap in its own watch, in place: re-listing one subtree costs that subtree's nodes.
    /// [`MirrorEvent::Resynced`] goes out when every root is listed again; the mirror is synced
    /// while no root has a gap. With no root at all the mirror is synced and holds nothing.
    pub async fn feed_roots(
        &self,
        registry: Arc<dyn Registry>,
        roots: Vec<String>,
        options: FeedOptions,
    ) -> Result<(MirrorFeed, FeedRoots), MirrorError> {
        self.set_synced(false);
        let (tx, events) = mpsc::unbounded_channel();
        let (control, requests) = mpsc::unbounded_channel();
        let feeder = Feeder::start(self.clone(), registry, tx, options, roots).await?;
        let task = tokio::spawn(feeder.run(requests));
        let feed = MirrorFeed {
            events,
            handle: FeedHandle {
                task,
                mirror: self.clone(),
            },
        };
        Ok((feed, FeedRoots { control }))
    }
}
