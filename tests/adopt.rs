//! Jobs created at runtime, as processes on a real ZooKeeper: `shardcronctl create` writes a
//! SCRIPT job, two example nodes started with `--adopt script,http` run it from its first fires, a
//! third without the opt-in leaves it alone; its command line is changed live with `config set`;
//! `shardcronctl remove` stops it on both (their running items end) and cleans the namespace.

#[macro_use]
extern crate support;

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use support::example_bin::{on_zk, run_ctl_blocking};
use support::jobs_file::write_script;
use support::node_proc::{NodeProcess, Output};
use support::wait::wait_until_blocking;
use support::Peer;

/// Long enough for a registration, a sharding and a few fires of a one-second cron.
const WITHIN: Duration = Duration::from_secs(20);

/// One run of the test script: `{start|end} {unix time} {version} {instance}`.
#[derive(Debug, Clone)]
struct Run {
    phase: String,
    at: f64,
    version: String,
    instance: String,
}

fn runs(log: &Path) -> Vec<Run> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .filter_map(|line| {
            let mut words = line.split(' ');
            Some(Run {
                phase: words.next()?.to_owned(),
                at: words.next()?.parse().ok()?,
                version: words.next()?.to_owned(),
                instance: words.next()?.to_owned(),
            })
        })
        .collect()
}

fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("the clock is after 1970")
        .as_secs_f64()
}

/// Runs `shardcronctl --zk .. --namespace .. ARGS`, returning its exit code and stdout.
fn ctl(connect: &str, namespace: &str, args: &[&str]) -> (i32, String, String) {
    let out = run_ctl_blocking(&on_zk(connect, namespace, args), &[]);
    (out.code, out.stdout, out.stderr)
}

fn instances_of(connect: &str, namespace: &str, job: &str) -> Option<BTreeSet<String>> {
    let (code, stdout, _) = ctl(connect, namespace, &["--json", "job", job]);
    if code != 0 {
        return None;
    }
    let detail: serde_json::Value = serde_json::from_str(&stdout).ok()?;
    Some(
        detail["instances"]
            .as_array()?
            .iter()
            .filter_map(|i| i.as_str().map(str::to_owned))
            .collect(),
    )
}

