//! [`Mixed`]: one scenario of a job shared by shardcron nodes ([`crate::chaos::Cluster`]) and
//! Java ElasticJob instances ([`crate::java::JavaProc`]) on a namespace of its own; faults
//! (graceful stops, `kill -9` while items run) with the windows they may cost; the verdict
//! ([`crate::chaos::periodic::tally`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::chaos::log::{wait_runs, Crash, Run, Window};
use crate::chaos::periodic::{tally, Periodic, Tally};
use crate::chaos::{
    instance, now, registry, sleep_until, sleep_until_phase, Cluster, SESSION_TIMEOUT, SLOW_RUN,
    WITHIN,
};
use crate::java::{ejtool, read_java_runs, JavaProc};

/// Seconds between the job's fires (`0/6 * * * * ?`).
pub const PERIOD: u64 = 6;
/// Its item count.
pub const ITEMS: u32 = 4;
/// The Java job's class: the job root's data on both sides.
pub const JAVA_CLASS: &str = "interop.InteropJob";

/// Which language an instance is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A Java ElasticJob instance.
    Java,
    /// A shardcron example node.
    Rust,
}

/// A finished scenario: its counts, and the processes' output when they are not clean.
#[derive(Debug)]
pub struct Outcome {
    /// The counts.
    pub tally: Tally,
    /// Every process's output, for a failure message.
    pub dump: String,
}

/// One mixed scenario.
#[derive(Debug)]
pub struct Mixed {
    peer: PathBuf,
    cluster: Cluster,
    job: String,
    java: BTreeMap<String, JavaProc>,
    windows: Vec<Window>,
    crashes: Vec<Crash>,
}

impl Mixed {
    /// A scenario on namespace `chaos-{ns}-{pid}`, job `job`.
    pub fn new(peer: &Path, connect: &str, ns: &str, job: &str) -> Mixed {
        Self::with_props(peer, connect, ns, job, &[])
    }

    /// [`Mixed::new`], the job's `props` holding `props` too (the shardcron nodes write them).
    pub fn with_props(
        peer: &Path,
        connect: &str,
        ns: &str,
        job: &str,
        props: &[(&str, &str)],
    ) -> Mixed {
        let extra: String = props
            .iter()
            .map(|(k, v)| format!("      {k}: '{v}'\n"))
            .collect();
        let jobs = format!(
            "  - type: SCRIPT\n    javaClass: {JAVA_CLASS}\n    jobName: '{job}'\n    \
             cron: '0/{PERIOD} * * * * ?'\n    timeZone: GMT\n    shardingTotalCount: {ITEMS}\n    \
             failover: true\n    misfire: false\n    props:\n      script.command.line: '{{slow}}'\n{extra}"
        );
        Mixed {
            peer: peer.to_owned(),
            cluster: Cluster::with_jobs(connect, ns, &jobs),
            job: job.to_owned(),
            java: BTreeMap::new(),
            windows: Vec::new(),
            crashes: Vec::new(),
        }
    }

    /// Starts an instance labelled `label`; returns its instance id once it runs the job.
    pub fn start(&mut self, kind: Kind, label: &str) -> String {
        // ElasticJob's leader reads the instances before it waits for running items and then
        // deletes `leader/sharding/necessary` with its plan, so an instance that registers while
        // a Java leader shards is left out until the next membership change (a Java race, seen
        // here too). A node joins in the middle of a fire window, when no sharding runs.
        if kind == Kind::Rust {
            sleep_until_phase(2.5..4.5, PERIOD as f64);
        }
        let started = now();
        let id = match kind {
            Kind::Rust => {
                self.cluster.forget(label);
                self.cluster.start(label);
                instance(label)
            }
            Kind::Java => {
                let args: Vec<String> = [
                    format!("zk={}", self.cluster.connect),
                    format!("ns={}", self.cluster.namespace),
                    format!("job={}", self.job),
                    format!("items={ITEMS}"),
                    format!("cron=0/{PERIOD} * * * * ?"),
                    format!("log={}", self.java_log(label).display()),
                    format!("sleepMs={}", SLOW_RUN.as_millis()),
                    "failover=true".to_owned(),
                    "misfire=false".to_owned(),
                    "overwrite=false".to_owned(),
                    "shutdownHook=true".to_owned(),
                    format!("sessionMs={}", SESSION_TIMEOUT.as_millis()),
                    "timeZone=GMT".to_owned(),
                    format!("script={}", self.cluster.script("slow").display()),
                ]
                .into();
                let proc = JavaProc::spawn(&self.peer, self.cluster.dir(), label, &args, "");
                let id = proc.instance.clone();
                self.java.insert(id.clone(), proc);
                id
            }
        };
        // A join reshards: the fire after it may run late or lose an item to the resharding.
        self.windows.push(Window {
            what: format!("{id} joined"),
            from: started,
            until: now() + 2.0 * PERIOD as f64,
        });
        id
    }

