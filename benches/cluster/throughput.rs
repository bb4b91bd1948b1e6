//! Scenario 5: throughput on one node. On ZooKeeper with monitorExecution on, the load raised step
//! by step until it no longer holds (`ramp.rs`); on the embedded registry with monitorExecution off:
//! how many item executions a second.

use std::sync::Arc;
use std::time::Duration;

use shardcron::registry::OpKind;

use crate::fleet::{self, Backend};
use crate::probe::{self, DelayLog};
use crate::report::{dur, Stats, Table};

/// What one window measured.
pub(crate) struct Window {
    /// Executions per scheduled second of the window.
    pub(crate) per_second: Vec<(i64, u64)>,
    pub(crate) delays: Stats,
    /// `create`s and `delete`s the node's sessions had applied during the window (ZooKeeper only):
    /// its `running` markers, the only nodes a node in its steady state writes. Creations from
    /// half a second before the window's first instant, removals from that instant, each over the
    /// window's length.
    pub(crate) markers: Option<(u64, u64)>,
    /// The bench process's CPU time during the window (the node, its ZooKeeper client and the
    /// jobs' handlers), and the ZooKeeper server's when its process id was given.
    pub(crate) node_cpu: Duration,
    pub(crate) zk_cpu: Option<Duration>,
    /// The machine's 1-minute load average at the window's end (`/proc/loadavg`): others' work
    /// on a shared machine.
    pub(crate) load: String,
}

/// Whether the jobs capture their output (`shardcron.output`) and print a line per item.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Capture {
    Off,
    On,
}

/// Starts one node with `jobs` jobs of `items` items every second, lets it settle for two fires
/// after registration, and measures `seconds` fires (and the CPU of the server process `server`).
pub(crate) async fn measure(
    backend: Backend,
    server: Option<u32>,
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
    let node = fleet::start_node(c.connector.clone(), fleet::instance(1), configs).await;
    assert!(
        fleet::wait_registered(&node, &names, Duration::from_secs(120)).await,
        "throughput: registration timed out"
    );
    // Item 0 of every job has its owner: the first sharding is committed, fires run.
    assert!(
        fleet::wait_sharded(&node, &names, Duration::from_secs(120)).await,
        "throughput: the first sharding timed out"
    );
    let t0 = probe::next_instant(1, 0);
    probe::sleep_until_wall(t0, Duration::from_millis(2500)).await;
    // Creations counted from half-way between instants (a fire's markers are written 200 ms
    // ahead), removals from the instants (a fire's markers go when its items end, within the
    // second): each window's writes are those of its own fires.
    let created = || c.applied(OpKind::Create);
    let deleted = || c.applied(OpKind::Delete);
    let created0 = created();
    let zk_cpu = || server.map(|pid| probe::cpu_time_of(&pid.to_string()));
    let cpu0 = (probe::cpu_time(), zk_cpu());
    probe::sleep_until_wall(t0, Duration::from_millis(3000)).await;
    let deleted0 = deleted();
    probe::sleep_until_wall(t0, Duration::from_millis(2500 + 1000 * seconds)).await;
    let created1 = created();
    let cpu1 = (probe::cpu_time(), zk_cpu());
    probe::sleep_until_wall(t0, Duration::from_millis(3000 + 1000 * seconds)).await;
    let deleted1 = deleted();
    let from = t0.timestamp() + 3;
    let markers = match (created0, created1, deleted0, deleted1) {
        (Some(c0), Some(c1), Some(d0), Some(d1)) => Some((c1 - c0, d1 - d0)),
        _ => None,
    };
    let w = Window {
        per_second: log.per_second(from, from + seconds as i64),
        delays: Stats::of(log.delays_between(from, from + seconds as i64)),
        markers,
        node_cpu: cpu1.0.saturating_sub(cpu0.0),
        zk_cpu: cpu1.1.zip(cpu0.1).map(|(c1, c0)| c1.saturating_sub(c0)),
        load: std::fs::read_to_string("/proc/loadavg")
            .ok()
            .and_then(|l| l.split_whitespace().next().map(str::to_owned))
            .unwrap_or_default(),
    };
    node.shutdown().await;
    w
}

/// Runs scenario 5: the ramp on ZooKeeper (`ramp`, a server of its own for each step), then `jobs` x `items` on the embedded
/// registry, each over `seconds` fires.
pub(crate) async fn run(
    ramp: &crate::ramp::Ramp,
    (jobs, items): (usize, i32),
    seconds: u64,
    table: &mut Table,
) {
    crate::ramp::run(ramp, seconds, table).await;

    // One node on the embedded registry, monitorExecution off, capturing output or not.
    let embedded = |capture| {
        measure(
            Backend::Embedded(Default::default()),
            None,
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
