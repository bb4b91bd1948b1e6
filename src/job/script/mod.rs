//! Script jobs (ElasticJob's `SCRIPT` type): run an external program once per item.
//!
//! The command line comes from the job's `props` (`script.command.line`), as configured for each
//! run ([`ShardingContext::props`]): a change in the registry applies from the next run, as in
//! ElasticJob; the line the job was built with stands when the run's props have none. It is split into a
//! program and its arguments with shell quoting rules (`'a b'`, `"a b"`, `a\ b` are one argument)
//! but run **without** a shell, so no globbing, variables or pipes are interpreted: a job that wants
//! them names `/bin/sh -c '...'` itself. The item's [`ShardingContext`] is appended as the last
//! argument, as ElasticJob's JSON (`jobName`, `taskId`, `shardingTotalCount`, `jobParameter`,
//! `shardingItem`, `shardingParameter`).
//!
//! - A non-zero exit or a death by signal fails the item with [`JobError::Exit`]; a program that
//!   cannot be started fails it with [`JobError::Spawn`].
//! - stdout lines are logged at `info`, stderr lines at `warn`, with `job` and `item` fields, and
//!   captured for the history when the job asks for its output ([`output`](super::output)). Both
//!   pipes are drained concurrently with the wait, so a chatty script never blocks on a full pipe;
//!   a line longer than [`MAX_LINE_BYTES`] is logged cut, with a [`TRUNCATED`] marker, and its
//!   rest is skipped as it arrives (never held). The item ends when the script has exited *and*
//!   both pipes are closed: a background process that keeps them open keeps the item running.
//! - The child leads a process group of its own ([`group`](super::group)). When the item is
//!   cancelled (resharding, fencing, shutdown, a timeout) the whole group gets SIGTERM, and SIGKILL
//!   once the run's [`StopGrace`](super::StopGrace) has passed; the item fails with
//!   [`JobError::Cancelled`], unless the child had already exited: then the item ends with its
//!   real exit status (a node stopped with SIGSTOP while its script finished, and resumed into a
//!   fencing cancel, reports the finished item, not a cancelled one). A run whose future is
//!   dropped kills the group at once (SIGKILL). A script that ends on its own keeps what it left
//!   in the background, as before groups.
//! - A child outlives its node's silence by no more than the run's
//!   [`child_lease`](ShardingContext::child_lease): the [`keeper`](super::keeper) kills the process group
//!   of a node frozen (SIGSTOP) or killed (kill -9) before a survivor can fail its item over.
//! - Every child is reaped as it ends: its exit is awaited beside its pipes, a cancelled child is
//!   killed and awaited, and a child whose run was dropped is killed and handed to tokio's orphan
//!   queue, which reaps it at the next `SIGCHLD`.
//! - At most [`MAX_CHILDREN`] children of one script job live at once; its items beyond wait for
//!   one to end (still cancellable). A job that asks for far more than the machine can fork (ten
//!   thousand items a second) then degrades into long runs, which its executor skips or misfires,
//!   instead of thousands of forks and unreaped exits; the bound is the job's own, so a healthy
//!   script job beside it keeps its slots (ElasticJob bounds each job by its executor pool, twice
//!   the cores by default).
//!
//! Here the job and its children's supervision; in `lines.rs` the reading of their output lines.

mod lines;

pub use lines::read_lines;
use lines::{log_lines, Pipe};

use std::collections::BTreeMap;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;

use async_trait::async_trait;
use tokio::process::{Child, Command};
use tokio::sync::Semaphore;

use super::group::ProcessGroup;
use super::{ItemHandler, JobError, ShardingContext};

/// The `props` key holding the command line, as ElasticJob names it.
pub const COMMAND_LINE_PROP: &str = "script.command.line";

/// The longest line of a script's output that is logged whole; the rest of a longer line is
/// skipped (not held in memory) and the line ends with [`TRUNCATED`].
pub const MAX_LINE_BYTES: usize = 16 * 1024;

/// What ends a truncated line, followed by the number of bytes skipped and `]`.
pub const TRUNCATED: &str = " …[truncated: ";

/// How many children of one script job may live at once: far more items than cores run side by
/// side (a script mostly waits), while a job that asks for more items than the machine can run
/// is bounded in forks and in exits waiting to be reaped.
pub const MAX_CHILDREN: usize = 256;

/// Why a script job could not be built from its configuration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScriptError {
    /// Reading the command line from `props`: the key is absent.
    #[error("props key {key:?} is missing; a script job needs a command line")]
    MissingCommandLine {
        /// The key that was looked up.
        key: &'static str,
    },
    /// Splitting the command line: it has no program.
    #[error("the command line is empty")]
    EmptyCommandLine,
    /// Splitting the command line: its quoting is broken (an unterminated quote or escape).
    #[error("cannot split command line {command:?}")]
    SplitCommandLine {
        /// The command line as configured.
        command: String,
        /// What the splitter found.
        #[source]
        source: shell_words::ParseError,
    },
}

