//! A node that dies between a script child's spawn and its report of the child's pid leaves no
//! child running: the keeper finds the announced spawn's child by the name in its environment.
//!
//! The dying node is this test binary run again (`SHARDCRON_KEEPER_WINDOW_PID_FILE` set): it
//! announces a spawn, spawns a shell that writes its pid and becomes `sleep 30`, waits until the
//! child runs, and ends with `_exit` without reporting the pid: the instant a kill -9 of a node
//! can hit on a loaded machine. One test in its own binary: the keeper is one per process.

use std::path::{Path, PathBuf};
use std::time::Duration;

use support::node_proc::runs;
use support::wait::{wait_until_blocking, wait_until_blocking_every};

const HELPER: &str = "SHARDCRON_KEEPER_WINDOW_PID_FILE";
const TEST: &str =
    "a_child_spawned_by_a_node_that_died_before_reporting_its_pid_is_killed_by_the_keeper";

/// The dying node: never returns.
fn die_between_spawn_and_report(pid_file: &Path) -> ! {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    // Spawned inside the runtime (tokio's child handling needs one); the rest is plain waiting.
    let (announced, child) = runtime.block_on(async {
        let mut command = tokio::process::Command::new("/bin/sh");
        command
            .arg("-c")
            .arg(format!(
                "echo $$ > '{}.tmp' && mv '{0}.tmp' '{0}'; exec sleep 30",
                pid_file.display()
            ))
            .process_group(0);
        // A lease far longer than the test: only the pipe's end can get the child killed.
        let announced = shardcron::job::keeper::announce(&mut command, Duration::from_secs(60))
            .expect("the keeper runs (Linux)");
        (announced, command.spawn().expect("spawning the child"))
    });
    let ran = || pid_file.exists().then_some(());
    wait_until_blocking(ran, "the child to write its pid", Duration::from_secs(10));
    // Neither reported nor withdrawn: the node dies here.
    std::mem::forget((announced, child, runtime));
    // SAFETY: _exit ends the process at once, as a kill would.
    unsafe { libc::_exit(0) }
}

#[test]
fn a_child_spawned_by_a_node_that_died_before_reporting_its_pid_is_killed_by_the_keeper() {
    if let Some(pid_file) = std::env::var_os(HELPER) {
        die_between_spawn_and_report(&PathBuf::from(pid_file));
    }
    let dir = tempfile::tempdir().expect("a temp dir");
    let pid_file = dir.path().join("child.pid");
    let status = std::process::Command::new(std::env::current_exe().expect("this test's binary"))
        .args(["--exact", TEST, "--nocapture", "--test-threads=1"])
        .env(HELPER, &pid_file)
        .status()
        .expect("running the dying node");
    assert!(status.success(), "the dying node ended with {status}");
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .expect("the child wrote its pid")
        .trim()
        .parse()
        .expect("a pid");
    let check = || !runs(pid);
    let what = format!("the child {pid} of a node that died before reporting it to end");
    wait_until_blocking_every(
        check,
        &what,
        Duration::from_secs(5),
        Duration::from_millis(10),
    );
}
