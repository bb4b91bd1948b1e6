//! Backfills end to end: nodes on a real ZooKeeper (started by the test, on loopback) run a script
//! job that appends its context JSON to a file; `Ops::backfill` asks for past instants and each
//! item's runs are read back with the instant they carried.

#[macro_use]
extern crate support;

use support::script_runs::{node, of, runs, script, wait_runs, Run, WITHIN};
use support::{wait, zk, Peer};

use chrono::{DateTime, DurationRound, TimeDelta, Utc};
use shardcron::config::JobConfig;
use shardcron::ops::Ops;
use shardcron::registry::zookeeper::ZkConnector;
use shardcron::registry::Connector;
use shardcron::JobName;

const ITEMS: u32 = 4;

/// Waits until the job's backfill has no item instant left, as `Ops::backfill_status` says.
async fn finished(ops: &Ops, job: &JobName) -> shardcron::ops::BackfillStatus {
    wait::wait_until(
        async || {
            let s = ops.backfill_status(job).await.ok()??;
            (s.left == 0).then_some(s)
        },
        "every item's backfill progress at the last instant",
        WITHIN,
    )
    .await
}

/// The instants item `item`'s backfill runs carried, in the order they ran.
fn backfilled(runs: &[Run], item: u32) -> Vec<DateTime<Utc>> {
    of(runs, "BACKFILL", item)
        .iter()
        .map(|r| r.scheduled_at.expect("a backfill run carries its instant"))
        .collect()
}

/// An operator's [`Ops`] on the namespace `ns`.
async fn operator(ns: &str) -> Ops {
    let connector = ZkConnector::new(zk::backend().config(ns));
    Ops::new(connector.connect().await.expect("an operator session"))
}

/// The first and the last of the `n` whole hours before the current one.
fn last_hours(n: i32) -> (DateTime<Utc>, DateTime<Utc>) {
    let hour = TimeDelta::hours(1);
    let last = Utc::now().duration_trunc(hour).unwrap() - hour;
    (last - hour * (n - 1), last)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backfill_of_five_instants_runs_each_instant_once_per_item_in_order() {
    require!(Peer::ZooKeeper);
    let (dir, ns) = support::prelude("backfill", "backfill");
    let out = dir.path().join("runs");
    // Hourly: no cron fire comes during the test.
    let config = script("reports", 3, &out).cron("0 0 * * * ?");
    let nodes = [node(&ns, 1, &config).await, node(&ns, 2, &config).await];
    let (ops, job) = (operator(&ns).await, JobName::new("reports").unwrap());
    let hour = TimeDelta::hours(1);
    let (from, to) = last_hours(5);

    tracing::info!("--- a dry run lists the five instants; a range of years is refused");
    let dry = ops.backfill(&job, from, to, true).await.expect("planned");
    let expected: Vec<DateTime<Utc>> = (0..5).map(|n| from + hour * n).collect();
    assert_eq!(dry.instants, expected);
    let huge = ops
        .backfill(&job, from - TimeDelta::days(3 * 365), to, true)
        .await
        .unwrap_err();
    assert!(huge.to_string().contains("more than 1000"), "{huge}");

    tracing::info!("--- the backfill runs");
    wait::wait_until(
        async || ops.backfill(&job, from, to, false).await.ok(),
        "the nodes are registered and the backfill requested",
        WITHIN,
    )
    .await;
    wait_runs(&out, "five backfill runs of each item", |r| {
        (0..3).all(|i| of(r, "BACKFILL", i).len() >= 5)
    })
    .await;
    let status = finished(&ops, &job).await;
    assert_eq!(
        (status.instants, status.first, status.last),
        (5, Some(from), Some(to))
    );
    assert!(status.items.iter().all(|i| i.done == 5), "{status:?}");
    // Every item recorded all five: nothing more can start.
    let all = runs(&out);
    for n in nodes {
        n.shutdown().await;
    }
    for i in 0..3 {
        assert_eq!(
            backfilled(&all, i),
            expected,
            "item {i}: each instant once, in order"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backfill_whose_items_move_to_another_instance_midway_runs_each_instant_once_per_item() {
    require!(Peer::ZooKeeper);
    let (dir, ns) = support::prelude("backfill", "backfill-move");
    let out = dir.path().join("runs");
    // Each run takes a moment, so that the items move while runs are under way.
    let line = format!(
        "/bin/sh -c 'printf \"%s\\n\" \"$0\" >> {}; sleep 0.2'",
        out.display()
    );
    let config = JobConfig::new("reports", ITEMS as i32)
        .time_zone("GMT")
        .cron("0 0 * * * ?")
        .script_command_line(line);
    let first = node(&ns, 1, &config).await;
    let second = node(&ns, 2, &config).await;
    let (ops, job) = (operator(&ns).await, JobName::new("reports").unwrap());
    let hour = TimeDelta::hours(1);
    let (from, to) = last_hours(10);
    let expected: Vec<DateTime<Utc>> = (0..10).map(|n| from + hour * n).collect();
    wait::wait_until(
        async || ops.backfill(&job, from, to, false).await.ok(),
        "the nodes are registered and the backfill requested",
        WITHIN,
    )
    .await;

    tracing::info!("--- the second instance leaves after a few instants: its items move");
    wait_runs(&out, "two backfill runs of every item", |r| {
        (0..ITEMS).all(|i| of(r, "BACKFILL", i).len() >= 2)
    })
    .await;
    second.shutdown().await;
    let status = finished(&ops, &job).await;
    first.shutdown().await;
    assert!(status.items.iter().all(|i| i.done == 10), "{status:?}");
    let all = runs(&out);
    for i in 0..ITEMS {
        assert_eq!(
            backfilled(&all, i),
            expected,
            "item {i}: each instant once, in order"
        );
    }
}
