//! The TriggerActor's messages.

use ractor::ActorRef;

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
    Hold(chrono::DateTime<chrono::Utc>, crate::actors::run::HeldRun),
    /// The job's fire of this instant was taken ahead of it and launched no run for it: its
    /// `Fire` is not needed.
    FiredAhead(JobName, chrono::DateTime<chrono::Utc>),
}
