//! Workflows end to end on a real ZooKeeper (started by the test, on loopback): two nodes run an
//! upstream script job of 4 items every 2 s and a downstream of 2 items without a cron that runs
//! after it (`shardcron.after`). Each script appends a line per run: the wall clock in
//! nanoseconds (the upstream's at its end, the downstream's at its start) and its context JSON.

#[macro_use]
extern crate support;

use support::{wait, zk, Peer};

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use shardcron::config::JobConfig;
use shardcron::job::script::ScriptJob;
use shardcron::node::{NodeBuilder, NodeHandle};
use shardcron::ops::Ops;
use shardcron::registry::zookeeper::ZkConnector;
use shardcron::registry::Connector;
use shardcron::{InstanceId, JobName, JobSpec, JobType};

/// A bound on every wait: ten upstream fires every 2 s, and the start of the nodes.
const WITHIN: Duration = Duration::from_secs(60);

/// One run of one item, as its script recorded it.
#[derive(Debug, Clone, PartialEq)]
struct Run {
    /// Nanoseconds since the epoch: the upstream's end, the downstream's start.
    at: u128,
    item: u32,
    /// `NORMAL`, `WORKFLOW`, ... (from the task id).
    source: String,
    /// The root fire's instant (`scheduledAt`).
    scheduled_at: String,
    /// The workflow run (`workflowRun`), when the run is a step of one.
    workflow_run: Option<String>,
}

/// A script job `name` appending `{now in ns} {context JSON}` to `out`, after `sleep` when
/// `sleep_first` (the line then marks the run's end) or before it (the line marks its start).
fn script(name: &str, items: i32, out: &Path, sleep_first: bool) -> JobConfig {
    let record = format!(
        "printf \"%s %s\\n\" \"$(date +%s%N)\" \"$0\" >> {}",
        out.display()
    );
    let body = if sleep_first {
        format!("sleep 0.3; {record}")
    } else {
        format!("{record}; sleep 0.3")
    };
    JobConfig::new(name, items)
        .time_zone("GMT")
        .script_command_line(format!("/bin/sh -c '{body}'"))
}

fn runs(out: &Path) -> Vec<Run> {
    let text = std::fs::read_to_string(out).unwrap_or_default();
    text.lines()
        .filter_map(|line| {
            let (at, json) = line.split_once(' ')?;
            let ctx: serde_json::Value = serde_json::from_str(json).ok()?;
            Some(Run {
                at: at.parse().ok()?,
                item: ctx["shardingItem"].as_u64()? as u32,
                source: ctx["taskId"].as_str()?.split("@-@").nth(2)?.to_owned(),
                // A run started by hand has no instant.
                scheduled_at: ctx["scheduledAt"].as_str().unwrap_or_default().to_owned(),
                workflow_run: ctx["workflowRun"].as_str().map(str::to_owned),
            })
        })
        .collect()
}

/// Instance `n` on namespace `ns` running the script jobs `configs`.
async fn node(ns: &str, n: u32, configs: &[&JobConfig]) -> NodeHandle {
    let connector = Arc::new(ZkConnector::new(zk::backend().config(ns)));
    let mut builder = NodeBuilder::new(connector)
        .instance_id(InstanceId::parse(format!("10.0.0.{n}@-@{n}")).unwrap());
    for config in configs {
        let line = config.props["script.command.line"].clone();
        builder = builder.job_spec(JobSpec {
            config: Arc::new((*config).clone()),
            job_type: JobType::Script,
            handler: Arc::new(ScriptJob::new(&line).expect("a command line")),
        });
    }
    builder.start().await.expect("the node starts")
}

const UP_ITEMS: u32 = 4;
const DOWN_ITEMS: u32 = 2;
const FIRES: usize = 10;

