//! The example node (`examples/node`) as a child process, for tests that run it: its stdout lines
//! parsed as `{time} {kind} key=value...`, waits on them with a deadline that names what was
//! expected, its stderr kept for failure messages, and SIGKILL when a test ends without stopping it.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use super::example_bin::example_binary;
use super::wait::{poll_blocking, POLL};

/// Bound of one wait on a process's output or exit.
pub const WITHIN: Duration = Duration::from_secs(30);

/// One output line of a node process.
#[derive(Debug, Clone)]
pub struct Line {
    /// The process's label in this test.
    pub node: String,
    /// The line's kind (`exec`, `reshard`, `node`, ...), its second word.
    pub kind: String,
    /// Its `key=value` fields (quoted values are cut at their first space; no test reads those).
    pub fields: BTreeMap<String, String>,
    /// The whole line, for failure messages.
    pub text: String,
}

impl Line {
    pub fn parse(node: &str, text: String) -> Line {
        let mut words = text.split(' ');
        let _timestamp = words.next();
        let kind = words.next().unwrap_or_default().to_owned();
        let fields = words
            .filter_map(|w| w.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        Line {
            node: node.to_owned(),
            kind,
            fields,
            text,
        }
    }

    pub fn field(&self, key: &str) -> &str {
        self.fields.get(key).map(String::as_str).unwrap_or_default()
    }
}

/// The stdout lines of every process of a test, in arrival order.
pub struct Output {
    tx: Sender<Line>,
    rx: Receiver<Line>,
    pub seen: Vec<Line>,
}

impl Default for Output {
    fn default() -> Self {
        Self::new()
    }
}

impl Output {
    pub fn new() -> Self {
        let (tx, rx) = mpsc::channel();
        Self {
            tx,
            rx,
            seen: Vec::new(),
        }
    }

    /// Waits until `pred` holds over the lines seen so far, re-checking at every new line.
    pub fn wait_until(
        &mut self,
        what: &str,
        nodes: &[&NodeProcess],
        pred: impl Fn(&[Line]) -> bool,
    ) {
        let (rx, seen) = (&self.rx, &mut self.seen);
        let check = || {
            seen.extend(rx.try_iter());
            pred(seen)
        };
        if poll_blocking(check, WITHIN, POLL).is_err() {
            self.fail(
                &format!("timed out after {WITHIN:?} waiting for {what}"),
                nodes,
            );
        }
    }

    pub fn fail(&self, why: &str, nodes: &[&NodeProcess]) -> ! {
        let tail: Vec<String> = self
            .seen
            .iter()
            .rev()
            .take(40)
            .map(|l| format!("[{}] {}", l.node, l.text))
            .collect();
        let stderr: Vec<String> = nodes
            .iter()
            .map(|n| format!("--- {} stderr:\n{}", n.label, n.stderr()))
            .collect();
        panic!(
            "{why}\n--- last stdout lines, newest first:\n{}\n{}",
            tail.join("\n"),
            stderr.join("\n")
        );
    }

    pub fn of_kind<'a>(lines: &'a [Line], kind: &'a str) -> impl Iterator<Item = &'a Line> + 'a {
        lines.iter().filter(move |l| l.kind == kind)
    }
}

/// Where example nodes on ZooKeeper find their work: the server, a namespace, a jobs file.
#[derive(Debug, Clone)]
pub struct ZkJobs {
    pub connect: String,
    pub namespace: String,
    pub jobs: std::path::PathBuf,
}

impl ZkJobs {
    /// Spawns the example node `label` as `instance` (4 s sessions); its scripts see
    /// `SHARDCRON_TEST_INSTANCE={test_instance}`.
    pub fn spawn(
        &self,
        label: &str,
        instance: &str,
        test_instance: &str,
        output: &Output,
    ) -> NodeProcess {
        self.spawn_logging(label, instance, test_instance, output, "warn")
    }

    /// [`ZkJobs::spawn`] with the node's log filter `RUST_LOG={log}` (the default is `warn`).
    pub fn spawn_logging(
        &self,
        label: &str,
        instance: &str,
        test_instance: &str,
        output: &Output,
        log: &str,
    ) -> NodeProcess {
        let args = [
            "--zk",
            self.connect.as_str(),
            "--namespace",
            self.namespace.as_str(),
            "--jobs",
            self.jobs.to_str().expect("a UTF-8 temp path"),
            "--instance-id",
            instance,
            "--session-timeout-ms",
            "4000",
        ];
        let env = [
            ("SHARDCRON_TEST_INSTANCE", test_instance),
            ("RUST_LOG", log),
        ];
        NodeProcess::spawn(label, &args, &env, output)
    }
}

