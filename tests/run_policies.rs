//! Run policies (`shardcron.` props) end to end: a node on a real ZooKeeper (started by the test,
//! on loopback) runs script jobs as real processes, with the execution history attached.
//!
//! Processes are other programs: whether one still lives is read from `/proc`, the only way to
//! know, in a `wait_until` that names what it waited for.

#[allow(dead_code, unreachable_pub)]
#[path = "support/backend.rs"]
mod backend;
#[allow(dead_code, unreachable_pub)]
#[path = "support/zk/mod.rs"]
mod zk;

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

fn init_tracing() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("shardcron=info,warn")),
        )
        .with_test_writer()
        .try_init();
}

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
    let deadline = Instant::now() + within;
    loop {
        if let Some(found) = probe() {
            return found;
        }
        assert!(Instant::now() < deadline, "{what}: not within {within:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
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
    node.shutdown().await;
    recording.close().await;
    history.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_scripts_grandchild_is_gone_within_timeout_and_grace_too() {
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
