//! [`ZkSession`]: one ZooKeeper session, chrooted at its namespace, as a [`Registry`].
//!
//! Every call is bounded by the per-call timeout and counted. The session's state is mirrored into a
//! `tokio::sync::watch` by a small task, so that callers never touch the client's own state types.
//! The [`Registry`] calls themselves are in `calls.rs`.

mod calls;

use std::fmt;
use std::future::Future;
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;
use zookeeper_client as zk;

use super::convert::{self, Call};
use super::counters::{OpCounters, OpCounts};
use super::{listing, watching};
use crate::model::Silence;
use crate::registry::{
    validate_path, CreateMode, ListedNode, Op, OpKind, OpResult, Registry, RegistryError, Result,
    SessionInfo, SessionState, Stat, WatchEvent, WatchGuard, WatchStream,
};

/// One ZooKeeper session. Built by [`super::ZkConnector`].
pub struct ZkSession {
    /// `None` once closed: dropping the last client handle is what ends a ZooKeeper session. Shared
    /// with watch forwarders, which borrow a handle only while they renew their watch.
    client: Arc<RwLock<Option<zk::Client>>>,
    info: SessionInfo,
    zk_info: zk::SessionInfo,
    call_timeout: Duration,
    acls: zk::Acls<'static>,
    state: Arc<watch::Sender<SessionState>>,
    closed: CancellationToken,
    /// Hands new watches to their forwarder (one task for every watch of the session).
    watches: OnceLock<mpsc::UnboundedSender<watching::NewWatch>>,
    own_counts: OpCounters,
    /// Calls in flight and the last answer ([`Silence`]).
    pub(super) silence: Silence,
    shared_counts: Arc<OpCounters>,
    target: String,
}

impl fmt::Debug for ZkSession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ZkSession")
            .field("target", &self.target)
            .field("id", &format_args!("{:#x}", self.info.id))
            .field("timeout", &self.info.timeout)
            .field("state", &*self.state.borrow())
            .finish()
    }
}

impl ZkSession {
    /// Wraps a connected, chrooted client and starts mirroring its state.
    pub(super) fn new(
        client: zk::Client,
        call_timeout: Duration,
        acls: zk::Acls<'static>,
        shared_counts: Arc<OpCounters>,
        target: String,
    ) -> Self {
        let info = SessionInfo {
            id: client.session_id().0,
            timeout: client.session_timeout(),
        };
        let zk_info = client.session().clone();
        let state = Arc::new(watch::Sender::new(convert::session_state(client.state())));
        let closed = CancellationToken::new();
        // On the IO runtime: a state change reaches the watch whatever the job load.
        super::io::handle().spawn(mirror_state(
            client.state_watcher(),
            state.clone(),
            closed.clone(),
        ));
        Self {
            client: Arc::new(RwLock::new(Some(client))),
            info,
            zk_info,
            call_timeout,
            acls,
            state,
            closed,
            watches: OnceLock::new(),
            own_counts: OpCounters::default(),
            silence: Silence::new(),
            shared_counts,
            target,
        }
    }

    /// The calls this session made, per kind and outcome.
    pub fn op_counts(&self) -> OpCounts {
        self.own_counts.snapshot()
    }

    /// The client-level session identity (id and password). Tests use it to expire the session
    /// from a second client, the standard ZooKeeper trick.
    pub fn zookeeper_session(&self) -> zk::SessionInfo {
        self.zk_info.clone()
    }

    /// What this session reaches, `hosts/namespace`.
    pub fn target(&self) -> &str {
        &self.target
    }

    fn call<'a>(&self, op: OpKind, path: &'a str) -> Call<'a> {
        Call::new(op, path, self.call_timeout)
    }

    /// A handle on the live client, or the fatal error that replaces it.
    fn client(&self, path: &str) -> Result<zk::Client> {
        validate_path(path)?;
        let guard = self.client.read().unwrap_or_else(|p| p.into_inner());
        let Some(client) = guard.as_ref() else {
            return Err(RegistryError::Closed);
        };
        // The client would say so too, but only after a round trip to a server that may be gone.
        match *self.state.borrow() {
            SessionState::Expired => Err(RegistryError::SessionExpired),
            SessionState::Closed => Err(RegistryError::Closed),
            _ => Ok(client.clone()),
        }
    }

    /// Runs one call under the per-call bound and counts its outcome.
    async fn run<T>(&self, call: Call<'_>, fut: impl Future<Output = Result<T>>) -> Result<T> {
        let _waiting = self.silence.call();
        let outcome = match tokio::time::timeout(call.bound, fut).await {
            Ok(r) => r,
            Err(_) => Err(call.timed_out()),
        };
        self.own_counts.record(call.op, outcome.is_ok());
        self.shared_counts.record(call.op, outcome.is_ok());
        outcome
    }

    /// The sender to the task that forwards every watch of this session, started with the first.
    fn forwarder(&self) -> &mpsc::UnboundedSender<watching::NewWatch> {
        self.watches.get_or_init(|| {
            let (tx, rx) = mpsc::unbounded_channel();
            let renew = watching::Renew {
                client: Arc::downgrade(&self.client),
                bound: self.call_timeout,
            };
            tokio::spawn(watching::forward(rx, self.closed.clone(), renew));
            tx
        })
    }

    fn options(&self, mode: CreateMode) -> zk::CreateOptions<'static> {
        convert::create_mode(mode).with_acls(self.acls)
    }
}

/// Copies the client's state changes into `state` until a terminal one (or `close`).
async fn mirror_state(
    mut watcher: zk::StateWatcher,
    state: Arc<watch::Sender<SessionState>>,
    closed: CancellationToken,
) {
    loop {
        let next = tokio::select! {
            s = watcher.changed() => convert::session_state(s),
            () = closed.cancelled() => return,
        };
        // A terminal state is final: a late `Expired` must not overwrite `Closed` or vice versa.
        state.send_if_modified(|current| {
            let change = !current.is_terminal() && *current != next;
            if change {
                *current = next;
            }
            change
        });
        if next.is_terminal() {
            return;
        }
    }
}
