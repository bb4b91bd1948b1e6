//! A script's children end with it: the script leads a process group of its own, and a
//! cancellation stops the whole group (SIGTERM, then SIGKILL after the run's grace), as does
//! dropping the run. Real processes: `/bin/sh` starting a background `sleep` (the grandchild),
//! whose pid it writes to a file.

use support::cluster::item_context;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use shardcron::job::script::ScriptJob;
use shardcron::job::{ItemHandler, JobError, ShardingContext};
use support::wait;

fn context() -> ShardingContext {
    item_context("grouped", 0, 1)
}

/// Polls another process's state, which only `/proc` and files tell, until `check` holds.
async fn wait_until<T>(mut check: impl FnMut() -> Option<T>, expected: &str) -> T {
    wait::wait_until(async || check(), expected, Duration::from_secs(20)).await
}

/// Whether `pid` runs (exists and is not a zombie: a zombie has ended, only its exit is unread).
fn alive(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // `pid (comm) S ...`: the state follows the last `)`.
    let state = stat.rsplit(')').next().unwrap_or("").trim_start();
    !state.starts_with('Z') && !state.starts_with('X')
}

/// A script that starts a background `sleep 1000` (its pid written to `file`) and waits; with
/// `ignore_term`, the shell and the sleep ignore SIGTERM.
fn script(file: &Path, ignore_term: bool) -> ScriptJob {
    let trap = if ignore_term { "trap \"\" TERM; " } else { "" };
    let line = format!(
        "/bin/sh -c '{trap}sleep 1000 & echo $! > {}.tmp; mv {0}.tmp {0}; wait'",
        file.display()
    );
    ScriptJob::new(&line).expect("a command line")
}

/// One item of [`script`] started in a task, its grandchild's pid once written.
struct Started {
    /// Where the pid file is (removed when the test ends).
    _dir: tempfile::TempDir,
    run: tokio::task::JoinHandle<Result<(), JobError>>,
    ctx: ShardingContext,
    grandchild: u32,
}

/// Starts one item of `script(.., ignore_term)` in a task, in a temporary folder of its own.
async fn start(ignore_term: bool) -> Started {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = &pid_file(&dir);
    let job = script(file, ignore_term);
    let ctx = context();
    let job = Arc::new(job);
    let run = {
        let ctx = ctx.clone();
        tokio::spawn(async move { job.run_item(ctx).await })
    };
    let pid = wait_until(
        || {
            std::fs::read_to_string(file)
                .ok()?
                .trim()
                .parse::<u32>()
                .ok()
        },
        "the script wrote its grandchild's pid",
    )
    .await;
    assert!(alive(pid), "the grandchild {pid} runs");
    Started {
        _dir: dir,
        run,
        ctx,
        grandchild: pid,
    }
}

/// Waits until the item's run ends cancelled and its grandchild is gone (`what`).
async fn ends_cancelled_without(started: Started, what: &str) {
    let result = started.run.await.expect("the run's task");
    assert!(matches!(result, Err(JobError::Cancelled(_))), "{result:?}");
    gone(started.grandchild, what).await;
}

/// Waits until `pid` is gone (`what`).
async fn gone(pid: u32, what: &str) {
    wait_until(|| (!alive(pid)).then_some(()), what).await;
}

fn pid_file(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("grandchild.pid")
}

#[tokio::test]
async fn a_cancelled_scripts_grandchild_is_gone() {
    let started = start(false).await;
    tracing::info!("--- the item is cancelled: SIGTERM to the group");
    started.ctx.cancel_within(Duration::from_secs(30));
    ends_cancelled_without(started, "the cancelled script's grandchild is gone").await;
}

#[tokio::test]
async fn a_group_that_ignores_sigterm_is_killed_once_the_grace_has_passed() {
    let started = start(true).await;
    tracing::info!("--- cancelled with a short grace: SIGTERM is ignored, SIGKILL is not");
    started.ctx.cancel_within(Duration::from_millis(200));
    ends_cancelled_without(started, "the grandchild that ignored SIGTERM is gone").await;
}

#[tokio::test]
async fn a_shorter_grace_ends_a_stop_already_in_progress() {
    let started = start(true).await;
    tracing::info!("--- cancelled with a grace of an hour (a timeout's), then fenced");
    started.ctx.cancel_within(Duration::from_secs(3600));
    started.ctx.stop_grace.shorten(Duration::from_millis(100));
    ends_cancelled_without(started, "the grandchild is gone within the shorter grace").await;
}

#[tokio::test]
async fn a_dropped_runs_whole_group_is_killed() {
    let started = start(true).await;
    tracing::info!("--- the run's task is aborted (its future dropped)");
    started.run.abort();
    let _ = started.run.await;
    gone(started.grandchild, "the dropped run's grandchild is gone").await;
}

#[tokio::test]
async fn a_script_that_ends_on_its_own_keeps_its_background_process() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = pid_file(&dir);
    // The background sleep's pipes go to /dev/null, so the item ends with the shell.
    let line = format!(
        "/bin/sh -c 'sleep 1000 >/dev/null 2>&1 & echo $! > {}'",
        file.display()
    );
    let job = ScriptJob::new(&line).expect("a command line");
    job.run_item(context()).await.expect("the script exits 0");
    let pid: u32 = std::fs::read_to_string(&file)
        .expect("the pid file")
        .trim()
        .parse()
        .expect("a pid");
    assert!(
        alive(pid),
        "what a finished script left running is its business"
    );
    // SAFETY: kill(2) on a pid this test started; it touches no memory.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
}