#[test]
fn a_job_created_with_ctl_runs_on_adopting_nodes_follows_its_command_line_and_stops_on_remove() {
    require!(Peer::ZooKeeper);
    let server = support::zk::server();
    let connect = server.connect_string();
    let namespace = format!("adopt-{}", std::process::id());
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("runs.log");
    let script = dir.path().join("record.sh");
    write_script(
        &script,
        &format!(
            "#!/bin/sh\n# $1: the version of the command line; the context JSON comes last.\n\
             printf 'start %s %s %s\\n' \"$(date +%s.%N)\" \"$1\" \"$SHARDCRON_TEST_INSTANCE\" >> '{log}'\n\
             sleep 0.4\n\
             printf 'end %s %s %s\\n' \"$(date +%s.%N)\" \"$1\" \"$SHARDCRON_TEST_INSTANCE\" >> '{log}'\n",
            log = log.display()
        ),
    );
    // Every node runs one compiled job of its own, which must outlive the adopted one.
    let jobs = dir.path().join("jobs.yaml");
    std::fs::write(
        &jobs,
        "jobs:\n  - type: demo\n    jobName: own\n    cron: '0 0 0 * * ?'\n    timeZone: GMT\n    \
         shardingTotalCount: 1\n",
    )
    .unwrap();
    let mut output = Output::new();
    let start = |label: &str, adopt: Option<&str>, output: &Output| {
        let instance = format!("127.0.0.1@-@adopt-{label}");
        let node_args = ["--jobs", jobs.to_str().unwrap(), "--instance-id", &instance];
        let mut args = on_zk(&connect, &namespace, &node_args);
        if let Some(policy) = adopt {
            args.extend(["--adopt", policy]);
        }
        NodeProcess::spawn(label, &args, &[("SHARDCRON_TEST_INSTANCE", label)], output)
    };

    tracing::info!("--- two adopting nodes and one without the opt-in start");
    let mut a = start("a", Some("script,http"), &output);
    let mut b = start("b", Some("script"), &output);
    let mut c = start("c", None, &output);
    output.wait_until("three nodes to start", &[&a, &b, &c], |lines| {
        Output::of_kind(lines, "node").count() == 3
    });

    tracing::info!("--- shardcronctl create: both adopting nodes run it within its first fires");
    let command = format!("{} v1", script.display());
    let (code, stdout, stderr) = ctl(
        &connect,
        &namespace,
        &[
            "create",
            "ticker",
            "--type",
            "SCRIPT",
            "--cron",
            "* * * * * ?",
            "--items",
            "2",
            "--time-zone",
            "UTC",
            "--command",
            &command,
        ],
    );
    assert_eq!(code, 0, "create: {stdout}{stderr}");
    let created = now();
    let (code, _, stderr) = ctl(
        &connect,
        &namespace,
        &[
            "create",
            "ticker",
            "--type",
            "SCRIPT",
            "--cron",
            "* * * * * ?",
            "--items",
            "1",
            "--command",
            "/bin/true",
        ],
    );
    assert!(
        code == 1 && stderr.contains("exists already"),
        "a second create of the name is refused: {stderr}"
    );
    let (code, _, stderr) = ctl(
        &connect,
        &namespace,
        &[
            "create",
            "broken",
            "--type",
            "SCRIPT",
            "--cron",
            "* * * 31 2 ? x",
            "--items",
            "1",
            "--command",
            "/bin/true",
        ],
    );
    assert!(
        code == 2 && stderr.contains("cron:"),
        "a bad cron is refused, naming it: {stderr}"
    );
    let first = wait_until_blocking(
        || {
            let runs = runs(&log);
            let by: BTreeSet<&str> = runs.iter().map(|r| r.instance.as_str()).collect();
            let first = runs.iter().map(|r| r.at).reduce(f64::min);
            (by == BTreeSet::from(["a", "b"]))
                .then_some(first)
                .flatten()
        },
        "both adopting nodes to run the created job",
        WITHIN,
    );
    assert!(
        first - created < 2.5,
        "the first run came {:.2} s after the creation: more than one fire of a 1 s cron \
         (and a registration)",
        first - created
    );
    let adopters = instances_of(&connect, &namespace, "ticker").expect("the job is listed");
    assert!(
        !adopters.iter().any(|i| i.ends_with("adopt-c")),
        "the node without --adopt left it alone: {adopters:?}"
    );

    tracing::info!("--- config set: the new command line runs from the next fires on both");
    let (code, yaml, stderr) = ctl(&connect, &namespace, &["config", "get", "ticker"]);
    assert_eq!(code, 0, "config get: {stderr}");
    assert!(yaml.contains(" v1"), "{yaml}");
    let edited = dir.path().join("ticker.yaml");
    std::fs::write(&edited, yaml.replace(" v1", " v2")).unwrap();
    let (code, _, stderr) = ctl(
        &connect,
        &namespace,
        &["config", "set", "ticker", edited.to_str().unwrap()],
    );
    assert_eq!(code, 0, "config set: {stderr}");
    let changed = now();
    wait_until_blocking(
        || {
            let by: BTreeSet<String> = runs(&log)
                .into_iter()
                .filter(|r| r.version == "v2")
                .map(|r| r.instance)
                .collect();
            by == BTreeSet::from(["a".to_owned(), "b".to_owned()])
        },
        "both adopting nodes to run the new command line",
        WITHIN,
    );
    let stale: Vec<Run> = runs(&log)
        .into_iter()
        .filter(|r| r.phase == "start" && r.version == "v1" && r.at > changed + 2.0)
        .collect();
    assert!(stale.is_empty(), "the old command line ran on: {stale:?}");

    tracing::info!("--- shardcronctl remove: both adopters stop it, then the namespace is cleaned");
    let (code, stdout, stderr) = ctl(&connect, &namespace, &["--json", "remove", "ticker"]);
    assert_eq!(
        code, 0,
        "remove of a job only adopters run: {stdout}{stderr}"
    );
    let removed = now();
    let answer: serde_json::Value = serde_json::from_str(&stdout).expect("remove prints JSON");
    assert_eq!(answer["removed"], true, "{answer}");
    assert_eq!(
        instances_of(&connect, &namespace, "ticker"),
        None,
        "the job's subtree is gone"
    );
    let after = runs(&log);
    let started = after.iter().filter(|r| r.phase == "start").count();
    let ended = after.iter().filter(|r| r.phase == "end").count();
    assert_eq!(
        started, ended,
        "every run that started ended before the namespace was cleaned (none was cut); \
         removed at {removed:.3}, the runs: {after:?}"
    );

    tracing::info!(
        "--- a job created after the removal is adopted afresh; the removed one stays stopped"
    );
    let command = format!("{} v3", script.display());
    let (code, _, stderr) = ctl(
        &connect,
        &namespace,
        &[
            "create",
            "tocker",
            "--type",
            "SCRIPT",
            "--cron",
            "* * * * * ?",
            "--items",
            "2",
            "--command",
            &command,
        ],
    );
    assert_eq!(code, 0, "create: {stderr}");
    wait_until_blocking(
        || {
            let by: BTreeSet<String> = runs(&log)
                .into_iter()
                .filter(|r| r.version == "v3")
                .map(|r| r.instance)
                .collect();
            by == BTreeSet::from(["a".to_owned(), "b".to_owned()])
        },
        "both adopting nodes to run the next created job",
        WITHIN,
    );
    let late: Vec<Run> = runs(&log)
        .into_iter()
        .filter(|r| r.phase == "start" && r.version != "v3" && r.at > removed)
        .collect();
    assert!(
        late.is_empty(),
        "runs of the removed job after its removal: {late:?}"
    );
    assert!(
        instances_of(&connect, &namespace, "own").is_some_and(|i| i.len() == 3),
        "each node still runs its own job"
    );
    let (code, _, stderr) = ctl(&connect, &namespace, &["remove", "tocker"]);
    assert_eq!(code, 0, "remove: {stderr}");

    for node in [&mut a, &mut b, &mut c] {
        let status = node.terminate();
        assert_eq!(status.code(), Some(0), "{}: {}", node.label, node.stderr());
    }
}

