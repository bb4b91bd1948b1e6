//! A session's registry writes: a list of operations applied as one call or one multi-op
//! ([`apply_ops`]), op by op tolerating nodes already as wanted ([`apply_each_tolerant`]), and
//! batched with the writes of every job that starts (or ends) at the same moment ([`WriteBatcher`]).
//!
//! At a busy instant hundreds of executors write their `running` markers together. Each one hands
//! its operations to the session's [`WriteBatcher`] and waits for its own answer; the batcher's task
//! takes everything queued while the previous multi-op was in flight and sends it as one (in chunks
//! of at most [`MAX_OPS`]). When a combined multi-op fails, each submission is applied on its own, so
//! one job's conflict is its own answer and never another job's. No timer: a lone submission goes out
//! at once, and batches form only under load.

use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};

use crate::registry::{Op, Registry, RegistryError};

/// The most operations one combined multi-op carries (ZooKeeper refuses requests past 1 MiB).
const MAX_OPS: usize = 1000;

/// Who hears a submission's outcome: called once, from the batcher's task.
type Reply = Box<dyn FnOnce(Result<(), RegistryError>) + Send>;

type Submission = (Vec<Op>, Reply);

/// Combines concurrent writes of one session into multi-ops. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct WriteBatcher {
    tx: mpsc::UnboundedSender<Submission>,
}

impl WriteBatcher {
    /// Starts the batcher's task on `registry`; it ends when every handle is dropped.
    pub(crate) fn start(registry: Arc<dyn Registry>) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(run(registry, rx));
        Self { tx }
    }

    /// Applies `ops` atomically (as one multi-op or within a larger one) and returns their own
    /// outcome.
    pub(crate) async fn apply(&self, ops: Vec<Op>) -> Result<(), RegistryError> {
        self.submit(ops).outcome().await
    }

    /// Queues `ops` now; the outcome is awaited later. A caller that waits holds only the answer
    /// (a few bytes), not its own state: ten thousand jobs wait on one instant's batch.
    pub(crate) fn submit(&self, ops: Vec<Op>) -> Answer {
        if ops.is_empty() {
            return Answer(None);
        }
        let (reply, answer) = oneshot::channel();
        self.submit_then(ops, move |outcome| {
            let _ = reply.send(outcome);
        });
        Answer(Some(answer))
    }

    /// Queues `ops` and calls `then` with their outcome (at once for no operations, or when the
    /// batcher is gone). Nothing waits meanwhile: an actor gets the outcome as a message.
    pub(crate) fn submit_then(
        &self,
        ops: Vec<Op>,
        then: impl FnOnce(Result<(), RegistryError>) + Send + 'static,
    ) {
        if ops.is_empty() {
            return then(Ok(()));
        }
        if let Err(mpsc::error::SendError((_, then))) = self.tx.send((ops, Box::new(then))) {
            then(Err(RegistryError::Closed));
        }
    }
}

/// The outcome of a [`WriteBatcher::submit`], to be awaited.
#[derive(Debug)]
pub(crate) struct Answer(Option<oneshot::Receiver<Result<(), RegistryError>>>);

impl Answer {
    /// Waits for the write's own outcome (`Ok` at once for no operations).
    pub(crate) async fn outcome(self) -> Result<(), RegistryError> {
        match self.0 {
            None => Ok(()),
            Some(answer) => answer.await.unwrap_or(Err(RegistryError::Closed)),
        }
    }
}

async fn run(registry: Arc<dyn Registry>, mut rx: mpsc::UnboundedReceiver<Submission>) {
    while let Some(first) = rx.recv().await {
        let mut batch = vec![first];
        let mut count = batch[0].0.len();
        // Everything that queued up meanwhile goes in the same write, up to the size limit.
        while count < MAX_OPS {
            match rx.try_recv() {
                Ok(next) => {
                    count += next.0.len();
                    batch.push(next);
                }
                Err(_) => break,
            }
        }
        if batch.len() == 1 {
            let (ops, reply) = batch.pop().expect("one submission");
            reply(apply_ops(&*registry, &ops).await);
            continue;
        }
        let combined: Vec<Op> = batch
            .iter()
            .flat_map(|(ops, _)| ops.iter().cloned())
            .collect();
        let together = if combined.len() <= MAX_OPS {
            apply_ops(&*registry, &combined).await
        } else {
            Err(RegistryError::Backend {
                op: crate::registry::OpKind::Multi,
                path: "/".into(),
                reason: "batch over the size limit".into(),
            })
        };
        match together {
            Ok(()) => {
                for (_, reply) in batch {
                    reply(Ok(()));
                }
            }
            Err(e) if e.is_fatal() => {
                let expired = matches!(e, RegistryError::SessionExpired);
                for (_, reply) in batch {
                    let dead = if expired {
                        RegistryError::SessionExpired
                    } else {
                        RegistryError::Closed
                    };
                    reply(Err(dead));
                }
            }
            Err(_) => {
                // One submission's conflict must not fail the others: each on its own.
                for (ops, reply) in batch {
                    reply(apply_ops(&*registry, &ops).await);
                }
            }
        }
    }
}

