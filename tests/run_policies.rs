//! Run policies (`shardcron.` props) end to end: a node on a real ZooKeeper (started by the test,
//! on loopback) runs script jobs as real processes, with the execution history attached.
//!
//! Processes are other programs: whether one still lives is read from `/proc`, the only way to
//! know, in a `wait_until` that names what it waited for.

mod support;

use support::cluster::init_tracing;
use support::{wait, zk, Peer};

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use shardcron::config::JobConfig;
use shardcron::events::EventBus;
use shardcron::history::{ExecutionRecord, History, HistoryHandle, HistoryQuery};
use shardcron::job::script::ScriptJob;
use shardcron::node::{NodeBuilder, NodeHandle};
use shardcron::registry::zookeeper::ZkConnector;
use shardcron::{InstanceId, JobName, JobSpec, JobType};

/// A bound on every wait that is not the one under test.
const WITHIN: Duration = Duration::from_secs(30);

fn namespace(test: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "policies-{test}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// Polls `probe` until it answers, failing with `what` after `within`.
async fn wait_until<T>(what: &str, within: Duration, mut probe: impl FnMut() -> Option<T>) -> T {
    wait::wait_until(async || probe(), what, within).await
}

/// Whether process `pid` runs (a zombie has ended: only its exit status is left to read).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let state = stat.rsplit_once(')')?.1.trim_start().chars().next()?;
            Some(state != 'Z' && state != 'X')
        })
        .unwrap_or(false)
}

fn read_pid(path: &Path) -> Option<u32> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// A node on ZooKeeper namespace `ns` running the script job `config`, its events recorded in a
/// SQLite history.
async fn start(ns: &str, config: JobConfig, dir: &Path) -> (NodeHandle, History, HistoryHandle) {
    let connector = Arc::new(ZkConnector::new(zk::backend().config(ns)));
    let line = config.props["script.command.line"].clone();
    let bus = EventBus::new();
    let history = History::sqlite(dir.join("history.db"))
        .await
        .expect("the SQLite history opens");
    let recording = history.attach(&bus);
    let node = NodeBuilder::new(connector)
        .instance_id(InstanceId::parse("10.0.0.1@-@1").unwrap())
        .event_bus(bus)
        .job_spec(JobSpec {
            config: Arc::new(config),
            job_type: JobType::Script,
            handler: Arc::new(ScriptJob::new(&line).expect("a command line")),
        })
        .start()
        .await
        .expect("the node starts");
    (node, history, recording)
}

async fn records(history: &History, job: &str) -> Vec<ExecutionRecord> {
    let query = HistoryQuery::job(JobName::new(job).unwrap());
    history.query(&query).await.expect("the history answers")
}

/// A script job that sleeps, and whose grandchild sleeps too, under a timeout of 2 s with 1 s of
/// grace: `(config, the child's pid file, the grandchild's pid file)`.
fn sleeper(dir: &Path) -> (JobConfig, PathBuf, PathBuf) {
    let (child, grandchild) = (dir.join("child"), dir.join("grandchild"));
    let line = format!(
        "/bin/sh -c 'sleep 60 & echo $! > {g}; echo $$ > {c}; wait'",
        g = grandchild.display(),
        c = child.display()
    );
    let config = JobConfig::new("sleeper", 1)
        .one_off()
        .script_command_line(&line)
        .timeout(TIMEOUT)
        .timeout_grace(GRACE);
    (config, child, grandchild)
}

const TIMEOUT: Duration = Duration::from_secs(2);
const GRACE: Duration = Duration::from_secs(1);

