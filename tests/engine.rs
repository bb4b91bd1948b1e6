//! The engine on the embedded registry, on paused time: several instances of one job in one
//! process, observed through what the job's handler records.

use support::cluster;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use cluster::{
    assignment, complete_fires, every_second, instance, start_node, start_nodes, Recorder,
};
use shardcron::config::JobConfig;
use shardcron::job::ExecutionSource;
use shardcron::node::NodeHandle;
use shardcron::registry::{Connector, Registry};
use shardcron::ShardItem;

const WITHIN: Duration = Duration::from_secs(60);

/// Writes `yaml` as the `orders` config, then waits for four complete fires after the write;
/// returns their seconds.
async fn fires_after_writing(
    admin: &Arc<dyn Registry>,
    rec: &Recorder,
    yaml: &str,
    what: &str,
) -> Vec<i64> {
    admin
        .set("/orders/config", yaml.as_bytes(), None)
        .await
        .unwrap();
    let start = rec.all().len();
    let log = rec
        .wait_until(what, WITHIN, |log| {
            complete_fires(&log[start..], 2).len() >= 4
        })
        .await;
    complete_fires(&log[start..], 2)
}

/// Asserts that `fires` after the first come `every` seconds apart.
fn assert_spaced(fires: &[i64], every: i64, what: &str) {
    for w in fires[1..].windows(2) {
        assert_eq!(w[1] - w[0], every, "{what}: {fires:?}");
    }
}

/// Instance 1 running `orders` (2 items every second), once it completed a fire.
async fn orders_at_work(conn: &Arc<dyn Connector>, rec: &Recorder) -> NodeHandle {
    let node = rec
        .start(conn, 1, every_second("orders", 2), Duration::ZERO)
        .await;
    rec.wait_until("a complete fire", WITHIN, |log| {
        !complete_fires(log, 2).is_empty()
    })
    .await;
    node
}

#[tokio::test(start_paused = true)]
async fn three_instances_share_eight_items_as_the_spec_says_and_each_item_runs_once_per_fire() {
    let (_server, conn, rec) = cluster::embedded("engine");
    tracing::info!("--- three instances join");
    let mut nodes = Vec::new();
    for n in [1, 2, 3] {
        let job = (every_second("orders", 8), rec.handler(Duration::ZERO));
        nodes.push(start_node(conn.clone(), instance(n), vec![job]).await);
    }
    tracing::info!("--- wait for ten complete fires after sharding settles");
    let log = rec
        .wait_until("ten fires with all 8 items each", WITHIN, |log| {
            complete_fires(log, 8).len() >= 10
        })
        .await;
    let plan = assignment(&nodes[0], "orders");
    let expected: BTreeMap<String, Vec<u32>> = [
        (instance(3).to_string(), vec![0, 1, 6]),
        (instance(2).to_string(), vec![2, 3, 7]),
        (instance(1).to_string(), vec![4, 5]),
    ]
    .into();
    assert_eq!(
        plan, expected,
        "AVG_ALLOCATION over instances in descending order"
    );
    // No item ran twice for one fire.
    let mut seen = BTreeSet::new();
    for e in &log {
        assert!(
            seen.insert((e.at.timestamp(), e.item)),
            "item {} ran twice at {}",
            e.item,
            e.at
        );
    }
    for n in &nodes {
        n.shutdown().await;
    }
}

#[tokio::test(start_paused = true)]
async fn a_fourth_instance_joining_gets_items_at_the_next_fire() {
    let (_server, conn, rec) = cluster::embedded("engine");
    let mut nodes = start_nodes(
        &conn,
        &[1, 2, 3],
        &every_second("orders", 8),
        &rec,
        Duration::ZERO,
    )
    .await;
    rec.wait_until("a complete fire", WITHIN, |log| {
        !complete_fires(log, 8).is_empty()
    })
    .await;
    tracing::info!("--- a fourth instance joins");
    nodes.push(
        rec.start(&conn, 4, every_second("orders", 8), Duration::ZERO)
            .await,
    );
    let four = instance(4);
    rec.wait_until("the fourth instance runs items", WITHIN, |log| {
        log.iter().any(|e| e.instance == four)
    })
    .await;
    let plan = assignment(&nodes[0], "orders");
    assert_eq!(plan.len(), 4, "four owners after the reshard: {plan:?}");
    assert!(
        plan.values().all(|v| v.len() == 2),
        "eight items over four instances: {plan:?}"
    );
    for n in &nodes {
        n.shutdown().await;
    }
}

