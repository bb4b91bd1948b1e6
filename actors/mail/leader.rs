//! The LeaderActor's messages.

use ractor::ActorRef;

use crate::decide::drift::Seen;
use crate::types::JobName;

use super::{JobEvent, ShardingMsg};

/// Messages of the LeaderActor.
#[derive(Debug)]
pub(crate) enum LeaderMsg {
    /// A node of a job changed.
    Job(JobEvent),
    /// The mirror was re-listed: re-evaluate every job.
    Resynced,
    /// A job was (re)registered or its configuration changed: evaluate it.
    Evaluate(JobName),
    /// Time to run the reconcile check of jobs whose interval has passed.
    ReconcileTick,
    /// The evaluation of a job ended; what it leaves to remember of a plan flagged as a follower.
    Evaluated(JobName, Memory),
    /// The session's ShardingActor, told when this instance leads and raises a job's flag (handed
    /// down by the SessionActor, again when it restarts).
    Sharding(ActorRef<ShardingMsg>),
}

/// What a follower keeps of the plans it flagged, after an evaluation.
#[derive(Debug)]
pub(crate) enum Memory {
    /// As it was.
    Keep,
    /// The plan it just flagged.
    Set(Seen),
    /// The plan fits: nothing to remember.
    Forget,
}
