//! The FailoverActor's messages.

use ractor::{ActorId, ActorRef};

use crate::types::JobName;

use super::{ExecutorMsg, JobEvent};

/// Messages of the FailoverActor.
#[derive(Debug)]
pub(crate) enum FailoverMsg {
    /// A node of a job changed.
    Job(JobEvent),
    /// The mirror was re-listed.
    Resynced,
    /// A job's configuration changed.
    ConfigChanged(JobName),
    /// A job's executor has no run in progress any more: claim what is marked.
    RunEnded(JobName),
    /// A job's executor started: claimed items of the job go to it.
    Executor(JobName, ActorRef<ExecutorMsg>),
    /// A job's executor stopped (forgotten unless a newer one replaced it).
    ExecutorGone(JobName, ActorId),
    /// A job's lane task ended.
    Handled(JobName),
    /// A job's lane task panicked a while ago: look at the job again.
    Again(JobName),
}
