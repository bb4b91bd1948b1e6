//! The ShardingActor's messages.

use crate::types::JobName;

use super::JobEvent;

/// Messages of the ShardingActor.
#[derive(Debug)]
pub(crate) enum ShardingMsg {
    /// A fire found the job's resharding flag up: shard it if this instance leads.
    ShardIfNecessary(JobName),
    /// This instance's LeaderActor has just raised the job's flag: shard now, without waiting
    /// for the mirror to show the flag (its event needs a read first).
    FlagRaised(JobName),
    /// A node of a job changed.
    Job(JobEvent),
    /// The mirror was re-listed: retry every waiting job.
    Resynced,
    /// Retry a waiting job (after a burst of `running` deletions).
    Retry(JobName),
    /// Time to look whether a balanced job this instance leads drifted from the namespace's plan.
    Rebalance,
    /// A sharding step of `job` ended.
    Sharded {
        /// The job.
        job: JobName,
        /// How it ended.
        outcome: Outcome,
    },
}

/// How a sharding step ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Committed, or nothing to do.
    Done,
    /// Items are still running: retried when they end.
    Waits,
    /// The commit failed (the mirror was behind the registry): retried shortly, since no event
    /// may come for a job that does not run. The registry's error, for the log.
    Failed(String),
}
