//! Forwards one persistent recursive ZooKeeper watch into a [`WatchStream`].
//!
//! The client delivers session changes to persistent watchers through the same queue as node events,
//! so forwarding that one queue keeps `Disconnected`/`Connected` in order with the node events
//! around them: exactly what a mirror needs to know when to re-list.
//!
//! `zookeeper-client` 0.11.2 does not re-register persistent watches after a reconnect (its
//! `resend_watches` never raises the index that selects `SetWatches2`, so only one-shot watches are
//! sent). The forwarder therefore registers its watch anew after every reconnect and drops the old
//! watcher, which the client then forgets without telling the server. Events between the reconnect
//! and the new registration are lost, as ZooKeeper loses them anyway (ZOOKEEPER-4698): the
//! `Session(Connected)` event tells the consumer to re-list.

use std::sync::{RwLock, Weak};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use zookeeper_client as zk;

use super::convert;
use crate::registry::{NodeEventKind, SessionState, WatchEvent};

/// How to register the watch again after a reconnect.
#[derive(Debug)]
pub(crate) struct Renew {
    /// The session's client slot; weak, so that a forwarder never keeps a closed session alive.
    pub(crate) client: Weak<RwLock<Option<zk::Client>>>,
    /// The watched path.
    pub(crate) path: String,
    /// Bound of the registration call.
    pub(crate) bound: Duration,
}

impl Renew {
    async fn watch(&self) -> Result<zk::PersistentWatcher, zk::Error> {
        let client = self
            .client
            .upgrade()
            .and_then(|slot| slot.read().unwrap_or_else(|p| p.into_inner()).clone())
            .ok_or(zk::Error::ClientClosed)?;
        let register = client.watch(&self.path, zk::AddWatchMode::PersistentRecursive);
        tokio::time::timeout(self.bound, register)
            .await
            .unwrap_or(Err(zk::Error::Timeout))
    }
}

/// Forwards `watcher`'s events until a terminal session state, the receiver going away, or
/// `closed` (the session's owner closed it).
pub(crate) async fn forward(
    mut watcher: zk::PersistentWatcher,
    tx: mpsc::UnboundedSender<WatchEvent>,
    closed: CancellationToken,
    renew: Renew,
) {
    let mut lost = false;
    loop {
        let event = tokio::select! {
            event = watcher.changed() => event,
            () = closed.cancelled() => {
                // The receiver may be gone already; nothing else is listening for this.
                let _ = tx.send(WatchEvent::Session(SessionState::Closed));
                return;
            }
            // Dropping the watcher removes the server-side watch.
            () = tx.closed() => return,
        };
        let kind = match event.event_type {
            zk::EventType::Session => {
                let state = convert::session_state(event.session_state);
                if tx.send(WatchEvent::Session(state)).is_err() || state.is_terminal() {
                    // After a terminal state the client panics on the next `changed`.
                    return;
                }
                lost |= state == SessionState::Disconnected;
                if lost && state == SessionState::Connected {
                    match renew.watch().await {
                        Ok(renewed) => {
                            // Dropping the old watcher removes it on the client side only: the
                            // new one of the same mode keeps the server-side registration.
                            watcher = renewed;
                            lost = false;
                        }
                        // Cut again before the registration went through: the next `Connected`
                        // retries, and the old watcher still reports that `Disconnected`.
                        Err(zk::Error::ConnectionLoss) => {}
                        Err(e) => {
                            // Ending the stream is the only honest signal left: a silent watch
                            // would leave the consumer's mirror stale without telling it.
                            tracing::warn!(
                                path = %renew.path,
                                "cannot renew the recursive watch after a reconnect: {e}; ending the watch stream"
                            );
                            return;
                        }
                    }
                }
                continue;
            }
            zk::EventType::NodeCreated => NodeEventKind::Created,
            zk::EventType::NodeDataChanged => NodeEventKind::DataChanged,
            zk::EventType::NodeDeleted => NodeEventKind::Deleted,
            // Recursive watches do not report child lists; creations and deletions say it all.
            zk::EventType::NodeChildrenChanged => continue,
        };
        let node = WatchEvent::Node {
            kind,
            path: event.path,
        };
        if tx.send(node).is_err() {
            return;
        }
    }
}
