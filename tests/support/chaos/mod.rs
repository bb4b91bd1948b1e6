//! Chaos harness: a ZooKeeper (started by the test) and example nodes as separate processes, a
//! script job that logs every item run to a file, faults, and the verdict on the log.
//!
//! ```text
//!   test ── NodeProc a ─┐                    record.sh (one line per item, ~0.5 s)
//!        ── NodeProc b ─┼── ZooKeeper  ──►   runs.log: {date +%s.%N} {instance} {context JSON}
//!        ── NodeProc c ─┘                    log::check → Report (lost, duplicated, re-runs)
//!        ── registry::snapshot (the test's own session: owners, leader, instances)
//! ```
//!
//! | file | what it holds |
//! | --- | --- |
//! | `mod.rs` | [`Cluster`]: the temp dir, the script, the jobs file, the nodes, waits on the log |
//! | `process.rs` | [`process::NodeProc`]: one node process and its signals |
//! | `log.rs` | the script's log and [`log::check`] |
//! | `periodic.rs` | [`periodic::tally`]: counts for a slower job run by both languages |
//! | `registry.rs` | reading owners and leader through ZooKeeper; waiting for convergence |
//! | `spans.rs` | the tracking script (start, ticks, end of every run) and its verdict: overlaps, duplicates, losses |
//! | `workflow.rs` | the soak's workflow (a root and a step after it) and its verdict: one step run per completed root run |
//!
//! The nodes are outside the test, so the only way to know their state is to look: waits poll
//! the log file or the registry with a deadline that names what was expected.

pub mod log;
pub mod periodic;
pub mod process;
pub mod registry;
pub mod soak;
pub mod spans;
pub mod workflow;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use self::log::{Expect, Report, Run};
use self::process::NodeProc;
use crate::jobs_file::{script_job, write_script};

/// The session timeout every node asks for.
pub const SESSION_TIMEOUT: Duration = Duration::from_secs(4);
/// The job every scenario checks.
pub const JOB: &str = "chaos";
/// Its item count.
pub const ITEMS: u32 = 4;
/// How long one run of the `{slow}` script works.
pub const SLOW_RUN: Duration = Duration::from_millis(1500);
/// How long a wait on the log or the registry may take.
pub const WITHIN: Duration = Duration::from_secs(30);

/// Now, in unix seconds, on the clock the script's `date` reads.
pub fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("the clock is past 1970")
        .as_secs_f64()
}

/// Sleeps until the wall clock reads `at` (unix seconds): the processes under test fire on the wall
/// clock, so a scenario that needs a moment of their schedule waits for it.
pub fn sleep_until(at: f64) {
    let left = at - now();
    if left > 0.0 {
        std::thread::sleep(Duration::from_secs_f64(left));
    }
}

/// Sleeps until the wall clock's second within each `period` falls in `window` (for a fault or a
/// join between two fires).
pub fn sleep_until_phase(window: std::ops::Range<f64>, period: f64) {
    let phase = now() % period;
    if !window.contains(&phase) {
        let to = if phase < window.start {
            window.start
        } else {
            period + window.start
        };
        sleep_until(now() - phase + to);
    }
}

/// The instance id of the node labelled `label`.
pub fn instance(label: &str) -> String {
    format!("127.0.0.1@-@chaos-{label}")
}

/// One scenario's world: its directory, namespace, jobs file, log and node processes.
#[derive(Debug)]
pub struct Cluster {
    dir: tempfile::TempDir,
    /// The namespace the nodes share.
    pub namespace: String,
    /// The ZooKeeper connect string the nodes use.
    pub connect: String,
    jobs: PathBuf,
    log: PathBuf,
    track: PathBuf,
    nodes: BTreeMap<String, NodeProc>,
    /// The nodes' session timeout ([`SESSION_TIMEOUT`] unless [`Cluster::with_session`]).
    session: Duration,
}

