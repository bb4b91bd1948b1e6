//! What a job is to the engine: the [`ShardingContext`] one item receives, the [`ItemHandler`] that
//! runs an item, and the job types built on it ([`SimpleJob`], [`dataflow`], [`script`]), with the
//! error handlers and listeners that surround a run ([`handlers`]).
//!
//! The engine runs every item of one fire concurrently, each through [`ItemHandler::run_item`], and
//! reports the outcome. A handler should watch [`ShardingContext::cancelled`]: it fires when this
//! instance loses the item (resharding, lost session, shutdown).

mod announced;
pub mod concurrency;
pub mod dataflow;
pub mod deadline;
pub mod fencing;
pub mod group;
pub mod handlers;
pub mod http;
pub mod keeper;
mod outcome;
pub mod output;
pub mod runtime;
pub mod script;
pub mod stop;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::types::{InstanceId, JobName, ShardItem};

pub use crate::model::ExecutionSource;
pub use fencing::FencingToken;
pub use outcome::ItemOutcome;
pub use stop::StopGrace;

/// A flag the engine raises when the job needs resharding, so that a streaming dataflow job stops
/// fetching. Cheap to clone and to read.
#[derive(Debug, Clone, Default)]
pub struct ReshardingFlag(Arc<AtomicBool>);

impl ReshardingFlag {
    /// Whether resharding is pending for the job.
    pub fn is_raised(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }

    /// Sets the flag (engine side).
    pub fn set(&self, raised: bool) {
        self.0.store(raised, Ordering::Release);
    }
}

/// Everything one item of one run receives (ElasticJob's `ShardingContext`).
///
/// Serialised to JSON (ElasticJob's field names) for script jobs and HTTP jobs.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ShardingContext {
    /// The job.
    pub job_name: JobName,
    /// `{jobName}@-@{items}@-@{source}@-@{instanceId}@-@{runId}`: identifies one run of this instance.
    pub task_id: String,
    /// The job's `shardingTotalCount` at the time of the run.
    pub sharding_total_count: u32,
    /// The job's `jobParameter`.
    pub job_parameter: String,
    /// This item.
    pub sharding_item: ShardItem,
    /// This item's parameter from `shardingItemParameters`, empty when none.
    pub sharding_parameter: String,
    /// The cron instant this run answers (a normal fire, a fire resumed after a reshard, or the
    /// missed instant of a catch-up run); `None` for manual, misfire catch-up and failover runs.
    /// A shardcron addition.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scheduled_at: Option<DateTime<Utc>>,
    /// The workflow run this run is a step of (`shardcron.after`): the root fire's scheduled
    /// instant in epoch milliseconds; `None` outside workflows. A shardcron addition.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workflow_run: Option<String>,
    /// Grows whenever the item changes owner: make the job's writes conditional on it
    /// (`... WHERE fence <= $token`) so that an old owner's late writes are refused. See
    /// [`fencing`]. A shardcron addition.
    pub fencing_token: FencingToken,
    /// Why the item runs.
    #[serde(skip)]
    pub source: ExecutionSource,
    /// The instance running it.
    #[serde(skip)]
    pub instance_id: InstanceId,
    /// Fires when this instance loses the item (resharding, session loss, shutdown, removal).
    #[serde(skip)]
    pub cancellation: CancellationToken,
    /// Raised while the job waits for resharding (streaming dataflow stops fetching).
    #[serde(skip)]
    pub resharding: ReshardingFlag,
    /// The job's `props` as configured for this run: a change in the registry applies from the
    /// next run, so handlers that take their settings from `props` (script, HTTP) read them here,
    /// as ElasticJob's executors read them at each run. Empty when the caller has none.
    #[serde(skip)]
    pub props: Arc<BTreeMap<String, String>>,
    /// How long a child process this run starts may outlive a silence of its node before the
    /// child keeper kills it ([`keeper`]; the session's
    /// [`frozen_node_lease`](crate::decide::lifecycle::FenceBudget::frozen_node_lease)). `None`:
    /// children are not kept. A shardcron addition.
    #[serde(skip)]
    pub child_lease: Option<std::time::Duration>,
    /// How long a cancelled item's processes (a script's process group) have between SIGTERM and
    /// SIGKILL; shared by the items of one run, shortened by whoever cancels ([`stop`]).
    #[serde(skip)]
    pub stop_grace: StopGrace,
    /// Where this run's output is captured (`shardcron.output`, see [`output`]); `None` for a
    /// job that does not ask for it, which then costs nothing. A shardcron addition.
    #[serde(skip)]
    pub output: Option<Arc<output::OutputCapture>>,
}

