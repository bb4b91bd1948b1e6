//! The catch-up window and triggers with parameters end to end: nodes on a real ZooKeeper (started
//! by the test, on loopback) run a script job that appends its context JSON to a file, so each
//! run is seen as a script sees it (`scheduledAt`, `jobParameter`, the source in `taskId`).

mod support;

use support::cluster::init_tracing;
use support::{wait, zk, Peer};

use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, DurationRound, TimeDelta, Utc};
use shardcron::config::JobConfig;
use shardcron::job::script::ScriptJob;
use shardcron::node::{NodeBuilder, NodeHandle};
use shardcron::ops::{Ops, TriggerParams};
use shardcron::registry::zookeeper::ZkConnector;
use shardcron::registry::Connector;
use shardcron::{InstanceId, JobName, JobSpec, JobType};

/// A bound on every wait.
const WITHIN: Duration = Duration::from_secs(40);

fn namespace(test: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "catchup-{test}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// One run of one item, from the context JSON its script received.
#[derive(Debug, Clone, PartialEq)]
struct Run {
    item: u32,
    /// `NORMAL`, `CATCHUP`, `MANUAL`, ... (from the task id).
    source: String,
    scheduled_at: Option<DateTime<Utc>>,
    job_parameter: String,
}

/// A script job `name` appending its context JSON (its last argument) to `out`.
fn script(name: &str, items: i32, out: &Path) -> JobConfig {
    let line = format!("/bin/sh -c 'printf \"%s\\n\" \"$0\" >> {}'", out.display());
    JobConfig::new(name, items)
        .time_zone("GMT")
        .script_command_line(line)
}

/// Every run the script recorded so far.
fn runs(out: &Path) -> Vec<Run> {
    let text = std::fs::read_to_string(out).unwrap_or_default();
    text.lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .map(|ctx| Run {
            item: ctx["shardingItem"].as_u64().unwrap() as u32,
            source: ctx["taskId"]
                .as_str()
                .unwrap()
                .split("@-@")
                .nth(2)
                .unwrap()
                .to_owned(),
            scheduled_at: ctx["scheduledAt"]
                .as_str()
                .map(|t| DateTime::parse_from_rfc3339(t).unwrap().to_utc()),
            job_parameter: ctx["jobParameter"].as_str().unwrap().to_owned(),
        })
        .collect()
}

/// Waits until the recorded runs satisfy `pred`.
async fn wait_runs(out: &Path, what: &str, pred: impl Fn(&[Run]) -> bool) -> Vec<Run> {
    let out = out.to_path_buf();
    wait::wait_until(
        async || {
            let all = runs(&out);
            pred(&all).then_some(all)
        },
        what,
        WITHIN,
    )
    .await
}

/// Instance `n` on namespace `ns` running `config` as a script job.
async fn node(ns: &str, n: u32, config: &JobConfig) -> NodeHandle {
    let connector = Arc::new(ZkConnector::new(zk::backend().config(ns)));
    let line = config.props["script.command.line"].clone();
    NodeBuilder::new(connector)
        .instance_id(InstanceId::parse(format!("10.0.0.{n}@-@{n}")).unwrap())
        .job_spec(JobSpec {
            config: Arc::new(config.clone()),
            job_type: JobType::Script,
            handler: Arc::new(ScriptJob::new(&line).expect("a command line")),
        })
        .start()
        .await
        .expect("the node starts")
}

/// Waits until the wall clock passes `at`.
async fn wait_past(at: DateTime<Utc>, what: &str) {
    let within = (at - Utc::now()).to_std().unwrap_or_default() + WITHIN;
    wait::wait_until(async || (Utc::now() > at).then_some(()), what, within).await;
}

fn of(runs: &[Run], source: &str, item: u32) -> Vec<Run> {
    runs.iter()
        .filter(|r| r.source == source && r.item == item)
        .cloned()
        .collect()
}

const ITEMS: u32 = 4;
const EVERY_2S: &str = "0/2 * * * * ?";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_node_stopped_over_three_fires_and_back_within_the_window_runs_one_catch_up_per_item_with_the_latest_missed_instant(
) {
    require!(Peer::ZooKeeper);
    init_tracing();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("runs");
    let ns = namespace("back");
    let config = script("reports", ITEMS as i32, &out)
        .cron(EVERY_2S)
        .catchup_window(Duration::from_secs(30));

    tracing::info!("--- two nodes run the job until every item ran a cron fire");
    let nodes = [node(&ns, 1, &config).await, node(&ns, 2, &config).await];
    wait_runs(&out, "every item ran a cron fire", |r| {
        (0..ITEMS).all(|i| !of(r, "NORMAL", i).is_empty())
    })
    .await;

    tracing::info!("--- every node stops; three instants pass");
    for n in nodes {
        n.shutdown().await;
    }
    let before = runs(&out);
    let last = before.iter().filter_map(|r| r.scheduled_at).max().unwrap();
    wait_past(
        last + TimeDelta::milliseconds(6_500),
        "three instants passed",
    )
    .await;

    tracing::info!("--- both come back within the window");
    let restart = Utc::now();
    let latest_missed = restart
        .duration_trunc(TimeDelta::seconds(2))
        .expect("an instant");
    let nodes = [node(&ns, 1, &config).await, node(&ns, 2, &config).await];
    let after = wait_runs(
        &out,
        "every item caught up and then ran two cron fires",
        |r| {
            (0..ITEMS).all(|i| {
                !of(r, "CATCHUP", i).is_empty()
                    && of(r, "NORMAL", i)
                        .iter()
                        .filter(|n| n.scheduled_at > Some(restart))
                        .count()
                        >= 2
            })
        },
    )
    .await;
    for n in nodes {
        n.shutdown().await;
    }

    tracing::info!("--- one catch-up per item, carrying the latest missed instant");
    for i in 0..ITEMS {
        let caught = of(&after, "CATCHUP", i);
        assert_eq!(caught.len(), 1, "item {i}: {after:#?}");
        let at = caught[0]
            .scheduled_at
            .expect("a catch-up carries its instant");
        assert!(
            at > last + TimeDelta::seconds(4),
            "item {i} caught up {at}, not the latest of the three missed after {last}"
        );
        assert!(
            at >= latest_missed && at <= Utc::now(),
            "item {i} caught up {at}, not the latest instant ({latest_missed}) before the restart"
        );
        assert!(
            of(&after, "NORMAL", i)
                .iter()
                .all(|n| n.scheduled_at != Some(at)),
            "item {i}: instant {at} ran twice: {after:#?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instant_missed_longer_ago_than_the_window_is_not_caught_up() {
    require!(Peer::ZooKeeper);
    init_tracing();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("runs");
    let ns = namespace("beyond");
    let config = script("reports", 2, &out)
        .cron("0/10 * * * * ?")
        .catchup_window(Duration::from_secs(2));

    tracing::info!("--- a node runs a cron fire, then stops");
    let first = node(&ns, 1, &config).await;
    let before = wait_runs(&out, "both items ran a cron fire", |r| {
        (0..2).all(|i| !of(r, "NORMAL", i).is_empty())
    })
    .await;
    first.shutdown().await;
    let last = before.iter().filter_map(|r| r.scheduled_at).max().unwrap();

    tracing::info!(
        "--- it comes back 4 s after the next instant: that instant is past the 2 s window"
    );
    wait_past(
        last + TimeDelta::seconds(14),
        "the missed instant is 4 s old",
    )
    .await;
    let again = node(&ns, 1, &config).await;
    let next = last + TimeDelta::seconds(20);
    let after = wait_runs(&out, "the next cron fire ran", |r| {
        (0..2).all(|i| {
            of(r, "NORMAL", i)
                .iter()
                .any(|n| n.scheduled_at >= Some(next))
        })
    })
    .await;
    again.shutdown().await;
    let caught: Vec<&Run> = after.iter().filter(|r| r.source == "CATCHUP").collect();
    assert!(
        caught.is_empty(),
        "nothing older than the window runs: {caught:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trigger_with_a_parameter_reaches_the_script_as_its_job_parameter() {
    require!(Peer::ZooKeeper);
    init_tracing();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("runs");
    let ns = namespace("param");
    let config = script("reports", 2, &out)
        .one_off()
        .job_parameter("from-config");
    let node = node(&ns, 1, &config).await;
    let connector = ZkConnector::new(zk::backend().config(&ns));
    let ops = Ops::new(connector.connect().await.expect("an operator session"));
    let job = JobName::new("reports").unwrap();

    tracing::info!("--- a trigger with a parameter and one item");
    let params = TriggerParams {
        job_parameter: Some("date=2026-11-25".into()),
        items: Some([1].into()),
    };
    wait::wait_until(
        async || ops.trigger_with(&job, &params).await.ok(),
        "the node is registered and triggered",
        WITHIN,
    )
    .await;
    let first = wait_runs(&out, "the triggered run", |r| !r.is_empty()).await;
    assert_eq!(
        first,
        vec![Run {
            item: 1,
            source: "MANUAL".into(),
            scheduled_at: None,
            job_parameter: "date=2026-11-25".into(),
        }]
    );

    tracing::info!("--- a plain trigger runs every item with the config's parameter");
    ops.trigger(&job).await.expect("triggered");
    let all = wait_runs(&out, "the plain trigger's two runs", |r| r.len() == 3).await;
    for r in &all[1..] {
        assert_eq!(r.job_parameter, "from-config", "{all:#?}");
    }
    let leftovers = ops
        .registry()
        .children("/reports/shardcron/trigger")
        .await
        .unwrap_or_default();
    assert!(
        leftovers.is_empty(),
        "the parameters were taken: {leftovers:?}"
    );
    node.shutdown().await;
}

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backfill_of_five_instants_runs_each_instant_once_per_item_in_order() {
    require!(Peer::ZooKeeper);
    init_tracing();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("runs");
    let ns = namespace("backfill");
    // Hourly: no cron fire comes during the test.
    let config = script("reports", 3, &out).cron("0 0 * * * ?");
    let nodes = [node(&ns, 1, &config).await, node(&ns, 2, &config).await];
    let connector = ZkConnector::new(zk::backend().config(&ns));
    let ops = Ops::new(connector.connect().await.expect("an operator session"));
    let job = JobName::new("reports").unwrap();
    let hour = TimeDelta::hours(1);
    let last = Utc::now().duration_trunc(hour).unwrap() - hour;
    let (from, to) = (last - hour * 4, last);

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
    init_tracing();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("runs");
    let ns = namespace("backfill-move");
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
    let connector = ZkConnector::new(zk::backend().config(&ns));
    let ops = Ops::new(connector.connect().await.expect("an operator session"));
    let job = JobName::new("reports").unwrap();
    let hour = TimeDelta::hours(1);
    let last = Utc::now().duration_trunc(hour).unwrap() - hour;
    let (from, to) = (last - hour * 9, last);
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
