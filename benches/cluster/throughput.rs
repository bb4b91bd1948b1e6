//! Scenario 5: throughput on one node. On ZooKeeper, 1,000 one-item jobs every second with
//! monitorExecution on (two multi-ops per run): does every item run every second, and how late?
//! On the embedded registry with monitorExecution off: how many item executions a second.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::fleet::{self, Backend};
use crate::probe::{self, DelayLog};
use crate::report::{dur, Stats, Table};

/// What one window measured.
struct Window {
    /// Executions per scheduled second of the window.
    per_second: Vec<(i64, u64)>,
    delays: Stats,
}

/// Whether the jobs capture their output (`shardcron.output`) and print a line per item.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Capture {
    Off,
    On,
}

/// Starts one node with `jobs` jobs of `items` items every second, lets it settle for two fires
/// after registration, and measures `seconds` fires.
async fn measure(
    backend: Backend,
    (jobs, items): (usize, i32),
    monitor: bool,
    capture: Capture,
    seconds: u64,
) -> Window {
    let log = Arc::new(DelayLog::default());
    let c = backend.connector(&fleet::namespace("throughput"), Duration::from_secs(10));
    let names: Vec<String> = (0..jobs).map(|i| format!("tp-{i}")).collect();
    let configs = names
        .iter()
        .map(|n| {
            let job = fleet::job(n, items, "* * * * * ?", monitor);
            match capture {
                Capture::Off => (job, probe::delay_handler(log.clone(), 1, 0)),
                Capture::On => (
                    job.prop("shardcron.output", "4"),
                    probe::printing_handler(log.clone()),
                ),
            }
        })
        .collect();
    let node = fleet::start_node(c.connector, fleet::instance(1), configs).await;
    assert!(
        fleet::wait_registered(&node, &names, Duration::from_secs(120)).await,
        "throughput: registration timed out"
    );
    let t0 = probe::next_instant(1, 0);
    probe::sleep_until_wall(t0, Duration::from_millis(2500)).await;
    let mark = log.mark();
    probe::sleep_until_wall(t0, Duration::from_millis(2500 + 1000 * seconds)).await;
    let from = t0.timestamp() + 3;
    let w = Window {
        per_second: log.per_second(from, from + seconds as i64),
        delays: Stats::of(log.delays_since(mark)),
    };
    node.shutdown().await;
    w
}

/// Runs scenario 5: `zk_jobs` jobs on ZooKeeper, `jobs` x `items` on the embedded registry, each
/// over `seconds` fires.
pub(crate) async fn run(
    zk: SocketAddr,
    zk_jobs: usize,
    (jobs, items): (usize, i32),
    seconds: u64,
    table: &mut Table,
) {
    let w = measure(Backend::Zk(zk), (zk_jobs, 1), true, Capture::Off, seconds).await;
    let s = format!("5 throughput, ZooKeeper, {zk_jobs} jobs / s, monitorExecution on");
    let full = w
        .per_second
        .iter()
        .filter(|(_, n)| *n == zk_jobs as u64)
        .count();
    let fewest = w.per_second.iter().map(|(_, n)| *n).min().unwrap_or(0);
    table.check(
        &s,
        "seconds in which every item ran",
        format!("{full}/{} (fewest {fewest})", w.per_second.len()),
        "all",
        full == w.per_second.len(),
    );
    table.check(
        &s,
        &format!("trigger delay p99 over {} items", w.delays.n),
        dur(w.delays.p99),
        "< 50 ms",
        w.delays.p99 < Duration::from_millis(50),
    );
    table.info(&s, "trigger delay p50", dur(w.delays.p50));

    // One node on the embedded registry, monitorExecution off, capturing output or not.
    let embedded = |capture| {
        measure(
            Backend::Embedded(Default::default()),
            (jobs, items),
            false,
            capture,
            seconds,
        )
    };
    let w = embedded(Capture::Off).await;
    let s =
        format!("5 throughput, embedded, {jobs} jobs x {items} items / s, monitorExecution off");
    let total: u64 = w.per_second.iter().map(|(_, n)| n).sum();
    let rate = total as f64 / seconds as f64;
    table.check(
        &s,
        "item executions / s on one node",
        format!("{rate:.0}"),
        "> 50000",
        rate > 50_000.0,
    );
    table.info(
        &s,
        "trigger delay p50 / p99",
        format!("{} / {}", dur(w.delays.p50), dur(w.delays.p99)),
    );

    // The same with every job capturing its output and each item printing one line: what the
    // capture costs a job that asks for it (a job that does not pays nothing: the row above).
    let w = embedded(Capture::On).await;
    let s = format!(
        "5 throughput, embedded, {jobs} jobs x {items} items / s, output captured (shardcron.output)"
    );
    let total: u64 = w.per_second.iter().map(|(_, n)| n).sum();
    table.info(
        &s,
        "item executions / s on one node, one line printed each",
        format!("{:.0}", total as f64 / seconds as f64),
    );
    table.info(
        &s,
        "trigger delay p50 / p99",
        format!("{} / {}", dur(w.delays.p50), dur(w.delays.p99)),
    );
}
