//! Forwards every persistent recursive ZooKeeper watch of one session from one task: a node that
//! watches each of its jobs holds one watcher per job, not one task and one channel per job.
//!
//! Node events go to each watch's sender as they come. Session states come through the watchers
//! too, in order with the node events and never coalesced (every watcher hears each change; the
//! first one counts), and go once to each distinct sender: `Disconnected`, then `Connected` only
//! once every watch is registered again (below), so a consumer that re-lists on `Connected`
//! misses nothing its watches will not tell.
//!
//! `zookeeper-client` 0.11.2 does not re-register persistent watches after a reconnect (its
//! `resend_watches` never raises the index that selects `SetWatches2`, so only one-shot watches are
//! sent). The forwarder therefore registers every watch anew after each reconnect and drops the old
//! watchers, which the client then forgets without telling the server. Events between the reconnect
//! and the new registrations are lost, as ZooKeeper loses them anyway (ZOOKEEPER-4698): the
//! `Connected` tells consumers to re-list. A registration that fails for another reason than a new
//! cut is tried again after the call bound, the senders told `Disconnected` meanwhile.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{RwLock, Weak};
use std::time::Duration;

use futures::stream::{self, SelectAll, Stream, StreamExt};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use zookeeper_client as zk;

use super::convert;
use crate::registry::{NodeEventKind, SessionState, WatchEvent};

/// How the forwarder registers watches: the session's client slot (weak, so that it never keeps
/// a closed session alive) and the bound of one registration.
#[derive(Debug, Clone)]
pub(crate) struct Renew {
    pub(crate) client: Weak<RwLock<Option<zk::Client>>>,
    pub(crate) bound: Duration,
}

impl Renew {
    async fn watch(&self, path: &str) -> Result<zk::PersistentWatcher, zk::Error> {
        let client = self
            .client
            .upgrade()
            .and_then(|slot| slot.read().unwrap_or_else(|p| p.into_inner()).clone())
            .ok_or(zk::Error::ClientClosed)?;
        let register = client.watch(path, zk::AddWatchMode::PersistentRecursive);
        tokio::time::timeout(self.bound, register)
            .await
            .unwrap_or(Err(zk::Error::Timeout))
    }
}

/// A watch handed to the forwarder.
pub(crate) struct NewWatch {
    pub(crate) path: String,
    pub(crate) watcher: zk::PersistentWatcher,
    pub(crate) tx: mpsc::UnboundedSender<WatchEvent>,
    /// Cancelled when the watch's guard is dropped.
    pub(crate) stop: CancellationToken,
}

/// A watch the forwarder follows.
struct Entry {
    path: String,
    tx: mpsc::UnboundedSender<WatchEvent>,
    stop: CancellationToken,
    /// Ends the stream of the current watcher (cancelled when it is registered anew).
    current: CancellationToken,
}

/// One watcher's events, tagged with its entry; `None` once the stream ended.
type Tagged = (u64, Option<zk::WatchedEvent>);

/// The forwarder's state.
struct Forwarder {
    entries: HashMap<u64, Entry>,
    next: u64,
    streams: SelectAll<Pin<Box<dyn Stream<Item = Tagged> + Send>>>,
    renew: Renew,
    /// Disconnected since the watches were last registered.
    lost: bool,
}

/// Runs the forwarder until the session ends (a terminal state, `closed`, or the session dropped).
pub(crate) async fn forward(
    mut watches: mpsc::UnboundedReceiver<NewWatch>,
    closed: CancellationToken,
    renew: Renew,
) {
    let mut f = Forwarder {
        entries: HashMap::new(),
        next: 0,
        streams: SelectAll::new(),
        renew,
        lost: false,
    };
    // A renewal that failed: tried again at this instant.
    let mut retry_at: Option<tokio::time::Instant> = None;
    loop {
        tokio::select! {
            new = watches.recv() => match new {
                Some(new) => f.insert(new),
                None => return, // the session was dropped
            },
            tagged = f.streams.next(), if !f.streams.is_empty() => {
                let Some((id, event)) = tagged else { continue };
                match f.event(id, event) {
                    Some(SessionState::Disconnected) if !f.lost => {
                        f.lost = true;
                        retry_at = None;
                        f.tell(SessionState::Disconnected);
                    }
                    Some(SessionState::Connected) if f.lost && retry_at.is_none() => {
                        retry_at = f.renew_all().await;
                    }
                    Some(terminal) if terminal.is_terminal() => {
                        f.tell(terminal);
                        return;
                    }
                    _ => {}
                }
            }
            () = sleep_until_some(retry_at) => {
                retry_at = None;
                if f.lost {
                    retry_at = f.renew_all().await;
                }
            }
            () = closed.cancelled() => {
                f.tell(SessionState::Closed);
                return;
            }
        }
    }
}

