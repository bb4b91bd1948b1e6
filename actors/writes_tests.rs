//! The write batcher: submissions shared in multi-ops, each answered on its own; several
//! batches in flight, never two of one job; the queue that decides which go together.

use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use tokio::sync::{watch, Semaphore};

use super::*;
use crate::registry::embedded::EmbeddedServer;
use crate::registry::{
    Connector, CreateMode, ListedNode, OpKind, OpResult, SessionInfo, SessionState, Stat,
    WatchStream,
};

type Heard = (&'static str, Result<(), RegistryError>);

/// Callbacks that tell their submission's name and outcome to the receiver returned beside them.
fn answers() -> (
    impl Fn(&'static str) -> Reply,
    mpsc::UnboundedReceiver<Heard>,
) {
    let (tx, rx) = mpsc::unbounded_channel::<Heard>();
    let told = move |name: &'static str| {
        let tx = tx.clone();
        Box::new(move |outcome: Result<(), RegistryError>| {
            let _ = tx.send((name, outcome));
        }) as Reply
    };
    (told, rx)
}

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
    let (told, mut rx) = answers();
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

/// Which submissions a queue puts in its next batch, by their paths, and which wait.
#[test]
fn the_queue_batches_in_order_and_holds_a_job_in_flight_back() {
    // (paths of each submission queued, jobs in flight, max ops, submissions batched)
    type Case<'a> = (&'a [&'a [&'a str]], &'a [&'a str], usize, &'a [usize]);
    let cases: [Case; 7] = [
        // Independent submissions go together, in order.
        (&[&["/a/x"], &["/b/x"], &["/c/x"]], &[], 10, &[0, 1, 2]),
        // So do writes of one job: one multi-op applies them in order.
        (&[&["/a/x"], &["/a/x"]], &[], 10, &[0, 1]),
        // Up to the size limit; the rest waits for the next batch.
        (&[&["/a/x", "/a/y"], &["/b/x"], &["/c/x"]], &[], 3, &[0, 1]),
        // A submission larger than the limit goes alone.
        (&[&["/a/x", "/a/y", "/a/z"], &["/b/x"]], &[], 2, &[0]),
        // A job in flight holds its submissions back; the others go.
        (&[&["/a/x"], &["/b/x"]], &["a"], 10, &[1]),
        // A held submission holds the later ones of its jobs too, even of another job it names.
        (&[&["/a/x", "/c/x"], &["/c/y"], &["/b/x"]], &["a"], 10, &[2]),
        // Everything waits on the batches in flight: no batch.
        (&[&["/a/x"], &["/a/y"]], &["a"], 10, &[]),
    ];
    for (queued, in_flight, max, expected) in cases {
        let mut q: Queue<usize> = Queue::default();
        for root in in_flight {
            q.flying.insert((*root).into(), 1);
        }
        for (i, paths) in queued.iter().enumerate() {
            q.push(claims(paths.iter().copied()), i);
        }
        let batch = q.next_batch(max).map(|b| b.items).unwrap_or_default();
        assert_eq!(
            batch, expected,
            "queued {queued:?}, in flight {in_flight:?}"
        );
    }
}

#[test]
fn a_batch_goes_beside_those_in_flight_only_for_a_load_and_never_past_the_limit() {
    // (operations waiting, batches in flight, may a batch go out)
    let cases = [
        (1, 0, true),
        (BESIDE_OPS - 1, 1, false),
        (BESIDE_OPS, 1, true),
        (BESIDE_OPS * 10, IN_FLIGHT - 1, true),
        (BESIDE_OPS * 10, IN_FLIGHT, false),
    ];
    for (ops, in_flight, expected) in cases {
        let mut q: Queue<()> = Queue::default();
        let paths: Vec<String> = (0..ops).map(|i| format!("/j{i}/x")).collect();
        q.push(claims(paths.iter().map(String::as_str)), ());
        assert_eq!(
            q.may_send(in_flight),
            expected,
            "{ops} operations waiting, {in_flight} in flight"
        );
    }
    let mut q: Queue<()> = Queue::default();
    q.push(claims(["/a/x"; BESIDE_OPS]), ());
    assert!(q.next_batch(MAX_OPS).is_some());
    assert!(!q.may_send(1), "what went out no longer counts as waiting");
}

