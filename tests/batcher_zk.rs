//! The session's write batcher (several shared multi-ops in flight, never two holding one job)
//! and the feed's forwarding (every queued event in one message) on a real ZooKeeper: jobs that
//! fire together run every item of every fire, and every `running` marker is written and removed.

#[macro_use]
extern crate support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use shardcron::job::ExecutionSource;
use shardcron::registry::zookeeper::ZkConnector;
use shardcron::registry::{Connector, OpKind};
use support::cluster::{self, every_second, instance, start_node, Execution, Recorder};
use support::{namespace, zk, Peer};

const JOBS: usize = 40;
const ITEMS: u32 = 3;

/// The fires (as seconds) in which every item of every job ran.
fn full_fires(log: &[Execution]) -> usize {
    let mut per_fire: BTreeMap<i64, usize> = BTreeMap::new();
    for e in log.iter().filter(|e| e.source == ExecutionSource::Normal) {
        *per_fire.entry(e.at.timestamp()).or_default() += 1;
    }
    let all = JOBS * ITEMS as usize;
    per_fire.values().filter(|n| **n == all).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_zookeeper_jobs_firing_together_run_every_item_and_every_marker_comes_and_goes() {
    require!(Peer::ZooKeeper);
    cluster::init_tracing();
    let ns = namespace("batcher", "markers");
    let zk = Arc::new(ZkConnector::new(zk::backend().config(&ns)));
    let rec = Recorder::real_time();
    let jobs = (0..JOBS)
        .map(|i| {
            let job = every_second(&format!("m{i}"), ITEMS as i32).monitor_execution(true);
            (job, rec.handler(Duration::ZERO))
        })
        .collect();
    let node = start_node(zk.clone(), instance(1), jobs).await;
    let log = rec
        .wait_until(
            "three fires in which every item of every job ran",
            Duration::from_secs(60),
            |log| full_fires(log) >= 3,
        )
        .await;
    node.shutdown().await;
    let counts = zk.op_counts();
    let runs = log
        .iter()
        .filter(|e| e.source == ExecutionSource::Normal)
        .count() as u64;
    // Every item run had its marker created (and the markers of a job's fire went in multi-ops)...
    assert!(
        counts.applied(OpKind::Create) >= runs,
        "{} creates for {runs} item runs",
        counts.applied(OpKind::Create)
    );
    assert!(counts.in_multis(OpKind::Create) > 0);
    // ...and removed: none is left once the node has stopped.
    let session = zk.connect().await.expect("a session");
    for i in 0..JOBS {
        for item in 0..ITEMS {
            let marker = format!("/m{i}/sharding/{item}/running");
            assert!(
                session.exists(&marker).await.unwrap().is_none(),
                "{marker} is left"
            );
        }
    }
    session.close().await;
}
