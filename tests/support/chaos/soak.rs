//! A seeded randomized fault soak: a three-server ensemble, nodes as processes each behind proxies
//! of its own, and one fault after another drawn from a seeded generator; then the verdict of
//! [`super::spans`] and a table of what happened.
//!
//! ```text
//!   node a ── proxies a1 a2 a3 ─┐
//!   node b ── proxies b1 b2 b3 ─┼── ZkEnsemble (3 servers)
//!   ...                         ┘
//!   faults: kill -9, fast restart (same instance id within 1-2 s), SIGSTOP of a node or of its
//!   process tree, black hole, connection resets, ensemble-leader kill, whole-ensemble pause,
//!   SIGTERM, reshard at a fire (a node joining just before one)
//! ```
//!
//! Faults come one at a time: each is injected, lasts its drawn time, is healed (a killed node is
//! started again under the same instance id), and opens a window (from its start to the
//! session timeout + [`WINDOW_MARGIN`] after it healed) in which fires may be lost. Overlaps and
//! duplicates are failures anywhere.
//!
//! `SHARDCRON_SOAK_SEED` sets the seed (random otherwise, always printed) and
//! `SHARDCRON_SOAK_SECONDS` how long faults are injected.

use crate::jobs_file::{entries, script_job};
use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::spans::{JobCheck, Window};
use super::workflow;
use super::{now, Cluster, SESSION_TIMEOUT};
use crate::wait::{poll_blocking, wait_until_blocking_every};
use crate::zk::server::ZkEnsemble;
use crate::zk::TcpProxy;

mod faults;
mod table;

/// How long after a fault healed (beyond the session timeout) fires may still be missing: a new
/// session, re-registration and resharding.
pub const WINDOW_MARGIN: f64 = 5.0;

/// How long an ensemble that serves four-letter commands may open no session after a fault
/// healed before the harness takes it for stalled (see [`Soak::unstall_ensemble`]).
const STALL_AFTER: Duration = Duration::from_secs(8);

/// The soak's nodes.
pub const LABELS: [&str; 4] = ["a", "b", "c", "d"];

/// The jobs: `chaos` (4 short items every second) and `slow` (2 items of 6 s every 10 s, so that
/// faults land in the middle of runs), both with failover, misfire off; the workflow of
/// [`workflow::jobs`] follows them.
pub fn jobs() -> String {
    entries(&[
        script_job("chaos", 4, "'{track} 3 0.1'")
            .cron("* * * * * ?")
            .resilient(),
        script_job("slow", 2, "'{track} 30 0.2'")
            .cron("0/10 * * * * ?")
            .resilient(),
    ])
}

/// The jobs the verdict checks.
pub fn checks() -> Vec<JobCheck> {
    vec![
        JobCheck {
            job: "chaos".into(),
            items: 4,
            period: 1,
        },
        JobCheck {
            job: "slow".into(),
            items: 2,
            period: 10,
        },
        JobCheck {
            job: workflow::FLOW.root.into(),
            items: workflow::FLOW.root_items,
            period: workflow::FLOW.period,
        },
    ]
}

/// A small seeded generator (splitmix64): the soak must replay from its seed alone, whatever
/// version of a random crate is around.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// A duration in `lo..hi` seconds.
    pub fn secs(&mut self, lo: f64, hi: f64) -> Duration {
        let unit = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        Duration::from_secs_f64(lo + (hi - lo) * unit)
    }
}

/// The faults, by the name the table shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Fault {
    /// `kill -9` of a node, started again 2-6 s later.
    Kill9,
    /// `kill -9` and a start under the same instance id within 1-2 s (systemd, a StatefulSet).
    FastRestart,
    /// SIGSTOP of a node for 1-9 s (its scripts run on).
    Stop,
    /// SIGSTOP of a node and its scripts for 1-9 s; the node is continued first.
    StopTree,
    /// The node's proxies forward nothing and close nothing for 1-9 s.
    BlackHole,
    /// The node's connections are reset (RST); it reconnects at once.
    Reset,
    /// The ensemble's leader is killed, started again 3-6 s later.
    LeaderKill,
    /// Every server is SIGSTOPped for 3 s or 8 s (the session timeout is 4 s).
    EnsemblePause,
    /// SIGTERM of a node (a graceful leave), started again 2-5 s later.
    Term,
    /// A node that left joins again just before a fire, so the leader reshards at the fire.
    ReshardAtFire,
}