impl Cluster {
    /// Writes the scripts and a jobs file with the `chaos` job (4 items every second, failover
    /// on, misfire off) followed by `extra_jobs` (YAML list entries; `{record}`, `{slow}` and
    /// `{hang}` name the scripts).
    pub fn new(connect: &str, scenario: &str, extra_jobs: &str) -> Cluster {
        let chaos = script_job(JOB, ITEMS, "'{record}'")
            .cron("* * * * * ?")
            .resilient()
            .yaml()
            + extra_jobs;
        Self::with_jobs(connect, scenario, &chaos)
    }

    /// Writes the scripts and a jobs file whose `jobs:` list is `jobs` (YAML list entries;
    /// `{record}` logs and works half a second, `{slow}` logs and works [`SLOW_RUN`], `{hang}`
    /// logs and hangs while its node lives, `{orphan}` logs its pid to `orphans.log` and sleeps
    /// a minute whatever becomes of its node, `{track}` is the tracking script of [`spans`]:
    /// `{track} TICKS SECONDS` runs TICKS ticks of SECONDS each).
    pub fn with_jobs(connect: &str, scenario: &str, jobs_yaml: &str) -> Cluster {
        // `SHARDCRON_CHAOS_KEEP=1` keeps the directory (the nodes' logs) after the test.
        let keep = std::env::var_os("SHARDCRON_CHAOS_KEEP").is_some();
        let dir = tempfile::Builder::new()
            .prefix("shardcron-chaos-")
            .disable_cleanup(keep)
            .tempdir()
            .expect("creating the scenario's directory");
        if keep {
            eprintln!("[chaos] {scenario}: logs kept in {}", dir.path().display());
        }
        let log = dir.path().join("runs.log");
        let record = dir.path().join("record.sh");
        let slow = dir.path().join("slow.sh");
        let hang = dir.path().join("hang.sh");
        let line = format!(
            "printf '%s %s %s\\n' \"$(date +%s.%N)\" \"$SHARDCRON_TEST_INSTANCE\" \"$1\" >> '{}'\n",
            log.display()
        );
        write_script(
            &record,
            &format!("#!/bin/sh\n# One line per item run, then half a second of work.\n{line}sleep 0.5\n"),
        );
        write_script(
            &slow,
            &format!(
                "#!/bin/sh\n# One line per item run, then {secs} s of work.\n{line}sleep {secs}\n",
                secs = SLOW_RUN.as_secs_f64()
            ),
        );
        write_script(
            &hang,
            &format!(
                "#!/bin/sh\n# Logs, then hangs for as long as its node lives.\n{line}\
                 while kill -0 $PPID 2>/dev/null; do sleep 0.2; done\n"
            ),
        );
        let orphan = dir.path().join("orphan.sh");
        write_script(
            &orphan,
            &format!(
                "#!/bin/sh\n# Logs its pid, then sleeps a minute whatever becomes of its node.\n\
                 echo $$ >> '{}'\nexec sleep 60\n",
                dir.path().join("orphans.log").display()
            ),
        );
        let jobs = dir.path().join("jobs.yaml");
        let track_script = dir.path().join("track.sh");
        let text = format!(
            "jobs:\n{}",
            jobs_yaml
                .replace("{track}", &track_script.display().to_string())
                .replace("{record}", &record.display().to_string())
                .replace("{slow}", &slow.display().to_string())
                .replace("{hang}", &hang.display().to_string())
                .replace("{orphan}", &orphan.display().to_string()),
        );
        std::fs::write(&jobs, text).expect("writing the jobs file");
        let track = dir.path().join("track.log");
        write_script(&track_script, &spans::script(&track));
        Cluster {
            dir,
            namespace: format!("chaos-{scenario}-{}", std::process::id()),
            connect: connect.to_owned(),
            jobs,
            log,
            track,
            nodes: BTreeMap::new(),
            session: SESSION_TIMEOUT,
        }
    }

    /// Nodes started from now on ask for a session timeout of `session`.
    pub fn with_session(mut self, session: Duration) -> Cluster {
        self.session = session;
        self
    }

