//! The operations API and the `ctl` CLI against a real ZooKeeper with live nodes in this process:
//! each command's effect is observed in the executions of the running cluster, and the CLI binary
//! (`shardcronctl`, the package's binary target) is run for its output and its
//! exit codes.

#[macro_use]
extern crate support;

use support::namespace;
use support::Peer;

use support::cluster;
use support::example_bin::{self, ctl_command, on_zk, run_ctl, CtlOutput};
use support::wait::wait_until_woken;
use support::zk;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use cluster::{instance, start_node_with_clock, Execution, Recorder};
use serde_json::Value;
use shardcron::config::JobConfig;
use shardcron::job::ExecutionSource;
use shardcron::node::NodeHandle;
use shardcron::ops::{ItemStatus, JobStatus, Ops, OpsError, RemoveMode};
use shardcron::registry::mirror::{Mirror, MirrorFeed};
use shardcron::registry::{Connector, CreateMode};
use shardcron::{JobName, ShardItem};

const WITHIN: Duration = Duration::from_secs(30);

fn every_second(name: &str, items: i32) -> JobConfig {
    JobConfig::new(name, items)
        .cron("* * * * * ?")
        .time_zone("GMT")
}

fn orders() -> JobName {
    JobName::new("orders").unwrap()
}

/// One test's namespace: its nodes, their executions, an operator session and a watched mirror.
struct Cluster {
    ns: String,
    conn: Arc<dyn Connector>,
    rec: Recorder,
    nodes: Vec<NodeHandle>,
    ops: Ops,
    watch: Watch,
}

impl Cluster {
    async fn new(test: &str) -> Self {
        cluster::init_tracing();
        let ns = namespace("ctl", test);
        let conn = zk::connector(&ns);
        let ops = Ops::new(conn.connect().await.expect("operator session"));
        let watch = Watch::new(&conn).await;
        Self {
            ns,
            conn,
            rec: Recorder::real_time(),
            nodes: Vec::new(),
            ops,
            watch,
        }
    }

    /// Starts instance `n` running `jobs`, whose items take `work`.
    async fn start(&mut self, n: u32, jobs: &[JobConfig], work: Duration) {
        let jobs = jobs
            .iter()
            .map(|c| (c.clone(), self.rec.handler(work)))
            .collect();
        let node = start_node_with_clock(self.conn.clone(), instance(n), jobs, self.rec.clock());
        self.nodes.push(node.await);
    }

    /// Runs the CLI on this namespace.
    async fn ctl(&self, args: &[&str]) -> CtlOutput {
        ctl(&self.ns, args).await
    }

    async fn stop(self) {
        for n in &self.nodes {
            n.shutdown().await;
        }
        self.ops.registry().close().await;
    }
}

/// A mirror of the namespace fed by its own session, to wait on registry state.
struct Watch {
    mirror: Mirror,
    feed: MirrorFeed,
}

impl Watch {
    async fn new(conn: &Arc<dyn Connector>) -> Self {
        let mirror = Mirror::new();
        let session = conn.connect().await.expect("watch session");
        let feed = mirror.feed(session, "/").await.expect("mirror feed");
        Self { mirror, feed }
    }

    /// Waits until `pred` holds on the mirror, failing with `what` after [`WITHIN`].
    async fn until(&mut self, what: &str, pred: impl Fn(&Mirror) -> bool) {
        let (mirror, feed) = (&self.mirror, &mut self.feed);
        let check = async || pred(mirror);
        let wake = async || {
            feed.recv().await.expect("the mirror feed lives");
        };
        wait_until_woken(check, wake, what, WITHIN).await;
    }
}

/// The CLI binary: a binary target of the package, which cargo builds before this test.
fn ctl_binary() -> PathBuf {
    example_bin::ctl_binary()
}

async fn ctl(ns: &str, args: &[&str]) -> CtlOutput {
    run_ctl(&on_zk(&zk::server().connect_string(), ns, args)).await
}

/// Fire seconds (of `Normal` runs) in which every one of `items` items ran, ascending.
fn complete_fires(log: &[Execution], items: u32) -> Vec<i64> {
    let mut by_fire: BTreeMap<i64, BTreeSet<u32>> = BTreeMap::new();
    for e in log.iter().filter(|e| e.source == ExecutionSource::Normal) {
        by_fire
            .entry(e.at.timestamp())
            .or_default()
            .insert(e.item.0);
    }
    by_fire
        .into_iter()
        .filter(|(_, v)| v.len() == items as usize)
        .map(|(k, _)| k)
        .collect()
}