impl Fault {
    /// Every fault, in table order.
    pub const ALL: [Fault; 10] = [
        Fault::Kill9,
        Fault::FastRestart,
        Fault::Stop,
        Fault::StopTree,
        Fault::BlackHole,
        Fault::Reset,
        Fault::LeaderKill,
        Fault::EnsemblePause,
        Fault::Term,
        Fault::ReshardAtFire,
    ];

    /// Its name in the table.
    pub fn name(self) -> &'static str {
        match self {
            Fault::Kill9 => "kill -9",
            Fault::FastRestart => "restart within 1-2 s",
            Fault::Stop => "SIGSTOP node",
            Fault::StopTree => "SIGSTOP process tree",
            Fault::BlackHole => "network black hole",
            Fault::Reset => "connection reset",
            Fault::LeaderKill => "ensemble leader kill",
            Fault::EnsemblePause => "ensemble paused",
            Fault::Term => "SIGTERM",
            Fault::ReshardAtFire => "reshard at a fire",
        }
    }
}

/// The soak's settings, from the environment.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// The seed.
    pub seed: u64,
    /// How long faults are injected.
    pub duration: Duration,
}

impl Settings {
    /// `SHARDCRON_SOAK_SEED` (random when unset) and `SHARDCRON_SOAK_SECONDS` (else `default`).
    pub fn from_env(default: Duration) -> Settings {
        let seed = match std::env::var("SHARDCRON_SOAK_SEED") {
            Ok(s) => s
                .trim()
                .parse()
                .unwrap_or_else(|e| panic!("SHARDCRON_SOAK_SEED={s:?} is not a u64: {e}")),
            Err(_) => SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .expect("the clock is past 1970")
                .as_nanos() as u64,
        };
        let duration =
            match std::env::var("SHARDCRON_SOAK_SECONDS") {
                Ok(s) => Duration::from_secs(s.trim().parse().unwrap_or_else(|e| {
                    panic!("SHARDCRON_SOAK_SECONDS={s:?} is not seconds: {e}")
                })),
                Err(_) => default,
            };
        Settings { seed, duration }
    }
}

/// One injected fault, for the table.
#[derive(Debug, Clone)]
pub struct Injected {
    /// Which.
    pub fault: Fault,
    /// On which node (empty for the ensemble).
    pub target: String,
    /// When it began and how long it lasted, in seconds.
    pub at: f64,
    /// How long it lasted.
    pub lasted: f64,
}

/// The soak's world.
#[derive(Debug)]
pub struct Soak {
    /// The ensemble.
    pub ensemble: ZkEnsemble,
    /// The nodes and their log.
    pub cluster: Cluster,
    proxies: BTreeMap<String, Vec<TcpProxy>>,
    rng: Rng,
    /// Faults not yet drawn in this round: each kind comes once per round, in a seeded order.
    deck: Vec<Fault>,
    /// Every fault so far.
    pub injected: Vec<Injected>,
    /// Their windows.
    pub windows: Vec<Window>,
    /// When the checked span begins (the first complete fire).
    pub from: f64,
    /// Nodes found dead that no fault killed: when, how, and the end of what they logged. Each is
    /// started again so that the soak goes on, and fails the verdict.
    pub deaths: Vec<String>,
    /// Ensemble stalls the harness ended by restarting a server.
    pub stalls: usize,
}

impl Soak {
    /// Starts the ensemble and the nodes, each behind a proxy per server, and waits until both
    /// jobs run.
    pub fn start(seed: u64, scenario: &str) -> Soak {
        let ensemble = ZkEnsemble::start();
        let jobs = jobs() + &workflow::jobs();
        let cluster = Cluster::with_jobs(&ensemble.connect_string(), scenario, &jobs);
        let mut proxies = BTreeMap::new();
        for label in LABELS {
            let mine: Vec<TcpProxy> = (0..ZkEnsemble::SIZE)
                .map(|i| TcpProxy::start(ensemble.addr(i)))
                .collect();
            proxies.insert(label.to_owned(), mine);
        }
        let mut soak = Soak {
            ensemble,
            cluster,
            proxies,
            rng: Rng::new(seed),
            deck: Vec::new(),
            injected: Vec::new(),
            windows: Vec::new(),
            from: 0.0,
            deaths: Vec::new(),
            stalls: 0,
        };
        for label in LABELS {
            soak.start_node(label);
        }
        soak.registered();
        soak.from = now().ceil() + 1.0;
        soak
    }

