//! The script job's tests: its command line, its children's exit and cancel, its output lines,
//! its props.

use super::*;

#[test]
fn the_command_line_is_split_with_shell_quoting() {
    let job = ScriptJob::new(r#"run.sh 'a b' "c \"d\"" e\ f"#).unwrap();
    assert_eq!(job.program(), "run.sh");
    assert_eq!(job.args(), ["a b", "c \"d\"", "e f"]);
}

#[test]
fn broken_or_empty_command_lines_are_refused() {
    assert!(matches!(
        ScriptJob::new("run.sh 'unterminated"),
        Err(ScriptError::SplitCommandLine { .. })
    ));
    assert_eq!(ScriptJob::new("   "), Err(ScriptError::EmptyCommandLine));
}

/// Waits until `child` has exited, leaving it unreaped (as a stopped node's finished child
/// is when the node resumes).
fn wait_for_exit_unreaped(child: &Child) {
    let pid = child.id().expect("a child not yet reaped has a pid");
    // SAFETY: an all-zero siginfo_t is a valid value for waitid to fill.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: waitid with WNOWAIT only reads the child's state; `info` outlives the call.
    let rc = unsafe { libc::waitid(libc::P_PID, pid, &mut info, libc::WEXITED | libc::WNOWAIT) };
    assert_eq!(rc, 0, "waitid: {}", std::io::Error::last_os_error());
}

fn spawn(job: &ScriptJob) -> Child {
    Command::new(job.program())
        .args(job.args())
        .kill_on_drop(true)
        .spawn()
        .expect("sh starts")
}

#[tokio::test]
async fn a_script_that_exited_before_its_item_was_cancelled_reports_its_real_exit_status() {
    let failing = ScriptJob::new("/bin/sh -c 'exit 3'").unwrap();
    let mut child = spawn(&failing);
    wait_for_exit_unreaped(&child);
    let result = failing.exited_before_cancel(&mut child).unwrap();
    assert!(
        matches!(&result, Some(Err(JobError::Exit { status, .. })) if status == "code 3"),
        "{result:?}"
    );
    let fine = ScriptJob::new("/bin/sh -c 'exit 0'").unwrap();
    let mut child = spawn(&fine);
    wait_for_exit_unreaped(&child);
    assert!(matches!(
        fine.exited_before_cancel(&mut child),
        Ok(Some(Ok(())))
    ));
    assert_eq!(child.id(), None, "the exited child is reaped");
}

#[tokio::test]
async fn a_script_still_running_when_its_item_is_cancelled_is_left_to_be_killed() {
    let job = ScriptJob::new("/bin/sh -c 'sleep 30'").unwrap();
    let mut child = spawn(&job);
    assert!(matches!(job.exited_before_cancel(&mut child), Ok(None)));
    child.kill().await.unwrap();
}

#[tokio::test]
async fn a_line_longer_than_the_cap_is_cut_with_a_marker_and_the_next_line_is_whole() {
    use tokio::io::AsyncReadExt;
    // 64 MiB without a newline, then a short line: only `max` bytes are ever held.
    let endless = tokio::io::repeat(b'x').take(64 * 1024 * 1024);
    let input = endless.chain(&b"\nshort\r\nlast"[..]);
    let mut lines = Vec::new();
    read_lines(input, 1000, |l| lines.push(l.to_owned()))
        .await
        .unwrap();
    assert_eq!(
        lines.len(),
        3,
        "{:?}",
        lines.iter().map(String::len).collect::<Vec<_>>()
    );
    let skipped = 64 * 1024 * 1024 - 1000;
    assert_eq!(
        lines[0],
        format!("{}{TRUNCATED}{skipped} more bytes]", "x".repeat(1000))
    );
    assert_eq!(lines[1..], ["short", "last"]);
}

#[test]
fn from_props_names_the_missing_key() {
    let err = ScriptJob::from_props(&BTreeMap::new()).unwrap_err();
    assert!(err.to_string().contains("script.command.line"), "{err}");
    let props = BTreeMap::from([(COMMAND_LINE_PROP.to_owned(), "echo hi".to_owned())]);
    assert_eq!(ScriptJob::from_props(&props).unwrap().args(), ["hi"]);
}
