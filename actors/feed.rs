//! The RegistryActor's link to its session: opening it with the mirror's first listing of what
//! this instance watches (on a task), and forwarding the mirror feed's events and the session's
//! states to the actor as messages.

use std::sync::Arc;
use std::time::Duration;

use ractor::ActorRef;

use crate::decide::scope;
use crate::paths::JobNode;
use crate::registry::mirror::{FeedOptions, MirrorEvent, RelistSpread};
use crate::registry::SessionState;

use super::context::{lock_jobs, NodeContext};
use super::mail::{Opened, RegistryMsg};

/// How long a `running` marker may stay in the mirror with its data unread.
const RUN_MARKER_SETTLE: Duration = Duration::from_secs(1);

/// The re-list after a reconnect waits this much per watched root, up to [`RELIST_SPREAD_MAX`]:
/// twenty-five jobs within 25 ms, a thousand within a second.
const RELIST_SPREAD_PER_ROOT: Duration = Duration::from_millis(1);

/// The longest window a reconnect's re-list spreads over.
const RELIST_SPREAD_MAX: Duration = Duration::from_secs(1);

/// `running` markers come and go around every run; nobody needs their data (the owner's id) at
/// once, so the mirror reads it only for markers that outlive [`RUN_MARKER_SETTLE`], or before it
/// applies any other change. A run then costs the mirror no registry read. After a reconnect the
/// roots are re-listed at a point of the spread window that the instance's id picks
/// ([`RelistSpread`]): the instances of a cluster do not all list at the same moment after an
/// ensemble's election.
fn feed_options(instance: &str) -> FeedOptions {
    use std::hash::{Hash, Hasher};
    let mut seed = std::collections::hash_map::DefaultHasher::new();
    instance.hash(&mut seed);
    FeedOptions {
        relist_spread: Some(RelistSpread {
            per_root: RELIST_SPREAD_PER_ROOT,
            max: RELIST_SPREAD_MAX,
            seed: seed.finish(),
        }),
        lazy_data: Some(Arc::new(|path: &str| {
            // The suffix first: most paths are not markers, and parsing one allocates.
            path.ends_with("/running")
                && matches!(JobNode::parse(path), Ok((_, JobNode::ShardingRunning(_))))
        })),
        settle: RUN_MARKER_SETTLE,
    }
}

/// Opens a session and lists what this instance watches into the mirror (on a task of its own):
/// the subtrees of its jobs and their upstreams, or the namespace ([`scope::roots`]).
pub(super) async fn open(node: &NodeContext) -> Opened {
    let roots = {
        let jobs = lock_jobs(node);
        let configs = jobs.iter().map(|(job, spec)| (job, &*spec.config));
        scope::roots(node.adoption.is_some(), configs)
    };
    let registry = (node.connector.connect().await).map_err(|e| e.to_string())?;
    let (feed, roots) = (node
        .mirror
        .feed_roots(
            registry.clone(),
            roots,
            feed_options(node.instance_id.as_str()),
        )
        .await)
        .map_err(|e| e.to_string())?;
    Ok((registry, feed, roots))
}

/// The most mirror events one message to the actor carries.
const MAX_EVENTS: usize = 1024;

/// Forwards the feed's events and the session's state changes to the actor. Session states come
/// straight from the session's own state channel, never through the feed: the feed may be stuck
/// on a read (a `get_many` of a partitioned session waits for its call timeout), and a node that
/// must stop its items when cut off cannot wait behind it. The feed's own copies of non-terminal
/// states are dropped (they arrive late or not at all); a terminal state may come either way,
/// the first one tears the session down and the actor ignores the other (its generation is gone).
///
/// Every event already queued goes in the same message, in order (a fire of ten thousand items
/// makes twenty thousand marker events a second: one message and one wake-up per batch, not per
/// event).
pub(super) async fn forward(
    mut events: tokio::sync::mpsc::UnboundedReceiver<MirrorEvent>,
    mut states: tokio::sync::watch::Receiver<SessionState>,
    me: ActorRef<RegistryMsg>,
    generation: u64,
) {
    let mut states_open = true;
    loop {
        let batch = tokio::select! {
            biased;
            changed = states.changed(), if states_open => {
                if changed.is_err() {
                    // The session dropped its state channel: the feed reports its end.
                    states_open = false;
                    continue;
                }
                vec![MirrorEvent::Session(*states.borrow_and_update())]
            }
            ev = events.recv() => match ev {
                Some(ev) => {
                    let mut batch = Vec::new();
                    let mut next = Some(ev);
                    while let Some(ev) = next.take() {
                        if !matches!(ev, MirrorEvent::Session(s) if !s.is_terminal()) {
                            batch.push(ev);
                        }
                        if batch.len() < MAX_EVENTS {
                            next = events.try_recv().ok();
                        }
                    }
                    if batch.is_empty() {
                        continue;
                    }
                    batch
                }
                None => {
                    // Stopped forwarding states here used to leave the node on a session nobody
                    // watched: when it expired, nothing opened another (no instance node, no
                    // runs, ready). A feed that ended after a terminal state names a generation
                    // the actor has already left, and is ignored.
                    let _ = me.send_message(RegistryMsg::FeedEnded(generation));
                    break;
                }
            },
        };
        if me
            .send_message(RegistryMsg::MirrorChanged(generation, batch))
            .is_err()
        {
            break;
        }
    }
}
