//! What an instance mirrors (issue 31): the jobs it runs and the jobs they run after, not the
//! namespace; the whole namespace only for a job that balances over it. On the embedded
//! registry, on paused time.

use std::sync::Arc;
use std::time::Duration;

use support::cluster::{self, every_second, instance, start_node, Recorder};

use shardcron::config::JobConfig;
use shardcron::node::NodeHandle;
use shardcron::{JobSpec, JobType};

const WITHIN: Duration = Duration::from_secs(60);

/// The top-level nodes (jobs) of `node`'s mirror.
fn mirrored_jobs(node: &NodeHandle) -> Vec<String> {
    node.mirror().children("/")
}

fn spec(config: JobConfig, rec: &Recorder) -> JobSpec {
    JobSpec {
        job_type: JobType::Named(config.job_name.clone()),
        config: Arc::new(config),
        handler: rec.handler(Duration::ZERO),
    }
}

/// Waits until each of `jobs` ran an item.
async fn until_each_ran(rec: &Recorder, jobs: &[&str]) {
    rec.wait_until("each job ran an item", WITHIN, |log| {
        jobs.iter().all(|j| log.iter().any(|e| e.job == *j))
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn an_instance_mirrors_the_jobs_it_runs_and_none_of_the_others() {
    let (_server, conn, rec) = cluster::embedded("scope-own");
    let one = rec
        .start(&conn, 1, every_second("a", 1), Duration::ZERO)
        .await;
    let two = rec
        .start(&conn, 2, every_second("b", 1), Duration::ZERO)
        .await;
    until_each_ran(&rec, &["a", "b"]).await;
    assert_eq!(mirrored_jobs(&one), ["a"]);
    assert_eq!(mirrored_jobs(&two), ["b"]);

    tracing::info!("--- a job added at runtime is mirrored before it registers");
    one.add_job(spec(every_second("c", 1), &rec)).await.unwrap();
    until_each_ran(&rec, &["c"]).await;
    assert_eq!(mirrored_jobs(&one), ["a", "c"]);
    assert_eq!(mirrored_jobs(&two), ["b"]);
    one.shutdown().await;
    two.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_job_that_runs_after_another_mirrors_its_upstream_too() {
    let (_server, conn, rec) = cluster::embedded("scope-upstream");
    let up = rec
        .start(&conn, 1, every_second("a", 1), Duration::ZERO)
        .await;
    let down_config = every_second("b", 1).prop("shardcron.after", "a");
    let down = start_node(conn.clone(), instance(2), vec![]).await;
    down.add_job(spec(down_config, &rec)).await.unwrap();
    until_each_ran(&rec, &["a", "b"]).await;
    assert_eq!(mirrored_jobs(&up), ["a"]);
    assert_eq!(mirrored_jobs(&down), ["a", "b"]);
    up.shutdown().await;
    down.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_job_that_balances_over_the_namespace_mirrors_every_job() {
    let (_server, conn, rec) = cluster::embedded("scope-balance");
    let plain = rec
        .start(&conn, 1, every_second("a", 1), Duration::ZERO)
        .await;
    until_each_ran(&rec, &["a"]).await;
    let balanced = every_second("b", 1)
        .sharding_strategy("NAMESPACE_BALANCE")
        .prop("shardcron.only", "true");
    let wide = start_node(
        conn.clone(),
        instance(2),
        vec![(balanced, rec.handler(Duration::ZERO))],
    )
    .await;
    until_each_ran(&rec, &["b"]).await;
    assert_eq!(mirrored_jobs(&plain), ["a"]);
    assert_eq!(mirrored_jobs(&wide), ["a", "b"]);
    plain.shutdown().await;
    wide.shutdown().await;
}
