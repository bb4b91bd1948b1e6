//! Overload degrades, never stops (issue 17): a SCRIPT job set to 10,000 items every second (a
//! valid config, far beyond a 2-core machine) next to a healthy job, on two example nodes on a
//! real ZooKeeper, for 25 s; then its config is repaired. Within 60 s both jobs run on every node
//! again, no node stopped either job, and no script child is left unreaped.
//!
//! Prints a table: the overload's length, the most zombies seen per node, how long each job took
//! to run on every node after the repair.

#[macro_use]
extern crate support;

use support::jobs_file::{entries, script_job};
use support::Peer;

use support::chaos;
use support::zk;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use chaos::{instance, now, registry, Cluster};
use support::wait::wait_until_blocking;
use zk::server::ZkServer;

/// How long the overload lasts.
const OVERLOAD: Duration = Duration::from_secs(25);
/// How long both jobs may take to run on every node after the repair.
const RECOVERY: Duration = Duration::from_secs(60);
/// The nodes.
const LABELS: [&str; 2] = ["a", "b"];

/// `healthy` and `heavy`, two items each every second; `heavy` is the one overloaded.
fn jobs() -> String {
    let job = |name| {
        script_job(name, 2, "'{track} 2 0.1'")
            .cron("* * * * * ?")
            .resilient()
    };
    entries(&[job("healthy"), job("heavy")])
}

/// Zombie children of `pid` now (exited, not reaped), from `/proc`.
fn zombies(pid: libc::pid_t) -> usize {
    let mut n = 0;
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let children = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
        for child in children.split_whitespace() {
            let stat = std::fs::read_to_string(format!("/proc/{child}/stat")).unwrap_or_default();
            // `pid (comm) S ...`: the state follows the last ')'.
            let state = stat.rsplit_once(')').map(|(_, rest)| rest.trim_start());
            if state.is_some_and(|s| s.starts_with('Z')) {
                n += 1;
            }
        }
    }
    n
}

#[test]
fn a_job_far_beyond_the_machine_degrades_and_after_its_repair_both_jobs_run_on_every_node() {
    require!(Peer::ZooKeeper);
    let zk = ZkServer::start();
    let mut cluster = Cluster::with_jobs(&zk.connect_string(), "overload", &jobs());
    let (connect, ns) = (cluster.connect.clone(), cluster.namespace.clone());
    let ids: Vec<String> = LABELS.iter().map(|l| instance(l)).collect();
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    eprintln!("[overload] --- two nodes run healthy and heavy");
    for label in LABELS {
        cluster.start(label);
    }
    for job in ["healthy", "heavy"] {
        registry::wait_converged(&connect, &ns, job, &ids, 2, chaos::WITHIN);
    }

    eprintln!("[overload] --- heavy: 10000 items every second, each a process");
    let config = registry::get_data(&connect, &ns, "/heavy/config");
    let line = config
        .lines()
        .find(|l| l.contains("script.command.line"))
        .unwrap_or_else(|| panic!("heavy's config names its command line:\n{config}"))
        .to_owned();
    let indent = &line[..line.find("script.command.line").unwrap_or(0)];
    let heavy = config
        .replace("shardingTotalCount: 2", "shardingTotalCount: 10000")
        .replace(&line, &format!("{indent}script.command.line: /bin/true"));
    assert_ne!(heavy, config, "the count is in heavy's config:\n{config}");
    let overloaded = Instant::now();
    registry::set_data(&connect, &ns, "/heavy/config", &heavy);
    let mut most_zombies: BTreeMap<&str, usize> = BTreeMap::new();
    // The overload's length is the fault itself; meanwhile the nodes' zombies are sampled.
    while overloaded.elapsed() < OVERLOAD {
        for label in LABELS {
            let node = cluster.node(label);
            assert!(node.is_running(), "node {label} died under the overload");
            let z = zombies(node.pid());
            let most = most_zombies.entry(label).or_default();
            *most = (*most).max(z);
        }
        std::thread::sleep(Duration::from_millis(250));
    }

    eprintln!("[overload] --- heavy's config repaired");
    registry::set_data(&connect, &ns, "/heavy/config", &config);
    let repaired = now();
    let mut took: BTreeMap<&str, f64> = BTreeMap::new();
    for job in ["healthy", "heavy"] {
        let ran_everywhere = cluster.wait_runs_within(
            &format!("{job} to run on both nodes after the repair"),
            RECOVERY,
            |_| {
                // Per node, its first run of the job after the repair.
                let mut first: BTreeMap<String, f64> = BTreeMap::new();
                for s in cluster.spans() {
                    if s.job == job && s.source == "NORMAL" && s.start > repaired {
                        first.entry(s.instance).or_insert(s.start);
                    }
                }
                (first.len() == LABELS.len())
                    .then(|| first.values().fold(repaired, |a, b| a.max(*b)) - repaired)
            },
        );
        took.insert(job, ran_everywhere);
    }
    for job in ["healthy", "heavy"] {
        registry::wait_converged(&connect, &ns, job, &ids, 2, RECOVERY);
    }

    eprintln!("[overload] --- no node stopped a job; no child left unreaped");
    for label in LABELS {
        let pid = cluster.node(label).pid();
        let check = || match zombies(pid) {
            0 => Ok(()),
            n => Err(format!("{n} unreaped children")),
        };
        let what = format!("node {label} to reap its children after the repair");
        wait_until_blocking(check, &what, Duration::from_secs(10));
    }
    eprintln!(
        "[overload] table\n| overload | most zombies per node | healthy on every node after | \
         heavy on every node after |\n| --- | --- | ---: | ---: |\n| 10000 items/s for {:?} | \
         {most_zombies:?} | {:.1} s | {:.1} s |",
        OVERLOAD, took["healthy"], took["heavy"]
    );
}
