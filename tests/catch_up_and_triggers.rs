//! The catch-up window and triggers with parameters end to end: nodes on a real ZooKeeper (started
//! by the test, on loopback) run a script job that appends its context JSON to a file, so each
//! run is seen as a script sees it (`scheduledAt`, `jobParameter`, the source in `taskId`).

#[macro_use]
extern crate support;

use support::script_runs::{node, of, runs, script, wait_past, wait_runs, Run, WITHIN};
use support::{wait, zk, Peer};

use std::time::Duration;

use chrono::{DurationRound, TimeDelta, Utc};
use shardcron::ops::{Ops, TriggerParams};
use shardcron::registry::zookeeper::ZkConnector;
use shardcron::registry::Connector;
use shardcron::JobName;

const ITEMS: u32 = 4;
const EVERY_2S: &str = "0/2 * * * * ?";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_node_stopped_over_three_fires_and_back_within_the_window_runs_one_catch_up_per_item_with_the_latest_missed_instant(
) {
    require!(Peer::ZooKeeper);
    let (dir, ns) = support::prelude("catchup", "back");
    let out = dir.path().join("runs");
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
    let (dir, ns) = support::prelude("catchup", "beyond");
    let out = dir.path().join("runs");
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
    let (dir, ns) = support::prelude("catchup", "param");
    let out = dir.path().join("runs");
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
        workflow_run: None,
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
            instance: "10.0.0.1".into(),
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_that_joins_while_the_first_one_back_runs_its_catch_ups_catches_up_the_items_it_takes(
) {
    require!(Peer::ZooKeeper);
    let (dir, ns) = support::prelude("catchup", "join");
    let (out, begun, gates) = (
        dir.path().join("runs"),
        dir.path().join("begun"),
        dir.path().join("gates"),
    );
    std::fs::create_dir(&gates).unwrap();
    let open = |items: &[u32]| {
        for i in items {
            std::fs::write(gates.join(i.to_string()), "").unwrap();
        }
    };
    // A run of item i says it began, waits for gate i, then records itself: a run cancelled
    // meanwhile (its item moved) records nothing.
    let line = format!(
        "/bin/sh -c 'printf \"%s\\n\" \"$0\" >> {begun}; i=$(printf \"%s\" \"$0\" | sed \"s/.*shardingItem.:\\([0-9]*\\).*/\\1/\"); while [ ! -e {gates}/$i ]; do sleep 0.05; done; printf \"%s\\n\" \"$0\" >> {out}'",
        begun = begun.display(),
        gates = gates.display(),
        out = out.display()
    );
    let config = script("reports", ITEMS as i32, &out)
        .script_command_line(line)
        .cron("0/10 * * * * ?")
        .catchup_window(Duration::from_secs(60))
        // No running markers: the reshard does not wait for the runs, it moves items while
        // their catch-up runs (as a plan committed between a run's start and its markers does).
        .monitor_execution(false);
    let all: Vec<u32> = (0..ITEMS).collect();

    tracing::info!("--- one node runs a cron fire of every item, then stops; an instant passes");
    open(&all);
    let first = node(&ns, 1, &config).await;
    let before = wait_runs(&out, "every item ran a cron fire", |r| {
        (0..ITEMS).all(|i| !of(r, "NORMAL", i).is_empty())
    })
    .await;
    first.shutdown().await;
    for i in &all {
        std::fs::remove_file(gates.join(i.to_string())).unwrap();
    }
    let last = before.iter().filter_map(|r| r.scheduled_at).max().unwrap();
    let missed = last + TimeDelta::seconds(10);
    wait_past(missed + TimeDelta::milliseconds(300), "an instant passed").await;

    tracing::info!("--- it comes back alone: its catch-up runs of every item wait at their gates");
    let first = node(&ns, 1, &config).await;
    wait_runs(&begun, "a catch-up run of every item began", |r| {
        (0..ITEMS).all(|i| !of(r, "CATCHUP", i).is_empty())
    })
    .await;

    tracing::info!(
        "--- a second node joins and takes items: their runs on the first are cancelled"
    );
    let second = node(&ns, 2, &config).await;
    let connector = ZkConnector::new(zk::backend().config(&ns));
    let ops = Ops::new(connector.connect().await.expect("an operator session"));
    let taken: Vec<u32> = wait::wait_until(
        async || {
            let mut taken = Vec::new();
            for i in 0..ITEMS {
                let path = format!("/reports/sharding/{i}/instance");
                let (owner, _) = ops.registry().get(&path).await.ok()?;
                if owner == b"10.0.0.2@-@2" {
                    taken.push(i);
                }
            }
            (!taken.is_empty()).then_some(taken)
        },
        "the second node owns items",
        WITHIN,
    )
    .await;
    let kept: Vec<u32> = all.iter().copied().filter(|i| !taken.contains(i)).collect();
    // The first node's run ends once its kept items are through; its end write takes back the
    // record of the items that moved, and their new owner catches them up.
    open(&kept);
    wait_runs(
        &begun,
        "the second node's catch-up runs of its items began",
        |r| {
            taken.iter().all(|i| {
                of(r, "CATCHUP", *i)
                    .iter()
                    .any(|r| r.instance == "10.0.0.2")
            })
        },
    )
    .await;
    open(&taken);
    wait_runs(&out, "every item's catch-up ran to its end", |r| {
        (0..ITEMS).all(|i| !of(r, "CATCHUP", i).is_empty())
    })
    .await;
    second.shutdown().await;
    first.shutdown().await;
    let after = runs(&out);
    for i in 0..ITEMS {
        let caught = of(&after, "CATCHUP", i);
        let instants: Vec<_> = caught.iter().map(|r| r.scheduled_at).collect();
        assert_eq!(
            instants,
            vec![Some(missed)],
            "item {i}: one catch-up of the missed instant: {after:#?}"
        );
        let by = if taken.contains(&i) {
            "10.0.0.2"
        } else {
            "10.0.0.1"
        };
        assert_eq!(caught[0].instance, by, "item {i}: caught up by its owner");
    }
}
