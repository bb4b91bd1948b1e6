//! Distribute-once listeners (ElasticJob's `AbstractDistributeOnceElasticJobListener`): hooks
//! called exactly once across the cluster per fire, before the first item starts anywhere and
//! after the last item ends everywhere. The coordination is [`crate::decide::guarantee`]'s.
//!
//! Registered by name in the [`HandlerRegistry`](super::HandlerRegistry) and named in the job's
//! `jobListenerTypes`, as ElasticJob names its listener types. Unlike ElasticJob, whose default
//! timeouts are infinite, every wait is bounded: [`DEFAULT_GUARANTEE_TIMEOUT`] unless the
//! listener says otherwise.

use std::fmt;
use std::time::Duration;

use crate::types::{JobName, ShardItem};

/// How long an instance waits for the other items of a fire by default, before and after.
pub const DEFAULT_GUARANTEE_TIMEOUT: Duration = Duration::from_secs(60);

/// What a distribute-once hook is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuaranteeInfo {
    /// The job.
    pub job_name: JobName,
    /// Its `shardingTotalCount`.
    pub sharding_total_count: u32,
    /// Items that were not accounted for when the hook was called: empty unless the wait
    /// timed out (an instance that never fired, a lost registration).
    pub missing: Vec<ShardItem>,
}

/// Hooks called once per fire across the cluster (ElasticJob's
/// `doBeforeJobExecutedAtLastStarted` / `doAfterJobExecutedAtLastCompleted`).
///
/// Called on a task of their own, never inside an actor: the items of the fire wait for the
/// "before" hook to return, so keep it short. A panic is caught and logged; the fire goes on.
pub trait DistributeOnceListener: Send + Sync + fmt::Debug {
    /// The longest an instance waits for every item of a fire to start.
    fn started_timeout(&self) -> Duration {
        DEFAULT_GUARANTEE_TIMEOUT
    }
    /// The longest an instance waits, after its items end, for every item to end.
    fn completed_timeout(&self) -> Duration {
        DEFAULT_GUARANTEE_TIMEOUT
    }
    /// Once per fire, before any item of it starts on any instance.
    fn before_job_executed_at_last_started(&self, info: &GuaranteeInfo);
    /// Once per fire, after every item of it has ended on every instance.
    fn after_job_executed_at_last_completed(&self, info: &GuaranteeInfo);
}
