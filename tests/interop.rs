//! Mixed clusters: shardcron nodes and real Java ElasticJob-Lite 3.x instances
//! (`../shared/elasticjob-peer`) on one ZooKeeper namespace and one job, and ElasticJob's own
//! tools on namespaces shardcron wrote.
//!
//! The job (`interop.InteropJob` on the Java side, declared with `javaClass:` on ours) has 4 items
//! every 6 s, each run working 1.5 s, failover on, misfire off: a period longer than the session
//! timeout (4 s) plus a run, so a failover re-run lands in the fire window of the run it repeats
//! and the counts need no guess at which run was which ([`chaos::periodic`]).
//!
//! The scenarios of [`mixed_clusters_of_java_and_shardcron_instances_lose_and_duplicate_nothing`]
//! run at once, each on its own namespace of one ZooKeeper (a JVM starts slowly; one at a time
//! they would take minutes each), and print one table row each: fires, item runs, duplicates,
//! losses, failover re-runs.

#[macro_use]
extern crate support;

use support::Peer;

use support::chaos;
use support::example_bin;
use support::java;
use support::mixed;
use support::wait::poll_blocking;
use support::zk;

use std::time::Duration;

use chaos::registry;
use chaos::{now, Cluster};
use java::ejtool;
use mixed::{Kind, Mixed};
use shardcron::config::JobConfig;

/// Kills of the victim per failover scenario: the broken protocol lost the item 7 times in 8.
const KILLS: usize = 2;

// A Java leader that shards while a restarted Java instance registers leaves the newcomer out (its
// commit takes down the flag the newcomer raised); the shardcron instances raise it again when the
// commit lands (`decide::drift`), so every scenario ends on a plan that includes everyone.
#[test]
fn mixed_clusters_of_java_and_shardcron_instances_lose_and_duplicate_nothing() {
    require!(Peer::ZooKeeper);
    let peer = require!(Peer::ElasticJob);
    // Built before the scenarios start, so that no scenario waits on cargo.
    example_bin::example_binary();
    let connect = zk::server().connect_string();
    type Scenario = fn(&std::path::Path, &str) -> mixed::Outcome;
    let scenarios: Vec<(&str, Scenario)> = vec![
        (
            "java-first, leadership both ways",
            java_first_then_leadership_both_ways,
        ),
        ("shardcron-first", shardcron_first),
        (
            "shardcron-first, every run policy set",
            shardcron_first_with_run_policies,
        ),
        ("failover: java survivor, shardcron victim", |p, c| {
            failover(p, c, "fo-java", &[Kind::Java], Kind::Rust, KILLS + 1)
        }),
        ("failover: shardcron survivor, java victim", |p, c| {
            failover(p, c, "fo-rust", &[Kind::Rust], Kind::Java, KILLS)
        }),
        ("failover: both survive, shardcron victim", |p, c| {
            failover(
                p,
                c,
                "fo-both-r",
                &[Kind::Java, Kind::Rust],
                Kind::Rust,
                KILLS,
            )
        }),
        ("failover: both survive, java victim", |p, c| {
            failover(
                p,
                c,
                "fo-both-j",
                &[Kind::Java, Kind::Rust],
                Kind::Java,
                KILLS,
            )
        }),
    ];
    // `SHARDCRON_INTEROP_ONLY=failover` runs the scenarios whose name contains it.
    let only = std::env::var("SHARDCRON_INTEROP_ONLY").unwrap_or_default();
    let outcomes: Vec<(String, std::thread::Result<mixed::Outcome>)> = std::thread::scope(|s| {
        let handles: Vec<_> = scenarios
            .iter()
            .filter(|(name, _)| name.contains(only.as_str()))
            .map(|(name, run)| {
                let (peer, connect) = (&peer, &connect);
                let handle = std::thread::Builder::new()
                    .name((*name).to_owned())
                    .spawn_scoped(s, move || run(peer, connect))
                    .expect("spawning a scenario thread");
                ((*name).to_owned(), handle)
            })
            .collect();
        handles
            .into_iter()
            .map(|(name, h)| (name, h.join()))
            .collect()
    });
    eprintln!("\n| scenario | fires | item runs | duplicates | losses | failover re-runs |");
    eprintln!("| --- | --- | --- | --- | --- | --- |");
    let mut failed = Vec::new();
    for (name, outcome) in &outcomes {
        match outcome {
            Ok(o) => {
                eprintln!("{}", o.tally.row());
                if !o.tally.is_clean() {
                    failed.push(format!("{name}: {}\n{}", o.tally, o.dump));
                }
            }
            Err(_) => {
                eprintln!("| {name} | failed: see its panic above |");
                failed.push(format!("{name}: panicked"));
            }
        }
    }
    assert!(
        failed.is_empty(),
        "scenarios failed:\n{}",
        failed.join("\n")
    );
}

