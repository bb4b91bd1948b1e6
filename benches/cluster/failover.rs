//! Scenario 3: losing an instance. A kill -9 of a node process while its items run (the survivor
//! starts those items after the lost session expires), and a graceful leave (the leader commits
//! the new sharding).
//!
//! The victim is this bench binary re-run as `--child victim`, so the loss is a real SIGKILL: the
//! server sees the connection drop and expires the session after its timeout, as in production.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use shardcron::events::EngineEvent;
use shardcron::job::{ExecutionSource, FnJob, JobError, ShardingContext, SharedHandler};
use shardcron::InstanceId;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::fleet::{self, Backend};
use crate::report::{dur, Stats, Table};

const ITEMS: i32 = 4;
/// The victim's session timeout: short, so a round is quick; the target is relative to it.
const VICTIM_SESSION: Duration = Duration::from_secs(2);
const WITHIN: Duration = Duration::from_secs(30);

/// One item start: (instance, item, source, when).
type Start = (InstanceId, u32, ExecutionSource, Instant);

/// Item starts as the nodes' handlers saw them.
#[derive(Debug, Default, Clone)]
struct Starts(Arc<Mutex<Vec<Start>>>);

impl Starts {
    fn handler(&self) -> SharedHandler {
        let starts = self.clone();
        Arc::new(FnJob(move |ctx: ShardingContext| {
            let starts = starts.clone();
            async move {
                let at = Instant::now();
                starts.0.lock().unwrap().push((
                    ctx.instance_id.clone(),
                    ctx.sharding_item.0,
                    ctx.source,
                    at,
                ));
                Ok::<(), JobError>(())
            }
        }))
    }

