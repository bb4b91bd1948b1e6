//! Everything the embedded server keeps behind its one lock: the tree, the sessions with their
//! ephemerals and states, the recursive watches, and the injected faults.
//!
//! Watch events are sent while the lock is held, so every watcher sees mutations in exactly the
//! order the tree applied them. Dispatch looks up the watches registered on the changed path and on
//! each of its ancestors, so its cost follows the path depth and the number of watches, never the
//! size of the tree.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use super::tree::{Change, Tree};
use crate::registry::{NodeEventKind, Op, OpKind, RegistryError, SessionState, WatchEvent};

/// One session as the server sees it.
#[derive(Debug)]
pub(super) struct SessionEntry {
    /// Absolute path of the namespace root, `""` for no namespace.
    pub(super) chroot: String,
    pub(super) state: SessionState,
    pub(super) state_tx: watch::Sender<SessionState>,
    /// Absolute paths of the ephemerals this session owns.
    pub(super) ephemerals: HashSet<String>,
    pub(super) timeout: Duration,
    /// Bumped by every disconnect, so that an expiry timer armed by an older disconnect (since
    /// healed) cannot expire the session.
    pub(super) disconnects: u64,
}

/// One recursive watch.
#[derive(Debug)]
struct WatchEntry {
    session: i64,
    tx: mpsc::UnboundedSender<WatchEvent>,
    /// Cancelled when the watch's guard is dropped (a watch into a shared sender); the entry
    /// goes at its next event.
    stop: Option<CancellationToken>,
}

impl WatchEntry {
    fn stopped(&self) -> bool {
        self.stop
            .as_ref()
            .is_some_and(CancellationToken::is_cancelled)
    }
}

/// A fault armed by a test: the next call that matches fails with [`RegistryError::Injected`].
#[derive(Debug, Clone)]
pub(super) struct Fault {
    /// Only calls of this session, or of any session.
    pub(super) session: Option<i64>,
    /// Only calls (or multi-op operations) of this kind, or any call.
    pub(super) kind: Option<OpKind>,
    /// Only paths (relative to the namespace) at or below this one, segment-aware.
    pub(super) path_prefix: Option<String>,
}

impl Fault {
    fn matches(&self, session: i64, kind: OpKind, path: &str) -> bool {
        self.session.is_none_or(|s| s == session)
            && self.kind.is_none_or(|k| k == kind)
            && self
                .path_prefix
                .as_deref()
                .is_none_or(|prefix| is_at_or_below(path, prefix))
    }
}

/// Where an injected fault hits a multi-op.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum MultiFault {
    /// The whole call fails; the index of the first operation the fault's path matched.
    Whole(usize),
    /// This operation fails, so the multi-op fails at it.
    Op(usize),
}

/// The server's state, guarded by one `std::sync::Mutex` in [`super::EmbeddedServer`].
#[derive(Debug)]
pub(super) struct ServerState {
    pub(super) tree: Tree,
    pub(super) sessions: HashMap<i64, SessionEntry>,
    /// Watches keyed by the absolute path they watch.
    watches: HashMap<String, Vec<WatchEntry>>,
    faults: Vec<Fault>,
    next_session: i64,
}

impl ServerState {
    pub(super) fn new() -> Self {
        Self {
            tree: Tree::new(),
            sessions: HashMap::new(),
            watches: HashMap::new(),
            faults: Vec::new(),
            next_session: 1,
        }
    }

    /// Registers a new connected session and returns its id and state receiver.
    pub(super) fn open_session(
        &mut self,
        chroot: String,
        timeout: Duration,
    ) -> (i64, watch::Receiver<SessionState>) {
        let id = self.next_session;
        self.next_session += 1;
        let (state_tx, state_rx) = watch::channel(SessionState::Connected);
        let entry = SessionEntry {
            chroot,
            state: SessionState::Connected,
            state_tx,
            ephemerals: HashSet::new(),
            timeout,
            disconnects: 0,
        };
        self.sessions.insert(id, entry);
        (id, state_rx)
    }

    /// Arms a fault.
    pub(super) fn arm(&mut self, fault: Fault) {
        self.faults.push(fault);
    }

    /// Takes the first armed fault matching a call, if any.
    pub(super) fn take_fault(&mut self, session: i64, kind: OpKind, path: &str) -> bool {
        match self
            .faults
            .iter()
            .position(|f| f.matches(session, kind, path))
        {
            Some(i) => {
                self.faults.remove(i);
                true
            }
            None => false,
        }
    }

