//! The engine: a tree of supervised [ractor] actors that applies the decisions of
//! [`crate::decide`] to the registry.
//!
//! ```text
//!                 NodeActor  (one per instance; the embedding host may link it under its own tree)
//!                     │ supervises, restarts on failure
//!                     ▼
//!               RegistryActor  owns the Connector, the session, the Mirror feed (a recursive watch
//!                     │        per job root, or one on the namespace: decide::scope); turns
//!                     │        MirrorEvents into typed JobEvents
//!                     │ spawns one per session; a new session = a new subtree (state replayed
//!                     ▼ from the mirror)
//!               SessionActor   holds its children's refs (no shared directory), routes JobEvents
//!                     │        down, restarts children, fences on disconnection, watches for pauses
//!     ┌──────────┬────┴──────┬─────────────┬──────────────┐
//!     ▼          ▼           ▼             ▼              ▼
//! LeaderActor ShardingActor FailoverActor TriggerActor  ExecutorActor × jobs
//!  election,   waits for     marks, claims one timer     interpreter of the job's
//!  resharding  running items crashed runs  schedule for  decide::lifecycle::JobMachine
//!  flags,      then commits  for failover  all jobs      (runs in tasks that report back)
//!  reconcile   the plan
//!
//! Requests of the API and the endpoints: `NodeMsg` to the NodeActor, forwarded with their reply
//! ports to the RegistryActor and on to the SessionActor; an `AddJob` is answered by the job's
//! executor once its first step, the registration, ended. No actor is looked up by name.
//!
//! Handles, passed down by the SessionActor as arguments and messages (every message type lives in
//! [`mail`], imported by sender and receiver alike):
//!   ExecutorActor ──Peers──▶ TriggerActor (Schedule/Unschedule), LeaderActor (Evaluate),
//!                            ShardingActor (ShardIfNecessary), FailoverActor (RunEnded, ...)
//!   TriggerActor  ──the executor's ref in each Schedule──▶ ExecutorActor (Prepare, Fire)
//!   FailoverActor ──the refs executors announce──▶ ExecutorActor (IsIdle, FailoverClaimed)
//!   LeaderActor   ──Sharding(ref)──▶ ShardingActor (FlagRaised: a flag it just raised)
//! ```
//!
//! Message flow of a registry change: ZooKeeper watch event → `Mirror` feed applies it and emits a
//! `MirrorEvent` → `RegistryActor` parses the path into `(JobName, JobNode)` → `SessionActor`
//! sends the `JobEvent` to the leader, sharding and failover actors and the job's executor → each
//! reads the job's [`JobView`](crate::view::JobView) from the mirror, asks a pure decision what to do,
//! and applies the returned operations (one multi-op when there are several). The executor feeds
//! the event to its job's state machine as an input and carries out the commands it returns.
//!
//! A fire: `TriggerActor` timer → `ExecutorMsg::Fire` → `JobMachine::step(Fire)` plans from the
//! mirror (no registry read) and asks for one batched write of the `running` markers → its outcome
//! goes back in → `Launch` starts the run's task → `RunFinished` → the markers' removal is handed
//! to the session's write batcher → `RunEnded`; no handler waits on the run or its end write.

/// `impl Actor for $actor` with its state built by the `pre_start` body given and each message
/// handled by the `handle` body given (both with ractor's arguments, named by the caller), then
/// any further handlers: the shape `sync_actor!` and `supervisor_actor!` share.
macro_rules! actor_impl {
    (
        $actor:ty: $msg:ty, $state:ty, $args:ty;
        pre_start($myself:ident, $given:ident) $pre_start:block
        handle($me:ident, $message:ident, $st:ident) $handle:block
        $($more:tt)*
    ) => {
        impl ractor::Actor for $actor {
            type Msg = $msg;
            type State = $state;
            type Arguments = $args;

            async fn pre_start(
                &self,
                $myself: ractor::ActorRef<$msg>,
                $given: $args,
            ) -> Result<$state, ractor::ActorProcessingErr> $pre_start

            async fn handle(
                &self,
                $me: ractor::ActorRef<$msg>,
                $message: $msg,
                $st: &mut $state,
            ) -> Result<(), ractor::ActorProcessingErr> $handle

            $($more)*
        }
    };
}

/// `impl Actor for $actor` for an actor whose handlers never wait: its state is built by
/// `$state::started(&myself, args)` and answers each message with `state.handle(&myself, msg)`,
/// plain functions, so that no handler can await anything (a wait would hold up every job the
/// actor serves; work that waits runs in the job's lane task, which reports back by message).
macro_rules! sync_actor {
    ($actor:ty: $msg:ty, $state:ty, $args:ty) => {
        actor_impl! {
            $actor: $msg, $state, $args;
            pre_start(myself, args) { Ok(<$state>::started(&myself, args)) }
            handle(myself, msg, state) {
                state.handle(&myself, msg);
                Ok(())
            }
        }
    };
}

/// What a handler answers: nothing, or an error that fails the actor (and tells its supervisor).
pub(crate) type Handled = Result<(), ractor::ActorProcessingErr>;

/// `impl Actor for $actor` for a supervisor whose handlers are async methods of its state:
/// `$state::started(&myself, args)`, `state.handle(&myself, msg)`, `state.stopping(&myself)` in
/// `post_stop`, and for a child that failed or terminated alike (one helper for both: ractor's
/// default, stopping the parent, is never wanted) `state.child_ended(&myself, cell, reason)`.
macro_rules! supervisor_actor {
    ($actor:ty: $msg:ty, $state:ty, $args:ty) => {
        actor_impl! {
            $actor: $msg, $state, $args;
            pre_start(myself, args) { <$state>::started(&myself, args).await }
            handle(myself, msg, state) { state.handle(&myself, msg).await }

            async fn handle_supervisor_evt(
                &self,
                myself: ractor::ActorRef<$msg>,
                evt: ractor::SupervisionEvent,
                state: &mut $state,
            ) -> Result<(), ractor::ActorProcessingErr> {
                match $crate::actors::error::child_ended(&evt) {
                    Some((cell, reason)) => state.child_ended(&myself, cell.clone(), reason).await,
                    None => Ok(()),
                }
            }

            async fn post_stop(
                &self,
                myself: ractor::ActorRef<$msg>,
                state: &mut $state,
            ) -> Result<(), ractor::ActorProcessingErr> {
                state.stopping(&myself).await
            }
        }
    };
}

pub(crate) mod adopt;
pub(crate) mod alarm;
pub(crate) mod context;
pub(crate) mod decisions;
pub mod embed;
pub(crate) mod endpoints;
pub(crate) mod error;
pub(crate) mod executor;
pub(crate) mod failover;
pub(crate) mod failover_lane;
pub(crate) mod feed;
pub(crate) mod interpret;
pub(crate) mod lanes;
pub(crate) mod leader;
pub(crate) mod mail;
pub mod node;
pub(crate) mod once;
pub(crate) mod register;
pub(crate) mod registry;
pub(crate) mod run;
pub(crate) mod session;
pub(crate) mod sharding;
pub(crate) mod spec;
pub(crate) mod trigger;
pub(crate) mod writes;
