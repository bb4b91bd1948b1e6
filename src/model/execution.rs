//! Why an item runs ([`ExecutionSource`]): the job lifecycle decides it, the runners pass it to
//! handlers, the history and the metrics record it. And how long a cancelled run's processes have
//! by default ([`DEFAULT_STOP_GRACE`]), which the lifecycle's fence also bounds its grace by.

use std::time::Duration;

use serde::Serialize;

/// The grace a run gets when nobody asked for a shorter one: long enough for a script to flush
/// and remove its temporary files, short enough for a node's shutdown.
pub const DEFAULT_STOP_GRACE: Duration = Duration::from_secs(5);

/// Why an item runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ExecutionSource {
    /// The cron fired.
    Normal,
    /// Catch-up of a fire missed while the item was still running.
    Misfire,
    /// Taken over from a crashed instance.
    Failover,
    /// Triggered by an operator through `trigger/{instanceId}` or the API.
    Manual,
    /// A cron instant missed while no instance ran the item, run when an owner returned within
    /// the job's `shardcron.catchup.window`.
    CatchUp,
    /// An instant of a backfill (`shardcronctl backfill`).
    Backfill,
    /// A step of a workflow run (`shardcron.after`): its upstreams ended the run; the scheduled
    /// instant is the root fire's, which names the run.
    Workflow,
}

impl ExecutionSource {
    /// Lowercase name, used as a metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Normal => "normal",
            Self::Misfire => "misfire",
            Self::Failover => "failover",
            Self::Manual => "manual",
            Self::CatchUp => "catchup",
            Self::Backfill => "backfill",
            Self::Workflow => "workflow",
        }
    }
}
