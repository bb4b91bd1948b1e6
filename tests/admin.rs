//! The operations endpoints over real TCP on loopback: `/metrics` scrapes, `/healthz` and
//! `/readyz` across a cut session, `/dump/{job}` beside the registry, and the HTTP server's
//! refusals. Real time (a job firing every second); every wait is on recorded state.

#[allow(dead_code)]
#[path = "support/cluster.rs"]
mod cluster;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use cluster::{init_tracing, instance, Recorder};
use shardcron::config::JobConfig;
use shardcron::node::{NodeBuilder, NodeHandle};
use shardcron::registry::embedded::{EmbeddedServer, EmbeddedSession};
use shardcron::registry::{CreateMode, Registry};
use shardcron::{JobSpec, JobType, NodeOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const NAMESPACE: &str = "admin-tests";
const WAIT: Duration = Duration::from_secs(20);

/// A node on `server` running `config` (recorded by `rec`), with both endpoints on free ports.
async fn start(server: &EmbeddedServer, rec: &Recorder, n: u32, config: JobConfig) -> NodeHandle {
    let loopback: SocketAddr = "127.0.0.1:0".parse().unwrap();
    NodeBuilder::new(Arc::new(server.connector(NAMESPACE)))
        .instance_id(instance(n))
        .clock(rec.clock())
        .options(NodeOptions {
            shutdown_timeout: Duration::from_secs(5),
            ..NodeOptions::default()
        })
        .job_spec(JobSpec {
            config,
            job_type: JobType::Named("recorded".into()),
            handler: rec.handler(Duration::ZERO),
        })
        .metrics(loopback)
        .admin(loopback)
        .start()
        .await
        .expect("node starts")
}

/// Waits until the job has run `n` items in all.
async fn executions(rec: &Recorder, job: &str, n: usize) {
    rec.wait_until(&format!("{n} executions of {job}"), WAIT, |log| {
        log.iter().filter(|e| e.job == job).count() >= n
    })
    .await;
}

/// Sends `raw` to `addr` and returns the status code and the body of the answer.
async fn exchange(addr: SocketAddr, raw: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).await.expect("connects");
    stream
        .write_all(raw.as_bytes())
        .await
        .expect("request sent");
    let mut answer = String::new();
    stream
        .read_to_string(&mut answer)
        .await
        .expect("answer read to the end: the server closes the connection");
    let (head, body) = answer.split_once("\r\n\r\n").expect("a head and a body");
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status line");
    (status, body.to_owned())
}

async fn get(addr: SocketAddr, target: &str) -> (u16, String) {
    exchange(
        addr,
        &format!("GET {target} HTTP/1.1\r\nHost: test\r\n\r\n"),
    )
    .await
}