/// A job that runs an external program per item.
///
/// ```
/// use shardcron::job::script::ScriptJob;
/// let job = ScriptJob::new("/usr/local/bin/export --format 'csv, quoted'").unwrap();
/// assert_eq!(job.program(), "/usr/local/bin/export");
/// assert_eq!(job.args(), ["--format", "csv, quoted"]);
/// ```
#[derive(Debug, Clone)]
pub struct ScriptJob {
    command_line: String,
    program: String,
    args: Vec<String>,
    /// [`MAX_CHILDREN`] permits, shared by the job's clones.
    children: Arc<Semaphore>,
}

impl PartialEq for ScriptJob {
    fn eq(&self, other: &Self) -> bool {
        (&self.command_line, &self.program, &self.args)
            == (&other.command_line, &other.program, &other.args)
    }
}

impl Eq for ScriptJob {}

impl ScriptJob {
    /// Splits `command_line` into a program and its arguments.
    pub fn new(command_line: &str) -> Result<Self, ScriptError> {
        let mut words =
            shell_words::split(command_line).map_err(|source| ScriptError::SplitCommandLine {
                command: command_line.to_owned(),
                source,
            })?;
        if words.is_empty() {
            return Err(ScriptError::EmptyCommandLine);
        }
        let program = words.remove(0);
        Ok(Self {
            command_line: command_line.to_owned(),
            program,
            args: words,
            children: Arc::new(Semaphore::new(MAX_CHILDREN)),
        })
    }

    /// Reads the command line from the job's `props` (`script.command.line`).
    pub fn from_props(props: &BTreeMap<String, String>) -> Result<Self, ScriptError> {
        let line = props
            .get(COMMAND_LINE_PROP)
            .ok_or(ScriptError::MissingCommandLine {
                key: COMMAND_LINE_PROP,
            })?;
        Self::new(line)
    }

    /// The command line as configured.
    pub fn command_line(&self) -> &str {
        &self.command_line
    }

    /// The program to run.
    pub fn program(&self) -> &str {
        &self.program
    }

    /// The arguments before the context JSON.
    pub fn args(&self) -> &[String] {
        &self.args
    }

    /// This job's children alive now (spawned and not yet reaped, or handed to the orphan queue).
    pub fn live_children(&self) -> usize {
        MAX_CHILDREN - self.children.available_permits()
    }

    /// The item's result from the child's exit status.
    fn exit_result(&self, status: ExitStatus) -> Result<(), JobError> {
        if status.success() {
            return Ok(());
        }
        Err(JobError::Exit {
            command: self.command_line.clone(),
            status: describe(status),
        })
    }

    /// The result of a cancelled item whose child has already exited (reaping it), `None` while
    /// the child still runs.
    fn exited_before_cancel(
        &self,
        child: &mut Child,
    ) -> std::io::Result<Option<Result<(), JobError>>> {
        Ok(child.try_wait()?.map(|status| self.exit_result(status)))
    }

    fn cancelled(&self, when: &str) -> JobError {
        JobError::Cancelled(format!("{:?} {when}", self.command_line))
    }

    /// Watches the child until it has exited and both of its pipes are closed, logging them; or,
    /// when the item is cancelled first, stops its whole process group ([`Self::stop`]).
    async fn supervise(
        &self,
        child: &mut Child,
        mut group: Option<ProcessGroup>,
        ctx: &ShardingContext,
    ) -> Result<(), JobError> {
        let missing = |pipe: &str| JobError::failed(format!("the child's {pipe} was not piped"));
        let stdout = child.stdout.take().ok_or_else(|| missing("stdout"))?;
        let stderr = child.stderr.take().ok_or_else(|| missing("stderr"))?;
        let pipes = async {
            tokio::join!(
                log_lines(stdout, Pipe::Stdout, ctx),
                log_lines(stderr, Pipe::Stderr, ctx),
            )
        };
        tokio::pin!(pipes);
        let mut status = None;
        let mut read = None;
        loop {
            if let (Some(_), Some(_)) = (&status, &read) {
                break;
            }
            tokio::select! {
                biased;
                () = ctx.cancelled() => {
                    return self.stop(child, group, pipes, status, read.is_some(), ctx).await;
                }
                s = child.wait(), if status.is_none() => status = Some(s),
                r = &mut pipes, if read.is_none() => read = Some(r),
            }
        }
        // Ended on its own: what it left in the background is its business.
        if let Some(group) = group.as_mut() {
            group.disarm();
        }
        let (Some(status), Some((out, err))) = (status, read) else {
            return Err(JobError::failed("the script's supervision ended early"));
        };
        let status = status
            .map_err(|e| JobError::failed(format!("waiting for {:?}: {e}", self.command_line)))?;
        let mut unread = None;
        for (pipe, read) in [("stdout", out), ("stderr", err)] {
            if let Err(e) = read {
                let msg = format!("reading {pipe} of {:?}: {e}", self.command_line);
                tracing::warn!(job = %ctx.job_name, item = %ctx.sharding_item, "{msg}");
                unread.get_or_insert(msg);
            }
        }
        self.exit_result(status)?;
        // The script succeeded, but output we could not read is output nobody saw: fail loudly.
        match unread {
            Some(msg) => Err(JobError::Failed(msg)),
            None => Ok(()),
        }
    }

