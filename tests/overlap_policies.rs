//! Overlap policies (`shardcron.overlap`) end to end: a job on a real ZooKeeper whose script item
//! is slower than its cron (every second) runs under each policy, and the execution history shows
//! what each did with the fires that found the item still running.

#[macro_use]
extern crate support;

use support::cluster::init_tracing;
use support::namespace;
use support::policy_node::{records, start, WITHIN};
use support::{wait, Peer};

use shardcron::config::JobConfig;
use shardcron::history::ExecutionRecord;

/// The first `count` finished executions of the script job `slow` firing every second under
/// `config`'s overlap policy: in start order.
async fn finished_runs(config: JobConfig, count: usize) -> Vec<ExecutionRecord> {
    let dir = tempfile::tempdir().unwrap();
    let config = config.cron("* * * * * ?").time_zone("GMT");
    let overlap = config.props["shardcron.overlap"].clone();
    let (node, history, recording) =
        start(&namespace("policies", &overlap), config, dir.path()).await;
    let finished =
        |all: &[ExecutionRecord]| all.iter().filter(|r| r.complete_time.is_some()).count();
    wait::wait_until(
        async || finished(&records(&history, "slow").await) >= count,
        &format!("{count} runs ended under {overlap}"),
        WITHIN,
    )
    .await;
    node.shutdown().await;
    recording.close().await;
    let mut all: Vec<ExecutionRecord> = records(&history, "slow")
        .await
        .into_iter()
        .filter(|r| r.complete_time.is_some())
        .collect();
    history.close().await;
    all.sort_by_key(|r| r.start_time);
    all.truncate(count);
    all
}

/// Whether some run started while the one before it still ran.
fn overlapping(runs: &[ExecutionRecord]) -> bool {
    runs.windows(2)
        .any(|pair| pair[1].start_time < pair[0].complete_time.unwrap())
}

/// The finished executions of a job whose item takes 2.5 s and fires every second, under
/// `overlap`, over about 8 s: in start order, none beside another.
async fn slow_item_under(overlap: shardcron::config::Overlap) -> Vec<ExecutionRecord> {
    let config = JobConfig::new("slow", 1)
        .script_command_line("/bin/sh -c 'sleep 2.5'")
        .overlap(overlap);
    let all = finished_runs(config, 3).await;
    assert!(
        !overlapping(&all),
        "{overlap:?}: a run started beside the previous one: {all:#?}"
    );
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_slow_item_skip_drops_fires_buffer_one_runs_one_after_and_cancel_other_cancels() {
    use shardcron::config::Overlap;
    init_tracing();

    tracing::info!("--- skip: fires that find the item running run nothing");
    let skip = slow_item_under(Overlap::Skip).await;
    assert!(
        skip.iter()
            .all(|r| r.is_success && r.execution_source == "NORMAL_TRIGGER"),
        "{skip:#?}"
    );

    tracing::info!("--- buffer_one: the fire missed meanwhile runs once the run ends");
    let one = slow_item_under(Overlap::BufferOne).await;
    assert!(
        one.iter().any(|r| r.execution_source == "MISFIRE"),
        "{one:#?}"
    );
    assert!(one.iter().all(|r| r.is_success), "{one:#?}");

    tracing::info!("--- cancel_other: the next fire cancels the running item, then runs it");
    let cancel = slow_item_under(Overlap::CancelOther).await;
    assert!(
        cancel.iter().any(|r| !r.is_success
            && r.failure_cause
                .as_deref()
                .is_some_and(|c| c.contains("cancel"))),
        "{cancel:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_slow_first_run_buffer_all_runs_each_fire_it_kept_one_after_another() {
    use shardcron::config::Overlap;
    require!(Peer::ZooKeeper);
    init_tracing();
    let dir = tempfile::tempdir().unwrap();
    tracing::info!("--- the first run takes 4.3 s (four fires come meanwhile), the others no time");
    let line = format!(
        "/bin/sh -c 'if [ ! -e {m} ]; then touch {m}; sleep 4.3; fi'",
        m = dir.path().join("ran").display()
    );
    let bound = std::num::NonZeroU32::new(2).unwrap();
    let config = JobConfig::new("slow", 1)
        .script_command_line(&line)
        .overlap(Overlap::BufferAll(bound));
    let runs = finished_runs(config, 5).await;
    let sources: Vec<&str> = runs.iter().map(|r| r.execution_source.as_str()).collect();
    tracing::info!(
        "--- two of the fires are kept (the bound) and run right after, the rest missed"
    );
    assert_eq!(
        sources,
        [
            "NORMAL_TRIGGER",
            "MISFIRE",
            "MISFIRE",
            "NORMAL_TRIGGER",
            "NORMAL_TRIGGER"
        ],
        "{runs:#?}"
    );
    assert!(!overlapping(&runs), "one at a time: {runs:#?}");
    let caught_up = runs[2].complete_time.unwrap() - runs[0].complete_time.unwrap();
    assert!(
        caught_up < chrono::TimeDelta::milliseconds(900),
        "the kept fires ran back to back, before the next fire: {runs:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_slow_item_allow_all_starts_each_fire_beside_the_runs_still_going() {
    use shardcron::config::Overlap;
    require!(Peer::ZooKeeper);
    init_tracing();
    let config = JobConfig::new("slow", 1)
        .script_command_line("/bin/sh -c 'sleep 2.5'")
        .monitor_execution(false)
        .overlap(Overlap::AllowAll);
    let runs = finished_runs(config, 3).await;
    tracing::info!("--- every fire ran, each beside the one before, each its own history row");
    assert!(overlapping(&runs), "{runs:#?}");
    assert!(
        runs.iter()
            .all(|r| r.is_success && r.execution_source == "NORMAL_TRIGGER"),
        "{runs:#?}"
    );
    let gaps: Vec<i64> = runs
        .windows(2)
        .map(|w| (w[1].start_time - w[0].start_time).num_milliseconds())
        .collect();
    assert!(
        gaps.iter().all(|g| (500..1500).contains(g)),
        "one run per fire, a second apart: {gaps:?}"
    );
    let ids: std::collections::BTreeSet<&str> = runs.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids.len(), 3, "{runs:#?}");
}
