//! The TriggerActor's messages.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use ractor::ActorRef;
use tokio::sync::oneshot;

use crate::clock::SharedClock;
use crate::events::EventBus;
use crate::job::concurrency::ItemGate;
use crate::job::deadline::RunDeadline;
use crate::job::handlers::{ErrorHandler, Listeners};
use crate::job::{ExecutionSource, ShardingContext, SharedHandler};
use crate::types::InstanceId;

use crate::config::ValidatedConfig;
use crate::types::JobName;

use super::ExecutorMsg;

/// Messages of the TriggerActor.
#[derive(Debug)]
pub(crate) enum TriggerMsg {
    /// Schedule (or reschedule) a job by its configuration's cron and time zone, firing its
    /// executor; a job without cron is unscheduled.
    Schedule(
        JobName,
        std::sync::Arc<ValidatedConfig>,
        ActorRef<ExecutorMsg>,
    ),
    /// Stop firing a job.
    Unschedule(JobName),
    /// The timer of arming `generation` rang.
    Tick(u64),
    /// A run whose fire was decided ahead of its instant: start it at that instant (its job
    /// needs no `Fire` there).
    Hold(DateTime<Utc>, HeldRun),
    /// The job's fire of this instant was taken ahead of it and launched no run for it: its
    /// `Fire` is not needed.
    FiredAhead(JobName, DateTime<Utc>),
}

/// A run ready to start, as the executor hands it over to be started at its instant: its request
/// and the executor it reports to (started by `actors/run/held.rs`).
#[derive(Debug)]
pub(crate) struct HeldRun {
    pub(crate) req: Box<RunRequest>,
    pub(crate) executor: ActorRef<ExecutorMsg>,
}

impl HeldRun {
    /// The job it runs.
    pub(crate) fn job(&self) -> &JobName {
        &self.req.job
    }
}

/// Everything a run needs, moved into its task.
#[derive(Debug)]
pub(crate) struct RunRequest {
    pub(crate) run_id: u64,
    pub(crate) job: JobName,
    pub(crate) instance: InstanceId,
    pub(crate) source: ExecutionSource,
    pub(crate) task_id: String,
    pub(crate) contexts: Vec<ShardingContext>,
    pub(crate) handler: SharedHandler,
    pub(crate) listeners: Listeners,
    pub(crate) error_handler: Arc<dyn ErrorHandler>,
    pub(crate) clock: SharedClock,
    pub(crate) events: EventBus,
    /// The job's limit on items running at once here.
    pub(crate) gate: ItemGate,
    /// For a run taking part in a distribute-once round: its items start when this fires (or
    /// its sender is dropped).
    pub(crate) go: Option<oneshot::Receiver<()>>,
    /// The cron instant this run answers, for the trigger-delay metric.
    pub(crate) scheduled: Option<DateTime<Utc>>,
    /// The run's timeout (`shardcron.timeout`); `None` for a job without one.
    pub(crate) deadline: Option<Arc<RunDeadline>>,
    /// 1 for a first run, 2 for its first retry, and so on.
    pub(crate) attempt: u32,
    /// The workflow run it is a step of (`shardcron.after`), for its events and history rows.
    pub(crate) workflow_run: Option<String>,
    /// When this instance saw the step's decision appear, for the step-wait metric.
    pub(crate) decided_at: Option<DateTime<Utc>>,
    /// Whether the error handler hears this attempt's failures (`shardcron.retry.notify`).
    pub(crate) notify: bool,
}
