//! The metrics as a real Prometheus sees them: two nodes of one process, each with its own
//! metrics endpoint, scraped by a Prometheus server started for the test; per-job sums through
//! its HTTP API count every execution once, no label collides with the target labels, and each
//! scrape passes `promtool check metrics`.

#[macro_use]
extern crate support;

use support::cluster;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use cluster::{init_tracing, instance, Recorder};
use shardcron::config::JobConfig;
use shardcron::node::{NodeBuilder, NodeHandle};
use shardcron::registry::embedded::EmbeddedServer;
use shardcron::types::JobName;
use shardcron::{JobSpec, JobType};
use support::prometheus::{by_label, promtool, PrometheusServer};
use support::wait::wait_until;
use support::Peer;

const NAMESPACE: &str = "prometheus-tests";
const WAIT: Duration = Duration::from_secs(30);
const JOBS: [(&str, i32); 2] = [("alpha", 2), ("beta", 3)];

/// A node running both jobs every second, with its metrics endpoint on a free port.
async fn start(server: &EmbeddedServer, rec: &Recorder, n: u32) -> NodeHandle {
    let mut builder = NodeBuilder::new(Arc::new(server.connector(NAMESPACE)))
        .instance_id(instance(n))
        .clock(rec.clock())
        .metrics("127.0.0.1:0".parse().unwrap());
    for (job, items) in JOBS {
        builder = builder.job_spec(JobSpec {
            config: std::sync::Arc::new(JobConfig::test(job).items(items).cron("0/1 * * * * ?")),
            job_type: JobType::Named("recorded".into()),
            handler: rec.handler(Duration::ZERO),
        });
    }
    builder.start().await.expect("node starts")
}

async fn scrape(http: &reqwest::Client, addr: SocketAddr) -> String {
    http.get(format!("http://{addr}/metrics"))
        .send()
        .await
        .expect("scrape answers")
        .text()
        .await
        .expect("scrape body")
}

