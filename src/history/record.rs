//! The records of the history, ElasticJob's `JobExecutionEvent` and `JobStatusTraceEvent`, and how
//! an [`EngineEvent`] becomes one. Pure: no IO, table-tested below.

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::events::{EngineEvent, RunState};
use crate::job::{ExecutionSource, ItemOutcome};
use crate::types::{JobName, ShardItem};

/// ElasticJob's `Source` of a status trace: every record this engine writes comes from a Lite
/// executor.
pub const LITE_EXECUTOR: &str = "LITE_EXECUTOR";

/// One item execution (a row of `JOB_EXECUTION_LOG`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExecutionRecord {
    /// Unique id of the execution: `{task_id}@-@{item}`.
    pub id: String,
    /// The job.
    pub job_name: String,
    /// The run's task id.
    pub task_id: String,
    /// Host name of the instance that ran the item.
    pub hostname: String,
    /// IP of the instance that ran the item (from its instance id).
    pub ip: String,
    /// The item.
    pub sharding_item: u32,
    /// Why it ran, as ElasticJob names it ([`source_name`]).
    pub execution_source: String,
    /// Why it failed; `None` while it runs and when it succeeded.
    pub failure_cause: Option<String>,
    /// Whether it ended successfully (`false` while it runs).
    pub is_success: bool,
    /// When it started.
    pub start_time: DateTime<Utc>,
    /// When it ended; `None` while it runs.
    pub complete_time: Option<DateTime<Utc>>,
    /// The cron instant its run answered (`None` for a manual trigger and for rows written
    /// before shardcron recorded it, or by ElasticJob): the trigger delay is `start_time` minus
    /// this. A column ElasticJob does not have (`scheduled_time`).
    pub scheduled_time: Option<DateTime<Utc>>,
    /// 1 for a first run, 2 for its first retry (`shardcron.retry.max`), and so on; `None` for
    /// rows written before shardcron recorded it, or by ElasticJob. A column ElasticJob does not
    /// have (`attempt`).
    pub attempt: Option<u32>,
    /// How it ended ([`ItemOutcome`]'s word: `success`, `failed`, `timeout`, `cancelled`);
    /// `None` while it runs and for rows written without it (see [`ExecutionRecord::status`]).
    /// A column ElasticJob does not have (`outcome`).
    pub outcome: Option<String>,
    /// The workflow run the execution was a step of (`shardcron.after`: the root fire's instant
    /// in epoch ms); `None` outside workflows. A column ElasticJob does not have (`workflow_run`).
    pub workflow_run: Option<String>,
}

impl ExecutionRecord {
    /// What became of the execution: `running` while it runs, else its outcome; a row written
    /// without one (by ElasticJob, or before shardcron recorded it) is `success` or `failed` as
    /// `is_success` says.
    pub fn status(&self) -> &str {
        match (&self.outcome, self.complete_time) {
            (_, None) => "running",
            (Some(outcome), Some(_)) => outcome,
            (None, Some(_)) if self.is_success => ItemOutcome::Success.as_str(),
            (None, Some(_)) => ItemOutcome::Failed.as_str(),
        }
    }
}

/// One status change of a run (a row of `JOB_STATUS_TRACE_LOG`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StatusRecord {
    /// Unique id: `{task_id}@-@{state}`, so a redelivered status is written once.
    pub id: String,
    /// The job.
    pub job_name: String,
    /// The task id of the run a failover run takes over; empty otherwise (ElasticJob's default).
    pub original_task_id: String,
    /// The run's task id.
    pub task_id: String,
    /// The instance id of the instance running it.
    pub slave_id: String,
    /// Who reported it: always [`LITE_EXECUTOR`].
    pub source: String,
    /// ElasticJob's `ExecutionType`: `READY`, or `FAILOVER` for a run taken over from a crashed
    /// instance.
    pub execution_type: String,
    /// The run's items, as Java prints a list: `[0, 1, 2]`.
    pub sharding_item: String,
    /// The new status: `TASK_STAGING`, `TASK_RUNNING`, `TASK_FINISHED` or `TASK_ERROR`.
    pub state: String,
    /// The failures of an errored run; empty otherwise.
    pub message: String,
    /// When the status changed.
    pub creation_time: DateTime<Utc>,
}

/// What the history writes for one engine event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HistoryWrite {
    /// An item started: insert its execution row, unfinished.
    ExecutionStarted(ExecutionRecord),
    /// An item ended: complete its execution row (inserting it when its start was missed).
    ExecutionFinished(ExecutionRecord),
    /// A run changed status: insert a trace row.
    Status(StatusRecord),
    /// A chunk of an item's captured output: write (or move forward) its output row.
    Output(super::output::OutputRecord),
}

/// What the history is asked for: one job's executions, newest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryQuery {
    /// The job.
    pub job: JobName,
    /// Only this item.
    pub item: Option<ShardItem>,
    /// Only executions started at or after this instant.
    pub since: Option<DateTime<Utc>>,
    /// Only executions that ended in failure.
    pub failed_only: bool,
    /// Only the steps of this workflow run (the `workflow_run` column).
    pub workflow_run: Option<String>,
    /// At most this many records.
    pub limit: u32,
}

