//! Table tests of the history's records: each engine event's row or none, ElasticJob's names,
//! failure causes redacted, and how a row reads back as an outcome.

use super::*;
use crate::types::InstanceId;

fn at(s: u32) -> DateTime<Utc> {
    DateTime::from_timestamp(1_770_000_000 + i64::from(s), 0).unwrap()
}

fn job() -> JobName {
    JobName::new("orders").unwrap()
}

fn instance() -> InstanceId {
    InstanceId::parse("10.1.2.3@-@42").unwrap()
}

#[test]
fn a_workflow_steps_rows_name_its_workflow_run() {
    let event = EngineEvent::ItemStarted {
        execution_id: "t@-@0".into(),
        job: job(),
        item: ShardItem(0),
        instance: instance(),
        source: ExecutionSource::Workflow,
        task_id: "t".into(),
        started_at: at(1),
        scheduled_at: Some(at(0)),
        attempt: 1,
        workflow_run: Some("1770000000000".into()),
    };
    let Some(HistoryWrite::ExecutionStarted(row)) = to_write(&event, "host-a") else {
        panic!("an execution row");
    };
    assert_eq!(row.workflow_run.as_deref(), Some("1770000000000"));
    assert_eq!(row.execution_source, "WORKFLOW");
    let json = serde_json::to_value(&event).unwrap();
    assert_eq!(json["workflow_run"], "1770000000000");
}

#[test]
fn a_failure_cause_is_stored_with_its_urls_redacted() {
    let event = EngineEvent::ItemFinished {
        execution_id: "t@-@1".into(),
        job: job(),
        item: ShardItem(1),
        instance: instance(),
        source: ExecutionSource::Normal,
        task_id: "t".into(),
        started_at: at(0),
        finished_at: at(2),
        failure: Some("GET https://h/x?access_token=t0k3n answered 500".into()),
        scheduled_at: None,
        attempt: 1,
        workflow_run: None,
        outcome: ItemOutcome::Failed,
    };
    let Some(HistoryWrite::ExecutionFinished(row)) = to_write(&event, "host-a") else {
        panic!("an execution row");
    };
    assert_eq!(
        row.failure_cause.as_deref(),
        Some("GET https://h/x?access_token=*** answered 500")
    );
}

#[test]
fn a_finished_item_becomes_a_completed_execution_row_naming_its_failure() {
    let event = EngineEvent::ItemFinished {
        execution_id: "t@-@1".into(),
        job: job(),
        item: ShardItem(1),
        instance: instance(),
        source: ExecutionSource::Misfire,
        task_id: "t".into(),
        started_at: at(0),
        finished_at: at(2),
        failure: Some("boom".into()),
        scheduled_at: Some(at(0)),
        attempt: 2,
        workflow_run: None,
        outcome: ItemOutcome::Failed,
    };
    assert_eq!(
        to_write(&event, "host-a"),
        Some(HistoryWrite::ExecutionFinished(ExecutionRecord {
            id: "t@-@1".into(),
            job_name: "orders".into(),
            task_id: "t".into(),
            hostname: "host-a".into(),
            ip: "10.1.2.3".into(),
            sharding_item: 1,
            execution_source: "MISFIRE".into(),
            failure_cause: Some("boom".into()),
            is_success: false,
            start_time: at(0),
            complete_time: Some(at(2)),
            scheduled_time: Some(at(0)),
            attempt: Some(2),
            workflow_run: None,
            outcome: Some("failed".into()),
        }))
    );
}

#[test]
fn a_row_without_an_outcome_reads_as_success_or_failed_and_an_open_one_as_running() {
    let Some(HistoryWrite::ExecutionStarted(mut row)) = to_write(
        &EngineEvent::ItemStarted {
            execution_id: "t@-@1".into(),
            job: job(),
            item: ShardItem(1),
            instance: instance(),
            source: ExecutionSource::Normal,
            task_id: "t".into(),
            started_at: at(0),
            scheduled_at: None,
            attempt: 3,
            workflow_run: None,
        },
        "host-a",
    ) else {
        panic!("an execution row");
    };
    assert_eq!((row.status(), row.attempt), ("running", Some(3)));
    row.complete_time = Some(at(1));
    row.attempt = None;
    assert_eq!(
        row.status(),
        "failed",
        "as ElasticJob wrote it: not a success"
    );
    row.is_success = true;
    assert_eq!(row.status(), "success");
    row.outcome = Some("cancelled".into());
    assert_eq!(row.status(), "cancelled");
}

#[test]
fn a_status_change_becomes_a_trace_row_with_elasticjob_names() {
    let event = EngineEvent::RunStatus {
        job: job(),
        task_id: "t".into(),
        instance: instance(),
        items: vec![ShardItem(0), ShardItem(2)],
        source: ExecutionSource::Failover,
        state: RunState::TaskError,
        message: "item 2: boom".into(),
        at: at(5),
    };
    let Some(HistoryWrite::Status(row)) = to_write(&event, "host-a") else {
        panic!("a status row");
    };
    assert_eq!(row.id, "t@-@TASK_ERROR");
    assert_eq!(row.slave_id, "10.1.2.3@-@42");
    assert_eq!(row.source, "LITE_EXECUTOR");
    assert_eq!(row.execution_type, "FAILOVER");
    assert_eq!(row.sharding_item, "[0, 2]");
    assert_eq!(row.state, "TASK_ERROR");
    assert_eq!(row.message, "item 2: boom");
}

#[test]
fn events_other_than_executions_and_statuses_are_not_kept() {
    let event = EngineEvent::LeadershipGained { job: job() };
    assert_eq!(to_write(&event, "host-a"), None);
}

#[test]
fn every_source_has_an_elasticjob_name() {
    let names: Vec<_> = [
        ExecutionSource::Normal,
        ExecutionSource::Misfire,
        ExecutionSource::Failover,
        ExecutionSource::Manual,
        ExecutionSource::CatchUp,
        ExecutionSource::Backfill,
        ExecutionSource::Workflow,
    ]
    .into_iter()
    .map(source_name)
    .collect();
    assert_eq!(
        names,
        [
            "NORMAL_TRIGGER",
            "MISFIRE",
            "FAILOVER",
            "MANUAL",
            "CATCH_UP",
            "BACKFILL",
            "WORKFLOW"
        ]
    );
}
