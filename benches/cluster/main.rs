//! `cargo bench --bench cluster [-- --quick] [-- --only 1,3] [-- --scrape]`: shardcron's cluster figures against
//! their targets, in one table.
//!
//! | module | scenario |
//! | --- | --- |
//! | `delay` | 1 trigger delay and 2 registry traffic: two instances, one job of 4 items every second |
//! | `failover` | 3 kill -9 of an instance (a child process) and graceful leave |
//! | `many` | 4 many jobs on one node (child process): registration, memory, idle CPU, threads, watches; with `--scrape`, once more serving `/metrics`: the memory of one scrape |
//! | `throughput`, `ramp` | 5 one node: on ZooKeeper the load raised until it no longer holds (`ramp`); item executions a second embedded |
//! | `versus` | 6 beside tokio-cron-scheduler, each in a child process |
//! | `balance` | 7 balance across jobs: one-item jobs with NAMESPACE_BALANCE on 4 instances |
//! | `scale` | 8 cluster scale: N node processes x J one-item jobs on a 3-server ensemble (`scale_node`: one instance) |
//!
//! Support: `fleet` (backends, nodes, op counters), `probe` (the delay-recording handler, `/proc`,
//! four-letter words), `report` (the table, percentiles), `child` (re-running this binary).
//!
//! A real ZooKeeper is started as the tests start it (`tests/support/zk/server.rs`), when a scenario
//! of 1-7 runs; scenario 8 starts its own ensemble from the same file. `cargo test`
//! runs bench targets without `--bench`; the binary then only says how to run it, so the test
//! suite does not pay for the benchmark.

// The node's allocator (jemalloc), so that the bench measures the node as it ships.
#[path = "../../examples/node/alloc.rs"]
mod alloc;
mod balance;
mod child;
mod delay;
mod failover;
mod fleet;
mod many;
mod probe;
mod ramp;
mod report;
mod scale;
mod scale_node;
use support::{wait, zk::server};
mod throughput;
mod versus;

use std::collections::BTreeSet;
use std::time::Instant;

/// How much of each scenario to run.
#[derive(Debug, Clone, Copy)]
struct Sizes {
    fires: u64,
    failover_rounds: usize,
    many_jobs: usize,
    many_period_s: i64,
    ramp: ramp::Ramp,
    embedded_jobs: (usize, i32),
    window_s: u64,
    versus: [usize; 2],
    balance_jobs: usize,
    /// Scenario 8: the N measured, the jobs per instance, the window.
    scale_instances: &'static [u32],
    scale_jobs: usize,
    scale_window_s: u64,
}

const FULL: Sizes = Sizes {
    fires: 120,
    failover_rounds: 5,
    many_jobs: 10_000,
    many_period_s: 10,
    ramp: ramp::Ramp {
        one_item: &[1_000, 2_000, 5_000, 10_000, 20_000],
        many_items: (100, &[10, 20, 50, 100, 200, 400]),
        target: 20_000,
    },
    embedded_jobs: (100, 1_000),
    window_s: 10,
    versus: [1_000, 10_000],
    balance_jobs: 1_000,
    scale_instances: &[1, 2, 4, 8],
    scale_jobs: 25,
    scale_window_s: 20,
};

const QUICK: Sizes = Sizes {
    fires: 5,
    failover_rounds: 1,
    many_jobs: 1_000,
    many_period_s: 5,
    ramp: ramp::Ramp {
        one_item: &[200],
        many_items: (20, &[50]),
        target: 1_000,
    },
    embedded_jobs: (20, 1_000),
    window_s: 2,
    versus: [100, 1_000],
    balance_jobs: 200,
    scale_instances: &[1, 4],
    scale_jobs: 25,
    scale_window_s: 6,
};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

