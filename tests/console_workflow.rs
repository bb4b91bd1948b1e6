//! The console's workflow view in a real browser (headless Chromium through chromedriver), against
//! a node on a real ZooKeeper running a two-step workflow: `wf-import` every four seconds and
//! `wf-report` after it. The page draws both steps with their state in the newest workflow run,
//! and each step links to its rows in the History tab, filtered by its workflow run.

#[macro_use]
extern crate support;

use support::browser::Browser;
use support::cluster::{instance, Recorder};
use support::console::{start_console, with_history};
use support::events::recorded_history;
use support::{wait, zk, Peer};

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use shardcron::config::JobConfig;
use shardcron::node::NodeBuilder;
use shardcron::{JobSpec, JobType, NodeOptions};

const WITHIN: Duration = Duration::from_secs(40);

async fn get(base: &str, path: &str) -> (u16, Value) {
    let answer = reqwest::get(format!("{base}{path}")).await.unwrap();
    let status = answer.status().as_u16();
    let text = answer.text().await.unwrap();
    let body = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}: {text}"));
    (status, body)
}

/// The newest run in which both steps succeeded, as the API reports the graph.
fn both_succeeded(graph: &Value) -> Option<String> {
    let steps = graph["steps"].as_array()?;
    let state = |job: &str| {
        let step = steps.iter().find(|s| s["job"] == job)?;
        (step["last"]["state"] == "succeeded")
            .then(|| step["last"]["run"].as_str().map(str::to_owned))?
    };
    let (import, report) = (state("wf-import")?, state("wf-report")?);
    (import == report).then_some(report)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_workflow_page_draws_both_steps_with_their_state_and_links_each_to_its_runs_in_the_history(
) {
    require!(Peer::ZooKeeper);
    require!(Peer::Chromium);
    let (dir, ns) = support::prelude("console-workflow", "graph");
    let conn = zk::connector(&ns);
    let (db, _history, bus, recording) = recorded_history(dir.path()).await;
    let rec = Recorder::real_time();
    let import = JobConfig::new("wf-import", 2)
        .cron("0/4 * * * * ?")
        .time_zone("GMT");
    let report = JobConfig::new("wf-report", 1).after(&["wf-import"]);
    let mut builder = NodeBuilder::new(conn.clone())
        .instance_id(instance(1))
        .clock(rec.clock())
        .event_bus(bus.clone())
        .options(NodeOptions {
            shutdown_timeout: Duration::from_secs(5),
            ..NodeOptions::default()
        });
    for config in [import, report] {
        builder = builder.job_spec(JobSpec {
            config: Arc::new(config),
            job_type: JobType::Named("recorded".into()),
            handler: rec.handler(Duration::from_millis(40)),
        });
    }
    let node = builder.start().await.expect("node starts");
    let (console, base) = start_console(conn.clone(), with_history(&ns, &db)).await;

    tracing::info!("--- the API reports both steps, report one layer below import, after a run");
    let run = wait::wait_until(
        async || {
            let (_, graph) = get(&base, "/api/workflow?job=wf-report").await;
            both_succeeded(&graph).ok_or(graph)
        },
        "a workflow run in which both steps succeeded",
        WITHIN,
    )
    .await;
    let (_, graph) = get(&base, "/api/workflow").await;
    let shape: Vec<(String, u64, String)> = graph["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["job"].as_str().unwrap().to_owned(),
                s["layer"].as_u64().unwrap(),
                s["on"].as_str().unwrap_or("-").to_owned(),
            )
        })
        .collect();
    assert_eq!(
        shape,
        [
            ("wf-import".to_owned(), 0, "-".to_owned()),
            ("wf-report".to_owned(), 1, "success".to_owned())
        ]
    );
    let (status, body) = get(&base, "/api/workflow?job=ghost").await;
    assert_eq!(
        (status, body["error"].as_str()),
        (404, Some("unknown job ghost"))
    );
    let (status, body) = get(&base, "/api/jobs/wf-report/history?workflowRun=x1").await;
    assert_eq!(status, 400, "a bad workflow run is refused: {body}");

    tracing::info!("--- the page draws both steps with their state in the newest run");
    let browser = Browser::start().await;
    browser.goto(&format!("{base}/#/workflow/wf-report")).await;
    let shown = browser
        .wait_for(
            "both steps drawn, succeeded in one run",
            "(() => { const i = document.querySelector('#workflow-graph a.step[data-job=\"wf-import\"]'); \
               const r = document.querySelector('#workflow-graph a.step[data-job=\"wf-report\"]'); \
               return i && r && i.dataset.state === 'succeeded' && r.dataset.state === 'succeeded' \
                 && r.getAttribute('href'); })()",
        )
        .await;
    let shot = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target/console-screenshots/workflow.png");
    browser.screenshot(&shot).await;
    let link = shown.as_str().unwrap().to_owned();
    assert!(
        link.starts_with("#/history/wf-report?workflowRun="),
        "the step links to its runs in the history: {link}"
    );
    let linked_run = link.rsplit('=').next().unwrap().to_owned();
    assert!(
        linked_run.parse::<i64>().unwrap() >= run.parse::<i64>().unwrap(),
        "the link names the step's newest run ({linked_run}, at least {run})"
    );

    tracing::info!("--- the link opens the step's rows of that run in the History tab");
    let rows = wait::wait_until(
        async || {
            let path = format!("/api/jobs/wf-report/history?workflowRun={linked_run}");
            let (_, body) = get(&base, &path).await;
            let records = body["records"].as_array().cloned().unwrap_or_default();
            (!records.is_empty() && records.iter().all(|r| r["complete_time"].is_string()))
                .then_some(records)
                .ok_or(body)
        },
        "the history rows of the step's run",
        WITHIN,
    )
    .await;
    assert!(
        rows.iter().all(|r| r["workflow_run"] == json!(linked_run)),
        "only the run's rows: {rows:#?}"
    );
    browser
        .click("#workflow-steps tr[data-job=\"wf-report\"] a.history-link")
        .await;
    let filtered = browser
        .wait_for(
            "the History tab filtered by the workflow run, with its rows",
            "document.querySelector('input[name=workflowRun]') \
               && document.querySelector('#history tbody tr[data-execution]') \
               && document.querySelector('input[name=workflowRun]').value",
        )
        .await;
    // The page reads the graph again every two seconds: the link clicked may name a newer run.
    let opened: i64 = filtered.as_str().unwrap().parse().unwrap();
    assert!(
        opened >= linked_run.parse::<i64>().unwrap(),
        "the History tab is filtered by the step's run: {opened}"
    );
    let severe = browser.severe_logs().await;
    assert!(severe.is_empty(), "console errors: {severe:#?}");

    browser.quit().await;
    console.stop().await;
    node.shutdown().await;
    recording.close().await;
}
