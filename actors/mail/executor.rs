//! The ExecutorActor's messages, the peers' handles it is handed, and what a run reports back.

use std::sync::Arc;

use ractor::{ActorRef, RpcReplyPort};

use crate::decide::lifecycle::Input;
use crate::job::handlers::RunOutcome;

use super::{FailoverMsg, JobEvent, LeaderMsg, ShardingMsg, TriggerMsg};

/// Messages of the ExecutorActor.
#[derive(Debug)]
pub(crate) enum ExecutorMsg {
    /// An input for the job's machine as it is: `Prepare` and `Fire` from the trigger, `Trigger`,
    /// `Session`, `Fenced`, `Paused` from the session, `SessionChecked`, `Remove`,
    /// `FailoverClaimed` from the failover actor.
    Step(Input),
    /// A run's task ended: its items are done.
    RunFinished(Box<RunReport>),
    /// A node of this job changed (a config change is read and validated here first).
    Job(JobEvent),
    /// The mirror was re-listed.
    Resynced,
    /// Stop firing; reply once no item runs.
    Drain(RpcReplyPort<()>),
    /// Whether no run of this job is in progress here (the FailoverActor claims only then).
    IsIdle(RpcReplyPort<bool>),
    /// Fencing tokens of items the failover actor is about to hand over (sent just before their
    /// `FailoverClaimed`).
    FailoverFences(Vec<(crate::types::ShardItem, crate::job::FencingToken)>),
    /// An input for the job's distribute-once coordination: a round's timeout, hooks returned.
    Once(crate::decide::guarantee::GuaranteeInput),
    /// The session's actors were replaced: talk to these from now on.
    Peers(Arc<Peers>),
    /// A run decided ahead that the trigger did not start at its instant (the registry was
    /// silent): it starts behind a gate the machine opens (`decide/lifecycle/gated.rs`).
    HeldBack(super::HeldRun),
}

/// The handles an executor talks to, handed down by the SessionActor; replaced (and sent again to
/// every executor) when one of these actors restarts.
#[derive(Debug)]
pub(crate) struct Peers {
    pub(crate) trigger: ActorRef<TriggerMsg>,
    pub(crate) leader: ActorRef<LeaderMsg>,
    pub(crate) sharding: ActorRef<ShardingMsg>,
    pub(crate) failover: ActorRef<FailoverMsg>,
}

/// What a run reports back.
#[derive(Debug)]
pub(crate) struct RunReport {
    pub(crate) run_id: u64,
    pub(crate) outcome: RunOutcome,
    /// Whether an error handler asked to escalate (THROW).
    pub(crate) escalated: bool,
    /// Whether the error handler heard the run's failures (`shardcron.retry.notify`).
    pub(crate) notified: bool,
}
