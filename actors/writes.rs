//! A session's registry writes: a list of operations applied as one call or one multi-op
//! ([`apply_ops`]), op by op tolerating nodes already as wanted ([`apply_each_tolerant`]), and
//! batched with the writes of every job that starts (or ends) at the same moment ([`WriteBatcher`]).
//!
//! At a busy instant thousands of executors write their `running` markers together. Each one hands
//! its operations to the session's [`WriteBatcher`] and hears its own answer; the batcher's task
//! takes everything queued meanwhile and sends it as multi-ops of at most [`MAX_OPS`] operations,
//! up to [`IN_FLIGHT`] of them at once (ZooKeeper applies a session's requests in order, so the
//! server works on one while the next travels), a batch beside another only for a load of
//! [`BESIDE_OPS`] operations waiting. Batches in flight never share a job ([`Queue`]):
//! when a combined multi-op fails, each of its submissions is applied on its own, so one job's
//! conflict is its own answer and never another job's, and none of them lands after a later write
//! of its job. No timer: a lone submission goes out at once, and batches form only under load.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use futures::stream::{FuturesUnordered, StreamExt};
use tokio::sync::{mpsc, oneshot};

use crate::registry::{Op, Registry, RegistryError};

/// The most operations one combined multi-op carries (ZooKeeper refuses requests past 1 MiB; a
/// marker's create takes about 100 bytes of it).
const MAX_OPS: usize = 1000;

/// The most combined multi-ops in flight at once.
const IN_FLIGHT: usize = 4;

/// The operations that must be waiting before a batch goes out beside one already in flight: a
/// few writes of a burst wait for the batch in flight and go as one multi-op after it (a request
/// and its answer less for the ensemble), a load goes on several.
const BESIDE_OPS: usize = 100;

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

/// The job a path belongs to: its first segment (a node of the namespace itself is its own).
fn root_of(path: &str) -> &str {
    path.split('/').nth(1).unwrap_or_default()
}

/// The jobs a submission of operations on `paths` touches, and how many operations it has.
fn claims<'a>(paths: impl IntoIterator<Item = &'a str>) -> (Vec<Box<str>>, usize) {
    let mut roots: Vec<Box<str>> = Vec::new();
    let mut ops = 0;
    for path in paths {
        ops += 1;
        let root = root_of(path);
        if !roots.iter().any(|r| &**r == root) {
            roots.push(root.into());
        }
    }
    (roots, ops)
}

/// The submissions waiting for a batch, in the order they came, and the jobs of the batches in
/// flight: which go out together. A submission goes in the next batch when no other batch in
/// flight and no submission before it still waiting touches one of its jobs; the others wait
/// their turn.
/// No IO: the batcher's task sends what it returns.
#[derive(Debug)]
struct Queue<T> {
    waiting: VecDeque<Waiting<T>>,
    /// The operations of the waiting submissions.
    waiting_ops: usize,
    /// Jobs of the batches in flight, with how many submissions in flight touch each.
    flying: HashMap<Box<str>, usize>,
}

#[derive(Debug)]
struct Waiting<T> {
    roots: Vec<Box<str>>,
    ops: usize,
    item: T,
}

/// A batch to send: its submissions, in order, and the jobs it holds until it lands.
#[derive(Debug)]
struct Batch<T> {
    items: Vec<T>,
    roots: Vec<Box<str>>,
}

impl<T> Default for Queue<T> {
    fn default() -> Self {
        Self {
            waiting: VecDeque::new(),
            waiting_ops: 0,
            flying: HashMap::new(),
        }
    }
}

impl<T> Queue<T> {
    /// Queues a submission behind the others, with its [`claims`].
    fn push(&mut self, (roots, ops): (Vec<Box<str>>, usize), item: T) {
        self.waiting_ops += ops;
        self.waiting.push_back(Waiting { roots, ops, item });
    }

    /// Whether a batch may go out now, with `in_flight` batches flying: always when none is, and
    /// beside them only for [`BESIDE_OPS`] operations or more waiting.
    fn may_send(&self, in_flight: usize) -> bool {
        in_flight == 0 || (in_flight < IN_FLIGHT && self.waiting_ops >= BESIDE_OPS)
    }

    fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    /// The next batch, of at most `max_ops` operations (or one larger submission alone), its jobs
    /// now in flight; `None` when every waiting submission waits on a batch in flight. Writes of
    /// one job may share a batch: a multi-op applies them in order, and so does its fallback.
    fn next_batch(&mut self, max_ops: usize) -> Option<Batch<T>> {
        let mut batch = Batch {
            items: Vec::new(),
            roots: Vec::new(),
        };
        let mut count = 0;
        // Skipped submissions, in order: their jobs are held for the ones behind them.
        let mut skipped: Vec<Waiting<T>> = Vec::new();
        while let Some(next) = self.waiting.pop_front() {
            let held = |root: &str| {
                self.flying.contains_key(root)
                    || skipped.iter().any(|s| s.roots.iter().any(|r| &**r == root))
            };
            if next.roots.iter().any(|r| held(r)) {
                skipped.push(next);
                continue;
            }
            if !batch.items.is_empty() && count + next.ops > max_ops {
                self.waiting.push_front(next);
                break;
            }
            count += next.ops;
            self.waiting_ops -= next.ops;
            batch.roots.extend(next.roots);
            batch.items.push(next.item);
        }
        for s in skipped.into_iter().rev() {
            self.waiting.push_front(s);
        }
        if batch.items.is_empty() {
            return None;
        }
        for root in &batch.roots {
            *self.flying.entry(root.clone()).or_default() += 1;
        }
        Some(batch)
    }

    /// A batch landed (answered): its jobs are free for the submissions waiting on them.
    fn landed(&mut self, roots: Vec<Box<str>>) {
        for root in roots {
            if let Some(n) = self.flying.get_mut(&root) {
                *n -= 1;
                if *n == 0 {
                    self.flying.remove(&root);
                }
            }
        }
        self.trim();
    }

    /// Gives back the room a burst left once nothing waits or flies: a fire of ten thousand jobs
    /// queues ten thousand submissions, and an idle node should not keep their slots.
    fn trim(&mut self) {
        if self.flying.is_empty() && self.waiting.is_empty() {
            self.flying.shrink_to(KEPT_SLOTS);
            self.waiting.shrink_to(KEPT_SLOTS);
        }
    }
}

/// The slots an idle queue keeps, of each kind.
const KEPT_SLOTS: usize = 16;

async fn run(registry: Arc<dyn Registry>, mut rx: mpsc::UnboundedReceiver<Submission>) {
    let mut queue: Queue<Submission> = Queue::default();
    let mut flying = FuturesUnordered::new();
    let mut open = true;
    loop {
        // Everything that queued up meanwhile goes in the same writes, up to the size limit.
        while let Ok(next) = rx.try_recv() {
            queue.push(claims(next.0.iter().map(Op::path)), next);
        }
        while queue.may_send(flying.len()) {
            let Some(batch) = queue.next_batch(MAX_OPS) else {
                break;
            };
            let registry = registry.clone();
            flying.push(async move {
                send(&*registry, batch.items).await;
                batch.roots
            });
        }
        if !open && flying.is_empty() && queue.is_empty() {
            return;
        }
        tokio::select! {
            next = rx.recv(), if open => match next {
                Some(next) => queue.push(claims(next.0.iter().map(Op::path)), next),
                None => open = false,
            },
            Some(roots) = flying.next(), if !flying.is_empty() => queue.landed(roots),
        }
    }
}

/// Sends one batch: a lone submission as its own call, several as one multi-op; each hears its
/// own outcome.
async fn send(registry: &dyn Registry, mut batch: Vec<Submission>) {
    if batch.len() == 1 {
        let (ops, reply) = batch.pop().expect("one submission");
        return reply(apply_ops(registry, &ops).await);
    }
    // The operations moved into one list, each submission's own a range of it.
    let mut combined = Vec::with_capacity(batch.iter().map(|(ops, _)| ops.len()).sum());
    let mut replies = Vec::with_capacity(batch.len());
    for (ops, reply) in batch {
        let start = combined.len();
        combined.extend(ops);
        replies.push((start..combined.len(), reply));
    }
    match apply_ops(registry, &combined).await {
        Ok(()) => {
            for (_, reply) in replies {
                reply(Ok(()));
            }
        }
        Err(e) if e.is_fatal() => {
            let expired = matches!(e, RegistryError::SessionExpired);
            for (_, reply) in replies {
                let dead = if expired {
                    RegistryError::SessionExpired
                } else {
                    RegistryError::Closed
                };
                reply(Err(dead));
            }
        }
        Err(_) => {
            // One submission's conflict must not fail the others: each on its own, in order.
            for (range, reply) in replies {
                reply(apply_ops(registry, &combined[range]).await);
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
#[path = "writes_tests.rs"]
mod tests;