/// The sum of the samples of `metric` whose labels contain every one of `labels`.
fn sample_sum(scrape: &str, metric: &str, labels: &[&str]) -> f64 {
    scrape
        .lines()
        .filter(|l| l.starts_with(&format!("{metric}{{")))
        .filter(|l| labels.iter().all(|want| l.contains(want)))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// The session that owns the node's `instances/{id}` registration, read through another session.
async fn node_session(admin: &EmbeddedSession, job: &str, node: &NodeHandle) -> i64 {
    let path = format!("/{job}/instances/{}", node.instance_id());
    let stat = admin
        .exists(&path)
        .await
        .expect("exists answers")
        .expect("the node is registered");
    assert_ne!(stat.ephemeral_owner, 0, "{path} is ephemeral");
    stat.ephemeral_owner
}

/// Waits until the mirror's synced flag is `want`.
async fn wait_synced(synced: &mut tokio::sync::watch::Receiver<bool>, want: bool) {
    tokio::time::timeout(WAIT, synced.wait_for(|s| *s == want))
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for the mirror's synced flag to be {want}"))
        .expect("the mirror lives");
}

#[tokio::test]
async fn scrapes_show_the_jobs_executions_growing_beside_the_trigger_delay_histogram() {
    init_tracing();
    let server = EmbeddedServer::new();
    let rec = Recorder::real_time();
    let node = start(
        &server,
        &rec,
        1,
        JobConfig::test("metered").items(1).cron("0/1 * * * * ?"),
    )
    .await;
    let addr = node.metrics_addr().expect("metrics asked for");
    assert_eq!(node.admin_addr().map(|a| a.ip()), Some(addr.ip()));

    tracing::info!("--- first scrape, after the first execution");
    executions(&rec, "metered", 1).await;
    let (status, first) = get(addr, "/metrics").await;
    assert_eq!(status, 200, "{first}");
    let job = r#"job="metered""#;
    let before = sample_sum(&first, "shardcron_executions_total", &[job]);
    let started = rec.all().len();

    tracing::info!("--- second scrape, two executions later");
    // An item runs again only after its previous run was counted, so two more starts mean at
    // least one more count than the first scrape could have seen.
    executions(&rec, "metered", started + 2).await;
    let (_, second) = get(addr, "/metrics").await;
    let after = sample_sum(
        &second,
        "shardcron_executions_total",
        &[job, r#"outcome="success""#],
    );
    assert!(
        after > before,
        "executions went from {before} to {after}:\n{second}"
    );
    assert!(
        second.contains("# HELP shardcron_executions_total "),
        "the engine's metrics are described:\n{second}"
    );
    let buckets = sample_sum(
        &second,
        "shardcron_trigger_delay_seconds_bucket",
        &[job, r#"le="+Inf""#],
    );
    assert!(buckets >= 1.0, "no trigger delay histogram:\n{second}");
    assert!(
        second.contains(r#"shardcron_trigger_delay_seconds_bucket{job="metered",le="0.0005"}"#),
        "the histogram has millisecond buckets:\n{second}"
    );

    tracing::info!("--- this node's gauges, and registry operations by kind");
    let me = format!(r#"instance="{}""#, node.instance_id());
    for (metric, labels, want) in [
        ("shardcron_items_owned", vec![job, me.as_str()], 1.0),
        ("shardcron_leader", vec![job, me.as_str()], 1.0),
        ("shardcron_session_connected", vec![me.as_str()], 1.0),
    ] {
        assert_eq!(
            sample_sum(&second, metric, &labels),
            want,
            "{metric}:\n{second}"
        );
    }
    assert!(sample_sum(&second, "shardcron_mirror_nodes", &[me.as_str()]) > 10.0);
    let multis = [
        r#"backend="embedded""#,
        r#"kind="multi""#,
        r#"outcome="ok""#,
    ];
    assert!(sample_sum(&second, "shardcron_registry_operations_total", &multis) >= 1.0);

    node.shutdown().await;
    assert!(
        TcpStream::connect(addr).await.is_err(),
        "the metrics port closes with the node"
    );
}

#[tokio::test]
async fn readyz_answers_503_while_the_session_is_cut_and_200_again_once_resynced() {
    init_tracing();
    let server = EmbeddedServer::new();
    let rec = Recorder::real_time();
    let node = start(
        &server,
        &rec,
        2,
        JobConfig::test("ready").items(1).cron("0/1 * * * * ?"),
    )
    .await;
    let addr = node.admin_addr().expect("admin asked for");

    tracing::info!("--- a running node is healthy and ready");
    executions(&rec, "ready", 1).await;
    assert_eq!(get(addr, "/healthz").await, (200, "ok\n".to_owned()));
    assert_eq!(get(addr, "/readyz").await.0, 200);

    tracing::info!("--- its session is cut: still healthy, not ready");
    let admin = server.connector(NAMESPACE).open();
    let session = node_session(&admin, "ready", &node).await;
    server.disconnect(session);
    // The session's state changes at once; the mirror hears of it through its feed.
    let (status, body) = get(addr, "/readyz").await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(get(addr, "/healthz").await.0, 200);

    tracing::info!("--- the connection comes back and the mirror re-lists: ready again");
    let mut synced = node.mirror().synced();
    wait_synced(&mut synced, false).await;
    server.reconnect(session);
    wait_synced(&mut synced, true).await;
    assert_eq!(get(addr, "/readyz").await.0, 200);
    node.shutdown().await;
}

#[tokio::test]
async fn a_dump_lists_the_jobs_nodes_and_marks_a_node_the_mirror_missed() {
    init_tracing();
    let server = EmbeddedServer::new();
    let rec = Recorder::real_time();
    // Without execution monitoring a fire writes nothing, so the mirror stays equal to the
    // registry once the first item has run.
    let config = JobConfig::test("orders")
        .items(1)
        .cron("0/1 * * * * ?")
        .monitor_execution(false);
    let node = start(&server, &rec, 3, config).await;
    let addr = node.admin_addr().expect("admin asked for");

    tracing::info!("--- a dump of a settled job: every node the same in mirror and registry");
    executions(&rec, "orders", 1).await;
    let (status, text) = get(addr, "/dump/orders").await;
    assert_eq!(status, 200, "{text}");
    let owner = format!("= /orders/sharding/0/instance \"{}\"", node.instance_id());
    assert!(text.lines().any(|l| l.starts_with(&owner)), "{text}");
    assert!(
        text.lines().next().unwrap().ends_with(" 0 differences"),
        "{text}"
    );

    tracing::info!("--- the node's session is cut and another session writes a node");
    let admin = server.connector(NAMESPACE).open();
    let session = node_session(&admin, "orders", &node).await;
    server.disconnect(session);
    wait_synced(&mut node.mirror().synced(), false).await;
    admin
        .create(
            "/orders/dump-probe",
            b"written elsewhere",
            CreateMode::Persistent,
        )
        .await
        .unwrap();
    let (_, text) = get(addr, "/dump/orders").await;
    assert!(
        text.lines()
            .any(|l| l == "+ /orders/dump-probe \"written elsewhere\""),
        "{text}"
    );
    assert!(text.contains("(mirror NOT in sync)"), "{text}");
    let (status, json) = get(addr, "/dump/orders?format=json").await;
    assert_eq!(status, 200, "{json}");
    let dump: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    assert!(dump["differences"].as_u64() >= Some(1), "{json}");
    let probe = dump["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["path"] == "/orders/dump-probe")
        .expect("the probe is listed");
    assert_eq!(probe["status"], "registry_only");
    assert_eq!(probe["registry"]["data"], "written elsewhere");
    assert!(probe["mirror"].is_null());

    tracing::info!("--- unknown jobs and formats");
    assert_eq!(get(addr, "/dump/nope").await.0, 404);
    assert_eq!(get(addr, "/dump/no%20such").await.0, 404);
    assert_eq!(get(addr, "/dump/orders?format=xml").await.0, 400);

    server.reconnect(session);
    node.shutdown().await;
}

#[tokio::test]
async fn the_server_refuses_garbage_unknown_paths_other_methods_and_huge_heads() {
    init_tracing();
    let server = EmbeddedServer::new();
    let rec = Recorder::real_time();
    let node = start(
        &server,
        &rec,
        4,
        JobConfig::test("quiet").items(1).cron("0 0 0 1 1 ? 2099"),
    )
    .await;
    let (admin, metrics) = (node.admin_addr().unwrap(), node.metrics_addr().unwrap());

    assert_eq!(get(admin, "/nowhere").await.0, 404);
    assert_eq!(get(metrics, "/healthz").await.0, 404);
    assert_eq!(get(admin, "/healthz?verbose").await.0, 200);
    let post = "POST /healthz HTTP/1.1\r\nContent-Length: 0\r\n\r\n";
    assert_eq!(exchange(admin, post).await.0, 405);
    assert_eq!(
        exchange(metrics, "HEAD /metrics HTTP/1.1\r\n\r\n").await.0,
        405
    );
    for garbage in [
        "hello\r\n\r\n",
        "GET /healthz SPDY/3\r\n\r\n",
        "GET /healthz HTTP/1.1\r\nbad\r\n\r\n",
    ] {
        assert_eq!(exchange(admin, garbage).await.0, 400, "{garbage:?}");
    }
    let huge = format!(
        "GET /healthz HTTP/1.1\r\nX-Pad: {}\r\n\r\n",
        "a".repeat(10_000)
    );
    assert_eq!(exchange(admin, &huge).await.0, 431);
    node.shutdown().await;
}

#[tokio::test]
async fn a_second_node_in_the_process_reuses_the_recorder_and_reports_its_own_gauges() {
    init_tracing();
    let server = EmbeddedServer::new();
    let rec = Recorder::real_time();
    let quiet = || JobConfig::test("twice").items(2).cron("0 0 0 1 1 ? 2099");
    let first = start(&server, &rec, 5, quiet()).await;
    let second = start(&server, &rec, 6, quiet()).await;
    let addr = second
        .metrics_addr()
        .expect("the second node serves metrics too");
    let (status, body) = get(addr, "/metrics").await;
    assert_eq!(status, 200, "{body}");
    let mine = format!(
        r#"shardcron_mirror_nodes{{instance="{}"}}"#,
        second.instance_id()
    );
    let theirs = format!(r#"instance="{}""#, first.instance_id());
    assert!(body.contains(&mine), "{body}");
    assert!(!body.contains(&theirs), "{body}");
    second.shutdown().await;
    first.shutdown().await;
}