impl HistoryQuery {
    /// The default number of records a query returns.
    pub const DEFAULT_LIMIT: u32 = 100;

    /// The newest [`HistoryQuery::DEFAULT_LIMIT`] executions of `job`, unfiltered.
    pub fn job(job: JobName) -> Self {
        Self {
            job,
            item: None,
            since: None,
            failed_only: false,
            workflow_run: None,
            limit: Self::DEFAULT_LIMIT,
        }
    }
}

/// ElasticJob's name for an execution source (`JobExecutionEvent.ExecutionSource`); `MANUAL`,
/// which ElasticJob-Lite does not record, for a trigger.
pub fn source_name(source: ExecutionSource) -> &'static str {
    match source {
        ExecutionSource::Normal => "NORMAL_TRIGGER",
        ExecutionSource::Misfire => "MISFIRE",
        ExecutionSource::Failover => "FAILOVER",
        ExecutionSource::Manual => "MANUAL",
        ExecutionSource::CatchUp => "CATCH_UP",
        ExecutionSource::Backfill => "BACKFILL",
        ExecutionSource::Workflow => "WORKFLOW",
    }
}

/// ElasticJob's name for a run state (`JobStatusTraceEvent.State`).
pub fn state_name(state: RunState) -> &'static str {
    match state {
        RunState::TaskStaging => "TASK_STAGING",
        RunState::TaskRunning => "TASK_RUNNING",
        RunState::TaskFinished => "TASK_FINISHED",
        RunState::TaskError => "TASK_ERROR",
    }
}

/// The row(s) to write for `event`, or `None` for events the history does not keep (sharding,
/// leadership, sessions). `hostname` is this host's name: events carry only the instance id.
pub fn to_write(event: &EngineEvent, hostname: &str) -> Option<HistoryWrite> {
    match event {
        EngineEvent::ItemStarted {
            execution_id,
            job,
            item,
            instance,
            source,
            task_id,
            started_at,
            scheduled_at,
            attempt,
            workflow_run,
        } => Some(HistoryWrite::ExecutionStarted(ExecutionRecord {
            id: execution_id.clone(),
            job_name: job.to_string(),
            task_id: task_id.clone(),
            hostname: hostname.to_owned(),
            ip: instance.ip().to_owned(),
            sharding_item: item.0,
            execution_source: source_name(*source).to_owned(),
            failure_cause: None,
            is_success: false,
            start_time: *started_at,
            complete_time: None,
            scheduled_time: *scheduled_at,
            attempt: Some(*attempt),
            workflow_run: workflow_run.clone(),
            outcome: None,
        })),
        EngineEvent::ItemFinished {
            execution_id,
            job,
            item,
            instance,
            source,
            task_id,
            started_at,
            finished_at,
            failure,
            scheduled_at,
            attempt,
            workflow_run,
            outcome,
        } => Some(HistoryWrite::ExecutionFinished(ExecutionRecord {
            id: execution_id.clone(),
            job_name: job.to_string(),
            task_id: task_id.clone(),
            hostname: hostname.to_owned(),
            ip: instance.ip().to_owned(),
            sharding_item: item.0,
            execution_source: source_name(*source).to_owned(),
            // Causes quote URLs (an HTTP job's, a notifier's): stored redacted.
            failure_cause: failure.as_deref().map(crate::secret::redact_text),
            is_success: failure.is_none(),
            start_time: *started_at,
            complete_time: Some(*finished_at),
            scheduled_time: *scheduled_at,
            attempt: Some(*attempt),
            workflow_run: workflow_run.clone(),
            outcome: Some(outcome.as_str().to_owned()),
        })),
        EngineEvent::RunStatus {
            job,
            task_id,
            instance,
            items,
            source,
            state,
            message,
            at,
        } => Some(HistoryWrite::Status(StatusRecord {
            id: format!("{task_id}@-@{}", state_name(*state)),
            job_name: job.to_string(),
            original_task_id: String::new(),
            task_id: task_id.clone(),
            slave_id: instance.to_string(),
            source: LITE_EXECUTOR.to_owned(),
            execution_type: match source {
                ExecutionSource::Failover => "FAILOVER",
                _ => "READY",
            }
            .to_owned(),
            sharding_item: java_list(items),
            state: state_name(*state).to_owned(),
            message: crate::secret::redact_text(message),
            creation_time: *at,
        })),
        EngineEvent::ItemOutput {
            execution_id,
            job,
            item,
            text,
            written,
            dropped,
            complete,
            at,
        } => Some(HistoryWrite::Output(super::output::OutputRecord {
            id: execution_id.clone(),
            job_name: job.to_string(),
            sharding_item: item.0,
            output: text.clone(),
            written_bytes: *written,
            dropped_bytes: *dropped,
            complete: *complete,
            update_time: *at,
        })),
        _ => None,
    }
}

/// `[0, 1, 2]`, as Java's `List.toString` prints the items ElasticJob stores.
fn java_list(items: &[ShardItem]) -> String {
    let inner: Vec<String> = items.iter().map(|i| i.0.to_string()).collect();
    format!("[{}]", inner.join(", "))
}

#[cfg(test)]
mod tests;
