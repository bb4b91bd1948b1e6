//! Every metric the engine emits, in one place: one typed function per event worth counting, the
//! `# HELP` text of each family, and the label names, so the README's table, the dashboard and the
//! alert rules (`examples/monitoring/`) have one list to agree with.
//!
//! Names and labels follow Prometheus' conventions: counters end in `_total`, durations are
//! `_seconds`, and no label is named `job` or `instance`. Prometheus attaches those two to every
//! scraped series (the scrape job and the target); an exporter's own `job`/`instance` would arrive
//! renamed `exported_job`/`exported_instance`, and `sum by (job)` would group by the scrape job.
//! Ours are `job_name` (the shardcron job) and `instance_id` (the ElasticJob instance id).
//!
//! # Several nodes in one process
//!
//! The `metrics` facade has one recorder per process, so every node's counters land in the same
//! place. Two scopes keep a scrape of every node from counting anything twice:
//!
//! - **Node series** carry `instance_id`: the node that counted them. A node's `/metrics` serves
//!   only the series with its own `instance_id` (and its gauges), so scraping each node of a
//!   process yields each execution once.
//! - **Process series** have no `instance_id`: registry calls (a connector and its sessions may
//!   serve several nodes), dropped events and history write errors. Exactly one metrics endpoint
//!   of the process serves them: the oldest one still running (see `admin::scrape`).
//!
//! The functions below are the only places that call `metrics::counter!` / `histogram!`. Job and
//! instance labels share the names' `Arc<str>` rather than copying them: an item execution
//! emits a counter, and a node runs up to a hundred thousand a second.

use std::time::Duration;

use crate::decide::workflow::records::WorkflowOutcome;
use crate::model::ExecutionSource;
use crate::model::OpKind;
use crate::types::{InstanceId, JobName, ShardItem};

/// The label naming the shardcron job (not `job`: Prometheus owns that one).
pub const JOB_LABEL: &str = "job_name";
/// The label naming the instance that counted a series (not `instance`: Prometheus owns it).
pub const INSTANCE_LABEL: &str = "instance_id";

/// `shardcron_executions_total`.
pub const EXECUTIONS: &str = "shardcron_executions_total";
/// `shardcron_trigger_delay_seconds`.
pub const TRIGGER_DELAY: &str = "shardcron_trigger_delay_seconds";
/// `shardcron_execution_duration_seconds`.
pub const EXECUTION_DURATION: &str = "shardcron_execution_duration_seconds";
/// `shardcron_elections_total`.
pub const ELECTIONS: &str = "shardcron_elections_total";
/// `shardcron_reshardings_total`.
pub const RESHARDINGS: &str = "shardcron_reshardings_total";
/// `shardcron_misfires_total`.
pub const MISFIRES: &str = "shardcron_misfires_total";
/// `shardcron_failovers_total`.
pub const FAILOVERS: &str = "shardcron_failovers_total";
/// Counter: error notifications (EMAIL, WECHAT, DINGTALK, WEBHOOK) sent or dropped.
pub const ERROR_NOTIFICATIONS: &str = "shardcron_error_notifications_total";
/// Counter: leader/sharding lane tasks that panicked (a user strategy, say).
pub const LANE_PANICS: &str = "shardcron_lane_panics_total";
/// Counter: fires skipped (the job cannot keep up, or this instance cannot start work now).
pub const FIRES_SKIPPED: &str = "shardcron_fires_skipped_total";
/// Counter: fires dropped, their work never run (overlap `skip`, coalesced, cannot start).
pub const FIRES_MISSED: &str = "shardcron_fires_missed_total";
/// `shardcron_workflow_step_wait_seconds`.
pub const WORKFLOW_STEP_WAIT: &str = "shardcron_workflow_step_wait_seconds";
/// `shardcron_workflow_runs_total`.
pub const WORKFLOW_RUNS: &str = "shardcron_workflow_runs_total";
/// `shardcron_events_dropped_total`.
pub const EVENTS_DROPPED: &str = "shardcron_events_dropped_total";
/// `shardcron_registry_operations_total`.
pub const REGISTRY_OPERATIONS: &str = "shardcron_registry_operations_total";
/// `shardcron_registry_events_total`.
pub const REGISTRY_EVENTS: &str = "shardcron_registry_events_total";
/// `shardcron_history_write_errors_total`.
pub const HISTORY_WRITE_ERRORS: &str = "shardcron_history_write_errors_total";

/// Whether an item's execution succeeded (its `outcome` label).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// `success`.
    Success,
    /// `failure`.
    Failure,
    /// `timeout`: the item ran past `shardcron.timeout`.
    Timeout,
}

