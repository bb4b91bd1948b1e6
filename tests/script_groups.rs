//! A script's children end with it: the script leads a process group of its own, and a
//! cancellation stops the whole group (SIGTERM, then SIGKILL after the run's grace), as does
//! dropping the run. Real processes: `/bin/sh` starting a background `sleep` (the grandchild),
//! whose pid it writes to a file.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use shardcron::job::script::ScriptJob;
use shardcron::job::{ExecutionSource, ItemHandler, JobError, ReshardingFlag, ShardingContext};
use shardcron::types::{InstanceId, JobName, ShardItem};
use tokio_util::sync::CancellationToken;

fn context() -> ShardingContext {
    ShardingContext {
        job_name: JobName::new("grouped").expect("a job name"),
        task_id: "grouped@-@0@-@NORMAL@-@192.0.2.1@-@1".to_owned(),
        sharding_total_count: 1,
        job_parameter: String::new(),
        sharding_item: ShardItem(0),
        sharding_parameter: String::new(),
        source: ExecutionSource::Normal,
        instance_id: InstanceId::parse("192.0.2.1@-@1").expect("an instance id"),
        cancellation: CancellationToken::new(),
        resharding: ReshardingFlag::default(),
        props: Default::default(),
        child_lease: None,
        scheduled_at: None,
        fencing_token: Default::default(),
        stop_grace: Default::default(),
    }
}

/// Polls `what` (another process's state, which only `/proc` and files tell) until it holds.
async fn wait_until<T>(mut check: impl FnMut() -> Option<T>, expected: &str) -> T {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(Instant::now() < deadline, "after 20 s: {expected}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
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

/// Starts one item of `job` in a task; returns its handle, the context's token and grace, and
/// the grandchild's pid once it is written.
async fn start(
    job: ScriptJob,
    file: &Path,
) -> (
    tokio::task::JoinHandle<Result<(), JobError>>,
    ShardingContext,
    u32,
) {
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
    (run, ctx, pid)
}

fn pid_file(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("grandchild.pid")
}

#[tokio::test]
async fn a_cancelled_scripts_grandchild_is_gone() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = pid_file(&dir);
    let (run, ctx, grandchild) = start(script(&file, false), &file).await;
    tracing::info!("--- the item is cancelled: SIGTERM to the group");
    ctx.cancel_within(Duration::from_secs(30));
    let result = run.await.expect("the run's task");
    assert!(matches!(result, Err(JobError::Cancelled(_))), "{result:?}");
    wait_until(
        || (!alive(grandchild)).then_some(()),
        "the cancelled script's grandchild is gone",
    )
    .await;
}

#[tokio::test]
async fn a_group_that_ignores_sigterm_is_killed_once_the_grace_has_passed() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = pid_file(&dir);
    let (run, ctx, grandchild) = start(script(&file, true), &file).await;
    tracing::info!("--- cancelled with a short grace: SIGTERM is ignored, SIGKILL is not");
    ctx.cancel_within(Duration::from_millis(200));
    let result = run.await.expect("the run's task");
    assert!(matches!(result, Err(JobError::Cancelled(_))), "{result:?}");
    wait_until(
        || (!alive(grandchild)).then_some(()),
        "the grandchild that ignored SIGTERM is gone",
    )
    .await;
}

#[tokio::test]
async fn a_shorter_grace_ends_a_stop_already_in_progress() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = pid_file(&dir);
    let (run, ctx, grandchild) = start(script(&file, true), &file).await;
    tracing::info!("--- cancelled with a grace of an hour (a timeout's), then fenced");
    ctx.cancel_within(Duration::from_secs(3600));
    ctx.stop_grace.shorten(Duration::from_millis(100));
    let result = run.await.expect("the run's task");
    assert!(matches!(result, Err(JobError::Cancelled(_))), "{result:?}");
    wait_until(
        || (!alive(grandchild)).then_some(()),
        "the grandchild is gone within the shorter grace",
    )
    .await;
}

#[tokio::test]
async fn a_dropped_runs_whole_group_is_killed() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = pid_file(&dir);
    let (run, _ctx, grandchild) = start(script(&file, true), &file).await;
    tracing::info!("--- the run's task is aborted (its future dropped)");
    run.abort();
    let _ = run.await;
    wait_until(
        || (!alive(grandchild)).then_some(()),
        "the dropped run's grandchild is gone",
    )
    .await;
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
