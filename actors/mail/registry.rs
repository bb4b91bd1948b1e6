//! The RegistryActor's messages.

use std::sync::Arc;

use crate::registry::mirror::{FeedRoots, MirrorEvent, MirrorFeed};
use crate::registry::Registry;
use crate::types::JobName;

use super::NodeMsg;

/// What a connection attempt opened: the session, the feed that listed the mirror and the handle
/// that widens what it watches, or the error that stopped it.
pub(crate) type Opened = Result<(Arc<dyn Registry>, MirrorFeed, FeedRoots), String>;

/// Messages of the RegistryActor.
#[derive(Debug)]
pub(crate) enum RegistryMsg {
    /// Open a session (at start, after an expiry, or after a failed attempt).
    Connect,
    /// The connection attempt's task ended: the session and its mirror feed, or why not.
    Opened(Box<Opened>),
    /// The mirror feed of session `generation` changed something: its events, in order.
    MirrorChanged(u64, Vec<MirrorEvent>),
    /// A request of the node's API or endpoints, as the NodeActor got it (or of adoption).
    Request(NodeMsg),
    /// Measure the registry's clock against ours (for jobs with `maxTimeDiffSeconds`).
    CheckClock,
    /// An adopted job was drained and removed from this node (`actors/adopt.rs`).
    Dropped(JobName),
    /// The mirror feed of session `generation` ended without a terminal session state (its
    /// recursive watch could not be renewed after a reconnect): the mirror no longer follows the
    /// registry, so the session is given up and a new one opened.
    FeedEnded(u64),
}