/// Java starts the job (its config and root), shardcron joins; leadership goes from Java to
/// shardcron when the Java leader shuts down, and back to Java when shardcron's does.
fn java_first_then_leadership_both_ways(peer: &std::path::Path, connect: &str) -> mixed::Outcome {
    let mut m = Mixed::new(peer, connect, "java-first", "mixed");
    let j1 = m.start(Kind::Java, "j1");
    m.wait_runs_of(&j1);
    let a = m.start(Kind::Rust, "a");
    m.converge(&[&j1, &a]);
    assert_eq!(m.leader(), j1, "the first instance, Java, leads");
    let from = m.next_fire();
    m.wait_fires(2);
    tracing_line("java leader shuts down: shardcron takes over");
    m.stop(&j1);
    m.converge(&[&a]);
    assert_eq!(m.leader(), a, "leadership passed from Java to shardcron");
    let j2 = m.start(Kind::Java, "j2");
    m.converge(&[&a, &j2]);
    m.wait_fires(1);
    tracing_line("shardcron leader shuts down: Java takes over");
    m.stop(&a);
    m.converge(&[&j2]);
    assert_eq!(m.leader(), j2, "leadership passed from shardcron to Java");
    m.wait_fires(1);
    m.outcome("java-first, leadership both ways", from)
}

/// shardcron starts the job, Java joins it and runs with shardcron's config; the console's APIs
/// read the mixed namespace.
fn shardcron_first(peer: &std::path::Path, connect: &str) -> mixed::Outcome {
    let mut m = Mixed::new(peer, connect, "rust-first", "mixed");
    let a = m.start(Kind::Rust, "a");
    m.wait_runs_of(&a);
    let j1 = m.start(Kind::Java, "j1");
    m.converge(&[&a, &j1]);
    assert_eq!(m.leader(), a, "the first instance, shardcron, leads");
    let from = m.next_fire();
    m.wait_fires(3);
    let stats = m.ejtool_stats();
    assert!(
        stats.contains("job=mixed status=OK") && stats.contains("instanceCount=2"),
        "{stats}"
    );
    m.outcome("shardcron-first", from)
}

/// shardcron writes a job that sets every run policy this version carries out, and output
/// capture (`shardcron.` props); a Java instance joins, loads it (plain properties to ElasticJob) and runs its share with
/// ElasticJob's semantics: nothing lost or run twice. The timeout is longer than a run and the
/// script succeeds, so the policies change nothing a tally sees.
fn shardcron_first_with_run_policies(peer: &std::path::Path, connect: &str) -> mixed::Outcome {
    let props = [
        ("shardcron.timeout", "5s"),
        ("shardcron.timeout.grace", "1s"),
        ("shardcron.retry.max", "1"),
        ("shardcron.retry.backoff", "1s"),
        ("shardcron.retry.backoff.factor", "2"),
        ("shardcron.retry.backoff.max", "2s"),
        ("shardcron.retry.backoff.jitter", "0.1"),
        ("shardcron.retry.notify", "every"),
        ("shardcron.overlap", "skip"),
        ("shardcron.catchup.window", "5m"),
        ("shardcron.output", "64"),
    ];
    let mut m = Mixed::with_props(peer, connect, "rust-policies", "policies", &props);
    let a = m.start(Kind::Rust, "a");
    m.wait_runs_of(&a);
    let j1 = m.start(Kind::Java, "j1");
    m.converge(&[&a, &j1]);
    m.wait_runs_of(&j1);
    let from = m.next_fire();
    m.wait_fires(3);
    m.outcome("shardcron-first, every run policy set", from)
}

