//! # shardcron
//!
//! A distributed, sharded cron-job scheduling engine: ElasticJob-Lite's model and registry layout,
//! built as a tree of supervised [ractor] actors.
//!
//! ## Layers
//!
//! | layer | modules | what it holds |
//! | --- | --- | --- |
//! | core: identifiers | [`types`] | [`JobName`], [`InstanceId`], [`ShardItem`] |
//! | core: vocabulary | [`model`] | what core and adapters share: registry operations ([`model::Op`]), session states and watch events, [`model::RegistryError`], path helpers, [`model::ExecutionSource`] |
//! | core: domain | [`config`], [`untrusted`], [`cron`], [`timezone`], [`sharding`], [`paths`] | job configuration (ElasticJob 3.x YAML) and the props it carries, bounds on registry YAML, Quartz cron, job time zones, sharding strategies, typed registry nodes |
//! | core: decisions | [`store`], [`view`], [`decide`] | the mirror's in-memory store; a job's nodes read from it; election, resharding, runs, failover and reconcile as pure functions and machines returning registry operations |
//! | core: support | [`clock`], [`metrics`], [`secret`] | the injected wall clock; every metric the engine emits, typed; what is secret and its redaction |
//! | adapter: registry | [`registry`] | the [`registry::Registry`] trait, its ZooKeeper and embedded backends, the feed that fills the [`registry::mirror`] |
//! | adapter: job runners | [`job`] | the sharding context, simple, dataflow, script and HTTP jobs, error handlers, notifiers and listeners |
//! | adapter: history | [`events`], [`history`] | engine events on bounded per-subscriber queues; the execution history on SQLite or PostgreSQL |
//! | adapter: operations | [`ops`], [`admin`], [`console`] | the operations API on the registry; scrape, health, readiness and dump endpoints (axum); the web console |
//! | engine | [`node`], [`embed`] (mounted from `../actors/`) | the supervised actor tree that elects, shards, fires and executes; its builder and handle; embedding in a host's ractor tree |
//!
//! The core makes no IO (no socket, file, process or timer) and imports no adapter: the vocabulary
//! both speak is the core's [`model`], which [`registry`] and [`job`] re-export. The adapters do
//! the IO. No module of `src/` imports the engine: the engine feeds core decisions and carries out
//! their commands through the adapters (`tests/core_imports.rs` checks both rules). See `ARCHITECTURE.md` for the
//! layout contract, the actor tree and the flow of an event.

#![warn(missing_docs, unreachable_pub, missing_debug_implementations)]

pub mod admin;
pub mod clock;
pub mod config;
pub mod console;
pub mod cron;
pub mod decide;
pub mod events;
pub mod history;
pub mod job;
pub mod metrics;
pub mod model;
pub mod ops;
pub mod paths;
pub mod registry;
pub mod secret;
pub mod sharding;
pub mod store;
pub mod timezone;
pub mod types;
pub mod untrusted;
pub mod view;

pub use types::{IdError, InstanceId, JobName, ShardItem};

// The actor layer lives in `actors/` beside `src/` (the design card's layout); nothing in `src/`
// imports it. Its public face is the node API below.
#[path = "../actors/mod.rs"]
mod actors;

pub use actors::spec::{JobSpec, JobType, NodeOptions};
pub use actors::{embed, node};

/// The README's examples compile as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
