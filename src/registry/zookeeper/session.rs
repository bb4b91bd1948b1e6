//! [`ZkSession`]: one ZooKeeper session, chrooted at its namespace, as a [`Registry`].
//!
//! Every call is bounded by the per-call timeout and counted. The session's state is mirrored into a
//! `tokio::sync::watch` by a small task, so that callers never touch the client's own state types.

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

#[async_trait]
impl Registry for ZkSession {
    async fn create(&self, path: &str, data: &[u8], mode: CreateMode) -> Result<String> {
        let call = self.call(OpKind::Create, path);
        self.run(call, async {
            let client = self.client(path)?;
            let (_, sequence) = client
                .create(path, data, &self.options(mode))
                .await
                .map_err(|e| call.error(e))?;
            Ok(if mode.is_sequential() {
                format!("{path}{sequence}")
            } else {
                path.to_owned()
            })
        })
        .await
    }

    async fn get(&self, path: &str) -> Result<(Vec<u8>, Stat)> {
        let call = self.call(OpKind::Get, path);
        self.run(call, async {
            let client = self.client(path)?;
            let (data, stat) = client.get_data(path).await.map_err(|e| call.error(e))?;
            Ok((data, convert::stat(&stat)))
        })
        .await
    }

    async fn set(&self, path: &str, data: &[u8], version: Option<i32>) -> Result<Stat> {
        let call = self.call(OpKind::Set, path).at(version);
        self.run(call, async {
            let client = self.client(path)?;
            let stat = client
                .set_data(path, data, version)
                .await
                .map_err(|e| call.error(e))?;
            Ok(convert::stat(&stat))
        })
        .await
    }

    async fn delete(&self, path: &str, version: Option<i32>) -> Result<()> {
        let call = self.call(OpKind::Delete, path).at(version);
        self.run(call, async {
            let client = self.client(path)?;
            client
                .delete(path, version)
                .await
                .map_err(|e| call.error(e))
        })
        .await
    }

    async fn children(&self, path: &str) -> Result<Vec<String>> {
        let call = self.call(OpKind::Children, path);
        self.run(call, async {
            let client = self.client(path)?;
            let mut names = client
                .list_children(path)
                .await
                .map_err(|e| call.error(e))?;
            names.sort_unstable();
            Ok(names)
        })
        .await
    }

    async fn exists(&self, path: &str) -> Result<Option<Stat>> {
        let call = self.call(OpKind::Exists, path);
        self.run(call, async {
            let client = self.client(path)?;
            let stat = client.check_stat(path).await.map_err(|e| call.error(e))?;
            Ok(stat.as_ref().map(convert::stat))
        })
        .await
    }

    async fn multi(&self, ops: &[Op]) -> Result<Vec<OpResult>> {
        let first = ops.first().map(Op::path).unwrap_or("/");
        let call = self.call(OpKind::Multi, first);
        self.run(call, async {
            let client = self.client("/")?;
            let mut writer = client.new_multi_writer();
            for (index, op) in ops.iter().enumerate() {
                add_op(&mut writer, op, self).map_err(|source| multi_failed(index, op, source))?;
            }
            let results = match writer.commit().await {
                Ok(results) => results,
                Err(zk::MultiWriteError::OperationFailed { index, source }) => {
                    let op = &ops[index];
                    let source = Call::new(op.kind(), op.path(), self.call_timeout)
                        .at(op_version(op))
                        .error(source);
                    return Err(multi_failed(index, op, source));
                }
                Err(zk::MultiWriteError::RequestFailed { source }) => {
                    return Err(call.error(source))
                }
            };
            Ok(results.into_iter().map(op_result).collect())
        })
        .await
    }

    async fn watch_recursive(&self, path: &str) -> Result<WatchStream> {
        let (tx, rx) = mpsc::unbounded_channel();
        let guard = self.watch_recursive_into(path, tx).await?;
        // The watch lasts as long as its receiver: the forwarder drops it when a send fails.
        guard.detach();
        Ok(rx)
    }