#[test]
fn a_landed_batch_frees_its_jobs_for_the_submissions_that_waited_in_their_order() {
    let mut q: Queue<&str> = Queue::default();
    q.push(claims(["/a/x"]), "a1");
    let first = q.next_batch(10).expect("a batch");
    q.push(claims(["/a/x"]), "a2");
    q.push(claims(["/b/x"]), "b1");
    q.push(claims(["/a/y"]), "a3");
    let second = q.next_batch(10).expect("b goes beside");
    assert_eq!(second.items, ["b1"]);
    assert!(q.next_batch(10).is_none(), "a waits while a1 flies");
    q.landed(first.roots);
    assert_eq!(q.next_batch(10).expect("a's turn").items, ["a2", "a3"]);
    q.landed(second.roots);
    assert!(q.is_empty() && q.next_batch(10).is_none());
}

#[test]
fn an_idle_queue_gives_back_the_room_of_a_burst() {
    let mut q: Queue<usize> = Queue::default();
    let paths: Vec<String> = (0..5000).map(|i| format!("/j{i}/x")).collect();
    for (i, p) in paths.iter().enumerate() {
        q.push(claims([p.as_str()]), i);
    }
    let batch = q.next_batch(MAX_OPS).expect("a batch");
    assert!(q.waiting.capacity() >= 4000 && q.flying.capacity() >= MAX_OPS);
    q.landed(batch.roots);
    assert!(q.waiting.capacity() >= 4000, "kept while submissions wait");
    while let Some(batch) = q.next_batch(MAX_OPS) {
        q.landed(batch.roots);
    }
    assert!(q.is_empty());
    assert!(q.waiting.capacity() <= 2 * KEPT_SLOTS && q.flying.capacity() <= 2 * KEPT_SLOTS);
}

/// A session whose first multi-op waits until the test lets it through.
#[derive(Debug)]
struct Gated {
    inner: Arc<dyn Registry>,
    gate: Semaphore,
    held: AtomicBool,
}

#[async_trait]
impl Registry for Gated {
    async fn create(
        &self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
    ) -> Result<String, RegistryError> {
        self.inner.create(path, data, mode).await
    }
    async fn get(&self, path: &str) -> Result<(Vec<u8>, Stat), RegistryError> {
        self.inner.get(path).await
    }
    async fn set(
        &self,
        path: &str,
        data: &[u8],
        version: Option<i32>,
    ) -> Result<Stat, RegistryError> {
        self.inner.set(path, data, version).await
    }
    async fn delete(&self, path: &str, version: Option<i32>) -> Result<(), RegistryError> {
        self.inner.delete(path, version).await
    }
    async fn children(&self, path: &str) -> Result<Vec<String>, RegistryError> {
        self.inner.children(path).await
    }
    async fn exists(&self, path: &str) -> Result<Option<Stat>, RegistryError> {
        self.inner.exists(path).await
    }
    async fn multi(&self, ops: &[Op]) -> Result<Vec<OpResult>, RegistryError> {
        if !self.held.swap(true, Ordering::SeqCst) {
            self.gate
                .acquire()
                .await
                .expect("the gate stays open")
                .forget();
        }
        self.inner.multi(ops).await
    }
    async fn watch_recursive(&self, path: &str) -> Result<WatchStream, RegistryError> {
        self.inner.watch_recursive(path).await
    }
    async fn list_subtree(&self, path: &str) -> Result<Vec<ListedNode>, RegistryError> {
        self.inner.list_subtree(path).await
    }
    fn session_info(&self) -> SessionInfo {
        self.inner.session_info()
    }
    fn session_state(&self) -> watch::Receiver<SessionState> {
        self.inner.session_state()
    }
    async fn close(&self) {
        self.inner.close().await
    }
}

