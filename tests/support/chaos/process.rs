//! [`NodeProc`]: one example node as a separate process, with the faults a test injects into it
//! (`kill -9`, `SIGSTOP`/`SIGCONT`, `SIGTERM`). Its stdout and stderr go to files, so that a slow
//! reader can never block the node, and a failing test can show them.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;

use crate::wait::{wait_until_blocking, Later};
use crate::zk::server::die_with_spawning_thread;

/// How long a node may take to exit after SIGTERM or SIGKILL.
const EXIT_WITHIN: Duration = Duration::from_secs(30);

/// The example node binary (built, or found fresh, on first use).
pub fn example_binary() -> PathBuf {
    crate::example_bin::example_binary()
}

/// A running example node. Killed (SIGKILL, which also ends a stopped process) on drop, and by the
/// kernel when the test thread that spawned it ends (`PR_SET_PDEATHSIG`).
#[derive(Debug)]
pub struct NodeProc {
    /// The instance id it registers as (`127.0.0.1@-@chaos-a`).
    pub instance: String,
    child: Child,
    stdout: PathBuf,
    stderr: PathBuf,
    exit: Option<ExitStatus>,
}

/// The nodes' log filter unless `SHARDCRON_NODE_LOG` says otherwise: warnings, and the lines
/// that say when a session opened or ended and when each job registered on it.
const DEFAULT_LOG: &str = "warn,shardcron::actors::registry=info,shardcron::actors::session=info,\
                           shardcron::actors::executor=info";

impl NodeProc {
    /// Starts the example with `args`; the script jobs it runs see `SHARDCRON_TEST_INSTANCE`.
    pub fn spawn(dir: &Path, label: &str, instance: &str, args: &[String]) -> NodeProc {
        let stdout = dir.join(format!("{label}.stdout"));
        let stderr = dir.join(format!("{label}.stderr"));
        let mut command = Command::new(example_binary());
        command
            .args(args)
            .env("SHARDCRON_TEST_INSTANCE", instance)
            // `SHARDCRON_NODE_LOG` sets the nodes' log filter (by default warnings, and the
            // session's and each job's registration steps: a failed converge prints them).
            .env(
                "RUST_LOG",
                std::env::var("SHARDCRON_NODE_LOG").unwrap_or_else(|_| DEFAULT_LOG.to_owned()),
            )
            .stdin(Stdio::null())
            .stdout(append(&stdout))
            .stderr(append(&stderr));
        die_with_spawning_thread(&mut command);
        let child = command
            .spawn()
            .unwrap_or_else(|e| panic!("spawning the example node {instance}: {e}"));
        NodeProc {
            instance: instance.to_owned(),
            child,
            stdout,
            stderr,
            exit: None,
        }
    }

    /// What the node printed on stdout so far (`node`, `exec`, `reshard` lines).
    pub fn stdout(&self) -> String {
        std::fs::read_to_string(&self.stdout).unwrap_or_default()
    }

    /// What the node logged on stderr so far (warnings and errors).
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// Whether the process has not exited.
    pub fn is_running(&mut self) -> bool {
        if self.exit.is_none() {
            self.exit = self.child.try_wait().expect("polling a node's exit");
        }
        self.exit.is_none()
    }

    /// How the node exited, once it has.
    pub fn exit_status(&mut self) -> Option<ExitStatus> {
        self.is_running();
        self.exit
    }

    /// Sends `signal` to the node.
    pub fn signal(&mut self, signal: libc::c_int) {
        assert!(
            self.is_running(),
            "{} exited before the signal",
            self.instance
        );
        let pid = libc::pid_t::try_from(self.child.id()).expect("a pid fits pid_t");
        // SAFETY: kill(2) has no memory effects; the child is not reaped while it runs.
        let rc = unsafe { libc::kill(pid, signal) };
        assert_eq!(rc, 0, "kill({pid}, {signal}) failed");
    }

    /// The node's process id.
    pub fn pid(&self) -> libc::pid_t {
        libc::pid_t::try_from(self.child.id()).expect("a pid fits pid_t")
    }

    /// The node's descendants now (its script jobs and what they started), parents first, read
    /// from `/proc/<pid>/task/*/children`.
    pub fn descendants(&self) -> Vec<libc::pid_t> {
        let mut found = Vec::new();
        let mut next = vec![self.pid()];
        while let Some(pid) = next.pop() {
            let tasks = std::fs::read_dir(format!("/proc/{pid}/task"));
            for task in tasks.into_iter().flatten().flatten() {
                let children = std::fs::read_to_string(task.path().join("children"));
                for child in children.unwrap_or_default().split_whitespace() {
                    if let Ok(child) = child.parse::<libc::pid_t>() {
                        found.push(child);
                        next.push(child);
                    }
                }
            }
        }
        found
    }

    /// Sends `signal` to the node's descendants `pids` (those still alive).
    pub fn signal_pids(pids: &[libc::pid_t], signal: libc::c_int) {
        for pid in pids {
            // SAFETY: kill(2) has no memory effects. A pid that ended meanwhile is fine to miss.
            unsafe { libc::kill(*pid, signal) };
        }
    }

    /// `kill -9`, then the exit.
    pub fn kill9(&mut self) {
        self.signal(libc::SIGKILL);
        self.wait_exit();
    }

    /// SIGTERM (a graceful shutdown), then the exit.
    pub fn terminate(&mut self) -> ExitStatus {
        self.signal(libc::SIGTERM);
        self.wait_exit()
    }

    /// Waits for the exit, failing with the node's stderr after [`EXIT_WITHIN`].
    pub fn wait_exit(&mut self) -> ExitStatus {
        let (instance, stderr) = (self.instance.clone(), self.stderr.clone());
        let stderr = &|| std::fs::read_to_string(&stderr).unwrap_or_default();
        let instance = &instance;
        let check = || {
            if self.is_running() {
                Err(Later(move || {
                    format!("{instance} runs; stderr:\n{}", stderr())
                }))
            } else {
                Ok(())
            }
        };
        let what = format!("{instance} to exit");
        wait_until_blocking(check, &what, EXIT_WITHIN);
        self.exit.expect("the node has exited")
    }
}

/// A log file opened for appending: a node restarted under the same label keeps its history.
fn append(path: &Path) -> std::fs::File {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap_or_else(|e| panic!("opening {} for the node's output: {e}", path.display()))
}

impl Drop for NodeProc {
    fn drop(&mut self) {
        if self.is_running() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