/// The runs by root instant.
fn by_instant(runs: &[Run]) -> BTreeMap<String, Vec<Run>> {
    let mut map: BTreeMap<String, Vec<Run>> = BTreeMap::new();
    for run in runs {
        map.entry(run.scheduled_at.clone())
            .or_default()
            .push(run.clone());
    }
    map
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_downstream_without_a_cron_runs_once_per_upstream_fire_after_every_upstream_item_ended() {
    require!(Peer::ZooKeeper);
    let (dir, ns) = support::prelude("workflow", "two-steps");
    let (up_out, down_out) = (dir.path().join("up"), dir.path().join("down"));
    let upstream = script("import", UP_ITEMS as i32, &up_out, true).cron("0/2 * * * * ?");
    let downstream = script("report", DOWN_ITEMS as i32, &down_out, false).after(&["import"]);

    tracing::info!("--- two nodes run both jobs until the downstream ran {FIRES} workflow runs");
    let nodes = [
        node(&ns, 1, &[&upstream, &downstream]).await,
        node(&ns, 2, &[&upstream, &downstream]).await,
    ];
    let complete = |runs: &[Run], items: u32| {
        by_instant(runs)
            .into_iter()
            .filter(|(_, r)| (0..items).all(|i| r.iter().any(|run| run.item == i)))
            .count()
    };
    wait::wait_until(
        async || (complete(&runs(&down_out), DOWN_ITEMS) >= FIRES).then_some(()),
        "the downstream ran ten workflow runs on both items",
        WITHIN * 2,
    )
    .await;
    for n in &nodes {
        n.shutdown().await;
    }

    let (up, down) = (by_instant(&runs(&up_out)), by_instant(&runs(&down_out)));
    tracing::info!(
        upstream = up.len(),
        downstream = down.len(),
        "runs by root instant"
    );
    for (at, steps) in &down {
        let items: BTreeSet<u32> = steps.iter().map(|r| r.item).collect();
        assert_eq!(
            steps.len(),
            items.len(),
            "each downstream item runs once per workflow run ({at}): {steps:?}"
        );
        assert!(steps.iter().all(|r| r.source == "WORKFLOW"), "{steps:?}");
        let run = chrono::DateTime::parse_from_rfc3339(at)
            .unwrap()
            .timestamp_millis();
        assert!(
            steps
                .iter()
                .all(|r| r.workflow_run == Some(run.to_string())),
            "each step carries its workflow run, the root instant in ms: {steps:?}"
        );
        let ups = up
            .get(at)
            .unwrap_or_else(|| panic!("no upstream run at {at}"));
        let up_items: BTreeSet<u32> = ups.iter().map(|r| r.item).collect();
        assert_eq!(
            up_items,
            (0..UP_ITEMS).collect(),
            "every upstream item of {at} ran before its downstream"
        );
        let last_end = ups.iter().map(|r| r.at).max().unwrap();
        let first_start = steps.iter().map(|r| r.at).min().unwrap();
        assert!(
            first_start > last_end,
            "the downstream of {at} started after every upstream item ended"
        );
    }
    // Every upstream fire that ended well before the shutdown has its downstream run.
    let last_down = down.keys().next_back().cloned().unwrap();
    for (at, ups) in &up {
        if at.as_str() < last_down.as_str() && ups.len() == UP_ITEMS as usize {
            let steps = down.get(at).map_or(0, Vec::len);
            assert!(
                steps == DOWN_ITEMS as usize,
                "the upstream fire {at} has its downstream run on every item ({steps})"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_write_that_closes_a_cycle_is_refused_with_its_path() {
    use shardcron::decide::adopt::RuntimeType;
    use shardcron::ops::{NewJob, Ops, OpsError};
    use shardcron::registry::Connector;
    require!(Peer::ZooKeeper);
    let (dir, ns) = support::prelude("workflow", "cycle");
    let out = dir.path().join("runs");
    let connector = ZkConnector::new(zk::backend().config(&ns));
    let ops = Ops::new(connector.connect().await.expect("an operator session"));
    let job = |name: &str, after: &[&str]| {
        let config = script(name, 1, &out, false);
        NewJob {
            job_type: RuntimeType::Script,
            config: if after.is_empty() {
                config
            } else {
                config.after(after)
            },
        }
    };
    ops.create(job("a", &[])).await.expect("a root");
    ops.create(job("b", &["a"])).await.expect("b after a");
    ops.create(job("c", &["b"])).await.expect("c after b");
    let refused = ops.create(job("d", &["d"])).await.unwrap_err();
    assert!(
        refused.to_string().contains("shardcron.after"),
        "a job after itself: {refused}"
    );
    let yaml = script("a", 1, &out, false).after(&["c"]).to_yaml().unwrap();
    let a = shardcron::JobName::new("a").unwrap();
    let refused = ops.config_set(&a, &yaml).await.unwrap_err();
    assert!(
        matches!(refused, OpsError::WorkflowCycle { .. }),
        "{refused}"
    );
    assert_eq!(
        refused.to_string(),
        "new config for job a refused: shardcron.after makes a cycle: a -> b -> c -> a"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_diamond_of_four_jobs_runs_each_step_once_per_root_run() {
    require!(Peer::ZooKeeper);
    let (dir, ns) = support::prelude("workflow", "diamond");
    let out = |name: &str| dir.path().join(name);
    let root = script("root", 2, &out("root"), true).cron("0/2 * * * * ?");
    let left = script("left", 1, &out("left"), true).after(&["root"]);
    let right = script("right", 2, &out("right"), true).after(&["root"]);
    let join = script("join", 1, &out("join"), false).after(&["left", "right"]);
    let jobs = [&root, &left, &right, &join];
    let nodes = [node(&ns, 1, &jobs).await, node(&ns, 2, &jobs).await];
    const ROOT_RUNS: usize = 4;
    wait::wait_until(
        async || (by_instant(&runs(&out("join"))).len() >= ROOT_RUNS).then_some(()),
        "the join ran four workflow runs",
        WITHIN,
    )
    .await;
    for n in &nodes {
        n.shutdown().await;
    }
    let join_runs = by_instant(&runs(&out("join")));
    for (name, items) in [("left", 1), ("right", 2)] {
        let step = by_instant(&runs(&out(name)));
        for (at, ran) in &join_runs {
            assert_eq!(ran.len(), 1, "the join ran once for {at}: {ran:?}");
            let upstream = step
                .get(at)
                .unwrap_or_else(|| panic!("{name} ran for {at}"));
            assert_eq!(upstream.len(), items, "{name} ran each item once for {at}");
            let last_end = upstream.iter().map(|r| r.at).max().unwrap();
            assert!(
                ran[0].at > last_end,
                "the join of {at} started after {name} ended"
            );
        }
        for (at, ran) in &step {
            let items_seen: BTreeSet<u32> = ran.iter().map(|r| r.item).collect();
            assert_eq!(
                items_seen.len(),
                ran.len(),
                "{name} ran each item once for {at}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trigger_of_the_root_by_hand_starts_a_workflow_run_that_its_downstream_runs_once() {
    require!(Peer::ZooKeeper);
    let (dir, ns) = support::prelude("workflow", "by-hand");
    let (up_out, down_out) = (dir.path().join("up"), dir.path().join("down"));
    // Neither job has a cron: the upstream runs when triggered, the downstream after it.
    let upstream = script("import", UP_ITEMS as i32, &up_out, true);
    let downstream = script("report", DOWN_ITEMS as i32, &down_out, false).after(&["import"]);
    let nodes = [
        node(&ns, 1, &[&upstream, &downstream]).await,
        node(&ns, 2, &[&upstream, &downstream]).await,
    ];
    let ops = Ops::new(
        (ZkConnector::new(zk::backend().config(&ns)).connect().await).expect("an operator session"),
    );
    let import = JobName::new("import").unwrap();
    wait::wait_until(
        async || {
            let reg = ops.registry();
            let under = reg.children("/import/shardcron/downstream").await.ok()?;
            let live = reg.children("/import/instances").await.ok()?;
            (!under.is_empty() && live.len() == 2).then_some(())
        },
        "both instances live and the downstream registered under the upstream",
        WITHIN,
    )
    .await;
    let by_run = |runs: Vec<Run>| {
        let mut map: BTreeMap<String, Vec<Run>> = BTreeMap::new();
        for run in runs.into_iter().filter(|r| r.workflow_run.is_some()) {
            map.entry(run.workflow_run.clone().unwrap_or_default())
                .or_default()
                .push(run);
        }
        map
    };
    for n in 1..=2 {
        tracing::info!("--- trigger {n} of the upstream");
        ops.trigger(&import).await.expect("the trigger is written");
        wait::wait_until(
            async || {
                let done = by_run(runs(&down_out))
                    .values()
                    .filter(|steps| steps.len() >= DOWN_ITEMS as usize)
                    .count();
                (done >= n).then_some(())
            },
            "the downstream ran on both items for the triggered run",
            WITHIN,
        )
        .await;
    }
    for n in &nodes {
        n.shutdown().await;
    }
    let (up, down) = (by_run(runs(&up_out)), by_run(runs(&down_out)));
    assert_eq!(down.len(), 2, "one workflow run per trigger: {down:#?}");
    for (run, steps) in &down {
        assert!(run.starts_with('m'), "a run started by hand: {run}");
        let items: BTreeSet<u32> = steps.iter().map(|r| r.item).collect();
        assert_eq!(
            items.len(),
            steps.len(),
            "each item once in {run}: {steps:?}"
        );
        let ups = up
            .get(run)
            .unwrap_or_else(|| panic!("no upstream run in {run}"));
        let up_items: BTreeSet<u32> = ups.iter().map(|r| r.item).collect();
        assert_eq!(
            up_items,
            (0..UP_ITEMS).collect(),
            "the trigger ran every upstream item"
        );
        assert!(ups.iter().all(|r| r.source == "MANUAL"), "{ups:?}");
        let last_end = ups.iter().map(|r| r.at).max().unwrap();
        assert!(
            steps.iter().all(|r| r.at > last_end),
            "the downstream of {run} started after every upstream item ended"
        );
    }
}