    /// Waits until both jobs are shared by every node under a live leader, as AVG_ALLOCATION
    /// splits them.
    pub fn converge(&self) {
        self.cluster.converge(&LABELS);
        self.cluster.with_stderr_tails(|| {
            super::registry::wait_converged(
                &self.cluster.connect,
                &self.cluster.namespace,
                "slow",
                &self.ids().iter().map(String::as_str).collect::<Vec<_>>(),
                2,
                super::WITHIN,
            )
        });
    }

    /// Waits until every node is an instance of both jobs and each has a live leader, and the
    /// workflow's step is registered under its root; the plan may still be an older one (a job
    /// firing every 10 s may reshard only at its next fire).
    pub fn registered(&self) {
        self.cluster.converge(&LABELS);
        let ids = self.ids();
        let check = || {
            let read =
                super::registry::snapshot(&self.cluster.connect, &self.cluster.namespace, "slow");
            let registered = read.as_ref().is_ok_and(|s| {
                ids.iter().all(|i| s.instances.contains(i))
                    && s.leader.as_ref().is_some_and(|l| s.instances.contains(l))
            });
            if registered {
                Ok(())
            } else {
                Err(read)
            }
        };
        let what = format!("every node {ids:?} an instance of slow under a live leader");
        self.cluster.with_stderr_tails(|| {
            wait_until_blocking_every(check, &what, super::WITHIN, Duration::from_millis(200))
        });
        workflow::wait_registered(&self.cluster.connect, &self.cluster.namespace);
    }

    fn ids(&self) -> Vec<String> {
        LABELS.iter().map(|l| super::instance(l)).collect()
    }

    fn connect(&self, label: &str) -> String {
        let hosts: Vec<String> = self.proxies[label]
            .iter()
            .map(|p| p.addr().to_string())
            .collect();
        hosts.join(",")
    }

    fn start_node(&mut self, label: &str) {
        let connect = self.connect(label);
        self.cluster.start_via(label, &connect);
    }

    fn proxies(&self, label: &str) -> &[TcpProxy] {
        &self.proxies[label]
    }

    /// The next fault: every kind once per round, in a seeded order.
    fn draw(&mut self) -> Fault {
        if self.deck.is_empty() {
            self.deck = Fault::ALL.to_vec();
            for i in (1..self.deck.len()).rev() {
                let j = self.rng.below(i + 1);
                self.deck.swap(i, j);
            }
        }
        self.deck.pop().expect("a full deck")
    }

    /// Injects faults one after another for `duration`, with 1-3 s between them.
    pub fn run(&mut self, duration: Duration) {
        let until = Instant::now() + duration;
        while Instant::now() < until {
            let fault = self.draw();
            self.inject(fault);
            let pause = self.rng.secs(1.0, 3.0);
            std::thread::sleep(pause);
        }
    }

    /// Records every node that died on its own, and starts it again (with a window for its join).
    fn bury_the_dead(&mut self) {
        for label in LABELS {
            let node = self.cluster.node(label);
            let Some(status) = node.exit_status() else {
                continue;
            };
            let stderr = node.stderr();
            let tail: Vec<&str> = stderr.lines().rev().take(20).collect();
            let at = now();
            self.deaths.push(format!(
                "node {label} found dead at {at:.3} ({status}); its last stderr lines, newest \
                 first:\n{}",
                tail.join("\n")
            ));
            self.start_node(label);
            self.windows.push(Window {
                what: format!("node {label} died"),
                from: self.injected.last().map_or(at, |i| i.at),
                until: now() + SESSION_TIMEOUT.as_secs_f64() + WINDOW_MARGIN,
            });
        }
    }
}

impl Drop for Soak {
    fn drop(&mut self) {
        // A failed assertion may leave servers stopped: continue them so that their kill is seen.
        self.ensemble.signal_all(libc::SIGCONT);
    }
}