    /// The session timeout the nodes ask for.
    pub fn session(&self) -> Duration {
        self.session
    }

    /// Every run the tracking script logged so far, in start order.
    pub fn spans(&self) -> Vec<spans::Span> {
        spans::read(&self.track)
    }

    /// The scenario's directory (logs, scripts, the jobs file).
    pub fn dir(&self) -> &std::path::Path {
        self.dir.path()
    }

    /// The path of a script the jobs file names (`record`, `slow`, `hang`).
    pub fn script(&self, name: &str) -> PathBuf {
        self.dir.path().join(format!("{name}.sh"))
    }

    /// Stops tracking the node labelled `label` (after it was killed), so that it can start again.
    pub fn forget(&mut self, label: &str) -> Option<NodeProc> {
        self.nodes.remove(label)
    }

    /// Lines of the tracking log torn by a kill in the middle of a write (skipped).
    pub fn torn_lines(&self) -> usize {
        spans::torn_lines(&self.track)
    }

    /// Starts the node labelled `label` as instance [`instance`]`(label)`.
    pub fn start(&mut self, label: &str) -> &mut NodeProc {
        self.start_with(label, &[])
    }

    /// Starts the node labelled `label` with `extra` arguments (`--label gpu`, ...).
    pub fn start_with(&mut self, label: &str, extra: &[&str]) -> &mut NodeProc {
        let connect = self.connect.clone();
        self.start_via_with(label, &connect, extra)
    }

    /// Starts the node labelled `label`, reaching ZooKeeper through `connect` (its own proxies).
    /// A node of that label still running is killed first.
    pub fn start_via(&mut self, label: &str, connect: &str) -> &mut NodeProc {
        self.start_via_with(label, connect, &[])
    }