    /// Takes the first armed fault that hits a multi-op: a fault of kind `None` or `Multi` fails
    /// the whole call, one of an operation's own kind fails that operation.
    pub(super) fn take_multi_fault(&mut self, session: i64, ops: &[Op]) -> Option<MultiFault> {
        let whole = self.faults.iter().enumerate().find_map(|(i, f)| {
            if f.kind.is_some_and(|k| k != OpKind::Multi) {
                return None;
            }
            let index = ops
                .iter()
                .position(|op| f.matches(session, f.kind.unwrap_or(OpKind::Multi), op.path()))?;
            Some((i, MultiFault::Whole(index)))
        });
        let hit = whole.or_else(|| {
            ops.iter().enumerate().find_map(|(index, op)| {
                let i = self.faults.iter().position(|f| {
                    f.kind == Some(op.kind()) && f.matches(session, op.kind(), op.path())
                })?;
                Some((i, MultiFault::Op(index)))
            })
        });
        let (i, fault) = hit?;
        self.faults.remove(i);
        Some(fault)
    }

    /// The error a call of this session gets before touching the tree, if its state forbids calls.
    pub(super) fn refuse(&self, session: i64, op: OpKind, path: &str) -> Option<RegistryError> {
        match self.sessions.get(&session).map(|s| s.state) {
            Some(SessionState::Connected) => None,
            Some(SessionState::Disconnected) => Some(RegistryError::ConnectionLoss {
                op,
                path: path.to_owned(),
            }),
            Some(SessionState::Closed) => Some(RegistryError::Closed),
            Some(SessionState::Expired | SessionState::AuthFailed) | None => {
                Some(RegistryError::SessionExpired)
            }
        }
    }

    /// Records ephemeral ownership for applied changes and notifies the watches.
    pub(super) fn applied(&mut self, changes: &[Change]) {
        for change in changes {
            if change.ephemeral_owner != 0 {
                if let Some(owner) = self.sessions.get_mut(&change.ephemeral_owner) {
                    match change.kind {
                        NodeEventKind::Created => owner.ephemerals.insert(change.path.clone()),
                        NodeEventKind::Deleted => owner.ephemerals.remove(&change.path),
                        NodeEventKind::DataChanged => false,
                    };
                }
            }
            self.dispatch(change.kind, &change.path);
        }
    }

    /// Sends one node event to every watch at or above `path` whose session is connected. Events
    /// for a disconnected session are dropped, as ZooKeeper loses them.
    fn dispatch(&mut self, kind: NodeEventKind, path: &str) {
        let mut watched = path;
        loop {
            if let Some(entries) = self.watches.get_mut(watched) {
                entries.retain(|w| {
                    let Some(session) = self.sessions.get(&w.session) else {
                        return false;
                    };
                    if w.stopped() {
                        return false;
                    }
                    if session.state != SessionState::Connected {
                        return true;
                    }
                    let rel = relative(&session.chroot, path).to_owned();
                    w.tx.send(WatchEvent::Node { kind, path: rel }).is_ok()
                });
            }
            if watched == "/" {
                break;
            }
            watched = crate::registry::parent_path(watched);
        }
    }

