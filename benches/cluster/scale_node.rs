//! Scenario 8's instance: one node in a process of its own (`--child scale`), with its own
//! ZooKeeper session on the ensemble, running its own one-item jobs, and answering the parent's
//! looks over stdin/stdout while it runs; and [`Instance`], the parent's end of it.
//!
//! A process per instance, rather than several nodes in one process, so that each instance's
//! resident memory and CPU time are its own, and each has its own metrics recorder: the figures
//! are those of an instance as it runs in production, one per process.
//!
//! Protocol: once its jobs are registered and sharded the child prints `result ready=1 ...`; then
//! each `look` line on stdin is answered with one `result` line ([`look`]); `stop` (or the end of
//! stdin) shuts the node down and ends the process.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::Utc;
use shardcron::node::NodeHandle;
use shardcron::registry::zookeeper::{ZkConfig, ZkConnector};
use tokio::io::AsyncBufReadExt;

use crate::child::Results;
use crate::fleet;
use crate::probe::{self, DelayLog};

/// The session timeout: longer than an election of the ensemble, so that the instances keep their
/// sessions through a leader's kill and only re-list.
const SESSION_TIMEOUT: Duration = Duration::from_secs(10);

/// One instance: its process and the pipes the parent looks through.
pub(crate) struct Instance {
    pub(crate) n: u32,
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Instance {
    /// Starts instance `n` of `ns` with `jobs` jobs (it dies with this process).
    pub(crate) fn start(connect: &str, ns: &str, n: u32, jobs: usize) -> Instance {
        let exe = std::env::current_exe().expect("the bench binary's own path");
        let mut cmd = Command::new(exe);
        cmd.args(["--child", "scale"])
            .arg(format!("zk={connect}"))
            .arg(format!("ns={ns}"))
            .arg(format!("n={n}"))
            .arg(format!("jobs={jobs}"))
            .arg(format!("period={}", crate::scale::PERIOD_S))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        let mut child =
            crate::server::spawn_dying_with_process(cmd).expect("starting a scale instance");
        let stdin = child.stdin.take().expect("a piped stdin");
        let stdout = BufReader::new(child.stdout.take().expect("a piped stdout"));
        Instance {
            n,
            child,
            stdin,
            stdout,
        }
    }

    /// The next `result` line the instance prints; panics when it exited instead.
    pub(crate) fn answer(&mut self) -> Results {
        let mut line = String::new();
        loop {
            line.clear();
            let read = self.stdout.read_line(&mut line).unwrap_or(0);
            if read == 0 {
                let status = self.child.wait().map(|s| s.to_string());
                panic!("scale instance {} exited ({status:?})", self.n);
            }
            if let Some(r) = Results::parse(&line) {
                return r;
            }
        }
    }

    /// The instance's figures now.
    pub(crate) fn look(&mut self) -> Results {
        writeln!(self.stdin, "look").expect("asking a scale instance");
        self.answer()
    }

    /// Shuts the node down (its session closes) and waits for the process.
    pub(crate) fn stop(mut self) {
        // A pipe already closed: the process is ending anyway.
        let _ = writeln!(self.stdin, "stop");
        drop(self.stdin);
        let _ = self.child.wait();
    }
}

/// When the node's mirror last went out of sync and came back (Unix microseconds, 0: never).
#[derive(Debug, Default, Clone, Copy)]
struct SyncTimes {
    lost_us: u64,
    synced_us: u64,
}

/// The child: instance `n` of the namespace `ns` on the ensemble `connect`, running `jobs`
/// one-item jobs (`scale-{n}-{j}`, monitorExecution on) every `period` seconds.
pub(crate) async fn child(connect: &str, ns: &str, n: u32, jobs: usize, period: i64) {
    let metrics = shardcron::admin::prometheus_handle().expect("the child's metrics recorder");
    let config = ZkConfig::new(connect, ns)
        .expect("scale: zk=HOST:PORT,... ns=NAME")
        .with_session_timeout(SESSION_TIMEOUT)
        .with_connection_timeout(SESSION_TIMEOUT);
    let zk = Arc::new(ZkConnector::new(config));
    let log = Arc::new(DelayLog::default());
    let names: Vec<String> = (0..jobs).map(|j| format!("scale-{n}-{j}")).collect();
    let cron = format!("0/{period} * * * * ?");
    let configs = names
        .iter()
        .map(|name| {
            (
                fleet::job(name, 1, &cron, true),
                probe::delay_handler(log.clone(), period, 0),
            )
        })
        .collect();
    let node = fleet::start_node(zk, fleet::instance(n), configs).await;
    let within = Duration::from_secs(120);
    let ready = fleet::wait_registered(&node, &names, within).await
        && fleet::wait_sharded(&node, &names, within).await;
    let times = Arc::new(Mutex::new(SyncTimes::default()));
    tokio::spawn(follow_sync(node.mirror().synced(), times.clone()));
    let mut r = Results::default();
    r.put("ready", u64::from(ready));
    r.print();
    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        match line.trim() {
            "look" => {
                let times = *times.lock().unwrap();
                look(&node, &metrics.render(), &log, times).print();
            }
            "stop" => break,
            other => panic!("scale instance {n}: unknown command {other:?}"),
        }
    }
    node.shutdown().await;
    std::process::exit(0);
}

/// Records when the mirror goes out of sync (a disconnect) and when it is synced again (a
/// re-list swapped in), on the system clock, as the parent times a leader's kill on it.
async fn follow_sync(mut synced: tokio::sync::watch::Receiver<bool>, times: Arc<Mutex<SyncTimes>>) {
    while synced.changed().await.is_ok() {
        let now = Utc::now().timestamp_micros() as u64;
        let is_synced = *synced.borrow_and_update();
        let mut t = times.lock().unwrap();
        if is_synced {
            t.synced_us = now;
        } else {
            t.lost_us = now;
        }
    }
}

/// The instance's figures so far: mirror events by scope (`own`, `other`: the engine's
/// `shardcron_registry_events_total`, read from this process's recorder), own item runs, resident
/// memory, CPU time, mirror size and the sync times.
fn look(node: &NodeHandle, rendered: &str, log: &DelayLog, times: SyncTimes) -> Results {
    let events = |scope: &str| -> u64 {
        let label = format!("scope=\"{scope}\"");
        rendered
            .lines()
            .filter(|l| l.starts_with(shardcron::metrics::REGISTRY_EVENTS) && l.contains(&label))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
            .sum()
    };
    let mut r = Results::default();
    r.put("own", events("own"));
    r.put("other", events("other"));
    r.put("runs", log.count());
    r.put("rss_kib", probe::status_field("VmRSS"));
    r.put("cpu_us", probe::cpu_time().as_micros() as u64);
    r.put("mirror_nodes", node.mirror().len() as u64);
    r.put("synced", u64::from(node.mirror().is_synced()));
    r.put("lost_us", times.lost_us);
    r.put("synced_us", times.synced_us);
    r
}