/// `kills` times: the victim is killed (`kill -9`) while its items run, its items must be re-run
/// once by the survivors, and a new victim joins.
fn failover(
    peer: &std::path::Path,
    connect: &str,
    ns: &str,
    survivors: &[Kind],
    victim: Kind,
    kills: usize,
) -> mixed::Outcome {
    let mut m = Mixed::new(peer, connect, ns, "mixed");
    let live: Vec<String> = survivors
        .iter()
        .enumerate()
        .map(|(i, k)| m.start(*k, &format!("s{i}")))
        .collect();
    let mut v = m.start(victim, "v0");
    let ids = |live: &[String], v: &str| {
        let mut all: Vec<String> = live.to_vec();
        all.push(v.to_owned());
        all
    };
    m.converge_owned(&ids(&live, &v));
    let from = m.next_fire();
    for k in 0..kills {
        m.kill_while_running(&v);
        m.wait_reruns();
        v = m.start(victim, &format!("v{}", k + 1));
        m.converge_owned(&ids(&live, &v));
    }
    m.wait_fires(1);
    m.outcome(
        &format!("failover {ns}: {kills} kills of a {victim:?} victim, survivors {survivors:?}"),
        from,
    )
}

/// A job whose name has a space and CJK characters, shared by both languages: ElasticJob takes
/// any name as a path segment, and so must shardcron.
#[test]
fn a_job_named_with_a_space_and_cjk_is_shared_by_java_and_shardcron() {
    require!(Peer::ZooKeeper);
    let peer = require!(Peer::ElasticJob);
    example_bin::example_binary();
    let o = cjk_name(&peer, &zk::server().connect_string());
    eprintln!("{}", o.tally.row());
    assert!(o.tally.is_clean(), "{}\n{}", o.tally, o.dump);
}

fn cjk_name(peer: &std::path::Path, connect: &str) -> mixed::Outcome {
    let mut m = Mixed::new(peer, connect, "cjk", "订单 同步");
    let j1 = m.start(Kind::Java, "j1");
    let a = m.start(Kind::Rust, "a");
    m.converge(&[&j1, &a]);
    let from = m.next_fire();
    m.wait_fires(2);
    let stats = m.ejtool_stats();
    assert!(stats.contains("job=订单 同步 status=OK"), "{stats}");
    m.outcome("job name with spaces and CJK", from)
}

fn tracing_line(what: &str) {
    eprintln!("[interop] --- {what}");
}

