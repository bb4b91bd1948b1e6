//! Scenario 8: how an instance's cost grows with the cluster. N instances, each a node process of
//! its own ([`crate::scale_node`]) with its own session, each running J distinct one-item jobs
//! every 2 s (monitorExecution on), on a real 3-server ZooKeeper ensemble on loopback. At each N:
//! the mirror events each instance receives per own item run (its own jobs' and the others'), the
//! ensemble's notifications, requests and CPU, instance memory, and the time every instance needs
//! to re-list after the ensemble's leader is killed. One table row per N.

use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::child::Results;
use crate::fleet;
use crate::probe;
use crate::report::{dur, Table};
use crate::scale_node::Instance;
use crate::server::ZkEnsemble;

/// Every job's cron period, in seconds.
pub(crate) const PERIOD_S: i64 = 2;

/// The ensemble's counters summed over its servers.
#[derive(Debug, Default, Clone, Copy)]
struct EnsembleLook {
    /// Client packets in (`zk_packets_received`): requests and pings.
    received: f64,
    /// Client packets out (`zk_packets_sent`): one response per packet in, and the watch
    /// notifications. (`mntr`'s `zk_sum_node_*_watch_count` counts the watchers a change
    /// triggers, a third of them not delivered to a recursive watch: 3 per run here, 2 sent.)
    sent: f64,
    cpu: Duration,
    watches: u64,
}

impl EnsembleLook {
    fn take(e: &ZkEnsemble) -> EnsembleLook {
        let mut look = EnsembleLook::default();
        for i in 0..ZkEnsemble::SIZE {
            let m = probe::mntr(e.addr(i));
            let get = |k: &str| m.get(k).copied().unwrap_or(0.0);
            look.received += get("zk_packets_received");
            look.sent += get("zk_packets_sent");
            look.cpu += e
                .pid(i)
                .map_or(Duration::ZERO, |p| probe::cpu_time_of(&p.to_string()));
            look.watches += e
                .four_letter(i, "wchs")
                .unwrap_or_default()
                .lines()
                .find_map(|l| l.strip_prefix("Total watches:"))
                .and_then(|v| v.trim().parse::<u64>().ok())
                .unwrap_or(0);
        }
        look
    }
}

/// What one N measured.
struct Point {
    n: u32,
    jobs: usize,
    window: Duration,
    /// Summed over the instances: own and others' events, own item runs.
    own: u64,
    other: u64,
    runs: u64,
    /// CPU time of the instances.
    cpu_us: u64,
    /// Runs expected: every job of every instance at every fire of the window.
    expected_runs: u64,
    before: EnsembleLook,
    after: EnsembleLook,
    /// Largest resident memory of an instance, and the mean.
    rss_max_kib: u64,
    rss_mean_kib: u64,
    mirror_nodes: u64,
    /// Kill of the leader to each instance's mirror synced again.
    relist: Vec<Duration>,
    /// Instances that saw the kill (their mirror went out of sync).
    lost: usize,
}

/// Runs scenario 8 at each N of `instances`, `jobs` jobs per instance, a `window_s` window.
pub(crate) fn run(instances: &[u32], jobs: usize, window_s: u64, table: &mut Table) {
    eprintln!("  starting a 3-server ZooKeeper ensemble");
    let ensemble = ZkEnsemble::start();
    for (i, &n) in instances.iter().enumerate() {
        let again = i + 1 < instances.len();
        let point = measure(&ensemble, n, jobs, Duration::from_secs(window_s), again);
        report(&point, table);
    }
}

/// Sleeps until `at` plus `after` on the system clock (the window is aligned on cron instants).
fn sleep_until_wall(at: DateTime<Utc>, after: Duration) {
    let target = at + chrono::Duration::from_std(after).unwrap_or_default();
    if let Ok(d) = (target - Utc::now()).to_std() {
        std::thread::sleep(d);
    }
}

fn now_us() -> u64 {
    Utc::now().timestamp_micros() as u64
}