#[tokio::test(start_paused = true)]
async fn a_count_change_in_the_registry_reshards_from_eight_to_three_items() {
    let (_server, conn, rec) = cluster::embedded("engine");
    let nodes = start_nodes(
        &conn,
        &[1, 2],
        &every_second("orders", 8),
        &rec,
        Duration::ZERO,
    )
    .await;
    rec.wait_until("a complete fire of 8", WITHIN, |log| {
        !complete_fires(log, 8).is_empty()
    })
    .await;
    tracing::info!("--- an operator changes shardingTotalCount to 3");
    let admin = conn.connect().await.unwrap();
    let yaml = every_second("orders", 3).to_yaml().unwrap();
    admin
        .set("/orders/config", yaml.as_bytes(), None)
        .await
        .unwrap();
    let before = rec.all().len();
    rec.wait_until("runs with total 3", WITHIN, |log| {
        log[before..].iter().filter(|e| e.total == 3).count() >= 6
    })
    .await;
    let after = rec.all();
    let last = after.last().unwrap().at.timestamp();
    assert!(after
        .iter()
        .filter(|e| e.total == 3)
        .all(|e| e.item < ShardItem(3)));
    assert!(complete_fires(&after, 3).iter().any(|f| *f <= last));
    assert_eq!(
        assignment(&nodes[0], "orders")
            .values()
            .map(Vec::len)
            .sum::<usize>(),
        3
    );
    for n in &nodes {
        n.shutdown().await;
    }
}

#[tokio::test(start_paused = true)]
async fn disabling_a_server_moves_its_items_to_the_others() {
    let (_server, conn, rec) = cluster::embedded("engine");
    let nodes = start_nodes(
        &conn,
        &[1, 2, 3],
        &every_second("orders", 6),
        &rec,
        Duration::ZERO,
    )
    .await;
    rec.wait_until("a complete fire", WITHIN, |log| {
        !complete_fires(log, 6).is_empty()
    })
    .await;
    tracing::info!(
        "--- the operator disables the server of instance 3 (the first in sharding order)"
    );
    let admin = conn.connect().await.unwrap();
    admin
        .set(
            &format!("/orders/servers/{}", instance(3).ip()),
            b"DISABLED",
            None,
        )
        .await
        .unwrap();
    let before = rec.all().len();
    let three = instance(3);
    rec.wait_until("three complete fires without instance 3", WITHIN, |log| {
        let recent = &log[before..];
        let fires = complete_fires(recent, 6);
        fires.len() >= 3
            && recent
                .iter()
                .filter(|e| fires[1..].contains(&e.at.timestamp()))
                .all(|e| e.instance != three)
    })
    .await;
    let plan = assignment(&nodes[0], "orders");
    assert!(
        !plan.contains_key(three.as_str()),
        "disabled instance keeps no items: {plan:?}"
    );
    for n in &nodes {
        n.shutdown().await;
    }
}