/// `shardcron_executions_total` summed per `job_name` over `scrapes`.
fn executions_by_job(scrapes: &[String]) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for line in scrapes.iter().flat_map(|s| s.lines()) {
        let Some(labels) = line.strip_prefix("shardcron_executions_total{") else {
            continue;
        };
        let job = labels
            .split("job_name=\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .expect("every execution series names its job");
        let value: f64 = line.rsplit(' ').next().unwrap().parse().unwrap();
        *out.entry(job.to_owned()).or_default() += value;
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_sums_each_jobs_executions_once_across_two_nodes_of_one_process() {
    require!(Peer::Prometheus);
    init_tracing();
    let server = EmbeddedServer::new();
    let rec = Recorder::real_time();
    let nodes = [start(&server, &rec, 1).await, start(&server, &rec, 2).await];
    let addrs: Vec<SocketAddr> = nodes.iter().map(|n| n.metrics_addr().unwrap()).collect();
    let prometheus = PrometheusServer::start(&addrs).await;
    prometheus
        .wait_query("both targets up", "sum(up)", WAIT, |r| {
            by_label(r, "") == [(String::new(), 2.0)]
        })
        .await;

    tracing::info!("--- both jobs run a few fires");
    rec.wait_until("4 executions of alpha and 6 of beta", WAIT, |log| {
        let count = |job: &str| log.iter().filter(|e| e.job == job).count();
        count("alpha") >= 4 && count("beta") >= 6
    })
    .await;

    tracing::info!("--- every item is owned once across the two nodes' gauges");
    let items: Vec<(String, f64)> = JOBS
        .iter()
        .map(|(j, n)| (j.to_string(), f64::from(*n)))
        .collect();
    (prometheus.wait_per_job("shardcron_items_owned", &items, WAIT)).await;

    tracing::info!("--- every query of the shipped dashboard is valid and the main ones have data");
    dashboard_queries_answer(&prometheus).await;

    tracing::info!("--- the jobs stop on both nodes");
    for node in &nodes {
        for (job, _) in JOBS {
            node.remove_job(&JobName::new(job).unwrap()).await.unwrap();
        }
    }
    let expected = || {
        let mut out: BTreeMap<String, f64> = BTreeMap::new();
        for e in rec.all() {
            *out.entry(e.job).or_default() += 1.0;
        }
        out
    };

    tracing::info!("--- the two endpoints together count each execution once");
    let http = reqwest::Client::new();
    let check = async || {
        // A run still ending when its job was removed counts when it ends.
        let scrapes = vec![scrape(&http, addrs[0]).await, scrape(&http, addrs[1]).await];
        let expected = expected();
        if executions_by_job(&scrapes) == expected {
            Ok((scrapes, expected))
        } else {
            Err(format!("not {expected:?}:\n{}\n{}", scrapes[0], scrapes[1]))
        }
    };
    let (scrapes, expected) =
        wait_until(check, "the scrapes to sum each job's executions", WAIT).await;
    for (node, scrape) in nodes.iter().zip(&scrapes) {
        let (ok, out) = promtool(&["check", "metrics"], scrape);
        assert!(ok, "promtool check metrics:\n{out}\non\n{scrape}");
        let other = nodes
            .iter()
            .find(|n| n.instance_id() != node.instance_id())
            .unwrap();
        assert!(
            !scrape.contains(&format!("instance_id=\"{}\"", other.instance_id())),
            "a node serves only its own series:\n{scrape}"
        );
    }
    let with_process_series = scrapes
        .iter()
        .filter(|s| s.contains("shardcron_registry_operations_total{"))
        .count();
    assert_eq!(
        with_process_series, 1,
        "one endpoint serves the process series"
    );

    tracing::info!("--- Prometheus sums per job");
    let want: Vec<(String, f64)> = expected.clone().into_iter().collect();
    (prometheus.wait_per_job("shardcron_executions_total", &want, WAIT)).await;
    let collided = prometheus
        .query(r#"{__name__=~"shardcron_.+", exported_job!=""} or {__name__=~"shardcron_.+", exported_instance!=""}"#)
        .await;
    assert!(
        collided.is_empty(),
        "labels renamed by Prometheus: {collided:#?}"
    );
    let sources = prometheus
        .query("count by (instance) (shardcron_registry_operations_total)")
        .await;
    assert_eq!(
        sources.len(),
        1,
        "process series from one target: {sources:#?}"
    );
    let registered = prometheus
        .query("sum by (instance_id) (shardcron_session_connected)")
        .await;
    assert_eq!(
        by_label(&registered, "instance_id"),
        nodes
            .iter()
            .map(|n| (n.instance_id().to_string(), 1.0))
            .collect::<Vec<_>>(),
        "each node reports its own session"
    );

    prometheus.stop();
    for node in &nodes {
        node.shutdown().await;
    }
}

/// Runs every query of `examples/monitoring/shardcron.json` (with the dashboard's variables set
/// to all jobs and a 1-minute rate interval) and checks the panels that must show data now.
async fn dashboard_queries_answer(prometheus: &PrometheusServer) {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/monitoring/shardcron.json"
    );
    let dashboard: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("the dashboard")).expect("JSON");
    let must_show = [
        "Item executions per second, by job",
        "Trigger delay quantiles, by job",
        "Run duration quantiles, by job",
        "Items owned, by job and instance",
        "Leaders",
        "Session connected, by instance",
        "Jobs registered, by job and instance",
        "Registry operations per second, by kind and outcome",
    ];
    let mut shown = Vec::new();
    for panel in dashboard["panels"].as_array().expect("panels") {
        let title = panel["title"].as_str().unwrap_or_default();
        for target in panel["targets"].as_array().into_iter().flatten() {
            let expr = target["expr"]
                .as_str()
                .expect("every target has an expr")
                .replace("$__rate_interval", "1m")
                .replace("$job_name", ".*");
            // Both assert the API's status is success: the expression parses and evaluates.
            if must_show.contains(&title) {
                let what = format!("data for panel {title:?}");
                prometheus
                    .wait_query(&what, &expr, WAIT, |r| !r.is_empty())
                    .await;
                shown.push(title);
            } else {
                prometheus.query(&expr).await;
            }
        }
    }
    for title in must_show {
        assert!(shown.contains(&title), "no panel titled {title:?}");
    }
}