/// ElasticJob's console APIs (`JobStatisticsAPI`, `ServerStatisticsAPI`, `ShardingStatisticsAPI`,
/// `JobConfigurationAPI`) and `JobOperateAPI` on a namespace only shardcron nodes wrote.
#[test]
fn elasticjobs_lifecycle_apis_read_and_operate_a_shardcron_only_namespace() {
    require!(Peer::ZooKeeper);
    let peer = require!(Peer::ElasticJob);
    let connect = zk::server().connect_string();
    let manual = "  - type: SCRIPT\n    jobName: manual\n    cron: '0 0 0 1 1 ? 2099'\n    \
                  timeZone: GMT\n    shardingTotalCount: 2\n    overwrite: true\n    props:\n      \
                  script.command.line: '{record}'\n";
    let mut c = Cluster::new(&connect, "lifecycle", manual);
    c.start("a");
    c.start("b");
    c.converge(&["a", "b"]);
    c.wait_complete_fire(chaos::JOB, chaos::ITEMS, now());
    let ns = c.namespace.clone();
    let zk_ns = |extra: &[&str]| -> Vec<String> {
        let mut args = vec![format!("zk={connect}"), format!("ns={ns}")];
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        args
    };

    let stats = ejtool(&peer, &[vec!["stats".to_owned()], zk_ns(&[])].concat());
    eprintln!("[interop] ejtool stats on a shardcron-only namespace:\n{stats}");
    for want in [
        "JobStatisticsAPI.getJobsTotalCount = 2",
        "job=chaos status=OK cron=* * * * * ? instanceCount=2 shardingTotalCount=4",
        "ip=127.0.0.1 instances=[127.0.0.1@-@chaos-a, 127.0.0.1@-@chaos-b] instancesNum=2 \
         jobNames=[chaos, manual] jobsNum=2 disabledJobsNum=0",
        "getShardingInfo(chaos): item=0 instanceId=127.0.0.1@-@chaos-b serverIp=127.0.0.1",
        "getShardingInfo(chaos): item=3 instanceId=127.0.0.1@-@chaos-a serverIp=127.0.0.1",
        "JobConfigurationAPI.getJobConfiguration(chaos) re-marshalled:\ncron: '* * * * * ?'",
    ] {
        assert!(
            stats.contains(want),
            "ejtool stats lacks {want:?}:\n{stats}"
        );
    }

    let operate = |op: &str, extra: &[&str]| {
        let mut args = vec!["operate".to_owned()];
        args.extend(zk_ns(extra));
        args.push(format!("op={op}"));
        ejtool(&peer, &args)
    };
    tracing_line("JobOperateAPI.trigger on a job whose cron is years away");
    operate("trigger", &["job=manual"]);
    c.wait_runs("the triggered job's two items", |runs| {
        let items: std::collections::BTreeSet<u32> = runs
            .iter()
            .filter(|r| r.job == "manual")
            .map(|r| r.item)
            .collect();
        (items.len() == 2).then_some(())
    });

    tracing_line("ShardingOperateAPI.disable item 0, then enable");
    operate("item-disable", &["job=chaos", "item=0"]);
    let disabled_at = now() + 2.0;
    std::thread::sleep(Duration::from_secs(4));
    let runs = c.runs();
    let item0 = runs
        .iter()
        .filter(|r| r.job == chaos::JOB && r.item == 0 && r.at > disabled_at)
        .count();
    assert_eq!(
        item0, 0,
        "item 0 ran while ElasticJob's API had it disabled"
    );
    operate("item-enable", &["job=chaos", "item=0"]);
    c.wait_runs("item 0 running again once enabled", |runs| {
        runs.iter()
            .any(|r| r.job == chaos::JOB && r.item == 0 && r.at > disabled_at + 2.0)
            .then_some(())
    });

    tracing_line("JobOperateAPI.disable the server, then enable");
    operate("disable", &["job=chaos", "server=127.0.0.1"]);
    let off_at = now() + 2.0;
    std::thread::sleep(Duration::from_secs(4));
    let during = c
        .runs()
        .iter()
        .filter(|r| r.job == chaos::JOB && r.at > off_at)
        .count();
    assert_eq!(
        during, 0,
        "the job ran on a server ElasticJob's API disabled"
    );
    operate("enable", &["job=chaos", "server=127.0.0.1"]);
    c.wait_complete_fire(chaos::JOB, chaos::ITEMS, now());
    assert!(
        c.stderr().is_empty() || !c.stderr().contains("panicked"),
        "{}",
        c.stderr()
    );
}

/// A config shardcron writes parses with ElasticJob's YAML loader as written, and what ElasticJob
/// writes back parses here to the same config; the pre-3.0.5 field name ElasticJob refuses is
/// never written.
#[test]
fn configs_written_by_each_side_load_on_the_other() {
    require!(Peer::ZooKeeper);
    let peer = require!(Peer::ElasticJob);
    let dir = tempfile::tempdir().expect("a temp dir");
    let ours = JobConfig::new("orders", 3)
        .cron("0/5 * * * * ?")
        .time_zone("GMT+08:00")
        .item_parameters("0=Beijing,1=Shanghai,2=Guangzhou")
        .job_parameter("express")
        .failover(true)
        .misfire(false)
        .sharding_strategy("ROUND_ROBIN")
        .executor_service_handler("CPU")
        .error_handler("LOG")
        .description("ships orders")
        .prop("script.command.line", "echo hi")
        .overwrite(true);
    let file = dir.path().join("ours.yaml");
    std::fs::write(&file, ours.to_yaml().expect("our YAML")).expect("writing our YAML");
    let java = ejtool(
        &peer,
        &["yaml".to_owned(), format!("file={}", file.display())],
    );
    assert!(
        !java.contains("PARSE-ERROR"),
        "ElasticJob refused our config:\n{java}"
    );
    let body: String = java.lines().skip(1).map(|l| format!("{l}\n")).collect();
    let back = JobConfig::from_yaml(&body).expect("ElasticJob's YAML parses here");
    assert!(back.check_java_readable().is_ok());
    // ElasticJob writes its defaults out (`description: ''` when unset, `jobParameter: ''`).
    assert_eq!(
        (back.cron, back.time_zone, back.sharding_total_count),
        (ours.cron, ours.time_zone, ours.sharding_total_count)
    );
    assert_eq!(back.sharding_item_parameters, ours.sharding_item_parameters);
    assert_eq!(
        back.job_executor_thread_pool_size_provider_type.as_deref(),
        Some("CPU")
    );
    assert_eq!(back.props, ours.props);
    assert_eq!((back.failover, back.misfire), (true, false));

    let old = dir.path().join("old.yaml");
    std::fs::write(
        &old,
        "jobName: orders\nshardingTotalCount: 3\ncron: '0/5 * * * * ?'\njobExecutorServiceHandlerType: CPU\n",
    )
    .expect("writing the old YAML");
    let refused = ejtool(
        &peer,
        &["yaml".to_owned(), format!("file={}", old.display())],
    );
    assert!(
        refused.contains("PARSE-ERROR"),
        "ElasticJob 3.0.5+ refuses the old field name (what shardcron must never write):\n{refused}"
    );
    let rewritten = dir.path().join("rewritten.yaml");
    let read = JobConfig::from_yaml(&std::fs::read_to_string(&old).unwrap()).unwrap();
    std::fs::write(&rewritten, read.to_yaml().unwrap()).unwrap();
    let accepted = ejtool(
        &peer,
        &["yaml".to_owned(), format!("file={}", rewritten.display())],
    );
    assert!(!accepted.contains("PARSE-ERROR"), "{accepted}");
    assert!(
        accepted.contains("jobExecutorThreadPoolSizeProviderType: CPU"),
        "{accepted}"
    );
}