impl Forwarder {
    fn insert(&mut self, new: NewWatch) {
        let id = self.next;
        self.next += 1;
        let current = CancellationToken::new();
        self.follow(id, new.watcher, &current, &new.stop);
        self.entries.insert(
            id,
            Entry {
                path: new.path,
                tx: new.tx,
                stop: new.stop,
                current,
            },
        );
    }

    /// Follows `watcher`'s events until `current` or `stop` is cancelled.
    fn follow(
        &mut self,
        id: u64,
        watcher: zk::PersistentWatcher,
        current: &CancellationToken,
        stop: &CancellationToken,
    ) {
        let (current, stop) = (current.clone(), stop.clone());
        let events = stream::unfold(Some(watcher), |watcher| async move {
            let mut watcher = watcher?;
            let event = watcher.changed().await;
            // After a terminal state the client panics on the next `changed`: this one is the last.
            let terminal =
                event.event_type == zk::EventType::Session && event.session_state.is_terminated();
            Some((Some(event), (!terminal).then_some(watcher)))
        })
        .take_until(async move {
            tokio::select! {
                () = current.cancelled() => {}
                () = stop.cancelled() => {}
            }
        })
        .chain(stream::once(async { None }))
        .map(move |event| (id, event));
        self.streams.push(Box::pin(events));
    }

    /// One event of entry `id`'s current watcher: a node event goes to its sender, a session
    /// state is returned; the end of a stream whose guard was dropped ends the entry.
    fn event(&mut self, id: u64, event: Option<zk::WatchedEvent>) -> Option<SessionState> {
        let entry = self.entries.get(&id)?;
        let Some(event) = event else {
            if entry.stop.is_cancelled() {
                self.entries.remove(&id);
            }
            return None;
        };
        let kind = match event.event_type {
            zk::EventType::NodeCreated => NodeEventKind::Created,
            zk::EventType::NodeDataChanged => NodeEventKind::DataChanged,
            zk::EventType::NodeDeleted => NodeEventKind::Deleted,
            zk::EventType::Session => return Some(convert::session_state(event.session_state)),
            // Recursive watches do not report child lists (creations and deletions say it all).
            zk::EventType::NodeChildrenChanged => return None,
        };
        let node = WatchEvent::Node {
            kind,
            path: event.path,
        };
        if entry.tx.send(node).is_err() {
            entry.stop.cancel();
            self.entries.remove(&id);
        }
        None
    }

    /// Tells each distinct sender `state` once.
    fn tell(&mut self, state: SessionState) {
        let mut told: Vec<&mpsc::UnboundedSender<WatchEvent>> = Vec::new();
        let mut gone = Vec::new();
        for (id, entry) in &self.entries {
            if told.iter().any(|t| t.same_channel(&entry.tx)) {
                continue;
            }
            if entry.tx.send(WatchEvent::Session(state)).is_err() {
                gone.push(*id);
            }
            told.push(&entry.tx);
        }
        for id in gone {
            if let Some(entry) = self.entries.remove(&id) {
                entry.stop.cancel();
            }
        }
    }

    /// Registers every watch anew after a reconnect, then tells `Connected`. Returns when to try
    /// again if a registration failed for another reason than a new cut (which brings its own
    /// `Connected`).
    async fn renew_all(&mut self) -> Option<tokio::time::Instant> {
        self.entries.retain(|_, e| !e.stop.is_cancelled());
        let paths: Vec<(u64, String)> = (self.entries.iter())
            .map(|(id, e)| (*id, e.path.clone()))
            .collect();
        let renew = self.renew.clone();
        let registrations = paths.iter().map(|(_, path)| renew.watch(path));
        let results = futures::future::join_all(registrations).await;
        let mut failed = None;
        for ((id, path), result) in paths.into_iter().zip(results) {
            match result {
                Ok(watcher) => {
                    let Some(entry) = self.entries.get_mut(&id) else {
                        continue;
                    };
                    // Dropping the old watcher removes it on the client side only: the new one
                    // of the same mode keeps the server-side registration.
                    entry.current.cancel();
                    entry.current = CancellationToken::new();
                    let (current, stop) = (entry.current.clone(), entry.stop.clone());
                    self.follow(id, watcher, &current, &stop);
                }
                // Cut again: the watchers' next `Connected` tries again.
                Err(zk::Error::ConnectionLoss) => return None,
                Err(e) => failed = Some((path, e)),
            }
        }
        if let Some((path, e)) = failed {
            tracing::warn!(%path, "cannot renew a recursive watch after a reconnect: {e}; trying again");
            return Some(tokio::time::Instant::now() + self.renew.bound);
        }
        self.lost = false;
        self.tell(SessionState::Connected);
        None
    }
}

/// Sleeps until `at`, or forever without one.
async fn sleep_until_some(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