    async fn watch_recursive_into(
        &self,
        path: &str,
        into: mpsc::UnboundedSender<WatchEvent>,
    ) -> Result<WatchGuard> {
        let call = self.call(OpKind::Watch, path);
        self.run(call, async {
            let client = self.client(path)?;
            let watcher = client
                .watch(path, zk::AddWatchMode::PersistentRecursive)
                .await
                .map_err(|e| call.error(e))?;
            let stop = CancellationToken::new();
            let new = watching::NewWatch {
                path: path.to_owned(),
                watcher,
                tx: into,
                stop: stop.clone(),
            };
            // The forwarder ends only with the session: a watch sent after it is dropped
            // unheard, as any watch of a session that ended.
            let _ = self.forwarder().send(new);
            Ok(WatchGuard::new(stop))
        })
        .await
    }

    async fn get_many(&self, paths: &[String]) -> Result<Vec<Result<(Vec<u8>, Stat)>>> {
        let Some(first) = paths.first() else {
            return Ok(Vec::new());
        };
        let call = self.call(OpKind::GetMany, first);
        let outcome = match self.client(first) {
            Ok(client) => listing::get_many(&client, paths, self.call_timeout).await,
            Err(e) => Err(e),
        };
        self.own_counts.record(call.op, outcome.is_ok());
        self.shared_counts.record(call.op, outcome.is_ok());
        outcome
    }

    async fn list_subtree(&self, path: &str) -> Result<Vec<ListedNode>> {
        let call = self.call(OpKind::List, path);
        let client = self.client(path);
        // Each batch is bounded on its own: a large tree may take longer than one call's bound.
        let outcome = match client {
            Ok(client) => listing::list_subtree(&client, path, self.call_timeout).await,
            Err(e) => Err(e),
        };
        self.own_counts.record(call.op, outcome.is_ok());
        self.shared_counts.record(call.op, outcome.is_ok());
        outcome
    }

    fn session_info(&self) -> SessionInfo {
        self.info
    }

    fn session_state(&self) -> watch::Receiver<SessionState> {
        self.state.subscribe()
    }

    async fn close(&self) {
        let taken = self
            .client
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(client) = taken {
            let mut watcher = client.state_watcher();
            // The session ends when the last handle goes; wait for the server to confirm so that
            // the ephemerals are gone when `close` returns.
            drop(client);
            let confirmed = async {
                let mut s = watcher.state();
                while !s.is_terminated() {
                    s = watcher.changed().await;
                }
            };
            if tokio::time::timeout(self.call_timeout, confirmed)
                .await
                .is_err()
            {
                tracing::warn!(
                    target = %self.target,
                    "ZooKeeper did not confirm the session close within {:?}; its ephemerals go when it times out",
                    self.call_timeout
                );
            }
        }
        self.closed.cancel();
        self.state.send_if_modified(|current| {
            let change = !current.is_terminal();
            if change {
                *current = SessionState::Closed;
            }
            change
        });
    }
}

/// Adds one registry operation to a ZooKeeper transaction.
fn add_op(writer: &mut zk::MultiWriter<'_>, op: &Op, session: &ZkSession) -> Result<()> {
    validate_path(op.path())?;
    let call = Call::new(op.kind(), op.path(), session.call_timeout);
    match op {
        Op::Create { path, data, mode } => writer.add_create(path, data, &session.options(*mode)),
        Op::Set {
            path,
            data,
            version,
        } => writer.add_set_data(path, data, *version),
        Op::Delete { path, version } => writer.add_delete(path, *version),
        Op::Check { path, version } => writer.add_check_version(path, *version),
    }
    .map_err(|e| call.error(e))
}

fn op_version(op: &Op) -> Option<i32> {
    match op {
        Op::Set { version, .. } | Op::Delete { version, .. } => *version,
        Op::Check { version, .. } => Some(*version),
        Op::Create { .. } => None,
    }
}

fn multi_failed(index: usize, op: &Op, source: RegistryError) -> RegistryError {
    RegistryError::MultiFailed {
        index,
        kind: op.kind(),
        path: op.path().to_owned(),
        source: Box::new(source),
    }
}

fn op_result(result: zk::MultiWriteResult) -> OpResult {
    match result {
        zk::MultiWriteResult::Create { path, .. } => OpResult::Created(path),
        zk::MultiWriteResult::SetData { stat } => OpResult::Set(convert::stat(&stat)),
        zk::MultiWriteResult::Delete => OpResult::Deleted,
        zk::MultiWriteResult::Check => OpResult::Checked,
        // The enum is non-exhaustive; a multi of ours only holds the four kinds above.
        other => unreachable!("multi-op result {other:?} for an operation shardcron never sends"),
    }
}