impl Outcome {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::Failure => "failure",
            Self::Timeout => "timeout",
        }
    }
}

/// An item's execution ended.
pub fn execution_ended(
    me: &InstanceId,
    job: &JobName,
    item: ShardItem,
    outcome: Outcome,
    source: ExecutionSource,
) {
    ::metrics::counter!(EXECUTIONS, INSTANCE_LABEL => me.shared(), JOB_LABEL => job.shared(),
        "item" => item.to_string(), "outcome" => outcome.as_str(), "source" => source.as_str())
    .increment(1);
}

/// A scheduled fire's run started `delay` after the fire's instant.
pub fn trigger_delay(me: &InstanceId, job: &JobName, delay: Duration) {
    ::metrics::histogram!(TRIGGER_DELAY, INSTANCE_LABEL => me.shared(), JOB_LABEL => job.shared())
        .record(delay.as_secs_f64());
}

/// A run (this instance's items of one fire) took `took`.
pub fn run_duration(me: &InstanceId, job: &JobName, took: Duration) {
    ::metrics::histogram!(EXECUTION_DURATION, INSTANCE_LABEL => me.shared(), JOB_LABEL => job.shared())
        .record(took.as_secs_f64());
}

/// This instance won the job's leader election.
pub fn election_won(me: &InstanceId, job: &JobName) {
    ::metrics::counter!(ELECTIONS, INSTANCE_LABEL => me.shared(), JOB_LABEL => job.shared())
        .increment(1);
}

/// This instance, as leader, committed a sharding plan.
pub fn resharding_committed(me: &InstanceId, job: &JobName) {
    ::metrics::counter!(RESHARDINGS, INSTANCE_LABEL => me.shared(), JOB_LABEL => job.shared())
        .increment(1);
}

/// `items` items were flagged misfire (still running at a fire).
pub fn misfires_flagged(me: &InstanceId, job: &JobName, items: usize) {
    ::metrics::counter!(MISFIRES, INSTANCE_LABEL => me.shared(), JOB_LABEL => job.shared())
        .increment(items as u64);
}

/// This instance claimed `items` items of a crashed instance.
pub fn failover_claimed(me: &InstanceId, job: &JobName, items: usize) {
    ::metrics::counter!(FAILOVERS, INSTANCE_LABEL => me.shared(), JOB_LABEL => job.shared())
        .increment(items as u64);
}

/// A fire was skipped for `reason` (a stalled run, a lost session...).
pub fn fire_skipped(me: &InstanceId, job: &JobName, reason: &'static str) {
    ::metrics::counter!(FIRES_SKIPPED, INSTANCE_LABEL => me.shared(), JOB_LABEL => job.shared(),
        "reason" => reason)
    .increment(1);
}

/// A fire was dropped for `reason`: its work will not run (the machine's
/// [`MissReason`](crate::decide::lifecycle::MissReason)).
pub fn fire_missed(me: &InstanceId, job: &JobName, reason: &'static str) {
    ::metrics::counter!(FIRES_MISSED, INSTANCE_LABEL => me.shared(), JOB_LABEL => job.shared(),
        "reason" => reason)
    .increment(1);
}

/// This instance's items of a workflow step started `wait` after this instance saw the step's
/// `{run}@start` decision appear.
pub fn workflow_step_wait(me: &InstanceId, job: &JobName, wait: Duration) {
    ::metrics::histogram!(WORKFLOW_STEP_WAIT, INSTANCE_LABEL => me.shared(), JOB_LABEL => job.shared())
        .record(wait.as_secs_f64());
}

/// The job's part in a workflow run ended with `outcome` (counted by the job's leader).
pub fn workflow_run_ended(me: &InstanceId, job: &JobName, outcome: WorkflowOutcome) {
    ::metrics::counter!(WORKFLOW_RUNS, INSTANCE_LABEL => me.shared(), JOB_LABEL => job.shared(),
        "outcome" => outcome.as_str())
    .increment(1);
}

/// An error notification of `kind` ended with `outcome` (process series: the notifier queue is
/// per process).
pub fn error_notification(job: &JobName, kind: &'static str, outcome: &'static str) {
    ::metrics::counter!(ERROR_NOTIFICATIONS, JOB_LABEL => job.to_string(), "type" => kind,
        "outcome" => outcome)
    .increment(1);
}

/// A lane task of `lane` (leader, sharding) panicked for `job` (process series).
pub fn lane_panicked(lane: &'static str, job: &JobName) {
    ::metrics::counter!(LANE_PANICS, "lane" => lane, JOB_LABEL => job.to_string()).increment(1);
}