    /// Registers a recursive watch of `session` on an absolute path.
    pub(super) fn add_watch(
        &mut self,
        session: i64,
        abs: String,
    ) -> mpsc::UnboundedReceiver<WatchEvent> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.add_watch_into(session, abs, tx, None);
        rx
    }

    /// Registers a recursive watch of `session` on an absolute path whose events go to `tx`
    /// (which other watches may share), until `stop` is cancelled.
    pub(super) fn add_watch_into(
        &mut self,
        session: i64,
        abs: String,
        tx: mpsc::UnboundedSender<WatchEvent>,
        stop: Option<CancellationToken>,
    ) {
        self.watches
            .entry(abs)
            .or_default()
            .push(WatchEntry { session, tx, stop });
    }

    /// Drops a session's watch streams (their receivers see them end), sending nothing.
    pub(super) fn end_watches(&mut self, session: i64) {
        for entries in self.watches.values_mut() {
            entries.retain(|w| w.session != session);
        }
    }

    /// Moves a session to `state`, telling its watches and its state channel. Terminal states
    /// delete its ephemerals (with events to the other sessions) and end its watch streams.
    pub(super) fn transition(&mut self, session: i64, state: SessionState, now_ms: i64) {
        let Some(entry) = self.sessions.get_mut(&session) else {
            return;
        };
        if entry.state == state || entry.state.is_terminal() {
            return;
        }
        entry.state = state;
        entry.state_tx.send_replace(state);
        if state == SessionState::Disconnected {
            entry.disconnects += 1;
        }
        if state.is_terminal() {
            let mut doomed: Vec<String> = entry.ephemerals.drain().collect();
            doomed.sort();
            for path in doomed {
                // Ephemerals have no children, so each delete stands alone; one that another
                // session already deleted is simply gone.
                if let Ok((_, changes)) = self.tree.apply(&[Op::delete(path)], session, now_ms) {
                    self.applied(&changes);
                }
            }
        }
        for entries in self.watches.values_mut() {
            entries.retain(|w| {
                if w.session != session {
                    return true;
                }
                if w.stopped() {
                    return false;
                }
                let alive = w.tx.send(WatchEvent::Session(state)).is_ok();
                alive && !state.is_terminal()
            });
        }
        self.watches.retain(|_, entries| !entries.is_empty());
    }
}

/// Whether `path` is `prefix` or lies below it (segment-aware: `/ab` is not below `/a`).
pub(super) fn is_at_or_below(path: &str, prefix: &str) -> bool {
    prefix == "/"
        || path == prefix
        || (path.starts_with(prefix) && path.as_bytes().get(prefix.len()) == Some(&b'/'))
}

/// An absolute path as seen from inside the namespace `chroot`.
pub(super) fn relative<'a>(chroot: &str, abs: &'a str) -> &'a str {
    if chroot.is_empty() {
        abs
    } else if abs.len() == chroot.len() {
        "/"
    } else {
        &abs[chroot.len()..]
    }
}

/// A namespace-relative path as an absolute one.
pub(super) fn absolute(chroot: &str, rel: &str) -> String {
    if chroot.is_empty() {
        rel.to_owned()
    } else if rel == "/" {
        chroot.to_owned()
    } else {
        format!("{chroot}{rel}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::CreateMode;

    #[test]
    fn expiry_deletes_only_the_sessions_ephemerals_and_tells_other_watchers() {
        let mut state = ServerState::new();
        let (a, _) = state.open_session(String::new(), Duration::from_secs(10));
        let (b, _) = state.open_session(String::new(), Duration::from_secs(10));
        let mut watch_b = state.add_watch(b, "/".into());
        let mut watch_a = state.add_watch(a, "/".into());
        for (session, path, mode) in [
            (a, "/mine", CreateMode::Ephemeral),
            (a, "/kept", CreateMode::Persistent),
            (b, "/theirs", CreateMode::Ephemeral),
        ] {
            let (_, changes) = state
                .tree
                .apply(&[Op::create(path, vec![], mode)], session, 1)
                .unwrap();
            state.applied(&changes);
        }
        state.transition(a, SessionState::Expired, 2);
        assert!(state.tree.node("/mine").is_none());
        assert!(state.tree.node("/kept").is_some());
        assert!(state.tree.node("/theirs").is_some());
        let mut seen_by_b = Vec::new();
        while let Ok(e) = watch_b.try_recv() {
            seen_by_b.push(e);
        }
        assert_eq!(
            seen_by_b.last(),
            Some(&WatchEvent::Node {
                kind: NodeEventKind::Deleted,
                path: "/mine".into()
            })
        );
        let mut seen_by_a = Vec::new();
        while let Ok(e) = watch_a.try_recv() {
            seen_by_a.push(e);
        }
        assert_eq!(
            seen_by_a.last(),
            Some(&WatchEvent::Session(SessionState::Expired))
        );
        assert!(
            watch_a.is_closed(),
            "an expired session's watch stream ends"
        );
    }

    #[test]
    fn prefixes_respect_segment_boundaries() {
        assert!(is_at_or_below("/a/b", "/a"));
        assert!(is_at_or_below("/a", "/a"));
        assert!(is_at_or_below("/x", "/"));
        assert!(!is_at_or_below("/ab", "/a"));
        assert_eq!(relative("/ns", "/ns"), "/");
        assert_eq!(relative("/ns", "/ns/a"), "/a");
        assert_eq!(absolute("/ns", "/"), "/ns");
        assert_eq!(absolute("", "/a"), "/a");
    }
}
