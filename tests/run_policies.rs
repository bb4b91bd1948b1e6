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

use std::path::Path;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_past_its_timeout_is_gone_with_its_grandchild_and_history_says_timeout() {
    init_tracing();
    let dir = tempfile::tempdir().unwrap();
    let (child, grandchild) = (dir.path().join("child"), dir.path().join("grandchild"));
    let line = format!(
        "/bin/sh -c 'sleep 60 & echo $! > {g}; echo $$ > {c}; wait'",
        g = grandchild.display(),
        c = child.display()
    );
    let (timeout, grace) = (Duration::from_secs(2), Duration::from_secs(1));
    let config = JobConfig::new("sleeper", 1)
        .one_off()
        .script_command_line(&line)
        .timeout(timeout)
        .timeout_grace(grace);
    let (node, history, recording) = start(&namespace("timeout"), config, dir.path()).await;
    let job = JobName::new("sleeper").unwrap();

    tracing::info!("--- triggered: the script and its grandchild start");
    let triggered = Instant::now();
    node.trigger(&job).await.expect("the trigger is taken");
    let pids = wait_until(
        "the script and its grandchild wrote their pids",
        WITHIN,
        || Some((read_pid(&child)?, read_pid(&grandchild)?)),
    )
    .await;
    assert!(alive(pids.0) && alive(pids.1), "both run: {pids:?}");

    tracing::info!("--- both are gone within timeout + grace + 1 s of the trigger");
    let bound = timeout + grace + Duration::from_secs(1);
    let left = bound.saturating_sub(triggered.elapsed());
    wait_until("the script and its grandchild ended", left, || {
        (!alive(pids.0) && !alive(pids.1)).then_some(())
    })
    .await;

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
