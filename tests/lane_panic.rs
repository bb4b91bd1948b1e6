//! A lane task that panics reports a failure and frees its slot, and the job is retried (issue
//! 17): a user `ShardingStrategy` that panics on its first calls runs inside the sharding lane.

use support::cluster;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use cluster::{complete_fires, every_second, instance, origin};
use shardcron::clock::TokioClock;
use shardcron::node::NodeBuilder;
use shardcron::sharding::{ShardingPlan, ShardingStrategy, StrategyRegistry};
use shardcron::{InstanceId, JobName, JobSpec, JobType, NodeOptions, ShardItem};

const WITHIN: Duration = Duration::from_secs(60);

/// Panics on its first `panics` calls, then gives every item to the first instance.
#[derive(Debug)]
struct Explodes {
    panics: usize,
    calls: AtomicUsize,
}

impl ShardingStrategy for Explodes {
    fn shard(&self, instances: &[InstanceId], _job: &JobName, total: u32) -> ShardingPlan {
        let call = self.calls.fetch_add(1, Ordering::SeqCst);
        if call < self.panics {
            panic!("user strategy exploded on call {call}");
        }
        let mut plan: ShardingPlan = instances.iter().map(|i| (i.clone(), Vec::new())).collect();
        if let Some(first) = instances.first() {
            plan.insert(first.clone(), (0..total).map(ShardItem).collect());
        }
        plan
    }
}

#[tokio::test(start_paused = true)]
async fn a_sharding_strategy_that_panics_frees_its_lane_and_the_job_is_sharded_on_a_retry() {
    let (_server, conn, rec) = cluster::embedded("lane-panic");
    let strategy = Arc::new(Explodes {
        panics: 2,
        calls: AtomicUsize::new(0),
    });
    let mut strategies = StrategyRegistry::new();
    strategies
        .register("EXPLODES", strategy.clone())
        .expect("a new name");
    tracing::info!("--- a node whose job's strategy panics twice, beside a healthy job");
    let node = NodeBuilder::new(conn)
        .instance_id(instance(1))
        .clock(Arc::new(TokioClock::starting_at(origin())))
        .options(NodeOptions {
            shutdown_timeout: Duration::from_secs(5),
            ..NodeOptions::default()
        })
        .strategies(strategies)
        .job_spec(JobSpec {
            config: std::sync::Arc::new(every_second("fragile", 3).sharding_strategy("EXPLODES")),
            job_type: JobType::Named("recorded".into()),
            handler: rec.handler(Duration::ZERO),
        })
        .job_spec(JobSpec {
            config: std::sync::Arc::new(every_second("healthy", 2)),
            job_type: JobType::Named("recorded".into()),
            handler: rec.handler(Duration::ZERO),
        })
        .start()
        .await
        .expect("node starts");

    tracing::info!("--- after the panics, the job is sharded and every item runs");
    rec.wait_until("a complete fire of fragile's 3 items", WITHIN, |log| {
        let fragile: Vec<_> = log.iter().filter(|e| e.job == "fragile").cloned().collect();
        !complete_fires(&fragile, 3).is_empty()
    })
    .await;
    assert!(
        strategy.calls.load(Ordering::SeqCst) > 2,
        "the strategy was called again after panicking twice"
    );
    let healthy: BTreeMap<i64, usize> =
        rec.all()
            .iter()
            .filter(|e| e.job == "healthy")
            .fold(BTreeMap::new(), |mut m, e| {
                *m.entry(e.at.timestamp()).or_default() += 1;
                m
            });
    assert!(!healthy.is_empty(), "the healthy job ran meanwhile");
    node.shutdown().await;
}