/// Applies operations: nothing for none, a plain call for one, a multi-op for several. The
/// result is the registry's error, typed, so callers can tell a lost race from a failure.
pub(crate) async fn apply_ops(registry: &dyn Registry, ops: &[Op]) -> Result<(), RegistryError> {
    match ops {
        [] => Ok(()),
        [Op::Create { path, data, mode }] => registry.create(path, data, *mode).await.map(|_| ()),
        [Op::Set {
            path,
            data,
            version,
        }] => registry.set(path, data, *version).await.map(|_| ()),
        [Op::Delete { path, version }] => registry.delete(path, *version).await,
        _ => registry.multi(ops).await.map(|_| ()),
    }
}

/// Applies operations one by one, tolerating nodes that are already as wanted (created by someone
/// else, or already gone). For clean-ups after a failed multi-op, where markers may have vanished
/// with an old session.
pub(crate) async fn apply_each_tolerant(
    registry: &dyn Registry,
    ops: &[Op],
) -> Result<(), RegistryError> {
    for op in ops {
        tolerated(apply_ops(registry, std::slice::from_ref(op)).await)?;
    }
    Ok(())
}

/// A write's result with a node found already there, or already gone, taken as done.
fn tolerated(result: Result<(), RegistryError>) -> Result<(), RegistryError> {
    match result {
        Err(e) if e.is_no_node() || e.is_node_exists() => Ok(()),
        other => other,
    }
}

/// Applies writes one by one, each one operation or a guarded multi-op, tolerating a write that
/// finds a node already as wanted or a guard that no longer holds (a node there or gone).
pub(crate) async fn apply_writes_tolerant(
    registry: &dyn Registry,
    writes: &[Vec<Op>],
) -> Result<(), RegistryError> {
    for ops in writes {
        tolerated(apply_ops(registry, ops).await)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::embedded::EmbeddedServer;
    use crate::registry::{Connector, CreateMode, OpKind};

    #[tokio::test]
    async fn concurrent_submissions_share_multi_ops_and_a_conflict_stays_its_own() {
        let server = EmbeddedServer::new();
        let reg = server.connector("batch").connect().await.unwrap();
        let batcher = WriteBatcher::start(reg.clone());
        reg.create("/taken", b"", CreateMode::Persistent)
            .await
            .unwrap();
        let before = server.op_counts().get(&OpKind::Multi).copied().unwrap_or(0);
        let writes = (0..50).map(|i| {
            let b = batcher.clone();
            async move {
                b.apply(vec![Op::create(
                    format!("/n{i}"),
                    "",
                    CreateMode::Persistent,
                )])
                .await
            }
        });
        let conflict = batcher.apply(vec![Op::create("/taken", "", CreateMode::Persistent)]);
        let (results, conflict) = tokio::join!(futures::future::join_all(writes), conflict);
        assert!(results.iter().all(Result::is_ok));
        assert!(conflict.unwrap_err().is_node_exists());
        for i in 0..50 {
            assert!(reg.exists(&format!("/n{i}")).await.unwrap().is_some());
        }
        let multis = server.op_counts().get(&OpKind::Multi).copied().unwrap_or(0) - before;
        assert!(
            multis < 50,
            "batched: {multis} multi-ops for 50 submissions"
        );
    }

    #[tokio::test]
    async fn a_callback_hears_its_own_outcome_and_at_once_when_there_is_nothing_to_write() {
        let server = EmbeddedServer::new();
        let reg = server.connector("batch").connect().await.unwrap();
        let batcher = WriteBatcher::start(reg.clone());
        let (tx, mut rx) = mpsc::unbounded_channel();
        let told = |name: &'static str| {
            let tx = tx.clone();
            move |outcome: Result<(), RegistryError>| {
                let _ = tx.send((name, outcome));
            }
        };
        batcher.submit_then(Vec::new(), told("nothing"));
        let (name, outcome) = rx.try_recv().expect("called before submit_then returned");
        assert_eq!(name, "nothing");
        assert!(outcome.is_ok());
        let create = || vec![Op::create("/x", "", CreateMode::Persistent)];
        batcher.submit_then(create(), told("first"));
        batcher.submit_then(create(), told("second"));
        let mut heard = Vec::new();
        for _ in 0..2 {
            heard.push(rx.recv().await.expect("each submission is answered"));
        }
        heard.sort_by_key(|(name, _)| *name);
        assert!(heard[0].0 == "first" && heard[0].1.is_ok());
        assert!(heard[1].0 == "second" && heard[1].1.as_ref().unwrap_err().is_node_exists());
    }
}