    /// The item was cancelled: SIGTERM to the child's whole process group, then, once the
    /// run's [`StopGrace`](super::StopGrace) has passed (or the child has exited and its pipes
    /// are closed, whichever comes first), SIGKILL to whatever is left of the group; the child
    /// is reaped. Output written during the grace is still logged. A child that had exited
    /// before the cancellation reports its real exit status.
    async fn stop<P>(
        &self,
        child: &mut Child,
        group: Option<ProcessGroup>,
        mut pipes: std::pin::Pin<&mut P>,
        status: Option<std::io::Result<ExitStatus>>,
        mut closed: bool,
        ctx: &ShardingContext,
    ) -> Result<(), JobError>
    where
        P: std::future::Future,
    {
        let exited = match status {
            Some(Ok(status)) => Some(self.exit_result(status)),
            Some(Err(_)) => None,
            None => self.exited_before_cancel(child).unwrap_or_else(|e| {
                tracing::warn!(
                    job = %ctx.job_name, item = %ctx.sharding_item, error = %e,
                    "checking whether the cancelled script had exited failed; stopping it"
                );
                None
            }),
        };
        let mut reaped = exited.is_some();
        match &group {
            Some(group) => group.terminate(),
            None => {
                let _ = child.start_kill();
            }
        }
        let started = tokio::time::Instant::now();
        while !(reaped && closed) {
            let shortened = ctx.stop_grace.shortened();
            tokio::pin!(shortened);
            shortened.as_mut().enable();
            let deadline = started + ctx.stop_grace.get();
            tokio::select! {
                biased;
                () = tokio::time::sleep_until(deadline) => break,
                () = &mut shortened => {}
                _ = child.wait(), if !reaped => reaped = true,
                _ = &mut pipes, if !closed => closed = true,
            }
        }
        // Before the child is reaped, so the group's id is still the child's.
        drop(group);
        if !reaped {
            if let Err(e) = child.wait().await {
                tracing::warn!(job = %ctx.job_name, item = %ctx.sharding_item, error = %e,
                    "reaping the stopped script failed");
            }
        }
        match exited {
            Some(result) => result,
            None => Err(self.cancelled("was stopped because the item was cancelled")),
        }
    }
}

#[async_trait]
impl ItemHandler for ScriptJob {
    async fn run_item(&self, ctx: ShardingContext) -> Result<(), JobError> {
        if ctx.is_cancelled() {
            return Err(self.cancelled("was cancelled before it started"));
        }
        // Held until the child is reaped (or handed to the orphan queue, killed, on a drop).
        let _permit = tokio::select! {
            biased;
            () = ctx.cancelled() => {
                return Err(self.cancelled("was cancelled while waiting for a free child slot"));
            }
            permit = self.children.acquire() => permit.map_err(|_| {
                JobError::failed("the job's child slots are closed")
            })?,
        };
        // The run's props win over the line the job was built with: a config change applies live.
        let live = match ctx.props.get(COMMAND_LINE_PROP) {
            Some(line) if *line != self.command_line => Some(Self::new(line).map_err(|e| {
                JobError::failed(format!("props.{COMMAND_LINE_PROP} as configured now: {e}"))
            })?),
            _ => None,
        };
        let this = live.as_ref().unwrap_or(self);
        let mut command = Command::new(&this.program);
        command
            .args(&this.args)
            .arg(ctx.to_json())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // A group of its own: everything the script starts is stopped with it.
            .process_group(0)
            .kill_on_drop(true);
        // A frozen or dead node's group is killed by the keeper; the spawn is announced to it
        // first, so that a node that dies before it reports the pid leaves no child unkept.
        let announced = match ctx.child_lease {
            Some(lease) if !lease.is_zero() => {
                super::keeper::announce(&mut command, lease).map(|a| (a, lease))
            }
            _ => None,
        };
        let mut child = command.spawn().map_err(|e| JobError::Spawn {
            command: this.command_line.clone(),
            reason: e.to_string(),
        })?;
        // Declared after the child: dropped (the group killed) before the child is handed to
        // the orphan queue.
        let group = child.id().and_then(ProcessGroup::led_by);
        // Held until the child is reaped: its release tells the keeper to forget it.
        let _kept = match (child.id(), announced) {
            (Some(pid), Some((announced, lease))) => announced.watch(pid, lease),
            _ => None,
        };
        this.supervise(&mut child, group, &ctx).await
    }
}

/// `code 3` or `signal 9`: what an operator needs from an exit status.
fn describe(status: ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("code {code}");
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return format!("signal {signal}");
        }
    }
    status.to_string()
}

#[cfg(test)]
mod tests;
