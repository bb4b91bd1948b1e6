//! The operations endpoints over real TCP on loopback: `/metrics` scrapes, `/healthz` and
//! `/readyz` across a cut session and an unregistered job, `/dump/{job}` beside the registry (no
//! secret shown), health probes answered while slow clients hold every connection, the
//! HTTP server's refusals, keep-alive and `HEAD`. Real time (a job firing every second); every
//! wait is on recorded state.

use support::cluster;
use support::prometheus::sample_sum;
use support::wait::{wait_until, wait_until_changed};

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use cluster::{init_tracing, instance, Recorder};
use shardcron::config::{JobConfig, Overlap};
use shardcron::node::{NodeBuilder, NodeHandle};
use shardcron::registry::embedded::{EmbeddedServer, EmbeddedSession};
use shardcron::registry::{CreateMode, Registry};
use shardcron::{JobSpec, JobType, NodeOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const NAMESPACE: &str = "admin-tests";
const WAIT: Duration = Duration::from_secs(20);

/// The prelude of every test here: tracing on, a registry, a recorder on the system clock.
fn prelude() -> (EmbeddedServer, Recorder) {
    init_tracing();
    (EmbeddedServer::new(), Recorder::real_time())
}

/// A cron that never fires during a test: for nodes there for their servers alone.
const NEVER: &str = "0 0 0 1 1 ? 2099";
/// Every second.
const EACH_SECOND: &str = "0/1 * * * * ?";

/// The [`prelude`] and node `n` running the one-item job `job` that never fires: for its servers.
async fn idle_node(n: u32, job: &str) -> (EmbeddedServer, Recorder, NodeHandle) {
    let (server, rec) = prelude();
    let node = one_item_node(&server, &rec, n, job, NEVER).await;
    (server, rec, node)
}

/// Node `n` running the one-item job `job` on `cron`.
async fn one_item_node(
    server: &EmbeddedServer,
    rec: &Recorder,
    n: u32,
    job: &str,
    cron: &str,
) -> NodeHandle {
    start(server, rec, n, JobConfig::test(job).items(1).cron(cron)).await
}

/// A node on `server` running `config` (recorded by `rec`), with both endpoints on free ports.
async fn start(server: &EmbeddedServer, rec: &Recorder, n: u32, config: JobConfig) -> NodeHandle {
    start_working(server, rec, n, config, Duration::ZERO).await
}

/// [`start`] with items that each take `work`.
async fn start_working(
    server: &EmbeddedServer,
    rec: &Recorder,
    n: u32,
    config: JobConfig,
    work: Duration,
) -> NodeHandle {
    let loopback: SocketAddr = "127.0.0.1:0".parse().unwrap();
    NodeBuilder::new(Arc::new(server.connector(NAMESPACE)))
        .instance_id(instance(n))
        .clock(rec.clock())
        .options(NodeOptions {
            shutdown_timeout: Duration::from_secs(5),
            ..NodeOptions::default()
        })
        .job_spec(JobSpec {
            config: config.into(),
            job_type: JobType::Named("recorded".into()),
            handler: rec.handler(work),
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

/// One HTTP answer: status, head (lowercased) and body.
#[derive(Debug)]
struct Answer {
    status: u16,
    head: String,
    body: String,
}

impl Answer {
    /// The value of header `name` (lowercase).
    fn header(&self, name: &str) -> Option<&str> {
        self.head
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .map(str::trim)
    }
}

/// A `method` request for `/metrics`, keeping the connection open.
fn on_metrics(method: &str) -> String {
    format!("{method} /metrics HTTP/1.1\r\nHost: t\r\n\r\n")
}

/// Sends `request` on `stream` and reads the answer (a HEAD's has no body).
async fn ask(stream: &mut TcpStream, request: &str, head_only: bool) -> Answer {
    stream.write_all(request.as_bytes()).await.expect("sent");
    read_answer(stream, head_only).await
}

/// Reads one answer from `stream`: the head, then `Content-Length` bytes of body (none after a
/// `HEAD`), a chunked body (a streamed scrape) to its last chunk, or everything up to the close
/// when neither is given. The connection stays usable for a next request when the server keeps
/// it alive.
async fn read_answer(stream: &mut TcpStream, head_only: bool) -> Answer {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = stream.read(&mut chunk).await.expect("answer read");
        assert!(n > 0, "connection closed before a whole head: {buf:?}");
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_lowercase();
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status line");
    let mut body = buf[head_end..].to_vec();
    let mut answer = Answer {
        status,
        head,
        body: String::new(),
    };
    let length = answer
        .header("content-length")
        .map(|l| l.parse::<usize>().unwrap());
    let chunked = answer.header("transfer-encoding") == Some("chunked");
    match (head_only, length) {
        (true, _) => body.clear(),
        (false, None) if chunked => body = read_chunks(stream, body).await,
        (false, Some(length)) => {
            while body.len() < length {
                let n = stream.read(&mut chunk).await.expect("body read");
                assert!(n > 0, "connection closed mid-body");
                body.extend_from_slice(&chunk[..n]);
            }
        }
        (false, None) => {
            stream
                .read_to_end(&mut body)
                .await
                .expect("body read to the close");
        }
    }
    answer.body = String::from_utf8(body).expect("a UTF-8 body");
    answer
}

/// The body of a chunked answer whose first bytes are `read`, reading on from `stream` up to the
/// last (empty) chunk and its blank line, and no further.
async fn read_chunks(stream: &mut TcpStream, mut read: Vec<u8>) -> Vec<u8> {
    let mut body = Vec::new();
    let mut chunk = [0u8; 4096];
    let mut at = 0;
    loop {
        // Enough bytes for the size line, then for the chunk and its CRLF.
        let line_end = loop {
            if let Some(i) = read[at..].windows(2).position(|w| w == b"\r\n") {
                break at + i;
            }
            let n = stream.read(&mut chunk).await.expect("chunk read");
            assert!(n > 0, "connection closed mid-chunk");
            read.extend_from_slice(&chunk[..n]);
        };
        let size = std::str::from_utf8(&read[at..line_end])
            .ok()
            .and_then(|l| usize::from_str_radix(l.split(';').next()?.trim(), 16).ok())
            .expect("a chunk size line");
        let end = line_end + 2 + size + 2;
        while read.len() < end {
            let n = stream.read(&mut chunk).await.expect("chunk read");
            assert!(n > 0, "connection closed mid-chunk");
            read.extend_from_slice(&chunk[..n]);
        }
        if size == 0 {
            return body;
        }
        body.extend_from_slice(&read[line_end + 2..line_end + 2 + size]);
        at = end;
    }
}

/// Sends `raw` to `addr` on a new connection and returns the status code and the body.
async fn exchange(addr: SocketAddr, raw: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).await.expect("connects");
    stream
        .write_all(raw.as_bytes())
        .await
        .expect("request sent");
    let answer = read_answer(&mut stream, raw.starts_with("HEAD ")).await;
    (answer.status, answer.body)
}

async fn get(addr: SocketAddr, target: &str) -> (u16, String) {
    exchange(
        addr,
        &format!("GET {target} HTTP/1.1\r\nHost: test\r\n\r\n"),
    )
    .await
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
    let what = format!("the mirror's synced flag to be {want}");
    wait_until_changed(synced, |s| *s == want, &what, WAIT).await;
}

#[tokio::test]
async fn scrapes_show_the_jobs_executions_growing_beside_the_trigger_delay_histogram() {
    let (server, rec) = prelude();
    let node = one_item_node(&server, &rec, 1, "metered", EACH_SECOND).await;
    let addr = node.metrics_addr().expect("metrics asked for");
    assert_eq!(node.admin_addr().map(|a| a.ip()), Some(addr.ip()));

    tracing::info!("--- first scrape, after the first execution");
    executions(&rec, "metered", 1).await;
    let (status, first) = get(addr, "/metrics").await;
    assert_eq!(status, 200, "{first}");
    let job = r#"job_name="metered""#;
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
    assert_eq!(
        sample_sum(
            &second,
            "shardcron_trigger_delay_seconds_bucket",
            &[job, r#"le="+Inf""#]
        ),
        sample_sum(&second, "shardcron_trigger_delay_seconds_count", &[job]),
        "the histogram's buckets end at its count:\n{second}"
    );
    assert!(
        second
            .lines()
            .any(|l| l.starts_with("shardcron_trigger_delay_seconds_bucket{")
                && l.contains(job)
                && l.contains(r#"le="0.0005""#)),
        "the histogram has millisecond buckets:\n{second}"
    );

    tracing::info!("--- this node's gauges, and registry operations by kind");
    let me = format!(r#"instance_id="{}""#, node.instance_id());
    for (metric, labels, want) in [
        ("shardcron_items_owned", vec![job, me.as_str()], 1.0),
        ("shardcron_leader", vec![job, me.as_str()], 1.0),
        ("shardcron_job_registered", vec![job, me.as_str()], 1.0),
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
    // Registry calls are process series, served by the process's oldest metrics endpoint: in this
    // binary that may be another test's node (tests/prometheus.rs checks exactly one serves them).
    let served_here = second.contains("shardcron_registry_operations_total{");
    assert!(
        !served_here || sample_sum(&second, "shardcron_registry_operations_total", &multis) >= 1.0,
        "{second}"
    );

    node.shutdown().await;
    assert!(
        TcpStream::connect(addr).await.is_err(),
        "the metrics port closes with the node"
    );
}

#[tokio::test]
async fn a_fire_skipped_under_overlap_skip_shows_in_the_scrape_as_a_missed_fire() {
    let (server, rec) = prelude();
    // Every second, each run 2.5 s: the fires in between find the item running.
    let config = JobConfig::test("overlapping")
        .items(1)
        .cron("0/1 * * * * ?")
        .overlap(Overlap::Skip);
    let node = start_working(&server, &rec, 1, config, Duration::from_millis(2_500)).await;
    let addr = node.metrics_addr().expect("metrics asked for");
    let missed = async || {
        let (_, scrape) = get(addr, "/metrics").await;
        let labels = [r#"job_name="overlapping""#, r#"reason="overlap_skip""#];
        let n = sample_sum(&scrape, "shardcron_fires_missed_total", &labels);
        let described = scrape.contains("# HELP shardcron_fires_missed_total ");
        if n >= 1.0 && described {
            Ok(n)
        } else {
            Err(scrape)
        }
    };
    wait_until(
        missed,
        "a missed fire counted for reason overlap_skip",
        WAIT,
    )
    .await;
}

#[tokio::test]
async fn readyz_answers_503_while_the_session_is_cut_and_200_again_once_resynced() {
    let (server, rec) = prelude();
    let node = one_item_node(&server, &rec, 2, "ready", EACH_SECOND).await;
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
async fn a_dump_lists_the_jobs_nodes_without_secrets_and_the_mirror_alone_while_the_session_is_cut()
{
    let (server, rec) = prelude();
    // Without execution monitoring a fire writes nothing, so the mirror stays equal to the
    // registry once the first item has run.
    let config = JobConfig::test("orders")
        .items(1)
        .cron("0/1 * * * * ?")
        .monitor_execution(false)
        .prop("email.password", "hunter2")
        .prop(
            "dingtalk.webhook",
            "https://h.example/robot?access_token=t0k3n",
        );
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
    let (_, json) = get(addr, "/dump/orders?format=json").await;
    for secret in ["hunter2", "t0k3n"] {
        assert!(
            !text.contains(secret) && !json.contains(secret),
            "{secret}: {text}"
        );
    }
    assert!(
        text.contains("email.password: '***'") || text.contains("email.password: \"***\""),
        "{text}"
    );

    tracing::info!("--- the node's session is cut: the mirror is shown, the registry unread");
    let admin = server.connector(NAMESPACE).open();
    let session = node_session(&admin, "orders", &node).await;
    server.disconnect(session);
    let mut synced = node.mirror().synced();
    wait_synced(&mut synced, false).await;
    let (status, text) = get(addr, "/dump/orders").await;
    assert_eq!(status, 200, "{text}");
    assert!(text.contains("the registry was not read"), "{text}");
    let owner = format!("? /orders/sharding/0/instance \"{}\"", node.instance_id());
    assert!(text.lines().any(|l| l.starts_with(&owner)), "{text}");
    assert!(text.contains("(mirror NOT in sync)"), "{text}");
    let (status, json) = get(addr, "/dump/orders?format=json").await;
    assert_eq!(status, 200, "{json}");
    let dump: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    assert!(dump["registry_error"].is_string(), "{json}");

    tracing::info!("--- reconnected: a node written elsewhere is in both copies");
    admin
        .create(
            "/orders/dump-probe",
            b"written elsewhere",
            CreateMode::Persistent,
        )
        .await
        .unwrap();
    server.reconnect(session);
    wait_synced(&mut synced, true).await;
    let (status, json) = get(addr, "/dump/orders?format=json").await;
    assert_eq!(status, 200, "{json}");
    let dump: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    let probe = dump["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["path"] == "/orders/dump-probe")
        .expect("the probe is listed");
    assert_eq!(probe["status"], "same", "{json}");
    assert_eq!(probe["registry"]["data"], "written elsewhere");

    tracing::info!("--- unknown jobs and formats");
    assert_eq!(get(addr, "/dump/nope").await.0, 404);
    assert_eq!(get(addr, "/dump/no%20such").await.0, 404);
    assert_eq!(get(addr, "/dump/orders?format=xml").await.0, 400);

    node.shutdown().await;
}

#[tokio::test]
async fn the_server_refuses_garbage_unknown_paths_other_methods_and_huge_heads() {
    let (_server, _rec, node) = idle_node(4, "quiet").await;
    let (admin, metrics) = (node.admin_addr().unwrap(), node.metrics_addr().unwrap());

    assert_eq!(get(admin, "/nowhere").await.0, 404);
    assert_eq!(get(metrics, "/healthz").await.0, 404);
    assert_eq!(get(admin, "/healthz?verbose").await.0, 200);
    let post = "POST /healthz HTTP/1.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    assert_eq!(exchange(admin, post).await.0, 405);
    let put = "PUT /metrics HTTP/1.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    assert_eq!(exchange(metrics, put).await.0, 405);
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
    let (server, rec) = prelude();
    let quiet = || JobConfig::test("twice").items(2).cron("0 0 0 1 1 ? 2099");
    let first = start(&server, &rec, 5, quiet()).await;
    let second = start(&server, &rec, 6, quiet()).await;
    let addr = second
        .metrics_addr()
        .expect("the second node serves metrics too");
    let (status, body) = get(addr, "/metrics").await;
    assert_eq!(status, 200, "{body}");
    let mine = format!(
        r#"shardcron_mirror_nodes{{instance_id="{}"}}"#,
        second.instance_id()
    );
    let theirs = format!(r#"instance_id="{}""#, first.instance_id());
    assert!(body.contains(&mine), "{body}");
    assert!(!body.contains(&theirs), "{body}");
    second.shutdown().await;
    first.shutdown().await;
}

#[tokio::test]
async fn one_connection_carries_several_requests_and_head_answers_without_a_body() {
    let (_server, _rec, node) = idle_node(7, "alive").await;
    let (admin, metrics) = (node.admin_addr().unwrap(), node.metrics_addr().unwrap());

    tracing::info!("--- two requests, then a HEAD, then a GET on one admin connection");
    let mut stream = TcpStream::connect(admin).await.expect("connects");
    for (request, head_only, want) in [
        ("GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n", false, "ok\n"),
        (
            "GET /nowhere HTTP/1.1\r\nHost: t\r\n\r\n",
            false,
            "not found: /nowhere\n",
        ),
        ("HEAD /healthz HTTP/1.1\r\nHost: t\r\n\r\n", true, ""),
        ("GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n", false, "ok\n"),
    ] {
        let answer = ask(&mut stream, request, head_only).await;
        assert_eq!(answer.body, want, "{request:?}: {answer:?}");
        assert_ne!(answer.header("connection"), Some("close"), "{answer:?}");
    }

    tracing::info!("--- HEAD /metrics: the GET's head, no body; the connection goes on");
    let mut stream = TcpStream::connect(metrics).await.expect("connects");
    let head = ask(&mut stream, &on_metrics("HEAD"), true).await;
    assert_eq!(head.status, 200, "{head:?}");
    assert_eq!(
        head.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    let get = ask(&mut stream, &on_metrics("GET"), false).await;
    assert_eq!(get.status, 200);
    assert!(
        get.body.contains("# TYPE shardcron_mirror_nodes gauge"),
        "{get:?}"
    );

    tracing::info!("--- other methods: 405 naming the allowed ones");
    let refused = ask(&mut stream, &on_metrics("DELETE"), false).await;
    assert_eq!(refused.status, 405);
    let allow = refused.header("allow").unwrap_or_default().to_owned();
    assert!(
        allow.contains("get") && allow.contains("head"),
        "{refused:?}"
    );
    node.shutdown().await;
}

/// An instance node left by an earlier session of this instance is taken over at registration
/// (one multi-op), so the node is registered, and ready, on its own session at once. Readiness
/// naming a job that is not registered is decided by `admin::ready` (table tests there).
#[tokio::test]
async fn readyz_is_ready_once_an_earlier_sessions_instance_node_is_taken_over() {
    let (server, rec) = prelude();
    let me = instance(8);

    tracing::info!("--- another session holds the node's instances/{{id}} of job 'held'");
    let admin = server.connector(NAMESPACE).open();
    let held = format!("/held/instances/{me}");
    for path in ["/held", "/held/instances"] {
        admin
            .create(path, b"", CreateMode::Persistent)
            .await
            .unwrap();
    }
    admin
        .create(&held, b"an earlier session's", CreateMode::Ephemeral)
        .await
        .unwrap();
    let earlier = admin.session_info().id;
    let node = one_item_node(&server, &rec, 8, "held", NEVER).await;
    let addr = node.admin_addr().expect("admin asked for");
    let metrics = node.metrics_addr().expect("metrics asked for");

    tracing::info!("--- the node takes the node over and is ready on its own session");
    // No event tells of a registration; readiness is asked again until it holds.
    let check = async || {
        if node.is_ready().await {
            return Ok(());
        }
        Err(node.mirror().get(&held).map(|n| n.stat.ephemeral_owner))
    };
    let what = "the node to take job held's instance node over (seen: its owner)";
    wait_until(check, what, WAIT).await;
    let owner = node.mirror().get(&held).map(|n| n.stat.ephemeral_owner);
    assert!(owner.is_some_and(|o| o != earlier), "owner {owner:?}");
    let (status, body) = get(addr, "/readyz").await;
    assert_eq!((status, body.as_str()), (200, "ready\n"));
    let registered = format!(r#"job_name="held",instance_id="{me}""#);
    let (_, scrape) = get(metrics, "/metrics").await;
    assert_eq!(
        sample_sum(&scrape, "shardcron_job_registered", &[&registered]),
        1.0,
        "{scrape}"
    );
    node.shutdown().await;
}

#[tokio::test]
async fn a_client_that_never_finishes_its_request_head_is_disconnected() {
    let (_server, _rec, node) = idle_node(9, "slowloris").await;
    let addr = node.admin_addr().unwrap();
    let mut stream = TcpStream::connect(addr).await.expect("connects");
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: t\r\n")
        .await
        .unwrap();
    // The server's head timeout is 5 s; the wait is for the close, bounded well above it.
    let mut rest = Vec::new();
    tokio::time::timeout(WAIT, stream.read_to_end(&mut rest))
        .await
        .expect("the server closes a connection whose head does not arrive in time")
        .ok();
    assert!(
        !String::from_utf8_lossy(&rest).contains("200"),
        "an unfinished request is not answered: {rest:?}"
    );
    tracing::info!("--- the server still answers others");
    assert_eq!(get(addr, "/healthz").await.0, 200);
    node.shutdown().await;
}

/// Connects to `addr` from the loopback address `from` (127.0.0.x: another client to the server).
async fn connect_from(from: [u8; 4], addr: SocketAddr) -> TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().expect("a socket");
    socket
        .bind(SocketAddr::from((from, 0)))
        .expect("binds a loopback address");
    socket.connect(addr).await.expect("connects")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthz_answers_while_slow_clients_hold_every_connection() {
    let (_server, _rec, node) = idle_node(10, "crowded").await;
    let addr = node.admin_addr().unwrap();

    tracing::info!(
        "--- four clients hold every slot: a request answered, the connection kept idle"
    );
    let mut holders = Vec::new();
    for client in 2..=5u8 {
        for _ in 0..8 {
            let mut stream = connect_from([127, 0, 0, client], addr).await;
            stream
                .write_all(b"GET /nowhere HTTP/1.1\r\nHost: t\r\n\r\n")
                .await
                .unwrap();
            assert_eq!(read_answer(&mut stream, false).await.status, 404);
            holders.push(stream);
        }
    }

    tracing::info!("--- 200 slow clients: half a request each, or nothing at all");
    let mut slow = Vec::new();
    for i in 0..200 {
        let mut stream = TcpStream::connect(addr).await.expect("connects");
        if i % 2 == 0 {
            stream
                .write_all(b"GET /dump/crowded HTTP/1.1\r\nHost: t\r\nX-Wait: ")
                .await
                .unwrap();
        }
        slow.push(stream);
    }

    tracing::info!("--- a health probe still answers, within a client timeout of 1 s");
    for target in ["/healthz", "/readyz"] {
        let (status, body) = tokio::time::timeout(Duration::from_secs(1), get(addr, target))
            .await
            .unwrap_or_else(|_| panic!("{target} did not answer within 1 s"));
        assert!(status == 200 || status == 503, "{target}: {status} {body}");
        if target == "/healthz" {
            assert_eq!((status, body.as_str()), (200, "ok\n"));
        }
    }
    drop(slow);
    drop(holders);
    node.shutdown().await;
}

#[tokio::test]
async fn a_request_announcing_a_huge_body_is_refused_unread() {
    let (_server, _rec, node) = idle_node(11, "bodies").await;
    let addr = node.admin_addr().unwrap();
    let (status, _) = exchange(
        addr,
        "POST /dump/bodies HTTP/1.1\r\nHost: t\r\nContent-Length: 1000000000\r\n\r\n",
    )
    .await;
    assert_eq!(status, 413);
    node.shutdown().await;
}
