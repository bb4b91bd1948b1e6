//! The engine on the embedded registry, on paused time: several instances of one job in one
//! process, observed through what the job's handler records.

#[allow(dead_code)]
#[path = "support/cluster.rs"]
mod cluster;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use shardcron::config::JobConfig;
use shardcron::registry::embedded::EmbeddedServer;
use shardcron::registry::Connector;
use shardcron::ShardItem;
use cluster::{assignment, instance, start_node, Execution, Recorder};

const WITHIN: Duration = Duration::from_secs(60);

fn every_second(name: &str, items: i32) -> JobConfig {
    JobConfig::new(name, items).cron("* * * * * ?").time_zone("UTC")
}

/// Fires (cron instants, as seconds) at which every item in `0..items` ran exactly once.
fn complete_fires(log: &[Execution], items: u32) -> Vec<i64> {
    let mut by_fire: BTreeMap<i64, Vec<u32>> = BTreeMap::new();
    for e in log.iter().filter(|e| e.source == shardcron::job::ExecutionSource::Normal) {
        by_fire.entry(e.at.timestamp()).or_default().push(e.item.0);
    }
    by_fire
        .into_iter()
        .filter(|(_, v)| {
            let mut v = v.clone();
            v.sort();
            v == (0..items).collect::<Vec<_>>()
        })
        .map(|(k, _)| k)
        .collect()
}

#[tokio::test(start_paused = true)]
async fn three_instances_share_eight_items_as_the_spec_says_and_each_item_runs_once_per_fire() {
    cluster::init_tracing();
    let server = EmbeddedServer::new();
    let conn: Arc<dyn Connector> = Arc::new(server.connector("engine"));
    let rec = Recorder::default();
    tracing::info!("--- three instances join");
    let mut nodes = Vec::new();
    for n in [1, 2, 3] {
        let job = (every_second("orders", 8), rec.handler(Duration::ZERO));
        nodes.push(start_node(conn.clone(), instance(n), vec![job]).await);
    }
    tracing::info!("--- wait for ten complete fires after sharding settles");
    let log = rec
        .wait_until("ten fires with all 8 items each", WITHIN, |log| complete_fires(log, 8).len() >= 10)
        .await;
    let plan = assignment(&nodes[0], "orders");
    let expected: BTreeMap<String, Vec<u32>> = [
        (instance(3).to_string(), vec![0, 1, 6]),
        (instance(2).to_string(), vec![2, 3, 7]),
        (instance(1).to_string(), vec![4, 5]),
    ]
    .into();
    assert_eq!(plan, expected, "AVG_ALLOCATION over instances in descending order");
    // No item ran twice for one fire.
    let mut seen = BTreeSet::new();
    for e in &log {
        assert!(seen.insert((e.at.timestamp(), e.item)), "item {} ran twice at {}", e.item, e.at);
    }
    for n in &nodes {
        n.shutdown().await;
    }
}

#[tokio::test(start_paused = true)]
async fn a_fourth_instance_joining_gets_items_at_the_next_fire() {
    cluster::init_tracing();
    let server = EmbeddedServer::new();
    let conn: Arc<dyn Connector> = Arc::new(server.connector("engine"));
    let rec = Recorder::default();
    let mut nodes = Vec::new();
    for n in [1, 2, 3] {
        nodes.push(start_node(conn.clone(), instance(n), vec![(every_second("orders", 8), rec.handler(Duration::ZERO))]).await);
    }
    rec.wait_until("a complete fire", WITHIN, |log| !complete_fires(log, 8).is_empty()).await;
    tracing::info!("--- a fourth instance joins");
    nodes.push(start_node(conn.clone(), instance(4), vec![(every_second("orders", 8), rec.handler(Duration::ZERO))]).await);
    let four = instance(4);
    rec.wait_until("the fourth instance runs items", WITHIN, |log| log.iter().any(|e| e.instance == four)).await;
    let plan = assignment(&nodes[0], "orders");
    assert_eq!(plan.len(), 4, "four owners after the reshard: {plan:?}");
    assert!(plan.values().all(|v| v.len() == 2), "eight items over four instances: {plan:?}");
    for n in &nodes {
        n.shutdown().await;
    }
}

#[tokio::test(start_paused = true)]
async fn a_count_change_in_the_registry_reshards_from_eight_to_three_items() {
    cluster::init_tracing();
    let server = EmbeddedServer::new();
    let conn: Arc<dyn Connector> = Arc::new(server.connector("engine"));
    let rec = Recorder::default();
    let mut nodes = Vec::new();
    for n in [1, 2] {
        nodes.push(start_node(conn.clone(), instance(n), vec![(every_second("orders", 8), rec.handler(Duration::ZERO))]).await);
    }
    rec.wait_until("a complete fire of 8", WITHIN, |log| !complete_fires(log, 8).is_empty()).await;
    tracing::info!("--- an operator changes shardingTotalCount to 3");
    let admin = conn.connect().await.unwrap();
    let yaml = every_second("orders", 3).to_yaml().unwrap();
    admin.set("/orders/config", yaml.as_bytes(), None).await.unwrap();
    let before = rec.all().len();
    rec.wait_until("runs with total 3", WITHIN, |log| {
        log[before..].iter().filter(|e| e.total == 3).count() >= 6
    })
    .await;
    let after = rec.all();
    let last = after.last().unwrap().at.timestamp();
    assert!(after.iter().filter(|e| e.total == 3).all(|e| e.item < ShardItem(3)));
    assert!(complete_fires(&after, 3).iter().any(|f| *f <= last));
    assert_eq!(assignment(&nodes[0], "orders").values().map(Vec::len).sum::<usize>(), 3);
    for n in &nodes {
        n.shutdown().await;
    }
}
