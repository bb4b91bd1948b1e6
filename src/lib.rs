//! # shardcron
//!
//! A distributed, sharded cron-job scheduling engine: ElasticJob-Lite's model and registry layout,
//! built as a tree of supervised [ractor] actors.
//!
//! ## Layers
//!
//! | layer | modules | what it holds |
//! | --- | --- | --- |
//! | identifiers | [`types`] | [`JobName`], [`InstanceId`], [`ShardItem`] |
//! | domain | [`config`], [`cron`], [`timezone`], [`sharding`], [`paths`] | job configuration (ElasticJob 3.x YAML), Quartz cron, job time zones, sharding strategies, typed registry nodes |
//! | registry | [`registry`] | the [`registry::Registry`] trait, its ZooKeeper and embedded backends, the local [`registry::mirror`] |
//! | decisions | [`view`], [`decide`] | a job's nodes read from the mirror; election, resharding, runs, failover and reconcile as pure functions returning registry operations |
//! | jobs | [`job`], [`clock`] | the sharding context, simple, dataflow, script and HTTP jobs, error handlers and listeners; the injected wall clock |
//! | events | [`events`], [`history`] | engine events on bounded per-subscriber queues; the execution history on SQLite or PostgreSQL |
//! | operations | [`admin`], [`metrics`] | Prometheus scrape endpoint, health, readiness and dump endpoints (axum); every metric the engine emits, typed |
//! | operations | [`console`] | the web console: JSON API, live event stream and embedded page, over [`ops`] |
//! | operations | [`ops`] | the operations API on the registry: job, item and server statuses; trigger, disable, shutdown, remove; config get/set |
//! | engine | [`node`], [`embed`] (mounted from `../actors/`) | the supervised actor tree that elects, shards, fires and executes; its builder and handle; embedding in a host's ractor tree |
//!
//! `src/` is the domain and never imports the actor layer; the actor layer only applies decisions
//! that the domain computes. See `ARCHITECTURE.md` for the actor tree and the flow of an event.

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
pub mod ops;
pub mod paths;
pub mod registry;
pub mod secret;
pub mod sharding;
pub mod timezone;
pub mod types;
pub mod view;

pub use types::{IdError, InstanceId, JobName, ShardItem};

// The actor layer lives in `actors/` beside `src/` (the design card's layout); nothing in `src/`
// imports it. Its public face is the node API below.
#[path = "../actors/mod.rs"]
mod actors;

pub use actors::context::{JobSpec, JobType, NodeOptions};
pub use actors::{embed, node};

/// The README's examples compile as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
