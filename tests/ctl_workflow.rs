//! `shardcronctl workflow show` and `workflow runs` against a real ZooKeeper, with a node in this
//! process running `wfc-import` every two seconds and `wfc-report` after it: the graph reads as
//! text and JSON with each step's last run, the runs newest first within `--limit`, and an
//! unknown job exits with 2 naming it.

#[macro_use]
extern crate support;

use support::cluster::{self, instance, start_node_with_clock, Recorder};
use support::example_bin::{on_zk, run_ctl};
use support::{wait, zk, Peer};

use std::time::Duration;

use serde_json::Value;
use shardcron::config::JobConfig;

const WITHIN: Duration = Duration::from_secs(40);

/// The CLI on namespace `ns`: exit code, stdout, stderr.
async fn ctl(ns: &str, args: &[&str]) -> (i32, String, String) {
    let out = run_ctl(&on_zk(&zk::server().connect_string(), ns, args)).await;
    (out.code, out.stdout, out.stderr)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workflow_show_draws_the_graph_with_each_steps_last_run_and_runs_lists_them_newest_first() {
    require!(Peer::ZooKeeper);
    cluster::init_tracing();
    let ns = format!("ctl-workflow-{}", std::process::id());
    let conn = zk::connector(&ns);
    let rec = Recorder::real_time();
    let import = JobConfig::new("wfc-import", 2)
        .cron("0/2 * * * * ?")
        .time_zone("GMT");
    let report = JobConfig::new("wfc-report", 1).after(&["wfc-import"]);
    let jobs = vec![
        (import, rec.handler(Duration::from_millis(20))),
        (report, rec.handler(Duration::from_millis(20))),
    ];
    let node = start_node_with_clock(conn.clone(), instance(1), jobs, rec.clock()).await;

    tracing::info!("--- two workflow runs in which both steps succeeded");
    let graph = wait::wait_until(
        async || {
            let (code, out, err) = ctl(&ns, &["--json", "workflow", "show", "wfc-report"]).await;
            let graph: Value =
                serde_json::from_str(&out).map_err(|e| format!("{code} {e} {err}"))?;
            let runs = ctl(&ns, &["--json", "workflow", "runs", "wfc-report"])
                .await
                .1;
            let runs: Value = serde_json::from_str(&runs).map_err(|e| e.to_string())?;
            let done = |run: &Value| {
                run["steps"]
                    .as_array()
                    .is_some_and(|steps| steps.iter().all(|s| s["state"] == "succeeded"))
            };
            let both = runs
                .as_array()
                .map_or(0, |r| r.iter().filter(|r| done(r)).count());
            (both >= 2).then_some(graph).ok_or(format!("{runs}"))
        },
        "two workflow runs of both steps succeeded",
        WITHIN,
    )
    .await;
    let steps: Vec<(&str, u64, &str)> = graph["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["job"].as_str().unwrap(),
                s["layer"].as_u64().unwrap(),
                s["on"].as_str().unwrap_or("-"),
            )
        })
        .collect();
    assert_eq!(
        steps,
        [("wfc-import", 0, "-"), ("wfc-report", 1, "success")]
    );

    tracing::info!("--- the text: one block per job, its policy and last run");
    let (code, text, _) = ctl(&ns, &["workflow", "show", "wfc-import"]).await;
    assert_eq!(code, 0, "{text}");
    assert!(
        text.starts_with("wfc-import (layer 0)\n  downstream: wfc-report\n  last run "),
        "{text}"
    );
    assert!(
        text.contains("wfc-report (layer 1)\n  after: wfc-import (on success)\n"),
        "{text}"
    );

    tracing::info!("--- the runs: newest first, within the limit, each step on a line");
    let (code, runs, _) = ctl(
        &ns,
        &["--json", "workflow", "runs", "wfc-import", "--limit", "2"],
    )
    .await;
    assert_eq!(code, 0, "{runs}");
    let runs: Value = serde_json::from_str(&runs).unwrap();
    let ids: Vec<i64> = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run"].as_str().unwrap().parse().unwrap())
        .collect();
    assert_eq!(ids.len(), 2, "{runs}");
    assert!(ids[0] > ids[1], "newest first: {ids:?}");
    let (_, text, _) = ctl(&ns, &["workflow", "runs", "wfc-report", "--limit", "1"]).await;
    assert_eq!(text.lines().count(), 3, "a run and its two steps: {text}");
    assert!(
        text.lines()
            .nth(2)
            .unwrap()
            .trim_start()
            .starts_with("wfc-report  "),
        "{text}"
    );

    tracing::info!("--- an unknown job is bad input, named");
    let (code, _, err) = ctl(&ns, &["workflow", "show", "ghost"]).await;
    assert_eq!((code, err.trim()), (2, "shardcronctl: unknown job ghost"));
    node.shutdown().await;
}
