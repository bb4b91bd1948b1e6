//! The engine's core scenarios on a real ZooKeeper (started by the test, on loopback), in real time:
//! several nodes in this process, each with its own ZooKeeper session.

#[macro_use]
extern crate support;

use support::namespace;
use support::Peer;

use support::cluster;
use support::zk;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use cluster::{
    assignment, complete_fires, every_second, instance, start_node_with_clock, Execution, Recorder,
};
use shardcron::config::JobConfig;
use shardcron::job::ExecutionSource;
use shardcron::node::NodeHandle;
use shardcron::registry::Connector;

const WITHIN: Duration = Duration::from_secs(30);

fn no_item_twice_per_fire(log: &[Execution]) {
    let mut seen = BTreeSet::new();
    for e in log.iter().filter(|e| e.source == ExecutionSource::Normal) {
        assert!(
            seen.insert((e.at.timestamp(), e.item)),
            "item {} ran twice at {}",
            e.item,
            e.at
        );
    }
}

async fn start(rec: &Recorder, conn: &Arc<dyn Connector>, n: u32, job: JobConfig) -> NodeHandle {
    let handler = rec.handler(Duration::ZERO);
    start_node_with_clock(conn.clone(), instance(n), vec![(job, handler)], rec.clock()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_zookeeper_three_instances_share_eight_items_as_the_spec_says() {
    require!(Peer::ZooKeeper);
    cluster::init_tracing();
    let conn = zk::connector(&namespace("engine", "spec"));
    let rec = Recorder::real_time();
    let mut nodes = Vec::new();
    for n in [1, 2, 3] {
        nodes.push(start(&rec, &conn, n, every_second("orders", 8)).await);
    }
    let log = rec
        .wait_until("three complete fires of 8 items", WITHIN, |log| {
            complete_fires(log, 8).len() >= 3
        })
        .await;
    no_item_twice_per_fire(&log);
    let expected: BTreeMap<String, Vec<u32>> = [
        (instance(3).to_string(), vec![0, 1, 6]),
        (instance(2).to_string(), vec![2, 3, 7]),
        (instance(1).to_string(), vec![4, 5]),
    ]
    .into();
    assert_eq!(assignment(&nodes[0], "orders"), expected);
    for n in &nodes {
        n.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_zookeeper_a_joining_instance_and_a_count_change_reshard() {
    require!(Peer::ZooKeeper);
    cluster::init_tracing();
    let conn = zk::connector(&namespace("engine", "reshard"));
    let rec = Recorder::real_time();
    let mut nodes = Vec::new();
    for n in [1, 2] {
        nodes.push(start(&rec, &conn, n, every_second("orders", 4)).await);
    }
    rec.wait_until("a complete fire of 4", WITHIN, |log| {
        !complete_fires(log, 4).is_empty()
    })
    .await;
    tracing::info!("--- a third instance joins");
    nodes.push(start(&rec, &conn, 3, every_second("orders", 4)).await);
    let three = instance(3);
    rec.wait_until("the third instance runs items", WITHIN, |log| {
        log.iter().any(|e| e.instance == three)
    })
    .await;
    assert_eq!(assignment(&nodes[0], "orders").len(), 3);
    tracing::info!("--- the count changes from 4 to 2");
    let admin = conn.connect().await.unwrap();
    let yaml = every_second("orders", 2).to_yaml().unwrap();
    admin
        .set("/orders/config", yaml.as_bytes(), None)
        .await
        .unwrap();
    let before = rec.all().len();
    let log = rec
        .wait_until("two complete fires of 2 items", WITHIN, |log| {
            complete_fires(&log[before..], 2).len() >= 2
        })
        .await;
    no_item_twice_per_fire(&log);
    admin.close().await;
    for n in &nodes {
        n.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_zookeeper_a_graceful_leave_hands_items_to_the_others_at_once() {
    require!(Peer::ZooKeeper);
    cluster::init_tracing();
    let conn = zk::connector(&namespace("engine", "leave"));
    let rec = Recorder::real_time();
    let a = start(&rec, &conn, 1, every_second("orders", 4)).await;
    let b = start(&rec, &conn, 2, every_second("orders", 4)).await;
    rec.wait_until("a complete fire of 4", WITHIN, |log| {
        !complete_fires(log, 4).is_empty()
    })
    .await;
    tracing::info!("--- instance 2 shuts down gracefully");
    b.shutdown().await;
    let before = rec.all().len();
    let two = instance(2);
    // Well within a session timeout: the instance node went with the closed session.
    let log = rec
        .wait_until(
            "instance 1 alone runs all 4 items",
            Duration::from_secs(4),
            |log| !complete_fires(&log[before..], 4).is_empty(),
        )
        .await;
    assert!(log[before..].iter().all(|e| e.instance != two));
    a.shutdown().await;
}
