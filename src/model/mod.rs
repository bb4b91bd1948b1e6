//! The vocabulary the core and the adapters share, in modules that import nothing from IO: the
//! registry's operation model ([`Op`], [`OpKind`], [`OpResult`], [`CreateMode`], [`Stat`]), a
//! session's states and watch events ([`SessionState`], [`NodeEventKind`], [`WatchEvent`]), the
//! errors of registry calls ([`RegistryError`]), registry paths ([`join_path`], [`parent_path`],
//! [`validate_path`]) and why an item runs ([`ExecutionSource`]).
//!
//! The core's decisions speak this vocabulary (they return [`Op`]s and read [`RegistryError`]s as
//! answers); the [`registry`](crate::registry) and [`job`](crate::job) adapters re-export it, so
//! `shardcron::registry::Op` and `shardcron::job::ExecutionSource` keep working.

pub mod error;
pub mod execution;
pub mod ops;
pub mod path;
pub mod session;
pub mod silence;

pub use error::RegistryError;
pub use execution::ExecutionSource;
pub use ops::{CreateMode, ListedNode, Op, OpKind, OpResult, Stat, ANY_VERSION};
pub use path::{join_path, parent_path, validate_path};
pub use session::{NodeEventKind, SessionInfo, SessionState, WatchEvent};
pub use silence::Silence;
