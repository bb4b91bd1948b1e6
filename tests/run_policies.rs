//! Run policies (`shardcron.` props) end to end: a node on a real ZooKeeper (started by the test,
//! on loopback) runs script jobs as real processes, with the execution history attached.
//!
//! Processes are other programs: whether one still lives is read from `/proc`, the only way to
//! know, in a `wait_until` that names what it waited for.

#[macro_use]
extern crate support;

use support::cluster::init_tracing;
use support::namespace;
use support::policy_node::{records, start, start_with, WITHIN};
use support::{wait, Peer};

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use shardcron::config::{JobConfig, Notify};
use shardcron::history::ExecutionRecord;
use shardcron::job::handlers::{ErrorAction, ErrorHandler, HandlerRegistry};
use shardcron::job::JobError;
use shardcron::node::NodeHandle;
use shardcron::{JobName, ShardItem};

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

/// Where the sleeper in `dir` writes the pids of its script and of its grandchild.
fn pid_files(dir: &Path) -> (PathBuf, PathBuf) {
    (dir.join("child"), dir.join("grandchild"))
}

/// A script job that sleeps, and whose grandchild sleeps too, under a timeout of 2 s with 1 s of
/// grace; they write their pids to [`pid_files`].
fn sleeper(dir: &Path) -> JobConfig {
    let (child, grandchild) = pid_files(dir);
    let line = format!(
        "/bin/sh -c 'sleep 60 & echo $! > {g}; echo $$ > {c}; wait'",
        g = grandchild.display(),
        c = child.display()
    );
    JobConfig::new("sleeper", 1)
        .one_off()
        .script_command_line(&line)
        .timeout(TIMEOUT)
        .timeout_grace(GRACE)
}

const TIMEOUT: Duration = Duration::from_secs(2);
const GRACE: Duration = Duration::from_secs(1);

/// Triggers the sleeper and waits until both of its processes run: their pids.
async fn trigger_sleeper(node: &NodeHandle, dir: &Path) -> (u32, u32) {
    let (child, grandchild) = &pid_files(dir);
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
    let (dir, ns) = support::prelude("policies", "timeout");
    let (node, history, recording) = start(&ns, sleeper(dir.path()), dir.path()).await;

    tracing::info!("--- triggered: the script and its grandchild start");
    let triggered = Instant::now();
    let (script, _) = trigger_sleeper(&node, dir.path()).await;

    tracing::info!("--- the script is gone within timeout + grace + 1 s of the trigger");
    let left = (TIMEOUT + GRACE + Duration::from_secs(1)).saturating_sub(triggered.elapsed());
    wait_until("the script ended", left, || (!alive(script)).then_some(())).await;

    tracing::info!("--- the history says the item timed out");
    let record = wait::wait_until(
        async || {
            let found = records(&history, "sleeper").await;
            found.into_iter().find(|r| r.complete_time.is_some())
        },
        "a finished record",
        WITHIN,
    )
    .await;
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
    let (dir, ns) = support::prelude("policies", "group");
    let (node, _history, _recording) = start(&ns, sleeper(dir.path()), dir.path()).await;
    let triggered = Instant::now();
    let pids = trigger_sleeper(&node, dir.path()).await;
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
    let (dir, ns) = support::prelude("policies", "retry");
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
    let (node, history, recording) = start(&ns, config, dir.path()).await;
    let job = JobName::new("flaky").unwrap();

    tracing::info!("--- triggered: two failures, then a success");
    node.trigger(&job).await.expect("the trigger is taken");
    let finished = wait::wait_until(
        async || {
            let found = records(&history, "flaky").await;
            assert!(found.len() <= 3, "no more than three attempts: {found:#?}");
            let ended = found.iter().filter(|r| r.complete_time.is_some()).count();
            (ended >= 3).then_some(found)
        },
        "three finished attempts",
        WITHIN,
    )
    .await;
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

/// An error handler that records the failures it hears.
#[derive(Debug, Default)]
struct Heard(Mutex<Vec<String>>);

impl ErrorHandler for Heard {
    fn handle(&self, _job: &JobName, _item: Option<ShardItem>, error: &JobError) -> ErrorAction {
        self.0.lock().unwrap().push(error.to_string());
        ErrorAction::Continue
    }
}

/// A script that always fails, retried twice under `notify`: the failures its error handler
/// heard once the three attempts are in the history and it heard `want`.
async fn failures_heard(notify: Notify, want: usize) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let config = JobConfig::new("failing", 1)
        .one_off()
        .script_command_line("/bin/sh -c 'exit 3'")
        .retry(2)
        .retry_backoff(Duration::from_millis(200), Duration::from_secs(10))
        .retry_notify(notify)
        .error_handler("HEARD");
    let heard = Arc::new(Heard::default());
    let mut handlers = HandlerRegistry::new();
    handlers
        .register_error_handler("HEARD", heard.clone())
        .unwrap();
    let ns = namespace("policies", "notify");
    let (node, history, recording) = start_with(&ns, config, dir.path(), handlers).await;
    node.trigger(&JobName::new("failing").unwrap())
        .await
        .expect("the trigger is taken");
    wait::wait_until(
        async || {
            let found = records(&history, "failing").await;
            found
                .iter()
                .any(|r| r.complete_time.is_some() && r.attempt == Some(3))
                .then_some(())
        },
        "the third attempt's end in the history",
        WITHIN,
    )
    .await;
    // The handler is called after the history hears of the item's end.
    wait_until("the failures heard", WITHIN, || {
        (heard.0.lock().unwrap().len() >= want).then_some(())
    })
    .await;
    node.shutdown().await;
    recording.close().await;
    history.close().await;
    let heard = heard.0.lock().unwrap().clone();
    heard
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_error_handler_hears_the_final_failure_only_or_every_attempts_when_asked() {
    require!(Peer::ZooKeeper);
    init_tracing();
    tracing::info!("--- notify final: one failure heard, the third attempt's");
    let last = failures_heard(Notify::Final, 1).await;
    assert_eq!(last.len(), 1, "{last:?}");
    tracing::info!("--- notify every: each of the three attempts' failures");
    let every = failures_heard(Notify::Every, 3).await;
    assert_eq!(every.len(), 3, "{every:?}");
}