    /// [`Cluster::start_via`] with `extra` arguments.
    pub fn start_via_with(&mut self, label: &str, connect: &str, extra: &[&str]) -> &mut NodeProc {
        let mut args: Vec<String> = [
            "--zk",
            connect,
            "--namespace",
            &self.namespace,
            "--jobs",
            &self.jobs.display().to_string(),
            "--instance-id",
            &instance(label),
            "--session-timeout-ms",
            &self.session.as_millis().to_string(),
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        // Killed (by its drop) before its successor starts: one process per instance id.
        drop(self.nodes.remove(label));
        let node = NodeProc::spawn(self.dir.path(), label, &instance(label), &args);
        self.nodes.insert(label.to_owned(), node);
        self.node(label)
    }

    /// The node labelled `label`.
    pub fn node(&mut self, label: &str) -> &mut NodeProc {
        self.nodes
            .get_mut(label)
            .unwrap_or_else(|| panic!("no node {label} was started"))
    }

    /// Every run logged so far.
    pub fn runs(&self) -> Vec<Run> {
        log::read_runs(&self.log)
    }

    /// Polls the log until `pred` holds; fails naming `what` and showing the nodes' output.
    pub fn wait_runs<T>(&self, what: &str, pred: impl FnMut(&[Run]) -> Option<T>) -> T {
        self.wait_runs_within(what, WITHIN, pred)
    }

    /// [`Cluster::wait_runs`] with a timeout of `within`.
    pub fn wait_runs_within<T>(
        &self,
        what: &str,
        within: Duration,
        pred: impl FnMut(&[Run]) -> Option<T>,
    ) -> T {
        log::wait_runs(|| self.runs(), || self.dump(), what, within, pred)
    }

    /// Waits for a fire at or after `after` at which every item of `job` ran; returns its second.
    pub fn wait_complete_fire(&self, job: &str, items: u32, after: f64) -> u64 {
        let first = after.ceil() as u64;
        self.wait_runs(
            &format!("a fire at or after {first} at which all {items} items of {job} ran"),
            |runs| {
                let mut by_second: BTreeMap<u64, Vec<u32>> = BTreeMap::new();
                for r in runs.iter().filter(|r| r.job == job && r.source == "NORMAL") {
                    if r.second() >= first {
                        by_second.entry(r.second()).or_default().push(r.item);
                    }
                }
                by_second.into_iter().find_map(|(second, mut got)| {
                    got.sort_unstable();
                    got.dedup();
                    (got == (0..items).collect::<Vec<_>>()).then_some(second)
                })
            },
        )
    }

    /// Waits until `label`'s node has just started a normal run of the chaos job (within the last
    /// 200 ms), so that a fault injected now lands while the run is going; returns when it started.
    pub fn wait_running(&self, label: &str) -> f64 {
        let who = instance(label);
        self.wait_runs(&format!("{who} to be running an item of {JOB}"), |runs| {
            let now = now();
            runs.iter()
                .rev()
                .find(|r| r.job == JOB && r.instance == who && r.source == "NORMAL")
                .filter(|r| now - r.at < 0.2)
                .map(|r| r.at)
        })
    }

    /// Waits until the chaos job has converged on the nodes labelled `live`; returns how long it
    /// took.
    pub fn converge(&self, live: &[&str]) -> Duration {
        let ids: Vec<String> = live.iter().map(|l| instance(l)).collect();
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        self.with_stderr_tails(|| {
            registry::wait_converged(&self.connect, &self.namespace, JOB, &ids, ITEMS, WITHIN).1
        })
    }

    /// Runs `wait`; when it fails, prints every node's last stderr lines before failing: what
    /// each node logged is what tells why one did not (re)join.
    pub fn with_stderr_tails<T>(&self, wait: impl FnOnce() -> T) -> T {
        let waited = std::panic::catch_unwind(std::panic::AssertUnwindSafe(wait));
        waited.unwrap_or_else(|panic| {
            self.print_stderr_tails();
            std::panic::resume_unwind(panic)
        })
    }

    /// Prints the last 60 lines of every node's stderr.
    fn print_stderr_tails(&self) {
        for (label, node) in &self.nodes {
            let all = node.stderr();
            let lines: Vec<&str> = all.lines().collect();
            let tail = lines[lines.len().saturating_sub(60)..].join("\n");
            eprintln!("--- node {label} stderr (last 60 lines):\n{tail}");
        }
    }

    /// The current leader of the chaos job, as a node label.
    pub fn leader(&self) -> String {
        let snapshot = registry::snapshot(&self.connect, &self.namespace, JOB)
            .unwrap_or_else(|e| panic!("reading the leader: {e}"));
        let leader = snapshot.leader.expect("a converged job has a leader");
        leader
            .strip_prefix("127.0.0.1@-@chaos-")
            .unwrap_or_else(|| panic!("the leader {leader} is one of the test's nodes"))
            .to_owned()
    }

    /// Waits until the last second to check is over and its runs are logged, then checks the log
    /// and that the chaos job is still converged on the nodes labelled `live`. Prints the report
    /// (visible with `--nocapture`) and fails, with the nodes' output, when it is not clean.
    pub fn verdict(&self, scenario: &str, live: &[&str], expect: &Expect) -> Report {
        sleep_until(expect.to as f64 + 1.5);
        let report = log::check(&self.runs(), expect);
        eprintln!("[chaos] {scenario}: {report}");
        assert!(
            report.is_clean(),
            "{scenario}: the log shows lost, duplicated or wrongly re-run items:\n{report}\n{}",
            self.dump()
        );
        self.converge(live);
        report
    }

    /// Every node's stderr, concatenated.
    pub fn stderr(&self) -> String {
        self.nodes.values().map(NodeProc::stderr).collect()
    }

    /// Every node's stderr and the tail of its stdout, for failure messages.
    pub fn dump(&self) -> String {
        let mut text = String::new();
        for (label, node) in &self.nodes {
            let stdout = node.stdout();
            let tail: Vec<&str> = stdout.lines().rev().take(15).collect();
            text.push_str(&format!(
                "--- node {label} ({}) stderr:\n{}\n--- its last stdout lines, newest first:\n{}\n",
                node.instance,
                node.stderr(),
                tail.join("\n")
            ));
        }
        text
    }
}