/// An engine event was dropped on `subscriber`'s full queue (process series).
pub fn event_dropped(subscriber: &str) {
    ::metrics::counter!(EVENTS_DROPPED, "subscriber" => subscriber.to_owned()).increment(1);
}

/// A registry call finished (process series). `backend` is `zookeeper` or `embedded`.
pub fn registry_operation(backend: &'static str, kind: OpKind, ok: bool) {
    ::metrics::counter!(REGISTRY_OPERATIONS, "backend" => backend, "kind" => kind.as_str(),
        "outcome" => if ok { "ok" } else { "error" })
    .increment(1);
}

/// The node's mirror told it of a change to a job's node (a watch event, or a difference a re-list
/// found); `own` when this node runs that job. What a node pays for the rest of the namespace.
pub fn registry_event(me: &InstanceId, own: bool) {
    ::metrics::counter!(REGISTRY_EVENTS, INSTANCE_LABEL => me.shared(),
        "scope" => if own { "own" } else { "other" })
    .increment(1);
}

/// Writing an execution to the history failed (process series).
pub fn history_write_failed() {
    ::metrics::counter!(HISTORY_WRITE_ERRORS).increment(1);
}

/// The `# HELP` text of every counter and histogram family, for the recorder to describe.
pub const DESCRIPTIONS: [(&str, &str); 17] = [
    (
        EXECUTIONS,
        "Item executions that ended, by instance_id, job_name, item, outcome (success, failure, timeout) \
         and source (normal, misfire, failover, manual).",
    ),
    (
        TRIGGER_DELAY,
        "Delay from a fire's scheduled instant to the start of its run, by instance_id and job_name.",
    ),
    (
        EXECUTION_DURATION,
        "Duration of a run (all of this instance's items of one fire), by instance_id and job_name.",
    ),
    (
        ELECTIONS,
        "Leader elections this instance won, by instance_id and job_name.",
    ),
    (
        RESHARDINGS,
        "Sharding plans this instance committed as leader, by instance_id and job_name.",
    ),
    (
        MISFIRES,
        "Items flagged misfire because they still ran at a fire, by instance_id and job_name.",
    ),
    (
        FAILOVERS,
        "Items of crashed instances this instance claimed, by instance_id and job_name.",
    ),
    (
        FIRES_SKIPPED,
        "Fires skipped because the job could not keep up or the instance could not start work, \
         by instance_id, job_name and reason.",
    ),
    (
        FIRES_MISSED,
        "Fires dropped whose work will not run, by instance_id, job_name and reason \
         (overlap_skip, overlap_buffer_full, coalesced, cannot_start).",
    ),
    (
        WORKFLOW_STEP_WAIT,
        "Time from the moment an instance saw a workflow step's decision to run ({run}@start) \
         to the start of its items of that run, by instance_id and job_name.",
    ),
    (
        WORKFLOW_RUNS,
        "Workflow runs a job's part in ended, by instance_id (the job's leader, which counts each \
         run once), job_name and outcome (completed, failed, skipped).",
    ),
    (
        ERROR_NOTIFICATIONS,
        "Error notifications by job_name, type (EMAIL, WECHAT, DINGTALK, WEBHOOK) and outcome \
         (sent, failed, dropped) (whole process).",
    ),
    (
        LANE_PANICS,
        "Leader and sharding lane tasks that panicked (a user sharding strategy, say), by lane and \
         job_name; the job is retried (whole process).",
    ),
    (
        EVENTS_DROPPED,
        "Engine events dropped because a subscriber's queue was full, by subscriber (whole process).",
    ),
    (
        REGISTRY_OPERATIONS,
        "Registry calls that finished, by backend (zookeeper, embedded), kind and outcome \
         (ok, error); a multi-op counts once (whole process).",
    ),
    (
        REGISTRY_EVENTS,
        "Changes to jobs' nodes the node's mirror told it of (watch events and differences found \
         by a re-list), by instance_id and scope (own: a job this node runs; other: any other job \
         of the namespace).",
    ),
    (
        HISTORY_WRITE_ERRORS,
        "Execution history writes that failed (whole process).",
    ),
];

/// Registers [`DESCRIPTIONS`] with the installed recorder.
pub fn describe() {
    for (name, help) in DESCRIPTIONS {
        if name.ends_with("_seconds") {
            ::metrics::describe_histogram!(name, ::metrics::Unit::Seconds, help);
        } else {
            ::metrics::describe_counter!(name, help);
        }
    }
}