/// A running example process; killed (SIGKILL) if the test ends without stopping it.
pub struct NodeProcess {
    pub label: String,
    pub pid: libc::pid_t,
    exit: Receiver<ExitStatus>,
    exited: bool,
    stderr: Arc<Mutex<String>>,
    readers: Vec<JoinHandle<()>>,
}

impl NodeProcess {
    pub fn spawn(label: &str, args: &[&str], env: &[(&str, &str)], output: &Output) -> NodeProcess {
        Self::spawn_program(&example_binary(), label, args, env, output)
    }

    /// Runs `program` (the example node, `shardcronctl console`) the same way. The registry
    /// credentials come only from `env`, never from the test's own environment.
    pub fn spawn_program(
        program: &std::path::Path,
        label: &str,
        args: &[&str],
        env: &[(&str, &str)],
        output: &Output,
    ) -> NodeProcess {
        let mut command = Command::new(program);
        command
            .args(args)
            .env_remove("SHARDCRON_ZK_AUTH")
            .env_remove("SHARDCRON_ZK_AUTH_FILE")
            // `warn` unless the caller's `env` names another filter.
            .env("RUST_LOG", "warn")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command
            .spawn()
            .unwrap_or_else(|e| panic!("spawning the example node {label}: {e}"));
        let pid = libc::pid_t::try_from(child.id()).expect("a pid fits pid_t");
        let stdout = child.stdout.take().expect("stdout is piped");
        let mut stderr_pipe = child.stderr.take().expect("stderr is piped");
        let tx = output.tx.clone();
        let name = label.to_owned();
        let stdout_reader = std::thread::spawn(move || {
            for text in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(Line::parse(&name, text)).is_err() {
                    return;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let sink = stderr.clone();
        let stderr_reader = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = stderr_pipe.read(&mut buf) {
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        NodeProcess {
            label: label.to_owned(),
            pid,
            exit: wait_in_thread(child),
            exited: false,
            stderr,
            readers: vec![stdout_reader, stderr_reader],
        }
    }

    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    pub fn signal(&self, signal: libc::c_int) {
        // SAFETY: kill(2) has no memory effects; the pid is our child, not reaped before `exited`.
        let rc = unsafe { libc::kill(self.pid, signal) };
        assert_eq!(rc, 0, "kill({}, {signal}) failed", self.pid);
    }

    /// Waits for the process to exit, then for its output to be read to the end.
    pub fn wait_exit(&mut self) -> ExitStatus {
        let status = self.exit.recv_timeout(WITHIN).unwrap_or_else(|_| {
            panic!(
                "node {} did not exit within {WITHIN:?}; stderr:\n{}",
                self.label,
                self.stderr()
            )
        });
        self.exited = true;
        for reader in self.readers.drain(..) {
            reader.join().expect("an output reader thread panicked");
        }
        status
    }

    /// SIGTERM, then the exit.
    pub fn terminate(&mut self) -> ExitStatus {
        self.signal(libc::SIGTERM);
        self.wait_exit()
    }
}

impl Drop for NodeProcess {
    fn drop(&mut self) {
        if !self.exited && self.exit.try_recv().is_err() {
            // SAFETY: as in `signal`; the waiter thread has not reaped the child yet.
            unsafe { libc::kill(self.pid, libc::SIGKILL) };
        }
    }
}

/// Reaps `child` on a thread of its own, so that a test can wait for the exit with a deadline.
pub fn wait_in_thread(mut child: Child) -> Receiver<ExitStatus> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        if let Ok(status) = child.wait() {
            let _ = tx.send(status);
        }
    });
    rx
}

/// Runs the example to its exit; for invocations that must fail before starting anything.
pub fn run_to_exit(args: &[&str]) -> (ExitStatus, String) {
    let output = Output::new();
    let mut node = NodeProcess::spawn("refused", args, &[], &output);
    let status = node.wait_exit();
    let stderr = node.stderr();
    (status, stderr)
}

/// Whether `pid` runs: it exists and is not a zombie (a child killed while its node is stopped
/// stays a zombie until the node reaps it).
pub fn runs(pid: libc::pid_t) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X")
    })
}
