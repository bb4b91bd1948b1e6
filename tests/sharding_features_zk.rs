//! Label targeting, static sharding and namespace balance on a real ZooKeeper, with the example node
//! as separate processes (the chaos harness: a script job logs every item run to a file). The same
//! behaviours on the embedded registry: `tests/sharding_features.rs`.
//!
//! One scenario, in phases, to keep the run short: nodes a (labelled gpu), b and c start; `render`
//! (label gpu) runs only on a and c, eight one-item `report-*` jobs (NAMESPACE_BALANCE) even out the
//! items each instance holds across the namespace; then d joins and the static `ledger` keeps its owners; then owners of `ledger` leave one after the
//! other and only their items move.

#[macro_use]
extern crate support;

use support::Peer;

use support::chaos;
use support::zk;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use chaos::registry::{get_data, snapshot};
use chaos::{instance, now, Cluster, ITEMS, JOB, WITHIN};
use support::wait::{wait_until_blocking_every, Later};
use zk::server::ZkServer;

/// The extra jobs of the scenario, in the harness's jobs file (`{record}` logs each run).
fn extra_jobs() -> String {
    let job = |name: &str, items: u32, extra: &str| {
        format!(
            "  - type: SCRIPT\n    jobName: {name}\n    cron: '* * * * * ?'\n    timeZone: GMT\n    \
             shardingTotalCount: {items}\n    misfire: false\n    overwrite: true\n{extra}    \
             props:\n      script.command.line: '{{record}}'\n      shardcron.only: 'true'\n"
        )
    };
    let mut text = job("render", 2, "    label: gpu\n");
    text.push_str(&job("ledger", 4, "    staticSharding: true\n"));
    for n in 0..8 {
        text.push_str(&job(
            &format!("report-{n}"),
            1,
            "    jobShardingStrategyType: NAMESPACE_BALANCE\n",
        ));
    }
    text
}

fn phase(what: &str) {
    eprintln!("--- {what} (at {:.1})", now());
}

/// Polls the registry until `pred` holds over `job`'s owners (item -> instance); fails naming `what`.
fn wait_owners(
    cluster: &Cluster,
    job: &str,
    what: &str,
    pred: impl Fn(&BTreeMap<u32, String>) -> bool,
) -> BTreeMap<u32, String> {
    let check = || match snapshot(&cluster.connect, &cluster.namespace, job) {
        Ok(s) if !s.necessary && pred(&s.owners) => Ok(s.owners),
        last => Err((last, Later(|| cluster.dump()))),
    };
    wait_until_blocking_every(check, what, WITHIN, Duration::from_millis(100))
}

fn owned_by(owners: &BTreeMap<u32, String>, who: &str) -> BTreeSet<u32> {
    owners
        .iter()
        .filter(|(_, o)| o.as_str() == who)
        .map(|(i, _)| *i)
        .collect()
}

