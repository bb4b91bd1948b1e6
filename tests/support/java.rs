//! The Java ElasticJob-Lite 3.x peer (`../shared/elasticjob-peer`): [`JavaProc`], one Java
//! instance as a process (`run-instance`), and [`ejtool`], ElasticJob's own classes on a registry
//! or on inputs (`stats`, `operate`, `yaml`, `shard`, `dump`).
//!
//! ```text
//!   test ── JavaProc (run-instance: ScheduleJobBootstrap + InteropJob) ──┐
//!        ── NodeProc (shardcron example node) ────────────────────────────┼── ZooKeeper
//!        ── ejtool stats | operate | dump ─────────────────────────────────┘
//!   java.log: "<epoch ms> <item> <instanceId> java start <taskId>" (+ "... end ...")
//! ```
//!
//! Where the peer is: `require!(Peer::ElasticJob)` ([`super::peer`]) finds it, at
//! `$SHARDCRON_ELASTICJOB_PEER`, else `../shared/elasticjob-peer` next to the repository.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::chaos::log::{whole_lines, Run};
use super::wait::{poll_blocking, wait_until_blocking, POLL};
use super::zk::server::die_with_spawning_thread;

/// How long a JVM may take to start, connect and schedule its job (two cores, several JVMs).
pub const JVM_START_WITHIN: Duration = Duration::from_secs(90);

/// Compiles the test's Java source `source` (relative to the repository) against `classpath` into
/// `dir` with javac (found by `Peer::Quartz`), and returns the class path that runs it.
pub fn compile(source: &str, classpath: &str, dir: &Path) -> String {
    let source = super::repo_root().join(source);
    let javac = super::peer::which("javac").expect("Peer::Quartz found javac");
    let status = Command::new(javac)
        .args(["-cp", classpath, "-d"])
        .arg(dir)
        .arg(&source)
        .status()
        .expect("javac runs");
    assert!(status.success(), "javac failed on {}", source.display());
    format!("{classpath}:{}", dir.display())
}

/// Runs `ejtool CMD key=value...` and returns its stdout; fails the test when it exits non-zero.
pub fn ejtool(peer: &Path, args: &[String]) -> String {
    let output = Command::new(peer.join("ejtool"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("running ejtool");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "ejtool {args:?} failed ({}):\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// One Java ElasticJob instance. Killed (SIGKILL) on drop, and by the kernel when the test thread
/// that spawned it ends.
#[derive(Debug)]
pub struct JavaProc {
    /// Its instance id, as it registered (`{ip}@-@{pid}`).
    pub instance: String,
    child: Child,
    stdout: PathBuf,
    exited: bool,
}

impl JavaProc {
    /// Starts `run-instance` with `args` (`key=value`) and `jflags` (JVM `-D...` flags), and waits
    /// until it has scheduled its job.
    pub fn spawn(peer: &Path, dir: &Path, label: &str, args: &[String], jflags: &str) -> JavaProc {
        let stdout = dir.join(format!("java-{label}.stdout"));
        let mut command = Command::new(peer.join("run-instance"));
        command
            .args(args)
            .env("JFLAGS", jflags)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&stdout).expect("creating the JVM's stdout file"))
            .stderr(Stdio::from(
                std::fs::File::options()
                    .append(true)
                    .open(&stdout)
                    .expect("opening the JVM's stdout file for stderr"),
            ));
        die_with_spawning_thread(&mut command);
        let child = command
            .spawn()
            .unwrap_or_else(|e| panic!("spawning the Java peer {label}: {e}"));
        let mut proc = JavaProc {
            instance: String::new(),
            child,
            stdout,
            exited: false,
        };
        let check = || {
            let out = proc.output();
            let scheduled = out
                .lines()
                .find_map(|l| l.split_once("scheduled instance=").map(|(_, id)| id.trim()));
            if let Some(id) = scheduled {
                return Ok(id.to_owned());
            }
            let failed = out.contains("bootstrap-failed") || !proc.is_running();
            assert!(!failed, "the Java peer {label} failed to start:\n{out}");
            Err(out)
        };
        let what = format!("the Java peer {label} to schedule its job");
        proc.instance = wait_until_blocking(check, &what, JVM_START_WITHIN);
        proc
    }

    /// What the JVM printed so far (`EVENT ...` lines, ElasticJob's warnings, stack traces).
    pub fn output(&self) -> String {
        std::fs::read_to_string(&self.stdout).unwrap_or_default()
    }

    /// Whether the JVM has not exited.
    pub fn is_running(&mut self) -> bool {
        if !self.exited {
            self.exited = self
                .child
                .try_wait()
                .expect("polling the JVM's exit")
                .is_some();
        }
        !self.exited
    }

    /// `kill -9`, and waits for the exit.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.exited = true;
    }

    /// SIGTERM (with `shutdownHook=true`, ElasticJob's own shutdown), and waits for the exit.
    pub fn terminate(&mut self) {
        let pid = libc::pid_t::try_from(self.child.id()).expect("a pid fits pid_t");
        // SAFETY: signalling our own child.
        unsafe { libc::kill(pid, libc::SIGTERM) };
        if poll_blocking(|| !self.is_running(), Duration::from_secs(30), POLL).is_err() {
            self.kill();
            panic!("the Java peer {} ignored SIGTERM for 30 s", self.instance);
        }
    }
}

impl Drop for JavaProc {
    fn drop(&mut self) {
        if !self.exited {
            self.kill();
        }
    }
}

/// Reads the Java instances' item log: one [`Run`] per `start` line, source `JAVA` (the peer's
/// task id does not say whether a run is a failover re-run). A line being written is left out.
pub fn read_java_runs(log: &Path) -> Vec<Run> {
    (whole_lines(log).iter())
        .filter_map(|line| {
            let f: Vec<&str> = line.splitn(6, ' ').collect();
            let [ms, item, instance, "java", "start", task] = f[..] else {
                return None;
            };
            Some(Run {
                at: ms.parse::<f64>().expect("the time is epoch ms") / 1000.0,
                instance: instance.to_owned(),
                job: task.split("@-@").next().unwrap_or_default().to_owned(),
                item: item.parse().expect("the item is a number"),
                source: "JAVA".to_owned(),
                line: line.to_owned(),
            })
        })
        .collect()
}