/// ROUND_ROBIN for a name whose Java hash is `Integer.MIN_VALUE`: ElasticJob throws unless the
/// instance count divides 2^31; shardcron writes a plan (the documented deviation), and agrees
/// with ElasticJob wherever ElasticJob has an answer.
#[test]
fn round_robin_agrees_with_elasticjob_and_keeps_a_plan_where_java_throws() {
    require!(Peer::ZooKeeper);
    let peer = require!(Peer::ElasticJob);
    let hash = ejtool(
        &peer,
        &["hash".to_owned(), "job=polygenelubricants".to_owned()],
    );
    assert_eq!(hash.trim(), i32::MIN.to_string());
    let shard = |job: &str, n: usize| {
        let ids: Vec<String> = (0..n).map(|i| format!("10.0.0.{}@-@{i}", 9 - i)).collect();
        ejtool(
            &peer,
            &[
                "shard".to_owned(),
                "strategy=ROUND_ROBIN".to_owned(),
                format!("job={job}"),
                "total=6".to_owned(),
                format!("instances={}", ids.join(",")),
            ],
        )
    };
    assert!(shard("polygenelubricants", 3).contains("EXCEPTION"));
    assert!(!shard("polygenelubricants", 4).contains("EXCEPTION"));
    let _ = registry::average_allocation(&["x"], 1);
}