/// Triggers the sleeper and waits until both of its processes run: their pids.
async fn trigger_sleeper(node: &NodeHandle, child: &Path, grandchild: &Path) -> (u32, u32) {
    let job = JobName::new("sleeper").unwrap();
    node.trigger(&job).await.expect("the trigger is taken");
    let pids = wait_until(
        "the script and its grandchild wrote their pids",
        WITHIN,
        || Some((read_pid(child)?, read_pid(grandchild)?)),
    )
    .await;
    assert!(alive(pids.0) && alive(pids.1), "both run: {pids:?}");
    pids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_past_its_timeout_is_ended_within_timeout_and_grace_and_history_says_timeout() {
    require!(Peer::ZooKeeper);
    init_tracing();
    let dir = tempfile::tempdir().unwrap();
    let (config, child, grandchild) = sleeper(dir.path());
    let (node, history, recording) = start(&namespace("timeout"), config, dir.path()).await;

    tracing::info!("--- triggered: the script and its grandchild start");
    let triggered = Instant::now();
    let (script, _) = trigger_sleeper(&node, &child, &grandchild).await;

    tracing::info!("--- the script is gone within timeout + grace + 1 s of the trigger");
    let left = (TIMEOUT + GRACE + Duration::from_secs(1)).saturating_sub(triggered.elapsed());
    wait_until("the script ended", left, || (!alive(script)).then_some(())).await;

    tracing::info!("--- the history says the item timed out");
    let record = loop {
        let found = records(&history, "sleeper").await;
        if let Some(r) = found.into_iter().find(|r| r.complete_time.is_some()) {
            break r;
        }
        assert!(triggered.elapsed() < WITHIN, "no finished record");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(!record.is_success, "{record:#?}");
    assert_eq!(
        record.failure_cause.as_deref(),
        Some("timed out after 2s"),
        "{record:#?}"
    );
    assert_eq!(
        (record.outcome.as_deref(), record.status(), record.attempt),
        (Some("timeout"), "timeout", Some(1)),
        "the row says timeout, not failed: {record:#?}"
    );
    node.shutdown().await;
    recording.close().await;
    history.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_scripts_grandchild_is_gone_within_timeout_and_grace_too() {
    require!(Peer::ZooKeeper);
    init_tracing();
    let dir = tempfile::tempdir().unwrap();
    let (config, child, grandchild) = sleeper(dir.path());
    let (node, _history, _recording) = start(&namespace("group"), config, dir.path()).await;
    let triggered = Instant::now();
    let pids = trigger_sleeper(&node, &child, &grandchild).await;
    let left = (TIMEOUT + GRACE + Duration::from_secs(1)).saturating_sub(triggered.elapsed());
    wait_until("the script and its grandchild ended", left, || {
        (!alive(pids.0) && !alive(pids.1)).then_some(())
    })
    .await;
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_failing_twice_then_succeeding_runs_three_times_with_the_configured_gaps() {
    require!(Peer::ZooKeeper);
    init_tracing();
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let line = format!(
        "/bin/sh -c 'date +%s%N >> {r}; [ \"$(wc -l < {r})\" -ge 3 ]'",
        r = runs.display()
    );
    let config = JobConfig::new("flaky", 1)
        .one_off()
        .script_command_line(&line)
        .retry(2)
        .retry_backoff(Duration::from_secs(1), Duration::from_secs(10));
    let (node, history, recording) = start(&namespace("retry"), config, dir.path()).await;
    let job = JobName::new("flaky").unwrap();

    tracing::info!("--- triggered: two failures, then a success");
    node.trigger(&job).await.expect("the trigger is taken");
    let finished = loop {
        let found = records(&history, "flaky").await;
        if found.iter().filter(|r| r.complete_time.is_some()).count() >= 3 {
            break found;
        }
        assert!(found.len() <= 3, "no more than three attempts: {found:#?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let mut outcomes: Vec<(bool, chrono::DateTime<chrono::Utc>)> = finished
        .iter()
        .map(|r| (r.is_success, r.start_time))
        .collect();
    outcomes.sort_by_key(|(_, at)| *at);
    assert_eq!(
        outcomes.iter().map(|(ok, _)| *ok).collect::<Vec<_>>(),
        [false, false, true],
        "{finished:#?}"
    );
    let mut rows: Vec<&ExecutionRecord> = finished.iter().collect();
    rows.sort_by_key(|r| r.start_time);
    let attempts: Vec<(Option<u32>, &str)> = rows.iter().map(|r| (r.attempt, r.status())).collect();
    assert_eq!(
        attempts,
        [
            (Some(1), "failed"),
            (Some(2), "failed"),
            (Some(3), "success")
        ],
        "three history rows, attempts 1, 2, 3: {finished:#?}"
    );

    tracing::info!("--- the script ran three times, 1 s then 2 s apart at least");
    let text = std::fs::read_to_string(&runs).expect("the script's record");
    let nanos: Vec<u128> = text.lines().map(|l| l.trim().parse().unwrap()).collect();
    assert_eq!(nanos.len(), 3, "{text}");
    let gaps: Vec<u128> = nanos
        .windows(2)
        .map(|w| (w[1] - w[0]) / 1_000_000)
        .collect();
    assert!(gaps[0] >= 1000 && gaps[1] >= 2000, "gaps in ms: {gaps:?}");
    node.shutdown().await;
    recording.close().await;
    history.close().await;
}

/// The first `count` finished executions of the script job `slow` firing every second under
/// `config`'s overlap policy: in start order.
async fn finished_runs(config: JobConfig, count: usize) -> Vec<ExecutionRecord> {
    let dir = tempfile::tempdir().unwrap();
    let config = config.cron("* * * * * ?").time_zone("GMT");
    let overlap = config.props["shardcron.overlap"].clone();
    let (node, history, recording) = start(&namespace(&overlap), config, dir.path()).await;
    let finished =
        |all: &[ExecutionRecord]| all.iter().filter(|r| r.complete_time.is_some()).count();
    let started = Instant::now();
    loop {
        if finished(&records(&history, "slow").await) >= count {
            break;
        }
        assert!(
            started.elapsed() < WITHIN,
            "{count} runs did not end under {overlap}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
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