/// The runs of the fire at second `at`.
fn fire_at(log: &[Execution], at: i64) -> Vec<&Execution> {
    log.iter()
        .filter(|e| e.source == ExecutionSource::Normal && e.at.timestamp() == at)
        .collect()
}

fn statuses(jobs: &Value) -> BTreeMap<String, String> {
    jobs.as_array()
        .expect("a JSON array of jobs")
        .iter()
        .map(|j| {
            (
                j["jobName"].as_str().unwrap().to_owned(),
                j["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trigger_makes_every_item_run_once_more_on_every_instance() {
    require!(Peer::ZooKeeper);
    let mut c = Cluster::new("trigger").await;
    let one_off = JobConfig::new("orders", 4).time_zone("GMT");
    c.start(1, std::slice::from_ref(&one_off), Duration::ZERO)
        .await;
    c.start(2, &[one_off], Duration::ZERO).await;
    c.watch
        .until("both instances registered", |m| {
            m.children("/orders/instances").len() == 2
        })
        .await;

    tracing::info!("--- ctl trigger: every item runs once");
    let out = c.ctl(&["--json", "trigger", "orders"]).await.expect(0);
    assert_eq!(out.json()["triggered"].as_array().unwrap().len(), 2);
    let manual_runs = |log: &[Execution], item: u32| {
        log.iter()
            .filter(|e| e.source == ExecutionSource::Manual && e.item.0 == item)
            .count()
    };
    c.rec
        .wait_until("every item triggered once", WITHIN, |log| {
            (0..4).all(|i| manual_runs(log, i) == 1)
        })
        .await;

    tracing::info!("--- Ops::trigger: every item runs once more");
    c.ops.trigger(&orders()).await.unwrap();
    let log = c
        .rec
        .wait_until("every item triggered twice", WITHIN, |log| {
            (0..4).all(|i| manual_runs(log, i) == 2)
        })
        .await;
    let instances: BTreeSet<_> = log.iter().map(|e| e.instance.clone()).collect();
    assert_eq!(instances, [instance(1), instance(2)].into());
    assert!(log.iter().all(|e| e.source == ExecutionSource::Manual));
    c.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disabling_a_server_moves_its_items_away_and_disabling_all_shows_disabled() {
    require!(Peer::ZooKeeper);
    let mut c = Cluster::new("server").await;
    let job = every_second("orders", 4);
    c.start(1, std::slice::from_ref(&job), Duration::ZERO).await;
    c.start(2, &[job], Duration::ZERO).await;
    c.rec
        .wait_until("a complete fire on both instances", WITHIN, |log| {
            complete_fires(log, 4)
                .iter()
                .any(|at| fire_at(log, *at).iter().any(|e| e.instance == instance(1)))
        })
        .await;

    tracing::info!("--- ctl disable --server 10.0.0.1: instance 2 takes every item");
    c.ctl(&["disable", "orders", "--server", "10.0.0.1"])
        .await
        .expect(0);
    let before = c.rec.all().len();
    let log = c
        .rec
        .wait_until("two complete fires all on instance 2", WITHIN, |log| {
            let log = &log[before..];
            complete_fires(log, 4)
                .iter()
                .filter(|at| fire_at(log, **at).iter().all(|e| e.instance == instance(2)))
                .count()
                >= 2
        })
        .await;
    let last = *complete_fires(&log[before..], 4).last().unwrap();
    assert!(fire_at(&log, last)
        .iter()
        .all(|e| e.instance == instance(2)));
    let detail = c.ctl(&["--json", "job", "orders"]).await.expect(0).json();
    assert_eq!(detail["status"], "OK");
    let servers: BTreeMap<&str, &str> = detail["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["ip"].as_str().unwrap(), s["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        servers,
        [("10.0.0.1", "DISABLED"), ("10.0.0.2", "ENABLED")].into()
    );
    let servers = c.ctl(&["--json", "servers"]).await.expect(0).json();
    assert_eq!(servers[0]["ip"], "10.0.0.1");
    assert_eq!(servers[0]["disabledJobs"], 1);
    assert_eq!(servers[1]["disabledJobs"], 0);

    tracing::info!("--- ctl disable (every server): the job shows DISABLED");
    c.ctl(&["disable", "orders"]).await.expect(0);
    let jobs = c.ctl(&["--json", "jobs"]).await.expect(0).json();
    assert_eq!(
        statuses(&jobs),
        [("orders".into(), "DISABLED".into())].into()
    );

    tracing::info!("--- ctl enable (every server): instance 1 runs items again");
    c.ctl(&["enable", "orders"]).await.expect(0);
    let before = c.rec.all().len();
    c.rec
        .wait_until("instance 1 runs again", WITHIN, |log| {
            log[before..].iter().any(|e| e.instance == instance(1))
        })
        .await;
    c.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disabling_an_item_stops_it_from_running_until_it_is_enabled() {
    require!(Peer::ZooKeeper);
    let mut c = Cluster::new("item").await;
    c.start(1, &[every_second("orders", 3)], Duration::ZERO)
        .await;
    c.rec
        .wait_until("a complete fire", WITHIN, |log| {
            !complete_fires(log, 3).is_empty()
        })
        .await;

    tracing::info!("--- ctl disable --item 1");
    c.ctl(&["disable", "orders", "--item", "1"]).await.expect(0);
    let detail = c.ops.job(&orders()).await.unwrap();
    assert_eq!(detail.items[1].status, ItemStatus::Disabled);
    let before = c.rec.all().len();
    let fires_of_item_0 = |log: &[Execution]| -> Vec<i64> {
        let seconds: BTreeSet<i64> = log
            .iter()
            .filter(|e| e.source == ExecutionSource::Normal && e.item == ShardItem(0))
            .map(|e| e.at.timestamp())
            .collect();
        seconds.into_iter().collect()
    };
    let log = c
        .rec
        .wait_until("three more fires of item 0", WITHIN, |log| {
            fires_of_item_0(&log[before..]).len() >= 3
        })
        .await;
    // The first fire may have been planned before the flag reached the instance.
    let later = fires_of_item_0(&log[before..])[1];
    let item_1_runs: Vec<_> = log[before..]
        .iter()
        .filter(|e| e.item == ShardItem(1) && e.at.timestamp() >= later)
        .collect();
    assert!(
        item_1_runs.is_empty(),
        "item 1 ran while disabled: {item_1_runs:#?}"
    );

    tracing::info!("--- ctl enable --item 1: item 1 runs again");
    c.ctl(&["enable", "orders", "--item", "1"]).await.expect(0);
    let before = c.rec.all().len();
    c.rec
        .wait_until("item 1 runs again", WITHIN, |log| {
            log[before..].iter().any(|e| e.item == ShardItem(1))
        })
        .await;
    c.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_set_changes_the_fire_rate_and_refuses_invalid_or_stale_configs() {
    require!(Peer::ZooKeeper);
    let mut c = Cluster::new("config").await;
    // Valid, but its next fire is decades away: only a config change can make it run.
    let rare = JobConfig::new("orders", 2)
        .cron("0 0 0 1 1 ? 2099")
        .time_zone("GMT");
    c.start(1, &[rare], Duration::ZERO).await;
    c.watch
        .until("orders registered", |m| {
            m.children("/orders/instances").len() == 1
        })
        .await;
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    };

    let got = c
        .ctl(&["--json", "config", "get", "orders"])
        .await
        .expect(0);
    let first_version = got.json()["version"].as_i64().unwrap();
    assert!(got.json()["yaml"].as_str().unwrap().contains("2099"));

    tracing::info!("--- ctl config set with an every-second cron: the job starts firing");
    assert!(c.rec.all().is_empty());
    let yaml = every_second("orders", 2).to_yaml().unwrap();
    let every_second_file = file("every-second.yaml", &yaml);
    c.ctl(&["config", "set", "orders", &every_second_file])
        .await
        .expect(0);
    c.rec
        .wait_until("two complete fires a second apart", WITHIN, |log| {
            complete_fires(log, 2).windows(2).any(|w| w[1] - w[0] == 1)
        })
        .await;

    tracing::info!("--- an invalid config is refused, naming its fields, and nothing is written");
    let stored = c.ops.config_get(&orders()).await.unwrap();
    let invalid = file(
        "invalid.yaml",
        "jobName: orders\nshardingTotalCount: 0\ncron: every now and then\n",
    );
    let out = c
        .ctl(&["config", "set", "orders", &invalid])
        .await
        .expect(2);
    for field in ["shardingTotalCount", "cron"] {
        assert!(out.stderr.contains(field), "{field} not named: {out:#?}");
    }
    let err = c
        .ops
        .config_set(&orders(), "jobName: orders\nshardingTotalCount: -1\n")
        .await
        .unwrap_err();
    match &err {
        OpsError::InvalidConfig { source, .. } => {
            assert_eq!(source.fields(), ["shardingTotalCount"])
        }
        other => panic!("expected InvalidConfig, got {other:?}"),
    }
    assert_eq!(c.ops.config_get(&orders()).await.unwrap(), stored);
    let missing = dir.path().join("missing.yaml").display().to_string();
    let out = c
        .ctl(&["config", "set", "orders", &missing])
        .await
        .expect(2);
    assert!(out.stderr.contains("missing.yaml"), "{out:#?}");

    tracing::info!("--- a set at a stale version fails as changed meanwhile");
    let stale = first_version.to_string();
    let out = c
        .ctl(&[
            "config",
            "set",
            "orders",
            &every_second_file,
            "--version",
            &stale,
        ])
        .await
        .expect(1);
    assert!(out.stderr.contains("changed meanwhile"), "{out:#?}");
    let err = c
        .ops
        .config_set_at(&orders(), &yaml, stored.version - 1)
        .await
        .unwrap_err();
    assert!(matches!(err, OpsError::ConfigChanged { .. }), "{err:?}");
    assert_eq!(c.ops.config_get(&orders()).await.unwrap(), stored);
    c.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutting_an_instance_down_hands_its_items_to_the_others() {
    require!(Peer::ZooKeeper);
    let mut c = Cluster::new("shutdown").await;
    let job = every_second("orders", 4);
    c.start(1, std::slice::from_ref(&job), Duration::ZERO).await;
    c.start(2, &[job], Duration::ZERO).await;
    c.rec
        .wait_until("a complete fire on both instances", WITHIN, |log| {
            complete_fires(log, 4)
                .iter()
                .any(|at| fire_at(log, *at).iter().any(|e| e.instance == instance(1)))
        })
        .await;

    tracing::info!("--- ctl shutdown --instance 10.0.0.1@-@1");
    let one = instance(1).to_string();
    c.ctl(&["shutdown", "orders", "--instance", &one])
        .await
        .expect(0);
    let before = c.rec.all().len();
    let log = c
        .rec
        .wait_until("two complete fires all on instance 2", WITHIN, |log| {
            let log = &log[before..];
            complete_fires(log, 4)
                .iter()
                .filter(|at| fire_at(log, **at).iter().all(|e| e.instance == instance(2)))
                .count()
                >= 2
        })
        .await;
    // Once instance 2 ran a whole fire alone, instance 1 runs nothing more of the job.
    let alone = complete_fires(&log[before..], 4)
        .into_iter()
        .find(|at| {
            fire_at(&log[before..], *at)
                .iter()
                .all(|e| e.instance == instance(2))
        })
        .unwrap();
    assert!(log[before..]
        .iter()
        .all(|e| e.instance != instance(1) || e.at.timestamp() < alone));
    let detail = c.ops.job(&orders()).await.unwrap();
    assert_eq!(detail.instances, [instance(2)]);
    assert!(detail.items.iter().all(|i| i.owner == Some(instance(2))));
    c.stop().await;
}

/// Two instances running `orders` (2 items) and `beacon` (1 item), `orders` seen complete once.
async fn orders_and_beacon(test: &str) -> Cluster {
    let mut c = Cluster::new(test).await;
    let jobs = [every_second("orders", 2), every_second("beacon", 1)];
    c.start(1, &jobs, Duration::ZERO).await;
    c.start(2, &jobs, Duration::ZERO).await;
    c.rec
        .wait_until("a fire running both orders items", WITHIN, |log| {
            let mut by_fire: BTreeMap<i64, BTreeSet<ShardItem>> = BTreeMap::new();
            for e in log.iter().filter(|e| e.job == "orders") {
                by_fire.entry(e.at.timestamp()).or_default().insert(e.item);
            }
            by_fire.values().any(|items| items.len() == 2)
        })
        .await;
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remove_is_refused_while_instances_run_the_job() {
    require!(Peer::ZooKeeper);
    let c = orders_and_beacon("refuse").await;
    tracing::info!("--- ctl remove without --force is refused and the job runs on");
    let out = c.ctl(&["remove", "orders"]).await.expect(1);
    assert!(out.stderr.contains("still run"), "{out:#?}");
    let err = c
        .ops
        .remove(&orders(), RemoveMode::RefuseWhileRunning)
        .await
        .unwrap_err();
    assert!(matches!(err, OpsError::StillRunning { ref instances, .. } if instances.len() == 2));
    assert_eq!(c.ops.job(&orders()).await.unwrap().instances.len(), 2);
    let before = c.rec.all().len();
    c.rec
        .wait_until("orders runs after the refusal", WITHIN, |log| {
            log[before..].iter().any(|e| e.job == "orders")
        })
        .await;
    c.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remove_with_force_deletes_the_job_and_the_other_jobs_go_on() {
    require!(Peer::ZooKeeper);
    let mut c = orders_and_beacon("remove").await;
    tracing::info!("--- ctl remove --force deletes the job; the beacon job goes on");
    c.ctl(&["remove", "orders", "--force"]).await.expect(0);
    c.watch
        .until("the orders subtree gone", |m| !m.exists("/orders"))
        .await;
    let before = c.rec.all().len();
    let beacon_fires = |log: &[Execution]| -> BTreeSet<i64> {
        log.iter()
            .filter(|e| e.job == "beacon" && e.source == ExecutionSource::Normal)
            .map(|e| e.at.timestamp())
            .collect()
    };
    let log = c
        .rec
        .wait_until("three more beacon fires", WITHIN, |log| {
            beacon_fires(&log[before..]).len() >= 3
        })
        .await;
    // Runs planned before the removal reached an instance may still start in the first second.
    let second = *beacon_fires(&log[before..]).iter().nth(1).unwrap();
    assert!(log[before..]
        .iter()
        .all(|e| e.job != "orders" || e.at.timestamp() < second));
    assert!(!c.watch.mirror.exists("/orders"), "orders came back");
    let jobs = c.ctl(&["--json", "jobs"]).await.expect(0).json();
    assert_eq!(statuses(&jobs), [("beacon".into(), "OK".into())].into());
    c.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_job_and_servers_report_running_crashed_and_flagged_jobs() {
    require!(Peer::ZooKeeper);
    let mut c = Cluster::new("status").await;
    // Items that run long enough to be seen running.
    let slow = JobConfig::new("slow", 2).time_zone("GMT");
    c.start(1, &[slow], Duration::from_secs(4)).await;
    c.watch
        .until("instance 1 registered", |m| {
            m.children("/slow/instances").len() == 1
        })
        .await;
    c.ops.trigger(&JobName::new("slow").unwrap()).await.unwrap();
    c.watch
        .until("both items running", |m| {
            m.exists("/slow/sharding/0/running") && m.exists("/slow/sharding/1/running")
        })
        .await;

    tracing::info!("--- jobs written by hand: one without instances, one flagged for resharding");
    let session = c.ops.registry().clone();
    let write_job = |name: &'static str| {
        let session = session.clone();
        async move {
            let yaml = JobConfig::new(name, 1).cron("0/5 * * * * ?").to_yaml();
            session
                .create(&format!("/{name}"), b"SCRIPT", CreateMode::Persistent)
                .await
                .unwrap();
            session
                .create(
                    &format!("/{name}/config"),
                    yaml.unwrap().as_bytes(),
                    CreateMode::Persistent,
                )
                .await
                .unwrap();
        }
    };
    write_job("crashed").await;
    write_job("flagged").await;
    session.ensure_path("/flagged/instances").await.unwrap();
    session
        .create(
            "/flagged/instances/10.0.0.9@-@9",
            b"",
            CreateMode::Ephemeral,
        )
        .await
        .unwrap();
    session
        .ensure_path("/flagged/leader/sharding/necessary")
        .await
        .unwrap();

    let jobs = c.ctl(&["--json", "jobs"]).await.expect(0).json();
    assert_eq!(
        statuses(&jobs),
        [
            ("crashed".into(), "CRASHED".into()),
            ("flagged".into(), "SHARDING_FLAG".into()),
            ("slow".into(), "OK".into()),
        ]
        .into()
    );
    let table = c.ctl(&["jobs"]).await.expect(0);
    assert!(table.stdout.starts_with("JOB"), "{table:#?}");
    assert!(table.stdout.contains("SHARDING_FLAG"), "{table:#?}");

    let detail = c.ctl(&["--json", "job", "slow"]).await.expect(0).json();
    assert_eq!(detail["status"], "OK");
    assert_eq!(detail["leader"], instance(1).to_string());
    let items: Vec<(&str, &str)> = detail["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["status"].as_str().unwrap(), i["owner"].as_str().unwrap()))
        .collect();
    let one = instance(1).to_string();
    assert_eq!(
        items,
        [("RUNNING", one.as_str()), ("RUNNING", one.as_str())]
    );
    let crashed = c.ops.job(&JobName::new("crashed").unwrap()).await.unwrap();
    assert_eq!(crashed.status, JobStatus::Crashed);
    assert_eq!(crashed.items[0].status, ItemStatus::ShardingFlag);

    let servers = c.ctl(&["--json", "servers"]).await.expect(0).json();
    let ips: Vec<(&str, usize)> = servers
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let jobs = s["jobs"].as_array().unwrap().len();
            (s["ip"].as_str().unwrap(), jobs)
        })
        .collect();
    assert_eq!(ips, [("10.0.0.1", 1), ("10.0.0.9", 1)]);
    c.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_exits_with_2_on_bad_input_naming_it_and_1_when_refused() {
    require!(Peer::ZooKeeper);
    let c = Cluster::new("exit").await;
    let ns = c.ns.clone();
    let cases: [(&[&str], i32, &str); 8] = [
        (&["jobs", "--bogus"], 2, "--bogus"),
        (&["disable", "orders", "--item", "x"], 2, "--item"),
        (
            &["disable", "orders", "--item", "1", "--server", "a"],
            2,
            "--server",
        ),
        (&["jobs", "--force"], 2, "--force"),
        (&["job", "no/such"], 2, "NAME"),
        (&["job", "nosuch"], 2, "unknown job nosuch"),
        (&["history", "orders", "--since", "yesterday"], 2, "--since"),
        (&["trigger"], 2, "NAME"),
    ];
    for (args, code, named) in cases {
        let out = ctl(&ns, args).await;
        assert_eq!(out.code, code, "{args:?}: {out:#?}");
        assert!(
            out.stderr.contains(named),
            "{args:?} should name {named}: {out:#?}"
        );
    }
    let no_zk = tokio::process::Command::new(ctl_binary())
        .arg("jobs")
        .output()
        .await
        .unwrap();
    assert_eq!(no_zk.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&no_zk.stderr).contains("--zk"));

    tracing::info!("--- a job without instances cannot be triggered: refused");
    c.ops
        .registry()
        .create("/orders", b"recorded", CreateMode::Persistent)
        .await
        .unwrap();
    let yaml = every_second("orders", 1).to_yaml().unwrap();
    c.ops
        .registry()
        .create("/orders/config", yaml.as_bytes(), CreateMode::Persistent)
        .await
        .unwrap();
    let out = c.ctl(&["trigger", "orders"]).await.expect(1);
    assert!(out.stderr.contains("no live instance"), "{out:#?}");
    c.stop().await;
}

/// ctl without a registry (`cron next`, `history`): the binary's own answer and exit code.
fn ctl_offline(args: &[&str], cwd: &std::path::Path) -> CtlOutput {
    let out = ctl_command(args, &[])
        .current_dir(cwd)
        .output()
        .expect("ctl runs");
    CtlOutput::from_output(out)
}

#[test]
fn cron_next_prints_fire_times_and_names_the_refused_field_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "cron",
        "next",
        "0 30 2 * * ?",
        "--zone",
        "America/New_York",
        "--from",
        "2026-03-07T00:00:00Z",
        "--count",
        "2",
    ];
    let out = ctl_offline(&args, dir.path());
    assert_eq!(out.code, 0, "{out:#?}");
    assert_eq!(
        out.stdout,
        "2026-03-07T07:30:00Z  2026-03-07T02:30:00-05:00\n\
         2026-03-09T06:30:00Z  2026-03-09T02:30:00-04:00\n"
    );
    let out = ctl_offline(&["cron", "next", "0 0 12 * MON ?"], dir.path());
    assert_eq!(out.code, 2, "{out:#?}");
    assert!(out.stderr.contains("month field \"MON\""), "{out:#?}");
    let out = ctl_offline(
        &["cron", "next", "0 0 12 * * ?", "--zone", "GMT+1€"],
        dir.path(),
    );
    assert_eq!(out.code, 2, "{out:#?}");
    assert!(out.stderr.contains("--zone"), "{out:#?}");
}

#[test]
fn history_without_a_database_says_so_exits_non_zero_and_creates_none() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing/dir/x.db");
    let out = ctl_offline(
        &["history", "orders", "--db", missing.to_str().unwrap()],
        dir.path(),
    );
    assert_eq!(out.code, 1, "{out:#?}");
    assert!(out.stderr.contains("does not exist"), "{out:#?}");
    assert!(!missing.exists());
    let out = ctl_offline(&["history", "orders"], dir.path());
    assert_eq!(out.code, 1, "{out:#?}");
    assert!(out.stderr.contains("no history database"), "{out:#?}");
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "nothing created in the current folder"
    );
}

#[test]
fn config_set_with_a_version_past_32_bits_says_out_of_range() {
    let dir = tempfile::tempdir().unwrap();
    let out = ctl_offline(
        &[
            "--zk",
            "127.0.0.1:1",
            "config",
            "set",
            "orders",
            "x.yaml",
            "--version",
            "99999999999",
        ],
        dir.path(),
    );
    assert_eq!(out.code, 2, "{out:#?}");
    assert!(out.stderr.contains("out of range"), "{out:#?}");
}

#[test]
fn a_history_password_in_argv_is_refused_and_never_printed() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    for args in [
        &[
            "history",
            "orders",
            "--db",
            "postgres://app:hunter2@127.0.0.1:1/jobs",
        ][..],
        &[
            "console",
            "--history",
            "postgres://app:hunter2@127.0.0.1:1/jobs",
        ][..],
    ] {
        let out = ctl_offline(args, dir.path());
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains("PGPASSWORD"), "{}", out.stderr);
        assert!(!out.stderr.contains("hunter2"), "{}", out.stderr);
    }
}

#[tokio::test]
async fn stats_and_history_print_the_rows_numbers_and_the_window_they_were_kept_for() {
    use shardcron::history::{ExecutionRecord, History, HistoryWrite, Retention, RetentionWindow};
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let history = History::sqlite(&db).await.unwrap();
    tracing::info!("--- three executions of one hour, one of them timed out; a purge keeps 3650d");
    let start: chrono::DateTime<chrono::Utc> = "2026-03-02T10:00:00Z".parse().unwrap();
    for (n, took, cause) in [
        (0, 100, None),
        (1, 300, Some("timed out after 1s")),
        (2, 200, None),
    ] {
        let at = start + chrono::Duration::seconds(n * 10);
        let record = ExecutionRecord {
            id: format!("t{n}@-@0"),
            job_name: "orders".into(),
            task_id: format!("t{n}"),
            hostname: "h".into(),
            ip: "10.0.0.1".into(),
            sharding_item: 0,
            execution_source: "NORMAL_TRIGGER".into(),
            failure_cause: cause.map(str::to_owned),
            is_success: cause.is_none(),
            start_time: at,
            complete_time: Some(at + chrono::Duration::milliseconds(took)),
            scheduled_time: Some(at - chrono::Duration::milliseconds(5)),
            attempt: None,
            workflow_run: None,
            outcome: None,
        };
        history
            .write(&HistoryWrite::ExecutionFinished(record))
            .await
            .unwrap();
    }
    let purged = history
        .purge(&Retention::window(RetentionWindow::parse("3650d").unwrap()))
        .await
        .unwrap();
    assert_eq!(purged[0].executions, 0);
    history.close().await;
    let db = db.to_str().unwrap();

    tracing::info!("--- stats per day: the counts and percentiles of the rows, and the window");
    let args = [
        "stats",
        "orders",
        "--db",
        db,
        "--by",
        "day",
        "--since",
        "2026-03-01",
    ];
    let out = ctl_offline(&args, dir.path());
    assert_eq!(out.code, 0, "{out:#?}");
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert!(lines[0].starts_with("DAY (UTC)"), "{out:#?}");
    let cells: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(
        cells,
        [
            "2026-03-02",
            "3",
            "1",
            "1",
            "0",
            "200ms",
            "300ms",
            "5ms",
            "5ms"
        ],
        "{out:#?}"
    );
    assert!(out.stderr.contains("kept 3650d"), "{out:#?}");

    tracing::info!("--- history says the window too; a bad --by is refused naming it");
    let out = ctl_offline(&["history", "orders", "--db", db], dir.path());
    assert_eq!(out.code, 0, "{out:#?}");
    assert!(
        out.stderr.contains("history of orders: kept 3650d"),
        "{out:#?}"
    );
    let out = ctl_offline(&["stats", "orders", "--db", db, "--by", "week"], dir.path());
    assert_eq!(out.code, 2, "{out:#?}");
    assert!(out.stderr.contains("--by"), "{out:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backfill_lists_requests_shows_progress_and_cancels_from_the_cli() {
    require!(Peer::ZooKeeper);
    let mut c = Cluster::new("backfill").await;
    // Hourly: no cron fire during the test; each run takes a moment, so a cancel finds work left.
    let hourly = JobConfig::new("orders", 2)
        .cron("0 0 * * * ?")
        .time_zone("GMT");
    c.start(1, std::slice::from_ref(&hourly), Duration::from_millis(300))
        .await;
    c.watch
        .until("the instance registered and sharded", |m| {
            m.get("/orders/sharding/1/instance").is_some()
        })
        .await;
    let hour = chrono::TimeDelta::hours(1);
    let last = chrono::DurationRound::duration_trunc(chrono::Utc::now(), hour).unwrap() - hour;
    let (from, to) = ((last - hour * 2).to_rfc3339(), last.to_rfc3339());

    tracing::info!("--- no backfill yet; a dry run lists three instants");
    let none = c.ctl(&["backfill", "orders", "--status"]).await.expect(0);
    assert_eq!(none.stdout.trim(), "job orders has no backfill");
    let dry = c
        .ctl(&[
            "--json",
            "backfill",
            "orders",
            "--from",
            &from,
            "--to",
            &to,
            "--dry-run",
        ])
        .await
        .expect(0);
    assert_eq!(dry.json()["instants"].as_array().unwrap().len(), 3);

    tracing::info!("--- requested: --status follows it to the end");
    c.ctl(&["backfill", "orders", "--from", &from, "--to", &to])
        .await
        .expect(0);
    let status = support::wait::wait_until(
        async || {
            let out = c.ctl(&["--json", "backfill", "orders", "--status"]).await;
            let json = out.json();
            (json["left"] == 0).then_some(json)
        },
        "the backfill finished, as --status says",
        WITHIN,
    )
    .await;
    assert_eq!(status["instants"], 3);
    assert_eq!(
        status["items"],
        serde_json::json!([{"item": 0, "done": 3}, {"item": 1, "done": 3}])
    );
    let text = c.ctl(&["backfill", "orders", "--status"]).await.expect(0);
    assert!(
        text.stdout.contains("of 3 instants") && text.stdout.contains("finished"),
        "{text:#?}"
    );
    let backfill_runs = c
        .rec
        .all()
        .iter()
        .filter(|e| e.source == ExecutionSource::Backfill)
        .count();
    assert_eq!(backfill_runs, 6, "three instants, two items");

    tracing::info!("--- --cancel deletes it; --status and flags refused together");
    let cancel = c.ctl(&["backfill", "orders", "--cancel"]).await.expect(0);
    assert!(cancel.stdout.contains("cancelled"), "{cancel:#?}");
    let none = c.ctl(&["backfill", "orders", "--status"]).await.expect(0);
    assert_eq!(none.stdout.trim(), "job orders has no backfill");
    let both = c
        .ctl(&["backfill", "orders", "--status", "--cancel"])
        .await
        .expect(2);
    assert!(both.stderr.contains("--cancel"), "{both:#?}");
    c.stop().await;
}