#[tokio::test]
async fn an_embedded_node_adopting_http_only_runs_http_jobs_and_a_removal_stops_it_there() {
    use std::sync::Arc;

    use shardcron::decide::adopt::AdoptPolicy;
    use shardcron::node::NodeBuilder;
    use shardcron::ops::{JobForm, Ops, RemoveMode};
    use shardcron::registry::embedded::EmbeddedServer;
    use shardcron::{InstanceId, JobName};
    use support::wait::wait_until;

    let server = EmbeddedServer::new();
    let me = InstanceId::parse("127.0.0.1@-@http-only").unwrap();
    let policy: AdoptPolicy = "http".parse().unwrap();
    let node = NodeBuilder::new(Arc::new(server.connector("adopt")))
        .instance_id(me.clone())
        .adopt(policy)
        .start()
        .await
        .expect("the node starts with no job of its own");
    let ops = Ops::new(Arc::new(server.connector("adopt").open()));
    let registered = |job: &str| {
        let path = format!("/{job}/instances/{me}");
        node.mirror().get(&path).is_some()
    };

    tracing::info!("--- a SCRIPT job and then an HTTP job are created");
    let form = |name: &str, job_type: &str| JobForm {
        job_name: name.into(),
        job_type: job_type.into(),
        cron: "* * * * * ?".into(),
        items: 1,
        ..JobForm::default()
    };
    let script = JobForm {
        command: Some("/bin/true".into()),
        ..form("nightly", "SCRIPT")
    };
    ops.create(script.to_new_job().unwrap()).await.unwrap();
    let http = JobForm {
        url: Some("http://127.0.0.1:9/ping".into()),
        ..form("ping", "HTTP")
    };
    ops.create(http.to_new_job().unwrap()).await.unwrap();
    wait_until(
        async || registered("ping"),
        "the HTTP job to be adopted",
        WITHIN,
    )
    .await;
    assert!(!registered("nightly"), "the SCRIPT job is left alone");

    tracing::info!("--- its removal stops it on the node first, then cleans the namespace");
    let ping = JobName::new("ping").unwrap();
    let stopped = ops
        .remove(&ping, RemoveMode::RefuseWhileRunning)
        .await
        .expect("a job only adopters run is removed");
    assert_eq!(stopped, vec![me.clone()]);
    wait_until(
        async || node.mirror().get("/ping").is_none(),
        "the job's subtree to be gone",
        WITHIN,
    )
    .await;
    assert!(node.is_ready().await, "the node runs on without the job");
    node.shutdown().await;
}
