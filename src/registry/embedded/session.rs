//! [`EmbeddedSession`]: one session on an [`EmbeddedServer`], implementing [`Registry`].

use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use super::state::{absolute, relative, MultiFault, ServerState};
use super::{now_millis, EmbeddedServer};
use crate::registry::{
    validate_path, CreateMode, ListedNode, Op, OpKind, OpResult, Registry, RegistryError, Result,
    SessionInfo, SessionState, Stat, WatchEvent, WatchGuard, WatchStream,
};

/// One session on an [`EmbeddedServer`], seeing its namespace as `/`.
///
/// Dropping a session without [`Registry::close`] behaves like a crashed client: the connection is
/// cut and the session expires after its timeout (at once when no tokio runtime is running), so its
/// ephemerals outlive it for that long, as they would on ZooKeeper.
#[derive(Debug)]
pub struct EmbeddedSession {
    server: EmbeddedServer,
    id: i64,
    chroot: String,
    timeout: Duration,
    state_rx: watch::Receiver<SessionState>,
}

impl EmbeddedSession {
    pub(super) fn open(server: EmbeddedServer, chroot: String, timeout: Duration) -> Self {
        let (id, state_rx) = {
            let mut state = server.lock();
            let (id, rx) = state.open_session(chroot.clone(), timeout);
            ensure_chroot(&mut state, &chroot, id);
            (id, rx)
        };
        Self {
            server,
            id,
            chroot,
            timeout,
            state_rx,
        }
    }

    /// The session id (also the `ephemeral_owner` of its ephemerals).
    pub fn id(&self) -> i64 {
        self.id
    }

    /// The server this session lives on.
    pub fn server(&self) -> &EmbeddedServer {
        &self.server
    }

    /// Expires this session: see [`EmbeddedServer::expire`].
    pub fn expire(&self) {
        self.server.expire(self.id);
    }

    /// Cuts this session's connection: see [`EmbeddedServer::disconnect`].
    pub fn disconnect(&self) {
        self.server.disconnect(self.id);
    }

    /// Heals a cut connection: see [`EmbeddedServer::reconnect`].
    pub fn reconnect(&self) {
        self.server.reconnect(self.id);
    }

    /// Fails this session's next matching call: see [`EmbeddedServer::fail_next`].
    pub fn fail_next(&self, kind: Option<OpKind>, path_prefix: Option<&str>) {
        self.server.fail_next(self.id, kind, path_prefix);
    }

    /// Runs one call: counts it, checks the path, the session's state and the armed faults, then
    /// runs `f` on the locked state with the absolute path.
    fn call<T>(
        &self,
        kind: OpKind,
        path: &str,
        f: impl FnOnce(&mut ServerState, &str) -> Result<T>,
    ) -> Result<T> {
        self.server.count(kind);
        let result = (|| {
            validate_path(path)?;
            let mut state = self.server.lock();
            if let Some(refused) = state.refuse(self.id, kind, path) {
                return Err(refused);
            }
            if state.take_fault(self.id, kind, path) {
                return Err(RegistryError::Injected {
                    op: kind,
                    path: path.to_owned(),
                });
            }
            let abs = absolute(&self.chroot, path);
            f(&mut state, &abs).map_err(|e| relative_error(&self.chroot, e))
        })();
        op_metric(kind, result.is_ok());
        result
    }

    /// Applies a transaction of absolute-path operations, notifying the watches on success.
    fn apply(
        &self,
        state: &mut ServerState,
        ops: &[Op],
    ) -> Result<Vec<OpResult>, (usize, RegistryError)> {
        let (results, changes) = state.tree.apply(ops, self.id, now_millis())?;
        state.applied(&changes);
        Ok(results
            .into_iter()
            .map(|r| match r {
                OpResult::Created(p) => OpResult::Created(relative(&self.chroot, &p).to_owned()),
                other => other,
            })
            .collect())
    }