/// Measures one N: starts the instances, lets them settle, measures a window from the middle of
/// one period to the middle of another, kills the leader, waits for every re-list, and restarts
/// the killed server when another N follows.
fn measure(e: &ZkEnsemble, n: u32, jobs: usize, window: Duration, again: bool) -> Point {
    let ns = fleet::namespace("scale");
    let connect = e.connect_string();
    let mut fleet: Vec<Instance> = (1..=n)
        .map(|k| Instance::start(&connect, &ns, k, jobs))
        .collect();
    for i in &mut fleet {
        let n = i.n;
        assert_eq!(
            i.answer().get("ready"),
            1,
            "scale instance {n}: its {jobs} jobs were not registered and sharded within 2 minutes"
        );
    }
    // Settled: two fires after the last instance is ready, then half a period on.
    let period = Duration::from_secs(PERIOD_S as u64);
    let t0 = probe::next_instant(PERIOD_S, 0);
    sleep_until_wall(t0, period + period / 2);
    let looks0: Vec<Results> = fleet.iter_mut().map(Instance::look).collect();
    let before = EnsembleLook::take(e);
    sleep_until_wall(t0, period + period / 2 + window);
    let after = EnsembleLook::take(e);
    let looks1: Vec<Results> = fleet.iter_mut().map(Instance::look).collect();
    let delta = |k: &str| -> u64 {
        looks0
            .iter()
            .zip(&looks1)
            .map(|(a, b)| b.get(k) - a.get(k))
            .sum()
    };
    let rss: Vec<u64> = looks1.iter().map(|r| r.get("rss_kib")).collect();
    let mut point = Point {
        n,
        jobs,
        window,
        own: delta("own"),
        other: delta("other"),
        runs: delta("runs"),
        cpu_us: delta("cpu_us"),
        expected_runs: u64::from(n) * jobs as u64 * window.as_secs() / PERIOD_S as u64,
        before,
        after,
        rss_max_kib: rss.iter().copied().max().unwrap_or(0),
        rss_mean_kib: rss.iter().sum::<u64>() / rss.len().max(1) as u64,
        mirror_nodes: looks1
            .iter()
            .map(|r| r.get("mirror_nodes"))
            .max()
            .unwrap_or(0),
        relist: Vec::new(),
        lost: 0,
    };
    let leader = e.leader().expect("the ensemble has a leader");
    let killed_us = now_us();
    e.kill(leader);
    let relisted = crate::wait::wait_until_blocking(
        || {
            let looks: Vec<Results> = fleet.iter_mut().map(Instance::look).collect();
            let done = looks
                .iter()
                .filter(|r| r.get("synced") == 1 && r.get("synced_us") > killed_us)
                .count();
            if done == looks.len() {
                Ok(looks)
            } else {
                Err(format!("{done} of {} instances re-listed", looks.len()))
            }
        },
        "every instance to re-list after the ensemble's leader was killed",
        Duration::from_secs(60),
    );
    point.relist = relisted
        .iter()
        .map(|r| Duration::from_micros(r.get("synced_us") - killed_us))
        .collect();
    point.lost = relisted
        .iter()
        .filter(|r| r.get("lost_us") > killed_us)
        .count();
    for i in fleet {
        i.stop();
    }
    if again {
        e.restart(leader);
    }
    point
}

/// One table row: the events an instance receives per own item run and the others' share against
/// the target (independent of N: under 5 %), then the rest of the figures.
fn report(p: &Point, table: &mut Table) {
    let s = format!(
        "8 scale, 3-server ensemble, N instances x {} one-item jobs / {PERIOD_S} s",
        p.jobs
    );
    let runs = p.runs.max(1) as f64;
    let share = 100.0 * p.other as f64 / (p.own + p.other).max(1) as f64;
    let secs = p.window.as_secs_f64();
    let rate = |f: fn(&EnsembleLook) -> f64| (f(&p.after) - f(&p.before)) / secs;
    let packets = (rate(|l| l.received) + rate(|l| l.sent)) * secs / runs;
    let cpu = 100.0 * (p.after.cpu - p.before.cpu).as_secs_f64() / secs;
    let max_relist = p.relist.iter().max().copied().unwrap_or_default();
    let mean_relist = p.relist.iter().sum::<Duration>() / p.relist.len().max(1) as u32;
    let value = format!(
        "events / own item run {:.2} own + {:.2} others ({share:.0} % others); \
         ensemble {:.0} notifications/s, {:.0} requests/s, {packets:.2} packets / own item run, \
         CPU {cpu:.0} % of a core, {} watches; instance CPU {:.1} % of a core, RSS {:.1} MiB (max {:.1}), mirror {} nodes; \
         re-list after leader kill max {} (mean {}, {}/{} disconnected); own runs {}/{}",
        p.own as f64 / runs,
        p.other as f64 / runs,
        rate(|l| l.sent - l.received),
        rate(|l| l.received),
        p.after.watches,
        100.0 * p.cpu_us as f64 / 1e6 / secs / f64::from(p.n),
        p.rss_mean_kib as f64 / 1024.0,
        p.rss_max_kib as f64 / 1024.0,
        p.mirror_nodes,
        dur(max_relist),
        dur(mean_relist),
        p.lost,
        p.n,
        p.runs,
        p.expected_runs,
    );
    table.check(
        &s,
        &format!("N = {}", p.n),
        value,
        "others < 5 % of the events",
        share < 5.0,
    );
}
