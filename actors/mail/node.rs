//! The NodeActor's messages: the requests of the node's API and endpoints, which the NodeActor
//! forwards, reply port and all, to its current RegistryActor.

use std::sync::Arc;

use ractor::{ActorCell, RpcReplyPort};

use crate::registry::Registry;
use crate::types::JobName;

use super::{EngineError, JobSpec};

/// Messages of the NodeActor.
#[derive(Debug)]
pub enum NodeMsg {
    /// Add a job to this node (and to the current session, if any).
    AddJob(Box<JobSpec>, RpcReplyPort<Result<(), EngineError>>),
    /// Remove a job from this node.
    RemoveJob(JobName, RpcReplyPort<Result<(), EngineError>>),
    /// Run every item this instance owns of a job once, now.
    Trigger(JobName, RpcReplyPort<Result<(), EngineError>>),
    /// The cell of a job's ExecutorActor on the current session.
    Executor(JobName, RpcReplyPort<Result<ActorCell, EngineError>>),
    /// The id of the connected session, when its mirror is synced (`None` otherwise).
    ReadySession(RpcReplyPort<Option<i64>>),
    /// The current session, for a read that must reach the registry itself (a dump).
    Session(RpcReplyPort<Option<Arc<dyn Registry>>>),
}