    fn single(&self, kind: OpKind, op: Op) -> Result<OpResult> {
        let path = op.path().to_owned();
        self.call(kind, &path, |state, abs| {
            let op = with_path(op, abs.to_owned());
            let mut results = self
                .apply(state, std::slice::from_ref(&op))
                .map_err(|(_, e)| e)?;
            Ok(results.pop().expect("one result per operation"))
        })
    }
}

impl Drop for EmbeddedSession {
    fn drop(&mut self) {
        if self.state_rx.borrow().is_terminal() {
            return;
        }
        if tokio::runtime::Handle::try_current().is_ok() {
            self.server.disconnect(self.id);
        } else {
            self.server.expire(self.id);
        }
    }
}

#[async_trait]
impl Registry for EmbeddedSession {
    async fn create(&self, path: &str, data: &[u8], mode: CreateMode) -> Result<String> {
        match self.single(OpKind::Create, Op::create(path, data.to_vec(), mode))? {
            OpResult::Created(p) => Ok(p),
            other => unreachable!("a create returned {other:?}"),
        }
    }

    async fn get(&self, path: &str) -> Result<(Vec<u8>, Stat)> {
        self.call(OpKind::Get, path, |state, abs| {
            let node = state.tree.node(abs).ok_or_else(|| no_node(abs))?;
            Ok((node.data.to_vec(), node.stat))
        })
    }

    async fn set(&self, path: &str, data: &[u8], version: Option<i32>) -> Result<Stat> {
        let op = Op::Set {
            path: path.to_owned(),
            data: data.to_vec(),
            version,
        };
        match self.single(OpKind::Set, op)? {
            OpResult::Set(stat) => Ok(stat),
            other => unreachable!("a set returned {other:?}"),
        }
    }

    async fn delete(&self, path: &str, version: Option<i32>) -> Result<()> {
        let op = Op::Delete {
            path: path.to_owned(),
            version,
        };
        self.single(OpKind::Delete, op).map(|_| ())
    }

    async fn children(&self, path: &str) -> Result<Vec<String>> {
        self.call(OpKind::Children, path, |state, abs| {
            let node = state.tree.node(abs).ok_or_else(|| no_node(abs))?;
            Ok(node.children.iter().map(str::to_owned).collect())
        })
    }

    async fn exists(&self, path: &str) -> Result<Option<Stat>> {
        self.call(OpKind::Exists, path, |state, abs| {
            Ok(state.tree.node(abs).map(|n| n.stat))
        })
    }

    async fn multi(&self, ops: &[Op]) -> Result<Vec<OpResult>> {
        let failed = |index: usize, source: RegistryError| RegistryError::MultiFailed {
            index,
            kind: ops[index].kind(),
            path: ops[index].path().to_owned(),
            source: Box::new(source),
        };
        self.server.count(OpKind::Multi);
        let result = (|| {
            for (index, op) in ops.iter().enumerate() {
                validate_path(op.path()).map_err(|e| failed(index, e))?;
            }
            let first = ops.first().map_or("/", Op::path);
            let mut state = self.server.lock();
            if let Some(refused) = state.refuse(self.id, OpKind::Multi, first) {
                return Err(refused);
            }
            match state.take_multi_fault(self.id, ops) {
                Some(MultiFault::Whole(index)) => {
                    return Err(RegistryError::Injected {
                        op: OpKind::Multi,
                        path: ops[index].path().to_owned(),
                    })
                }
                Some(MultiFault::Op(index)) => {
                    let op = ops[index].kind();
                    let path = ops[index].path().to_owned();
                    return Err(failed(index, RegistryError::Injected { op, path }));
                }
                None => {}
            }
            let abs_ops: Vec<Op> = ops
                .iter()
                .map(|op| with_path(op.clone(), absolute(&self.chroot, op.path())))
                .collect();
            self.apply(&mut state, &abs_ops)
                .map_err(|(index, e)| failed(index, relative_error(&self.chroot, e)))
        })();
        op_metric(OpKind::Multi, result.is_ok());
        result
    }