impl ShardingContext {
    /// Whether the item was taken away from this instance; cooperative jobs stop when it is.
    pub fn is_cancelled(&self) -> bool {
        self.cancellation.is_cancelled()
    }

    /// Completes when the item is taken away from this instance.
    pub async fn cancelled(&self) {
        self.cancellation.cancelled().await
    }

    /// Cancels the item, giving its processes at most `grace` between SIGTERM and SIGKILL (the
    /// run's grace is shortened to it, see [`stop`]).
    pub fn cancel_within(&self, grace: std::time::Duration) {
        self.stop_grace.cancel_within(&self.cancellation, grace);
    }

    /// Prints a line (or several) of the item's output: logged at `info` with the job and item,
    /// and captured with the run when the job asks for it (`shardcron.output`), so that
    /// `shardcronctl logs` and the console show it.
    pub fn print(&self, text: &str) {
        tracing::info!(job = %self.job_name, item = %self.sharding_item, "{text}");
        if let Some(output) = &self.output {
            output.line(output::Stream::Log, text);
        }
    }

    /// The context as ElasticJob's JSON, as script and HTTP jobs receive it.
    pub fn to_json(&self) -> String {
        // A struct of strings and integers always serialises.
        serde_json::to_string(self).unwrap_or_else(|_| String::from("{}"))
    }
}

/// Why an item failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JobError {
    /// The job's own code reported a failure.
    #[error("{0}")]
    Failed(String),
    /// The job was cancelled before it finished.
    #[error("cancelled: {0}")]
    Cancelled(String),
    /// The job's code panicked.
    #[error("panicked: {0}")]
    Panicked(String),
    /// A script job could not be spawned.
    #[error("could not start {command:?}: {reason}")]
    Spawn {
        /// The command line.
        command: String,
        /// The OS error.
        reason: String,
    },
    /// A script job exited non-zero or by a signal.
    #[error("{command:?} exited with {status}")]
    Exit {
        /// The command line.
        command: String,
        /// The exit status as the OS reports it.
        status: String,
    },
    /// The run was refused before the item started (clock skew, invalid config).
    #[error("refused: {0}")]
    Refused(String),
    /// The item ran past the job's `shardcron.timeout` and was cancelled, then ended.
    #[error("timed out after {after:?}")]
    TimedOut {
        /// The timeout.
        after: Duration,
    },
}

impl JobError {
    /// A failure with a message.
    pub fn failed(msg: impl fmt::Display) -> Self {
        Self::Failed(msg.to_string())
    }
}

/// Runs one item. Every job type is adapted to this trait; the engine knows nothing else.
#[async_trait]
pub trait ItemHandler: Send + Sync + fmt::Debug + 'static {
    /// Runs one item to completion.
    async fn run_item(&self, ctx: ShardingContext) -> Result<(), JobError>;
}

/// A simple job: one call per item (ElasticJob's `SimpleJob`).
///
/// ```
/// use shardcron::job::{JobError, ShardingContext, SimpleJob};
/// #[derive(Debug)]
/// struct Hello;
/// #[async_trait::async_trait]
/// impl SimpleJob for Hello {
///     async fn execute(&self, ctx: ShardingContext) -> Result<(), JobError> {
///         println!("item {} of {}", ctx.sharding_item, ctx.job_name);
///         Ok(())
///     }
/// }
/// ```
#[async_trait]
pub trait SimpleJob: Send + Sync + fmt::Debug + 'static {
    /// Runs the item.
    async fn execute(&self, ctx: ShardingContext) -> Result<(), JobError>;
}

/// Adapts a [`SimpleJob`] to an [`ItemHandler`].
#[derive(Debug)]
pub struct Simple<J>(pub J);

#[async_trait]
impl<J: SimpleJob> ItemHandler for Simple<J> {
    async fn run_item(&self, ctx: ShardingContext) -> Result<(), JobError> {
        self.0.execute(ctx).await
    }
}

/// A job from a closure returning a future: handy for tests and small jobs.
pub struct FnJob<F>(pub F);

impl<F> fmt::Debug for FnJob<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FnJob")
    }
}

#[async_trait]
impl<F, Fut> ItemHandler for FnJob<F>
where
    F: Fn(ShardingContext) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<(), JobError>> + Send + 'static,
{
    async fn run_item(&self, ctx: ShardingContext) -> Result<(), JobError> {
        (self.0)(ctx).await
    }
}

/// A shareable handler.
pub type SharedHandler = Arc<dyn ItemHandler>;
