//! The engine: a tree of supervised [ractor] actors that applies the decisions of
//! [`crate::decide`] to the registry.
//!
//! ```text
//!                 NodeActor  (one per instance; the embedding host may link it under its own tree)
//!                     │ supervises, restarts on failure
//!                     ▼
//!               RegistryActor  owns the Connector, the session, the one recursive watch and the
//!                     │        Mirror feed; turns MirrorEvents into typed JobEvents
//!                     │ spawns one per session; a new session = a new subtree (state replayed
//!                     ▼ from the mirror)
//!               SessionActor   routes JobEvents, restarts its children on failure
//!     ┌──────────┬────┴──────┬─────────────┬──────────────┐
//!     ▼          ▼           ▼             ▼              ▼
//! LeaderActor ShardingActor FailoverActor TriggerActor  ExecutorActor × jobs
//!  election,   waits for     clears fail-  one timer     registration, fires, runs
//!  resharding  running items over nodes    schedule for  (items in tasks that report
//!  flags,      then commits  when failover all jobs      back), misfire, triggers,
//!  reconcile   the plan      is turned off               live config
//! ```
//!
//! Message flow of a registry change: ZooKeeper watch event → `Mirror` feed applies it and emits a
//! `MirrorEvent` → `RegistryActor` parses the path into `(JobName, JobNode)` → `SessionActor`
//! sends the `JobEvent` to the leader, sharding and failover actors and the job's executor → each
//! reads the job's [`JobView`](crate::view::JobView) from the mirror, asks a pure decision what to do,
//! and applies the returned operations (one multi-op when there are several).
//!
//! A fire: `TriggerActor` timer → `ExecutorMsg::Fire` → the executor plans from the mirror (no
//! registry read), writes its `running` markers in one multi-op, runs the items in a task, gets
//! `RunFinished` back, hands the markers' removal to the session's write batcher and hears
//! `RunEnded` when it is done; no handler waits on the run or its end write.

pub(crate) mod alarm;
pub(crate) mod batch;
pub(crate) mod context;
pub mod embed;
pub(crate) mod endpoints;
pub(crate) mod error;
pub(crate) mod executor;
pub(crate) mod failover;
pub(crate) mod lanes;
pub(crate) mod leader;
pub mod node;
pub(crate) mod register;
pub(crate) mod registry;
pub(crate) mod run;
pub(crate) mod session;
pub(crate) mod sharding;
pub(crate) mod trigger;
