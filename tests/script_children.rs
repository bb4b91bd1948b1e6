//! Script children are reaped as they end: after items that finish, items that are cancelled and
//! runs that are dropped mid-way, this process has no child left, zombie or alive; and a job's
//! live children are bounded by its own `MAX_CHILDREN`, which leaves another job's alone.
//!
//! One test in its own binary: every child of the process is one of its own.

use support::cluster::item_context;

use std::sync::Arc;
use std::time::Duration;

use shardcron::job::script::{ScriptJob, MAX_CHILDREN};
use shardcron::job::{ItemHandler, JobError, ShardingContext};
use support::wait::wait_until;
use tokio_util::sync::CancellationToken;

fn context(item: u32) -> ShardingContext {
    item_context("reaped", item, 1000)
}

/// This process's children now (zombies included), from `/proc/self/task/*/children`.
fn children() -> Vec<String> {
    let mut found = Vec::new();
    for task in std::fs::read_dir("/proc/self/task")
        .expect("reading /proc/self/task")
        .flatten()
    {
        let text = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
        found.extend(text.split_whitespace().map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            format!("{pid}: {}", stat.chars().take(60).collect::<String>())
        }));
    }
    found
}

/// Waits until the process has no child; fails listing them. The children are other processes:
/// looking at `/proc` is the only way to know.
async fn wait_no_children(after: &str) {
    let check = async || {
        let left = children();
        if left.is_empty() {
            Ok(())
        } else {
            Err(left)
        }
    };
    let what = format!("{after}: every child reaped");
    wait_until(check, &what, Duration::from_secs(10)).await;
}

/// One item of `job`, as a future that owns what it needs.
fn run(
    job: &Arc<ScriptJob>,
    ctx: ShardingContext,
) -> impl std::future::Future<Output = Result<(), JobError>> + Send + 'static {
    let job = job.clone();
    async move { job.run_item(ctx).await }
}

/// Waits until `n` children of `job` live.
async fn wait_live(job: &ScriptJob, n: usize) {
    let check = async || match job.live_children() {
        live if live >= n => Ok(()),
        live => Err(format!("{live} live")),
    };
    let what = format!("{n} script children to start");
    wait_until(check, &what, Duration::from_secs(60)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn script_children_are_reaped_after_finishing_being_cancelled_or_dropped() {
    tracing::info!("--- 300 items that exit at once");
    let quick = ScriptJob::new("/bin/sh -c 'exit 0'").expect("a command line");
    let runs: Vec<_> = (0..300).map(|i| quick.run_item(context(i))).collect();
    for result in futures::future::join_all(runs).await {
        result.expect("the item exits 0");
    }
    assert_eq!(quick.live_children(), 0, "every child slot is free again");
    wait_no_children("after 300 finished items").await;

    tracing::info!("--- 50 items cancelled while they run");
    let slow = Arc::new(ScriptJob::new("/bin/sh -c 'sleep 30'").expect("a command line"));
    let contexts: Vec<ShardingContext> = (0..50).map(context).collect();
    let tokens: Vec<CancellationToken> = contexts.iter().map(|c| c.cancellation.clone()).collect();
    let all = tokio::spawn(futures::future::join_all(
        contexts.into_iter().map(|c| run(&slow, c)),
    ));
    wait_live(&slow, 50).await;
    tokens.iter().for_each(CancellationToken::cancel);
    for result in all.await.expect("the runs' task") {
        assert!(result.is_err(), "a cancelled item fails as cancelled");
    }
    wait_no_children("after 50 cancelled items").await;

    tracing::info!("--- 50 runs dropped while their children run");
    let all = tokio::spawn(futures::future::join_all(
        (0..50).map(|i| run(&slow, context(i))),
    ));
    wait_live(&slow, 50).await;
    all.abort();
    let _ = all.await;
    assert_eq!(slow.live_children(), 0, "a dropped run gives its slot back");
    wait_no_children("after 50 dropped runs").await;

    tracing::info!("--- a job's items beyond its bound wait; another job's children do not");
    let all = tokio::spawn(futures::future::join_all(
        (0..MAX_CHILDREN as u32 + 20).map(|i| run(&slow, context(i))),
    ));
    wait_live(&slow, MAX_CHILDREN).await;
    let other = ScriptJob::new("/bin/sh -c 'exit 0'").expect("a command line");
    other
        .run_item(context(0))
        .await
        .expect("another job runs beside a saturated one");
    assert_eq!(slow.live_children(), MAX_CHILDREN, "no more than its bound");
    assert!(
        children().len() <= MAX_CHILDREN + 1,
        "the items beyond the bound did not fork: {} children",
        children().len()
    );
    all.abort();
    let _ = all.await;
    wait_no_children("after 50 dropped runs").await;
}