#[test]
fn labels_static_sharding_and_namespace_balance_hold_across_processes_on_zookeeper() {
    require!(Peer::ZooKeeper);
    let zk = ZkServer::start();
    let mut cluster = Cluster::new(&zk.connect_string(), "features", &extra_jobs());
    phase("a (gpu), b and c start");
    cluster.start_with("a", &["--label", "gpu"]);
    cluster.start("b");
    cluster.start_with("c", &["--label", "gpu,eu"]);
    cluster.converge(&["a", "b", "c"]);
    let settled = now();
    cluster.wait_complete_fire(JOB, ITEMS, settled);

    phase("render runs only where gpu is");
    let gpu: BTreeSet<String> = [instance("a"), instance("c")].into();
    let render = wait_owners(&cluster, "render", "render owned by gpu instances", |o| {
        o.len() == 2 && o.values().all(|i| gpu.contains(i))
    });
    cluster.wait_complete_fire("render", 2, now());
    let ran: BTreeSet<String> = cluster
        .runs()
        .iter()
        .filter(|r| r.job == "render")
        .map(|r| r.instance.clone())
        .collect();
    assert!(
        ran.is_subset(&gpu),
        "render ran on {ran:?}; owners {render:?}"
    );
    let data = get_data(
        &cluster.connect,
        &cluster.namespace,
        &format!("/render/instances/{}", instance("c")),
    );
    assert!(
        data.contains("labels: gpu,eu\n"),
        "c's instance node: {data:?}"
    );

    phase("eight one-item reports fill the instances holding the fewest items of the namespace");
    // NAMESPACE_BALANCE counts every job's items: the instance holding the static ledger (4) gets
    // fewer reports. AVG_ALLOCATION would put all eight on c. The reports are planned together
    // (decide::namespace), and a report that was committed against counts that have moved since
    // is resharded: once every plan is committed, every report sits where it adds the least.
    let mut jobs: Vec<String> = vec![JOB.into(), "render".into(), "ledger".into()];
    jobs.extend((0..8).map(|n| format!("report-{n}")));
    let check = || {
        let mut totals: BTreeMap<String, usize> =
            ["a", "b", "c"].iter().map(|l| (instance(l), 0)).collect();
        let mut reports: BTreeSet<String> = BTreeSet::new();
        let mut settled = true;
        for job in &jobs {
            match snapshot(&cluster.connect, &cluster.namespace, job) {
                Ok(s) if !s.necessary && !s.owners.is_empty() => {
                    for owner in s.owners.values() {
                        *totals.entry(owner.clone()).or_default() += 1;
                        if job.starts_with("report-") {
                            reports.insert(owner.clone());
                        }
                    }
                }
                _ => settled = false,
            }
        }
        // The static ledger keeps the owners it got while instances were still starting (all
        // four items on one instance, if it was alone then), so the totals need not be within one
        // of each other; but no report can move to a less loaded instance.
        let least = totals.values().min().copied().unwrap_or(0);
        let placed = reports.iter().all(|owner| totals[owner] <= least + 1);
        if settled && totals.len() == 3 && placed && reports.len() >= 2 {
            Ok(totals)
        } else {
            let state = format!("{totals:?}, reports on {reports:?}, settled {settled}");
            Err((state, Later(|| cluster.dump())))
        }
    };
    let every = Duration::from_millis(100);
    let totals = wait_until_blocking_every(check, "a balanced namespace", WITHIN, every);
    eprintln!("items per instance across the namespace: {totals:?}");

    phase("d joins: the static ledger keeps its owners");
    let before = wait_owners(&cluster, "ledger", "ledger sharded", |o| o.len() == 4);
    cluster.start("d");
    cluster.converge(&["a", "b", "c", "d"]);
    let joined = now();
    cluster.wait_complete_fire("ledger", 4, joined + 2.0);
    let after_join = wait_owners(&cluster, "ledger", "ledger sharded", |o| o.len() == 4);
    assert_eq!(
        after_join, before,
        "a joining instance moves no ledger item"
    );
    assert!(
        cluster
            .runs()
            .iter()
            .all(|r| r.job != "ledger" || r.instance != instance("d")),
        "d runs no ledger item"
    );

    phase("owners of ledger leave one after the other: only their items move");
    let mut live: Vec<&str> = vec!["a", "b", "c", "d"];
    let mut owners = after_join;
    for _ in 0..2 {
        let victim = owners[&0].clone();
        let label = victim.trim_start_matches("127.0.0.1@-@chaos-").to_owned();
        cluster.node(&label).terminate();
        live.retain(|l| *l != label);
        let moved = wait_owners(&cluster, "ledger", "the leaver's items reassigned", |o| {
            o.len() == 4 && o.values().all(|i| *i != victim)
        });
        for (item, owner) in &owners {
            if *owner != victim {
                assert_eq!(&moved[item], owner, "item {item} kept its live owner");
            }
        }
        let counts: Vec<usize> = live
            .iter()
            .map(|l| owned_by(&moved, &instance(l)).len())
            .collect();
        assert!(
            counts.iter().max().unwrap() - counts.iter().min().unwrap() <= 2,
            "the leaver's items went to the least loaded: {moved:?}"
        );
        owners = moved;
    }
    cluster.wait_complete_fire("ledger", 4, now());
}