/// The issue's failure without a race: what a shardcron survivor writes when it marks a crashed
/// instance's running item, then a Java instance claims it. With the mark beside the dead owner's
/// `running`, the Java claimer never ran the item, and from then on ran nothing at all; with the
/// marker deleting `running`, as ElasticJob's own does, Java runs it and the job goes on.
#[test]
fn a_java_instance_claims_and_runs_an_item_a_shardcron_survivor_marked() {
    use shardcron::decide::failover::marks_for_crashed;
    use shardcron::registry::{CreateMode, Op};
    use shardcron::types::{InstanceId, JobName, ShardItem};
    use shardcron::view::{ItemView, JobView};

    require!(Peer::ZooKeeper);
    let peer = require!(Peer::ElasticJob);
    let connect = zk::server().connect_string();
    let mut m = Mixed::new(&peer, &connect, "marked", "mixed");
    let j = m.start(Kind::Java, "j");
    m.wait_runs_of(&j);
    m.converge(&[&j]);
    tracing_line("a dead instance's run of item 0, then shardcron's mark of it");
    // Between Java's runs (1.5 s after each 6 s fire), so that item 0 has no `running` of its own.
    chaos::sleep_until_phase(2.5..4.0, mixed::PERIOD as f64);
    let dead = InstanceId::parse("10.9.9.9@-@4242").expect("an instance id");
    let (ns, job) = (m.namespace(), JobName::new("mixed").expect("a job name"));
    registry::apply(
        &connect,
        &ns,
        &[Op::create(
            "/mixed/sharding/0/running",
            dead.as_str(),
            CreateMode::Persistent,
        )],
    );
    let mut view = JobView {
        instances: [InstanceId::parse(&j).expect("the Java id")].into(),
        ..JobView::default()
    };
    view.items.insert(
        ShardItem(0),
        ItemView {
            owner: Some(dead.clone()),
            running: Some(dead.to_string()),
            ..ItemView::default()
        },
    );
    let marks = marks_for_crashed(&view, &job, &dead);
    assert_eq!(marks.len(), 1);
    registry::apply(
        &connect,
        &ns,
        &[Op::create(
            "/mixed/leader/failover",
            "",
            CreateMode::Persistent,
        )],
    );
    registry::apply(
        &connect,
        &ns,
        &[Op::create(
            "/mixed/leader/failover/items",
            "",
            CreateMode::Persistent,
        )],
    );
    let marked_at = now();
    registry::apply(&connect, &ns, &marks[0]);
    tracing_line("Java claims it at the end of its next execution and runs it");
    m.wait(
        "Java to run item 0 and item 1 again after the mark",
        Duration::from_secs(4 * mixed::PERIOD),
        |runs| {
            let after = |i| {
                runs.iter()
                    .filter(|r| r.item == i && r.at > marked_at)
                    .count()
            };
            (after(0) >= 2 && after(1) >= 2).then_some(())
        },
    );
    for node in [
        "leader/failover/items/0",
        "sharding/0/failover",
        "sharding/0/running",
    ] {
        let path = format!("/mixed/{node}");
        let gone = || !registry::exists(&connect, &ns, &path);
        let every = Duration::from_millis(100);
        let left = poll_blocking(gone, Duration::from_secs(5), every).is_err();
        assert!(
            !left,
            "{path} stayed after the taken-over run:\n{}",
            m.dump()
        );
    }
}

/// A job created at runtime (`Ops::create`, as `shardcronctl create` and the console's form) is a
/// config Java reads: a Java instance started with another cron and `overwrite=false` takes the
/// registry's config and runs the job on its schedule, with its own semantics.
#[test]
fn a_java_instance_runs_a_job_created_at_runtime_on_the_created_schedule() {
    use shardcron::ops::{JobForm, Ops};
    use shardcron::registry::zookeeper::ZkConnector;
    use shardcron::registry::Connector;

    require!(Peer::ZooKeeper);
    let peer = require!(Peer::ElasticJob);
    let ns = format!("created-{}", std::process::id());
    let rt = tokio::runtime::Runtime::new().expect("a runtime");
    rt.block_on(async {
        let connector = ZkConnector::new(zk::backend().config(&ns));
        let ops = Ops::new(connector.connect().await.expect("an operator session"));
        let form = JobForm {
            job_name: "created".into(),
            job_type: "SCRIPT".into(),
            cron: "0/2 * * * * ?".into(),
            items: 2,
            command: Some("/bin/true".into()),
            time_zone: Some("UTC".into()),
            ..JobForm::default()
        };
        ops.create(form.to_new_job().expect("a valid form"))
            .await
            .expect("the job is created");
    });
    let dir = tempfile::tempdir().expect("a temp dir");
    let log = dir.path().join("java.log");
    let args: Vec<String> = [
        format!("zk={}", zk::server().connect_string()),
        format!("ns={ns}"),
        "job=created".to_owned(),
        "items=5".to_owned(),
        // Never, unless the registry's config wins.
        "cron=0 0 0 1 1 ? 2099".to_owned(),
        format!("log={}", log.display()),
        "overwrite=false".to_owned(),
    ]
    .into();
    let mut java = java::JavaProc::spawn(
        &peer,
        dir.path(),
        "created",
        &args,
        "-Dinterop.rootName=SCRIPT",
    );
    let runs = support::wait::wait_until_blocking(
        || {
            let runs = java::read_java_runs(&log);
            let items: std::collections::BTreeSet<u32> = runs.iter().map(|r| r.item).collect();
            (items.len() == 2).then_some(runs)
        },
        "the Java instance to run both items on the created schedule",
        Duration::from_secs(30),
    );
    java.terminate();
    assert!(
        runs.iter().all(|r| r.item < 2),
        "two items, as created, not the 5 of the Java side: {runs:?}"
    );
}