fn main() {
    // The engine's own log, when asked for (`RUST_LOG=shardcron=debug`): what a step that does not
    // hold skipped, and why.
    if std::env::var_os("RUST_LOG").is_some() {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .init();
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--child") {
        return run_child(&args[1..]);
    }
    let quick = args.iter().any(|a| a == "--quick");
    if !quick && !args.iter().any(|a| a == "--bench") {
        println!("cluster bench: run it with `cargo bench --bench cluster [-- --quick]`");
        return;
    }
    let only: BTreeSet<u32> = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1))
        .map(|s| s.split(',').filter_map(|n| n.parse().ok()).collect())
        .unwrap_or_else(|| (1..=8).collect());
    let sizes = if quick { QUICK } else { FULL };
    // A full run measures ZooKeeper as production runs it; the quick one (CI) starts it as the
    // tests do (the first JIT tier only, which starts a server sooner).
    if !quick {
        server::compile_as_in_production();
    }
    let started = Instant::now();
    eprintln!(
        "cluster bench ({} mode)",
        if quick { "quick" } else { "full" }
    );
    let mut table = report::Table::default();
    let rt = runtime();
    if only.iter().any(|n| (1..=7).contains(n)) {
        eprintln!("starting ZooKeeper");
        let zk = server::ZkServer::start();
        let scrape = args.iter().any(|a| a == "--scrape");
        run_standalone(&rt, zk.addr(), &only, sizes, scrape, &mut table);
    }
    if only.contains(&8) {
        eprintln!("--- 8: cluster scale");
        scale::run(
            sizes.scale_instances,
            sizes.scale_jobs,
            sizes.scale_window_s,
            &mut table,
        );
    }
    drop(rt);
    println!("{}", table.render());
    println!(
        "{} mode, {} figures missed their target, {:.0} s; machine: {} cores, {}",
        if quick { "quick" } else { "full" },
        table.missed(),
        started.elapsed().as_secs_f64(),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        cpu_model()
    );
}

/// Scenarios 1-7 of `only`, on the standalone server at `addr`.
fn run_standalone(
    rt: &tokio::runtime::Runtime,
    addr: std::net::SocketAddr,
    only: &BTreeSet<u32>,
    sizes: Sizes,
    scrape: bool,
    table: &mut report::Table,
) {
    if only.contains(&1) || only.contains(&2) {
        eprintln!("--- 1, 2: trigger delay and registry traffic");
        rt.block_on(delay::run(addr, sizes.fires, table));
    }
    if only.contains(&3) {
        eprintln!("--- 3: failover and graceful leave");
        rt.block_on(failover::run(addr, sizes.failover_rounds, table));
    }
    if only.contains(&4) {
        eprintln!("--- 4: many jobs on one node");
        many::run(addr, sizes.many_jobs, sizes.many_period_s, table);
        if scrape {
            eprintln!("--- 4 again, serving /metrics: one scrape");
            many::run_scrape(addr, sizes.many_jobs, sizes.many_period_s, table);
        }
    }
    if only.contains(&5) {
        eprintln!("--- 5: throughput");
        rt.block_on(throughput::run(
            &sizes.ramp,
            sizes.embedded_jobs,
            sizes.window_s,
            table,
        ));
    }
    if only.contains(&6) {
        eprintln!("--- 6: beside tokio-cron-scheduler");
        versus::run(&sizes.versus, sizes.window_s, table);
    }
    if only.contains(&7) {
        eprintln!("--- 7: balance across jobs");
        rt.block_on(balance::run(addr, sizes.balance_jobs, table));
    }
}

/// Runs the child scenario named by `args[0]`.
fn run_child(args: &[String]) {
    let kind = args.first().map(String::as_str).unwrap_or_default();
    let kv = child::args(&args[1..]);
    let num = |k: &str| -> u64 {
        kv.get(k)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("child {kind}: {k}=N is required"))
    };
    let rt = runtime();
    match kind {
        "victim" => rt.block_on(failover::victim(kv["zk"], kv["ns"])),
        "many" => rt.block_on(many::child(
            kv["zk"],
            num("jobs") as usize,
            num("period") as i64,
            // Optional: fires before the memory figure (1 in the table).
            kv.get("fires").and_then(|v| v.parse().ok()).unwrap_or(1),
            // Optional: serve /metrics and measure one scrape.
            kv.get("scrape") == Some(&"1"),
        )),
        "scale" => rt.block_on(scale_node::child(
            kv["zk"],
            kv["ns"],
            num("n") as u32,
            num("jobs") as usize,
            num("period") as i64,
        )),
        "versus" => rt.block_on(versus::child(
            kv["system"],
            num("jobs") as usize,
            num("seconds"),
        )),
        other => panic!("unknown child {other:?}"),
    }
}

/// `/proc/cpuinfo`'s first model name.
fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")?
                .split_once(':')
                .map(|(_, m)| m.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into())
}
