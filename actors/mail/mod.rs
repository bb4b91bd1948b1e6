//! Every actor's messages and the payloads they carry, one file per actor. Senders and receivers
//! both import them from here, so no actor module imports another to talk to it (the executor
//! and its peers name each other's messages: those types refer to each other).

mod executor;
mod failover;
mod leader;
mod node;
mod registry;
mod sharding;
mod trigger;

pub(crate) use super::context::JobEvent;
pub(crate) use super::error::EngineError;
pub(crate) use super::spec::JobSpec;
pub(crate) use executor::{ExecutorMsg, Peers, RunReport};
pub(crate) use failover::FailoverMsg;
pub(crate) use leader::{LeaderMsg, Memory};
pub use node::NodeMsg;
pub(crate) use registry::{Opened, RegistryMsg};
pub(crate) use sharding::{Outcome as ShardingOutcome, ShardingMsg};
pub(crate) use trigger::{HeldRun, RunRequest, TriggerMsg};