    async fn watch_recursive(&self, path: &str) -> Result<WatchStream> {
        self.call(OpKind::Watch, path, |state, abs| {
            Ok(state.add_watch(self.id, abs.to_owned()))
        })
    }

    async fn watch_recursive_into(
        &self,
        path: &str,
        into: mpsc::UnboundedSender<WatchEvent>,
    ) -> Result<WatchGuard> {
        let stop = CancellationToken::new();
        self.call(OpKind::Watch, path, |state, abs| {
            state.add_watch_into(self.id, abs.to_owned(), into, Some(stop.clone()));
            Ok(())
        })?;
        Ok(WatchGuard::new(stop))
    }

    async fn list_subtree(&self, path: &str) -> Result<Vec<ListedNode>> {
        self.call(OpKind::List, path, |state, abs| {
            let nodes = state.tree.subtree(abs).ok_or_else(|| no_node(abs))?;
            Ok(nodes
                .into_iter()
                .map(|(p, node)| ListedNode {
                    path: relative(&self.chroot, &p).to_owned(),
                    data: node.data.to_vec(),
                    stat: node.stat,
                })
                .collect())
        })
    }

    fn session_info(&self) -> SessionInfo {
        SessionInfo {
            id: self.id,
            timeout: self.timeout,
        }
    }

    fn session_state(&self) -> watch::Receiver<SessionState> {
        self.state_rx.clone()
    }

    async fn close(&self) {
        self.server
            .lock()
            .transition(self.id, SessionState::Closed, now_millis());
    }
}

/// Creates the namespace root and its ancestors when missing, with events like any create.
fn ensure_chroot(state: &mut ServerState, chroot: &str, session: i64) {
    let mut end = 0;
    while end < chroot.len() {
        end = chroot[end + 1..]
            .find('/')
            .map_or(chroot.len(), |i| end + 1 + i);
        let path = &chroot[..end];
        if state.tree.node(path).is_none() {
            let op = Op::create(path, Vec::new(), CreateMode::Persistent);
            let (_, changes) = state
                .tree
                .apply(&[op], session, now_millis())
                .unwrap_or_else(|(_, e)| panic!("creating namespace {chroot}: {e}"));
            state.applied(&changes);
        }
    }
}

fn no_node(abs: &str) -> RegistryError {
    RegistryError::NoNode {
        path: abs.to_owned(),
    }
}

/// The same operation on another path.
fn with_path(op: Op, path: String) -> Op {
    match op {
        Op::Create { data, mode, .. } => Op::Create { path, data, mode },
        Op::Set { data, version, .. } => Op::Set {
            path,
            data,
            version,
        },
        Op::Delete { version, .. } => Op::Delete { path, version },
        Op::Check { version, .. } => Op::Check { path, version },
    }
}

/// Rewrites the absolute paths in a node-level error to the caller's namespace-relative ones.
fn relative_error(chroot: &str, e: RegistryError) -> RegistryError {
    let rel = |p: String| relative(chroot, &p).to_owned();
    match e {
        RegistryError::NoNode { path } => RegistryError::NoNode { path: rel(path) },
        RegistryError::NodeExists { path } => RegistryError::NodeExists { path: rel(path) },
        RegistryError::NotEmpty { path } => RegistryError::NotEmpty { path: rel(path) },
        RegistryError::BadVersion { path, expected } => RegistryError::BadVersion {
            path: rel(path),
            expected,
        },
        RegistryError::NoChildrenForEphemerals { path } => {
            RegistryError::NoChildrenForEphemerals { path: rel(path) }
        }
        RegistryError::InvalidPath { path, reason } => RegistryError::InvalidPath {
            path: rel(path),
            reason,
        },
        other => other,
    }
}

/// Counts one finished call by kind and outcome, as the ZooKeeper backend does.
fn op_metric(kind: OpKind, ok: bool) {
    crate::metrics::registry_operation("embedded", kind, ok);
}