    /// The scenario's namespace.
    pub fn namespace(&self) -> String {
        self.cluster.namespace.clone()
    }

    fn java_log(&self, label: &str) -> PathBuf {
        self.cluster.dir().join(format!("java-{label}.log"))
    }

    /// Every item run so far, both languages.
    pub fn runs(&self) -> Vec<Run> {
        let mut runs = self.cluster.runs();
        if let Ok(entries) = std::fs::read_dir(self.cluster.dir()) {
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if name.starts_with("java-") && name.ends_with(".log") {
                    runs.extend(read_java_runs(&entry.path()));
                }
            }
        }
        runs.retain(|r| r.job == self.job);
        runs.sort_by(|a, b| a.at.total_cmp(&b.at));
        runs
    }

    /// Polls the runs until `pred` holds; fails naming `what`, with every process's output.
    pub fn wait<T>(
        &self,
        what: &str,
        within: Duration,
        pred: impl FnMut(&[Run]) -> Option<T>,
    ) -> T {
        let what = format!("{}: {what}", self.cluster.namespace);
        wait_runs(|| self.runs(), || self.dump(), &what, within, pred)
    }

    /// Waits until `id` has run an item.
    pub fn wait_runs_of(&self, id: &str) {
        self.wait(&format!("a run by {id}"), WITHIN, |runs| {
            runs.iter().any(|r| r.instance == id).then_some(())
        });
    }

    /// Waits until the job has converged on the instances `live`: they alone are registered, one
    /// leads, the items are split as AVG_ALLOCATION splits them, no resharding is pending.
    pub fn converge(&self, live: &[&str]) {
        registry::wait_converged(
            &self.cluster.connect,
            &self.cluster.namespace,
            &self.job,
            live,
            ITEMS,
            Duration::from_secs(60),
        );
    }

    /// [`Mixed::converge`] on owned ids.
    pub fn converge_owned(&self, live: &[String]) {
        let ids: Vec<&str> = live.iter().map(String::as_str).collect();
        self.converge(&ids);
    }

    /// The leader's instance id.
    pub fn leader(&self) -> String {
        registry::snapshot(&self.cluster.connect, &self.cluster.namespace, &self.job)
            .unwrap_or_else(|e| panic!("reading the leader: {e}"))
            .leader
            .expect("a converged job has a leader")
    }

    /// The next fire instant.
    pub fn next_fire(&self) -> u64 {
        (now().floor() as u64 / PERIOD + 1) * PERIOD
    }

    /// Waits until `fires` more fire windows have passed.
    pub fn wait_fires(&self, fires: u64) {
        let until = (self.next_fire() + (fires - 1) * PERIOD) as f64 + SLOW_RUN.as_secs_f64() + 0.5;
        sleep_until(until);
    }

    /// Stops the instance `id` gracefully (SIGTERM; both languages deregister).
    pub fn stop(&mut self, id: &str) {
        let at = now();
        if let Some(mut proc) = self.java.remove(id) {
            proc.terminate();
        } else {
            let label = self.rust_label(id);
            let mut node = self.cluster.forget(&label).expect("a running node");
            node.terminate();
        }
        self.windows.push(Window {
            what: format!("{id} stopped"),
            from: at,
            until: now() + 2.0 * PERIOD as f64,
        });
    }

    fn rust_label(&self, id: &str) -> String {
        id.strip_prefix("127.0.0.1@-@chaos-")
            .unwrap_or_else(|| panic!("{id} is a node of this scenario"))
            .to_owned()
    }

    /// Waits until `id` starts a run, then kills it (`kill -9`) while its items run.
    pub fn kill_while_running(&mut self, id: &str) {
        let after = now();
        self.wait(
            &format!("{id} to start a run"),
            Duration::from_secs(60),
            |runs| {
                let now = now();
                runs.iter()
                    .rev()
                    .find(|r| r.instance == id && r.at > after)
                    .filter(|r| now - r.at < 0.3)
                    .map(|_| ())
            },
        );
        let at = now();
        if let Some(mut proc) = self.java.remove(id) {
            proc.kill();
        } else {
            let label = self.rust_label(id);
            self.cluster.node(&label).kill9();
        }
        self.crashes.push(Crash {
            instance: id.to_owned(),
            at,
            required: true,
        });
        self.windows.push(Window {
            what: format!("{id} killed"),
            from: at,
            until: at + SESSION_TIMEOUT.as_secs_f64() + 2.0 * PERIOD as f64,
        });
    }

    /// Waits until every item the last crash interrupted has run twice in its fire window: the
    /// interrupted run and its failover re-run.
    pub fn wait_reruns(&self) {
        let crash = self.crashes.last().expect("a crash").clone();
        let fire_of = |at: f64| (at.floor() as u64) / PERIOD * PERIOD;
        self.wait(
            &format!(
                "the failover re-runs of what {} was running",
                crash.instance
            ),
            Duration::from_secs(2 * PERIOD + 10),
            |runs| {
                let cut: Vec<(u64, u32)> = runs
                    .iter()
                    .filter(|r| r.instance == crash.instance && r.at <= crash.at)
                    .filter(|r| r.at > crash.at - SLOW_RUN.as_secs_f64())
                    .map(|r| (fire_of(r.at), r.item))
                    .collect();
                cut.iter()
                    .all(|(fire, item)| {
                        runs.iter()
                            .filter(|r| r.item == *item && r.at > crash.at)
                            .any(|r| fire_of(r.at) == *fire || fire_of(r.at) == fire + PERIOD)
                    })
                    .then_some(())
            },
        );
    }

    /// `ejtool stats` on the scenario's namespace.
    pub fn ejtool_stats(&self) -> String {
        ejtool(
            &self.peer,
            &[
                "stats".to_owned(),
                format!("zk={}", self.cluster.connect),
                format!("ns={}", self.cluster.namespace),
            ],
        )
    }

    /// Waits for the last fire's runs to end, then counts every fire from `from`.
    pub fn outcome(&self, scenario: &str, from: u64) -> Outcome {
        // The last fire whose runs have all started and ended.
        let settled = now() - SLOW_RUN.as_secs_f64() - 1.0;
        let to = (settled.floor() as u64) / PERIOD * PERIOD;
        let periodic = Periodic {
            job: self.job.clone(),
            items: ITEMS,
            period: PERIOD,
            run_seconds: SLOW_RUN.as_secs_f64(),
            from,
            to,
            windows: self.windows.clone(),
            crashes: self.crashes.clone(),
        };
        let t = tally(scenario, &self.runs(), &periodic);
        eprintln!("[interop] {t}");
        Outcome {
            tally: t,
            dump: self.dump(),
        }
    }

    /// Every process's output.
    pub fn dump(&self) -> String {
        let mut text = self.cluster.dump();
        for (id, proc) in &self.java {
            let out = proc.output();
            let tail: Vec<&str> = out.lines().rev().take(30).collect();
            text.push_str(&format!(
                "--- java {id}, newest first:\n{}\n",
                tail.join("\n")
            ));
        }
        let runs: Vec<String> = self
            .runs()
            .iter()
            .rev()
            .take(40)
            .map(|r| r.line.clone())
            .collect();
        text.push_str(&format!(
            "--- last runs, newest first:\n{}\n",
            runs.join("\n")
        ));
        text
    }
}
