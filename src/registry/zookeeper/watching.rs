//! Forwards one persistent recursive ZooKeeper watch into a [`WatchStream`].
//!
//! The client delivers session changes to persistent watchers through the same queue as node events,
//! so forwarding that one queue keeps `Disconnected`/`Connected` in order with the node events
//! around them: exactly what a mirror needs to know when to re-list.

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use zookeeper_client as zk;

use super::convert;
use crate::registry::{NodeEventKind, SessionState, WatchEvent};

/// Forwards `watcher`'s events until a terminal session state, the receiver going away, or
/// `closed` (the session's owner closed it).
pub(crate) async fn forward(
    mut watcher: zk::PersistentWatcher,
    tx: mpsc::UnboundedSender<WatchEvent>,
    closed: CancellationToken,
) {
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