/// An embedded session with `parents` created, and a [`Gated`] session over it.
async fn gated(parents: &[&str]) -> (EmbeddedServer, Arc<dyn Registry>, Arc<Gated>) {
    let server = EmbeddedServer::new();
    let inner = server.connector("batch").connect().await.unwrap();
    for parent in parents {
        inner
            .create(parent, b"", CreateMode::Persistent)
            .await
            .unwrap();
    }
    let reg = Arc::new(Gated {
        inner: inner.clone(),
        gate: Semaphore::new(0),
        held: AtomicBool::new(false),
    });
    (server, inner, reg)
}

#[tokio::test(start_paused = true)]
async fn a_failed_batch_lands_before_its_jobs_later_writes_while_other_jobs_go_beside_it() {
    let (_server, inner, reg) = gated(&["/taken", "/j", "/k"]).await;
    let batcher = WriteBatcher::start(reg.clone());
    let (told, mut rx) = answers();
    // Queued together before the batcher runs: one multi-op, held at the gate, that fails on
    // /taken and is then applied submission by submission.
    batcher.submit_then(
        vec![Op::create("/taken", "", CreateMode::Persistent)],
        told("taken"),
    );
    batcher.submit_then(
        vec![Op::create("/j/m", "", CreateMode::Persistent)],
        told("create j"),
    );
    tokio::task::yield_now().await;
    // Job j's later write waits for that batch; job k's, a load, goes beside it.
    batcher.submit_then(vec![Op::delete("/j/m")], told("delete j"));
    let k = (0..BESIDE_OPS).map(|i| Op::create(format!("/k/m{i}"), "", CreateMode::Persistent));
    batcher.submit_then(k.collect(), told("create k"));
    let (name, outcome) = rx.recv().await.expect("an answer");
    assert_eq!(name, "create k", "k's write went while the batch was held");
    assert!(outcome.is_ok());
    assert!(
        rx.try_recv().is_err(),
        "j's delete waits for its job's batch"
    );
    reg.gate.add_permits(1);
    let mut heard = Vec::new();
    for _ in 0..3 {
        heard.push(rx.recv().await.expect("each submission is answered"));
    }
    let names: Vec<_> = heard.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, ["taken", "create j", "delete j"]);
    assert!(heard[0].1.as_ref().unwrap_err().is_node_exists());
    assert!(heard[1].1.is_ok() && heard[2].1.is_ok());
    assert!(
        inner.exists("/j/m").await.unwrap().is_none(),
        "created, then deleted"
    );
    assert!(inner.exists("/k/m0").await.unwrap().is_some());
}

#[tokio::test(start_paused = true)]
async fn a_few_writes_wait_for_the_batch_in_flight_and_go_together_after_it() {
    let (server, _inner, reg) = gated(&["/j", "/k", "/l"]).await;
    let batcher = WriteBatcher::start(reg.clone());
    let (told, mut rx) = answers();
    let create = |p: &str| vec![Op::create(p, "", CreateMode::Persistent)];
    batcher.submit_then(create("/j/a"), told("j"));
    batcher.submit_then(create("/j/b"), told("j"));
    tokio::task::yield_now().await;
    batcher.submit_then(create("/k/a"), told("k"));
    batcher.submit_then(create("/l/a"), told("l"));
    tokio::task::yield_now().await;
    assert!(rx.try_recv().is_err(), "k and l wait for j's batch");
    let before = server.op_counts().get(&OpKind::Multi).copied().unwrap_or(0);
    reg.gate.add_permits(1);
    let mut heard = Vec::new();
    for _ in 0..4 {
        heard.push(rx.recv().await.expect("each submission is answered").0);
    }
    assert_eq!(heard, ["j", "j", "k", "l"]);
    let multis = server.op_counts().get(&OpKind::Multi).copied().unwrap_or(0) - before;
    assert_eq!(multis, 2, "j's batch, then k's and l's together");
}
