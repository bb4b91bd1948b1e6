//! The workflow metrics and event as a scrape and a subscriber see them: one node on the embedded
//! registry runs `wfm-root` every second and `wfm-step` after it. The step's wait (from its
//! decision seen to its start) is a histogram, and each job's leader counts each workflow run it
//! ended once, with its outcome, and publishes it as a `workflow_run_ended` event.

use support::cluster::{init_tracing, instance, Recorder};
use support::prometheus::sample_sum;
use support::wait::wait_until;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use shardcron::config::JobConfig;
use shardcron::decide::workflow::records::WorkflowOutcome;
use shardcron::events::EngineEvent;
use shardcron::node::NodeBuilder;
use shardcron::registry::embedded::EmbeddedServer;
use shardcron::{JobSpec, JobType, NodeOptions};

const NAMESPACE: &str = "workflow-metrics";
const WAIT: Duration = Duration::from_secs(30);

async fn scrape(addr: SocketAddr) -> String {
    support::http::get_text(&format!("http://{addr}/metrics"), "a scrape").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workflow_steps_wait_is_a_histogram_and_each_run_is_counted_once_per_job_with_its_outcome(
) {
    init_tracing();
    let server = EmbeddedServer::new();
    let rec = Recorder::real_time();
    let root = JobConfig::test("wfm-root").items(2).cron("0/1 * * * * ?");
    let step = JobConfig::new("wfm-step", 1).after(&["wfm-root"]);
    let mut builder = NodeBuilder::new(Arc::new(server.connector(NAMESPACE)))
        .instance_id(instance(1))
        .clock(rec.clock())
        .options(NodeOptions {
            shutdown_timeout: Duration::from_secs(5),
            ..NodeOptions::default()
        })
        .metrics("127.0.0.1:0".parse().unwrap());
    for config in [root, step] {
        builder = builder.job_spec(JobSpec {
            config: config.into(),
            job_type: JobType::Named("recorded".into()),
            handler: rec.handler(Duration::from_millis(20)),
        });
    }
    let node = builder.start().await.expect("node starts");
    let mut events = node.subscribe("workflow-metrics-test", 1024);
    let addr = node.metrics_addr().expect("metrics asked for");

    tracing::info!("--- the scrape shows the step's wait and both jobs' completed runs");
    let step_job = r#"job_name="wfm-step""#;
    let root_job = r#"job_name="wfm-root""#;
    let completed = r#"outcome="completed""#;
    let seen = wait_until(
        async || {
            let scrape = scrape(addr).await;
            let waits = sample_sum(
                &scrape,
                "shardcron_workflow_step_wait_seconds_count",
                &[step_job],
            );
            let steps = sample_sum(
                &scrape,
                "shardcron_workflow_runs_total",
                &[step_job, completed],
            );
            let roots = sample_sum(
                &scrape,
                "shardcron_workflow_runs_total",
                &[root_job, completed],
            );
            let described = scrape.contains("# HELP shardcron_workflow_runs_total ")
                && scrape.contains("# HELP shardcron_workflow_step_wait_seconds ");
            if waits >= 2.0 && steps >= 2.0 && roots >= 2.0 && described {
                Ok(scrape)
            } else {
                Err(scrape)
            }
        },
        "two waits of wfm-step and two completed runs of each job in the scrape",
        WAIT,
    )
    .await;
    assert_eq!(
        sample_sum(
            &seen,
            "shardcron_workflow_step_wait_seconds_count",
            &[root_job]
        ),
        0.0,
        "a root waits on no decision"
    );
    assert!(
        seen.lines()
            .any(|l| l.starts_with("shardcron_workflow_runs_total{") && l.contains("instance_id=")),
        "counted by an instance:\n{seen}"
    );

    tracing::info!("--- each job's runs are reported once each, as the counter counts them");
    let mut reported: BTreeMap<(String, String), u32> = BTreeMap::new();
    while let Ok(delivered) = events.events.try_recv() {
        if let EngineEvent::WorkflowRunEnded { job, run, outcome } = delivered.event {
            assert_eq!(outcome, WorkflowOutcome::Completed, "{job} {run}");
            *reported.entry((job.to_string(), run)).or_default() += 1;
        }
    }
    assert!(
        reported.values().all(|n| *n == 1),
        "each run reported once per job: {reported:?}"
    );
    let after = scrape(addr).await;
    for job in ["wfm-root", "wfm-step"] {
        let events = reported.keys().filter(|(j, _)| j == job).count() as f64;
        let label = format!(r#"job_name="{job}""#);
        let counted = sample_sum(&after, "shardcron_workflow_runs_total", &[&label]);
        assert!(
            events >= 2.0 && counted >= events,
            "{job}: {events} events, counter at {counted}"
        );
    }
    node.shutdown().await;
}
