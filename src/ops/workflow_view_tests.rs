//! The workflow views read through the operations API from the embedded registry: the configs
//! and records of the jobs of one workflow, unreadable data shown as such, an unknown job named.

use std::sync::Arc;

use super::*;
use crate::config::JobConfig;
use crate::decide::workflow::view::StepState;
use crate::registry::embedded::EmbeddedServer;
use crate::registry::{CreateMode, Registry};

async fn put(registry: &dyn Registry, path: &str, data: &str) {
    registry.ensure_path(path).await.unwrap();
    registry.set(path, data.as_bytes(), None).await.unwrap();
}

async fn add_job(registry: &dyn Registry, config: JobConfig) {
    let name = config.job_name.clone();
    registry
        .create(&format!("/{name}"), b"SCRIPT", CreateMode::Persistent)
        .await
        .unwrap();
    put(
        registry,
        &format!("/{name}/config"),
        &config.to_yaml().unwrap(),
    )
    .await;
}

#[tokio::test]
async fn the_graph_and_runs_of_a_workflow_are_read_with_unreadable_records_shown_as_such() {
    let registry: Arc<dyn Registry> = Arc::new(EmbeddedServer::new().connector("ops").open());
    add_job(
        registry.as_ref(),
        JobConfig::new("import", 2).cron("0 0 * * * ?"),
    )
    .await;
    add_job(
        registry.as_ref(),
        JobConfig::new("report", 1).after(&["import"]),
    )
    .await;
    add_job(
        registry.as_ref(),
        JobConfig::new("alone", 1).cron("0 0 * * * ?"),
    )
    .await;
    let records = [
        ("/import/shardcron/workflow/1767225600000@0", "success"),
        ("/import/shardcron/workflow/1767225600000@1", "success"),
        ("/report/shardcron/workflow/1767225600000@start", "run"),
        (
            "/report/shardcron/workflow/1767225600000@0",
            "running:10.0.0.1@-@1",
        ),
        ("/import/shardcron/workflow/1767229200000@0", "\u{0}garbage"),
        ("/import/shardcron/workflow/1767229200000@1", "success"),
    ];
    for (path, data) in records {
        put(registry.as_ref(), path, data).await;
    }
    let ops = Ops::new(registry);

    tracing::info!("--- the graph holding report: import above report, each with its last run");
    let report = JobName::new("report").unwrap();
    let graph = ops.workflow_graph(Some(&report)).await.unwrap();
    let steps: Vec<(&str, usize, Option<StepState>)> = graph
        .steps
        .iter()
        .map(|s| (s.job.as_str(), s.layer, s.last.as_ref().map(|l| l.state)))
        .collect();
    assert_eq!(
        steps,
        [
            ("import", 0, Some(StepState::Failed)),
            ("report", 1, Some(StepState::Running)),
        ]
    );
    assert_eq!(graph.steps[0].last.as_ref().unwrap().items.unreadable, 1);

    tracing::info!("--- the runs, newest first, bounded by the limit");
    let runs = ops.workflow_runs(&report, 20).await.unwrap();
    let listed: Vec<(&str, Vec<StepState>)> = runs
        .iter()
        .map(|r| (r.run.as_str(), r.steps.iter().map(|s| s.state).collect()))
        .collect();
    assert_eq!(
        listed,
        [
            ("1767229200000", vec![StepState::Failed, StepState::Waiting]),
            (
                "1767225600000",
                vec![StepState::Succeeded, StepState::Running]
            ),
        ]
    );
    assert_eq!(ops.workflow_runs(&report, 1).await.unwrap().len(), 1);

    tracing::info!("--- an unknown job is named");
    let ghost = JobName::new("ghost").unwrap();
    let err = ops.workflow_graph(Some(&ghost)).await.unwrap_err();
    assert_eq!(err.to_string(), "unknown job ghost");
}