    /// Waits (polling every 5 ms; a bench harness, not engine code) until `pred` holds.
    async fn wait<T>(&self, what: &str, mut pred: impl FnMut(&[Start]) -> Option<T>) -> T {
        let deadline = Instant::now() + WITHIN;
        loop {
            if let Some(t) = pred(&self.0.lock().unwrap()) {
                return t;
            }
            assert!(
                Instant::now() < deadline,
                "failover bench: timed out waiting for {what}"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

fn job() -> shardcron::config::JobConfig {
    fleet::job("failover", ITEMS, "* * * * * ?", true)
}

/// The victim process: one instance whose items run for a minute, printing `started {item}`.
pub(crate) async fn victim(zk: &str, ns: &str) {
    let addr: SocketAddr = zk.parse().expect("victim: zk=ADDR");
    let c = Backend::Zk(addr).connector(ns, VICTIM_SESSION);
    let handler: SharedHandler = Arc::new(FnJob(|ctx: ShardingContext| async move {
        println!("started {}", ctx.sharding_item.0);
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(60)) => {}
            _ = ctx.cancelled() => {}
        }
        Ok::<(), JobError>(())
    }));
    let _node = fleet::start_node(c.connector, fleet::instance(2), vec![(job(), handler)]).await;
    std::future::pending::<()>().await;
}

/// One kill -9 round: the time from the kill to the survivor having started every item the victim
/// was running, and how the first of them came back.
async fn kill_round(zk: SocketAddr) -> (Duration, ExecutionSource) {
    let ns = fleet::namespace("failover");
    let starts = Starts::default();
    let c = Backend::Zk(zk).connector(&ns, Duration::from_secs(10));
    let survivor = fleet::start_node(
        c.connector,
        fleet::instance(1),
        vec![(job(), starts.handler())],
    )
    .await;
    starts
        .wait("the survivor's first run", |s| {
            (!s.is_empty()).then_some(())
        })
        .await;
    let mut child = tokio::process::Command::new(std::env::current_exe().expect("own path"))
        .args([
            "--child",
            "victim",
            &format!("zk={zk}"),
            &format!("ns={ns}"),
        ])
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("re-running the bench binary as the victim");
    let mut lines = BufReader::new(child.stdout.take().expect("piped")).lines();
    // The victim owns half the items after the join reshard; wait until it runs them all.
    let mut running = BTreeSet::new();
    while running.len() < (ITEMS / 2) as usize {
        let line = tokio::time::timeout(WITHIN, lines.next_line())
            .await
            .expect("the victim runs its items")
            .expect("reading the victim")
            .expect("the victim lives");
        if let Some(item) = line.strip_prefix("started ") {
            running.insert(item.parse::<u32>().expect("an item number"));
        }
    }
    let killed = Instant::now();
    child.start_kill().expect("SIGKILL");
    let _ = child.wait().await;
    let me = fleet::instance(1);
    let back: BTreeMap<u32, (Instant, ExecutionSource)> = starts
        .wait("the survivor to start the victim's items", |s| {
            let mut first = BTreeMap::new();
            for (who, item, source, at) in s {
                if *who == me && *at > killed && running.contains(item) {
                    first.entry(*item).or_insert((*at, *source));
                }
            }
            (first.len() == running.len()).then_some(first)
        })
        .await;
    survivor.shutdown().await;
    let last = back.values().map(|(at, _)| *at).max().expect("items");
    let first_source = back.values().min_by_key(|(at, _)| *at).expect("items").1;
    (last - killed, first_source)
}

/// One graceful round: (time `shutdown()` took, time from calling it to the leader's commit).
async fn leave_round(backend: &Backend) -> (Duration, Duration) {
    let ns = fleet::namespace("leave");
    let starts = Starts::default();
    let a = fleet::start_node(
        backend.connector(&ns, Duration::from_secs(10)).connector,
        fleet::instance(1),
        vec![(job(), starts.handler())],
    )
    .await;
    starts
        .wait("the leader's first run", |s| (!s.is_empty()).then_some(()))
        .await;
    let mut events = a.subscribe("bench", 4096);
    let b = fleet::start_node(
        backend.connector(&ns, Duration::from_secs(10)).connector,
        fleet::instance(2),
        vec![(job(), starts.handler())],
    )
    .await;
    let two = fleet::instance(2);
    starts
        .wait("the joiner's first run", |s| {
            s.iter().any(|e| e.0 == two).then_some(())
        })
        .await;
    let called = Instant::now();
    b.shutdown().await;
    let shut = called.elapsed();
    let me = fleet::instance(1);
    let committed = tokio::time::timeout(WITHIN, async {
        while let Some(d) = events.events.recv().await {
            if let EngineEvent::ShardingChanged { assignment, .. } = d.event {
                if assignment.len() == ITEMS as usize && assignment.iter().all(|(_, i)| *i == me) {
                    return called.elapsed();
                }
            }
        }
        panic!("the event bus closed")
    })
    .await
    .expect("the leader reshards after the leave");
    a.shutdown().await;
    (shut, committed)
}

/// Runs scenario 3 with `rounds` of each kind.
pub(crate) async fn run(zk: SocketAddr, rounds: usize, table: &mut Table) {
    let mut kills = Vec::new();
    let mut sources = BTreeMap::<String, usize>::new();
    for _ in 0..rounds {
        let (d, source) = kill_round(zk).await;
        kills.push(d.as_micros() as u64);
        *sources
            .entry(format!("{source:?}").to_lowercase())
            .or_default() += 1;
    }
    let k = Stats::of(kills);
    let budget = VICTIM_SESSION + Duration::from_millis(200);
    let s = "3 failover, ZooKeeper, kill -9";
    table.check(
        s,
        &format!("loss -> survivor runs its items, median of {}", k.n),
        dur(k.p50),
        &format!("< session {} + 200 ms", dur(VICTIM_SESSION)),
        k.p50 < budget,
    );
    table.check(
        s,
        "  worst round",
        dur(k.max),
        &format!("< {}", dur(budget)),
        k.max < budget,
    );
    table.info(s, "first item back as", format!("{sources:?}"));
    for backend in [Backend::Zk(zk), Backend::Embedded(Default::default())] {
        let mut shut = Vec::new();
        let mut commit = Vec::new();
        for _ in 0..rounds {
            let (a, b) = leave_round(&backend).await;
            shut.push(a.as_micros() as u64);
            commit.push(b.as_micros() as u64);
        }
        let (shut, commit) = (Stats::of(shut), Stats::of(commit));
        let s = format!("3 graceful leave, {}", backend.name());
        table.check(
            &s,
            &format!("shutdown() -> ShardingChanged, median of {}", commit.n),
            dur(commit.p50),
            "< 100 ms",
            commit.p50 < Duration::from_millis(100),
        );
        table.info(&s, "  worst round", dur(commit.max));
        table.info(&s, "shutdown() call, median", dur(shut.p50));
    }
}