#[tokio::test(start_paused = true)]
async fn fires_missed_while_the_item_runs_are_made_up_once_after_the_run() {
    let (_server, conn, rec) = cluster::embedded("engine");
    // The first run takes 3.5 s of a 1 s cron, so three fires are missed; later runs are instant.
    let slow_once = {
        let inner = rec.handler(Duration::ZERO);
        let first = Arc::new(std::sync::atomic::AtomicBool::new(true));
        Arc::new(shardcron::job::FnJob(
            move |ctx: shardcron::job::ShardingContext| {
                let (inner, first) = (inner.clone(), first.clone());
                async move {
                    inner.run_item(ctx).await?;
                    if first.swap(false, std::sync::atomic::Ordering::SeqCst) {
                        tokio::time::sleep(Duration::from_millis(3500)).await;
                    }
                    Ok(())
                }
            },
        )) as shardcron::job::SharedHandler
    };
    let node = start_node(
        conn.clone(),
        instance(1),
        vec![(every_second("slow", 1), slow_once)],
    )
    .await;
    let log = rec
        .wait_until(
            "the catch-up and three normal fires after it",
            WITHIN,
            |log| {
                log.iter()
                    .skip_while(|e| e.source != ExecutionSource::Misfire)
                    .count()
                    >= 4
            },
        )
        .await;
    let sources: Vec<_> = log.iter().map(|e| e.source).collect();
    let misfires = sources
        .iter()
        .filter(|s| **s == ExecutionSource::Misfire)
        .count();
    assert_eq!(misfires, 1, "three missed fires, one catch-up: {sources:?}");
    let first = &log[0];
    let catch_up = log
        .iter()
        .find(|e| e.source == ExecutionSource::Misfire)
        .unwrap();
    assert_eq!(
        catch_up.at - first.at,
        chrono::Duration::milliseconds(3500),
        "right after the run"
    );
    node.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_manual_trigger_runs_every_item_once_and_a_one_off_job_runs_only_when_triggered() {
    let (_server, conn, rec) = cluster::embedded("engine");
    let job = || {
        (
            JobConfig::new("once", 4).one_off(),
            rec.handler(Duration::ZERO),
        )
    };
    let a = start_node(conn.clone(), instance(1), vec![job()]).await;
    let b = start_node(conn.clone(), instance(2), vec![job()]).await;
    tokio::time::sleep(Duration::from_secs(5)).await; // paused time: lets any (wrong) fire happen
    assert!(rec.all().is_empty(), "a one-off job never fires by itself");
    tracing::info!("--- trigger through the API on both instances");
    let name = shardcron::JobName::new("once").unwrap();
    a.trigger(&name).await.unwrap();
    b.trigger(&name).await.unwrap();
    let log = rec
        .wait_until("all four items", WITHIN, |log| log.len() >= 4)
        .await;
    let items: BTreeSet<u32> = log.iter().map(|e| e.item.0).collect();
    assert_eq!(items, (0..4).collect(), "every item once: {log:?}");
    assert!(log.iter().all(|e| e.source == ExecutionSource::Manual));
    tracing::info!("--- trigger through the registry's trigger/{{instanceId}} nodes");
    let admin = conn.connect().await.unwrap();
    for n in [1, 2] {
        admin
            .ensure_path(&format!("/once/trigger/{}", instance(n)))
            .await
            .unwrap();
    }
    rec.wait_until("four more items", WITHIN, |log| log.len() >= 8)
        .await;
    assert!(
        admin.children("/once/trigger").await.unwrap().is_empty(),
        "each instance takes its trigger node"
    );
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(rec.all().len(), 8, "no item ran twice");
    a.shutdown().await;
    b.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn killed_engine_actors_are_restarted_and_back_at_work() {
    let (_server, conn, rec) = cluster::embedded("engine");
    let node = orders_at_work(&conn, &rec).await;
    for what in ["trigger", "executor", "leader", "sharding"] {
        tracing::info!("--- kill the {what} actor");
        let cell = match what {
            "executor" => node
                .executor(&shardcron::JobName::new("orders").unwrap())
                .await
                .expect("the job's executor"),
            _ => ractor::registry::where_is(node.actor_name(what)).expect("actor is registered"),
        };
        cell.kill();
        rec.wait_more_fires(
            &format!("two more complete fires after killing {what}"),
            2,
            2,
            WITHIN,
        )
        .await;
    }
    node.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_killed_session_actor_is_rebuilt_and_its_old_executor_is_gone_beside_the_new_one() {
    let (_server, conn, rec) = cluster::embedded("engine");
    let node = orders_at_work(&conn, &rec).await;
    let orders = shardcron::JobName::new("orders").unwrap();
    let old = node.executor(&orders).await.expect("the job's executor");
    tracing::info!(
        "--- kill the session actor: ractor kills its subtree, the registry rebuilds it"
    );
    let session = ractor::registry::where_is(node.actor_name("session-1"))
        .expect("the first session actor is registered");
    session.kill();
    let log = rec
        .wait_more_fires(
            "two more complete fires after killing the session actor",
            2,
            2,
            WITHIN,
        )
        .await;
    let new = node
        .executor(&orders)
        .await
        .expect("the rebuilt session's executor");
    assert_ne!(
        new.get_id(),
        old.get_id(),
        "the executor is the new subtree's"
    );
    assert_eq!(
        old.get_status(),
        ractor::ActorStatus::Stopped,
        "the old executor (unnamed, never waited for by name) is gone"
    );
    let mut seen = BTreeSet::new();
    for e in &log {
        assert!(
            seen.insert((e.at.timestamp(), e.item)),
            "item {} ran twice at {}",
            e.item,
            e.at
        );
    }
    node.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn invalid_config_in_the_registry_is_reported_and_the_last_valid_one_kept() {
    let (_server, conn, rec) = cluster::embedded("engine");
    let node = orders_at_work(&conn, &rec).await;
    let admin = conn.connect().await.unwrap();
    tracing::info!("--- someone writes YAML that does not parse, then a config with a bad cron");
    admin
        .set(
            "/orders/config",
            b"jobName: orders\nshardingTotalCount: [oops",
            None,
        )
        .await
        .unwrap();
    rec.wait_more_fires("fires go on with the last valid config", 2, 3, WITHIN)
        .await;
    let bad_cron = every_second("orders", 2)
        .cron("61 * * * * ?")
        .to_yaml()
        .unwrap();
    admin
        .set("/orders/config", bad_cron.as_bytes(), None)
        .await
        .unwrap();
    rec.wait_more_fires("fires go on after a bad cron", 2, 3, WITHIN)
        .await;
    tracing::info!("--- a valid change to every 5 seconds reschedules");
    let slower = JobConfig::new("orders", 2)
        .cron("0/5 * * * * ?")
        .time_zone("GMT")
        .to_yaml()
        .unwrap();
    let fires = fires_after_writing(&admin, &rec, &slower, "three fires on the new cron").await;
    assert_spaced(&fires, 5, "every 5 seconds after the change");
    node.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_config_whose_job_name_differs_from_its_path_is_refused_on_reload() {
    let (_server, conn, rec) = cluster::embedded("engine");
    let node = orders_at_work(&conn, &rec).await;
    tracing::info!("--- someone stores billing's config (every 5 s) under /orders/config");
    let renamed = JobConfig::new("billing", 2)
        .cron("0/5 * * * * ?")
        .time_zone("GMT")
        .to_yaml()
        .unwrap();
    let admin = conn.connect().await.unwrap();
    let what = "fires go on every second with the last valid config";
    let fires = fires_after_writing(&admin, &rec, &renamed, what).await;
    assert_spaced(&fires, 1, "the renamed config is not applied");
    node.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_leave_is_resharded_even_while_a_stale_processing_mark_stands() {
    let (_server, conn, rec) = cluster::embedded("engine");
    let mut nodes = start_nodes(
        &conn,
        &[1, 2],
        &every_second("orders", 4),
        &rec,
        Duration::ZERO,
    )
    .await;
    rec.wait_until("a complete fire", WITHIN, |log| {
        !complete_fires(log, 4).is_empty()
    })
    .await;
    tracing::info!("--- another session marks sharding as processing, then instance 2 leaves");
    // What a leader that died mid-way leaves until its session ends (a Java leader marks
    // `processing` before it computes its plan): the plan of one write must not fail on it for good.
    let other = conn.connect().await.unwrap();
    other
        .create(
            "/orders/leader/sharding/processing",
            b"",
            shardcron::registry::CreateMode::Ephemeral,
        )
        .await
        .unwrap();
    nodes.pop().unwrap().shutdown().await;
    let one = instance(1);
    let before = rec.all().len();
    rec.wait_until("two complete fires by instance 1 alone", WITHIN, |log| {
        let recent = &log[before..];
        complete_fires(recent, 4).len() >= 2 && recent.iter().all(|e| e.instance == one)
    })
    .await;
    let plan = assignment(&nodes[0], "orders");
    assert_eq!(
        plan.get(one.as_str()).map(Vec::len),
        Some(4),
        "every item with instance 1: {plan:?}"
    );
    assert!(
        !nodes[0]
            .mirror()
            .exists("/orders/leader/sharding/processing"),
        "the commit took the stale processing mark down"
    );
    nodes[0].shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_node_given_utc_or_a_bare_offset_writes_the_zone_in_javas_spelling_and_runs() {
    let (_server, conn, rec) = cluster::embedded("engine");
    let jobs = vec![
        (
            every_second("utc", 1).time_zone("UTC"),
            rec.handler(Duration::ZERO),
        ),
        (
            every_second("east", 1).time_zone("+08:00"),
            rec.handler(Duration::ZERO),
        ),
    ];
    let node = start_node(conn.clone(), instance(1), jobs).await;
    rec.wait_until("both jobs ran", WITHIN, |log| {
        ["utc", "east"]
            .iter()
            .all(|job| log.iter().any(|e| e.job == *job))
    })
    .await;
    let admin = conn.connect().await.unwrap();
    for (job, stored) in [("utc", "GMT"), ("east", "GMT+08:00")] {
        let (yaml, _) = admin.get(&format!("/{job}/config")).await.unwrap();
        let config = JobConfig::from_yaml(std::str::from_utf8(&yaml).unwrap()).unwrap();
        assert_eq!(config.time_zone.as_deref(), Some(stored), "{job}");
        assert!(config.check_java_readable().is_ok(), "{job}");
    }
    node.shutdown().await;
}

/// A handler that records each execution, then panics for the items `panics` names.
fn panicking(rec: &Recorder, panics: &'static [u32]) -> shardcron::job::SharedHandler {
    let inner = rec.handler(Duration::ZERO);
    Arc::new(shardcron::job::FnJob(
        move |ctx: shardcron::job::ShardingContext| {
            let inner = inner.clone();
            async move {
                let item = ctx.sharding_item;
                inner.run_item(ctx).await?;
                if panics.contains(&item.0) {
                    panic!("item {} panics on purpose", item.0);
                }
                Ok(())
            }
        },
    )) as shardcron::job::SharedHandler
}

#[tokio::test(start_paused = true)]
async fn an_item_that_panics_fails_alone_and_its_job_fires_again_whether_alone_in_its_run_or_not() {
    let (_server, conn, rec) = cluster::embedded("engine");
    // One item: it runs in the run's own task, whose panic must still end the run.
    let alone = (every_second("alone", 1), panicking(&rec, &[0]));
    // Two items, item 0 panicking: each runs in its own task, item 1 is not held back.
    let pair = (every_second("pair", 2), panicking(&rec, &[0]));
    let node = start_node(conn.clone(), instance(1), vec![alone, pair]).await;
    let log = rec
        .wait_until(
            "three fires of each job after their panics",
            WITHIN,
            |log| {
                let fires = |job: &str, item: u32| {
                    let of = |e: &&cluster::Execution| e.job == job && e.item == ShardItem(item);
                    log.iter().filter(of).count()
                };
                fires("alone", 0) >= 3 && fires("pair", 0) >= 3 && fires("pair", 1) >= 3
            },
        )
        .await;
    let alone: BTreeSet<_> = (log.iter().filter(|e| e.job == "alone"))
        .map(|e| e.at)
        .collect();
    assert!(alone.len() >= 3, "a fire each second, not one: {alone:?}");
    node.shutdown().await;
}
