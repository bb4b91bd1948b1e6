//! The machine's protocol: what comes in ([`Input`], and a write's [`Purpose`] and [`Outcome`]),
//! what goes out ([`Command`], [`WriteMode`], [`Timer`], why a fire ran nothing or was missed), and
//! how the machine sees its link and its registration ([`Link`], [`Registration`]).

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::config::ValidatedConfig;
use crate::model::{ExecutionSource, NodeEventKind, Op, RegistryError, SessionState};
use crate::paths::JobNode;
use crate::types::ShardItem;

/// How long the round trip of a [`Command::CheckSession`] may take before its answer is
/// `alive: false`.
pub const SESSION_CHECK_TIMEOUT: Duration = Duration::from_secs(5);

/// A fire held for a session check whose answer has not come after this long asks again: the
/// answer may have been lost (an executor's mailbox that outgrew a stall, a runtime that
/// starved the check's task), and one lost answer must not hold every later fire.
pub const SESSION_CHECK_LOST_AFTER: Duration =
    Duration::from_secs(3 * SESSION_CHECK_TIMEOUT.as_secs());

/// How long the registry may answer nothing, with calls waiting, before a fire at its instant
/// stops trusting the markers it wrote ahead and has no answer for: a fire decided there is held
/// for a session check, and the trigger hands the runs decided ahead for that instant back to
/// their executors (`gated.rs`). A busy registry answers its calls one after another; a stalled
/// one answers none. The same check at the arm, 150 ms before, was measured and not kept: with
/// 30 ms or 100 ms there, ten thousand jobs due in one second met it on a registry busy with
/// their markers (bench scenario 4's p99 up to 97 and 46 ms).
pub const UNANSWERED_BOUND: Duration = Duration::from_millis(100);

/// What a write came to, as the machine branches on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Applied.
    Done,
    /// A node was already there or already gone (the mirror lagged behind a write).
    Conflict,
    /// A checked version did not match: the plan changed under the write.
    Stale,
    /// Anything else (connection loss, timeout): the message says what.
    Failed(String),
}

impl Outcome {
    /// Classifies a registry result.
    pub fn of(result: &Result<(), RegistryError>) -> Self {
        match result {
            Ok(()) => Self::Done,
            Err(e) if e.is_bad_version() => Self::Stale,
            Err(e) if e.is_node_exists() || e.is_no_node() => Self::Conflict,
            Err(e) => Self::Failed(e.to_string()),
        }
    }
}

/// What a write was for: its outcome comes back as [`Input::Written`] with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Purpose {
    /// The start write of the planned run.
    Start,
    /// The start write again, after a conflict: its guards and `running` creations in one
    /// multi-op, once the other writes were applied op by op ([`Purpose::StartClear`]).
    StartTolerant,
    /// The start write's other writes (deletions, misfire flags) op by op, tolerating nodes
    /// already as wanted, before [`Purpose::StartTolerant`].
    StartClear,
    /// Markers written ahead of a fire for these items.
    Prepare(Vec<ShardItem>),
    /// Markers written ahead released.
    Release,
    /// Markers naming this instance that none of its runs accounts for, deleted.
    ClearUnknown,
    /// A run's end write again, op by op.
    EndRetry(u64),
    /// Leaving the job's coordination (removed here).
    Leave,
    /// `instances/{me}` created again.
    Register,
    /// `instances/{me}` of an older session replaced by ours.
    TakeOver,
    /// `trigger/{me}` taken.
    TakeTrigger,
    /// `shardcron/fired/{i}` written after a fire (a job with a catch-up window).
    RecordFired,
    /// A downstream job's registration under its upstreams (`shardcron/downstream/{job}`).
    WorkflowEnsure,
    /// A workflow run's `{run}@start` created (or found created by another instance).
    WorkflowStart,
    /// Items of a skipped workflow run recorded skipped.
    WorkflowSkip,
    /// Old workflow runs' records deleted.
    WorkflowPrune,
    /// Records of items whose instance died mid-item (a job without failover) ended `failed`.
    WorkflowEnd,
}

/// How a write is applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteMode {
    /// Through the session's write batcher (shared multi-ops), awaited.
    Batched,
    /// Through the session's write batcher, not awaited: nothing waits for it, and its outcome
    /// comes back later as [`Input::Written`] (the markers written ahead of a fire).
    Submitted,
    /// One call or one multi-op.
    Direct,
    /// Op by op, nodes already as wanted count as done.
    Tolerant,
}

/// Why a fire ran nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipReason {
    /// A run started after the fire's instant already covers it (fires queued behind a stall).
    Coalesced,
    /// The registry is disconnected: no work starts.
    Disconnected,
    /// The session check after a pause found the session gone.
    SessionLost,
    /// This instance's node still belongs to an older session: its runs may be failed over.
    NotRegistered,
    /// Items were still running at the fire: they are flagged misfire or skipped.
    StillRunning,
    /// The fire came while another waited for the session check.
    AlreadyHeld,
    /// A new plan was committed between the fire's planning and its start write.
    PlanChanged,
    /// Items were still running and already had as many fires buffered as
    /// `shardcron.overlap.buffer` keeps (`buffer_all`).
    BufferFull,
}

impl SkipReason {
    /// Metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Coalesced => "coalesced",
            Self::Disconnected => "disconnected",
            Self::SessionLost => "session_lost",
            Self::NotRegistered => "not_registered",
            Self::StillRunning => "still_running",
            Self::AlreadyHeld => "already_held",
            Self::PlanChanged => "plan_changed",
            Self::BufferFull => "buffer_full",
        }
    }
}

/// Why a fire was dropped: its work will not run (counted in `shardcron_fires_missed_total`).
/// A skip whose items are flagged misfire (`buffer_one`, `cancel_other`) or buffered
/// (`buffer_all`) is not a miss: they run after the current run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MissReason {
    /// `shardcron.overlap: skip` (or ElasticJob's `misfire: false`): items still ran at the fire.
    OverlapSkip,
    /// Collapsed into another fire (queued behind a stall, or held for a session check).
    Coalesced,
    /// This instance could not start work at the fire (disconnected, session lost, stale node,
    /// plan changed).
    CannotStart,
    /// `shardcron.overlap: buffer_all`: the item's buffer of fires was full.
    OverlapBufferFull,
}

impl MissReason {
    /// Metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::OverlapSkip => "overlap_skip",
            Self::Coalesced => "coalesced",
            Self::CannotStart => "cannot_start",
            Self::OverlapBufferFull => "overlap_buffer_full",
        }
    }
}

/// An input to the machine.
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    /// The cron fires soon for `scheduled`: write the free items' markers ahead.
    Prepare {
        /// The coming instant.
        scheduled: DateTime<Utc>,
    },
    /// The cron fires soon for `scheduled`: fire now if nothing is under way, the run held
    /// until the instant (`ahead.rs`).
    Arm {
        /// The coming instant.
        scheduled: DateTime<Utc>,
        /// Whether the fire may be taken before its instant: not for a job whose runs take part
        /// in distribute-once rounds, whose "before" hook runs as the run launches, at the
        /// instant (the executor says which jobs do).
        early: bool,
    },
    /// The cron fired for `scheduled`.
    Fire {
        /// The instant the cron named.
        scheduled: DateTime<Utc>,
    },
    /// Run every owned item once now.
    Trigger,
    /// A run's task ended.
    RunFinished {
        /// The run.
        run_id: u64,
        /// Its items that failed (empty when all succeeded): retried if the job says so.
        failed: Vec<ShardItem>,
    },
    /// A run's batched end write has its outcome.
    RunEnded {
        /// The run.
        run_id: u64,
        /// The end write's outcome.
        outcome: Outcome,
    },
    /// A write the machine asked for has its outcome.
    Written {
        /// What it was for.
        purpose: Purpose,
        /// Its outcome.
        outcome: Outcome,
    },
    /// A node of the job changed (the mirror already holds the change).
    Event {
        /// The node.
        node: JobNode,
        /// What happened to it.
        kind: NodeEventKind,
    },
    /// The mirror was re-listed.
    Resynced,
    /// The job's configuration in the registry was read again (valid).
    Config(Arc<ValidatedConfig>),
    /// The session's connection state changed.
    Session(SessionState),
    /// The disconnection lasted the fencing budget: running items must stop now.
    Fenced,
    /// The node was not scheduled for this long (SIGSTOP, a stalled runtime).
    Paused(Duration),
    /// The trigger did not start this run, decided ahead for its instant, when the instant came:
    /// the registry was silent (`gated.rs`). Its task waits for [`Command::Go`].
    HeldBack {
        /// The run.
        run_id: u64,
    },
    /// The session check asked for by [`Command::CheckSession`] answered.
    SessionChecked {
        /// The session still lives.
        alive: bool,
    },
    /// Stop firing; report once no item runs.
    Drain,
    /// The job is removed from this instance.
    Remove,
    /// The FailoverActor claimed these items for this instance.
    FailoverClaimed(Vec<ShardItem>),
    /// A timer the machine started with [`Command::StartTimer`] ran out.
    TimerFired {
        /// The run it was started for.
        run_id: u64,
        /// Which timer.
        timer: Timer,
    },
}

/// The timers of a run's policies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timer {
    /// `shardcron.timeout` ran out: the run's items are cancelled.
    Timeout,
    /// `shardcron.timeout.grace` ran out after the cancel: the items are ended for good.
    Grace,
    /// A retry's backoff ran out: the failed items run again.
    Retry,
}

/// What the interpreter must do.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// Apply `ops`; feed the outcome back as [`Input::Written`] with `then`.
    Write {
        /// The operations.
        ops: Vec<Op>,
        /// How.
        mode: WriteMode,
        /// What for.
        then: Purpose,
    },
    /// Queue a run's end write on the batcher; its outcome comes back as [`Input::RunEnded`].
    SubmitEnd {
        /// The run.
        run_id: u64,
        /// The writes.
        ops: Vec<Op>,
    },
    /// Start a run of `items`.
    Launch {
        /// Its number.
        run_id: u64,
        /// Why it runs.
        source: ExecutionSource,
        /// The cron instant it answers.
        scheduled: Option<DateTime<Utc>>,
        /// Its items, ascending.
        items: Vec<ShardItem>,
        /// 1 for a first run, 2 for its first retry (`shardcron.retry.max`), and so on.
        attempt: u32,
        /// The job parameter of a manual run triggered with one (`shardcron/trigger/{me}`), in
        /// place of the config's `jobParameter`; `None` for every other run.
        parameter: Option<Arc<str>>,
        /// The workflow run it is a step of (`shardcron.after`); `None` outside workflows.
        workflow: Option<crate::decide::workflow::run::RunId>,
    },
    /// Cancel these running items.
    Cancel(Vec<ShardItem>),
    /// Cancel every running item.
    CancelAll,
    /// (Re)schedule the job with the machine's config.
    Schedule,
    /// Stop firing the job.
    Unschedule,
    /// Ask the ShardingActor to reshard now (this instance leads).
    AskReshard,
    /// Check the session (one registry round trip, off the handler, given up after
    /// [`SESSION_CHECK_TIMEOUT`]), answer with [`Input::SessionChecked`].
    CheckSession,
    /// Raise or lower the resharding flag items see.
    SetResharding(bool),
    /// No run is in progress and failover marks exist: the FailoverActor may claim.
    FailoverIdle,
    /// The leader and failover actors look at the job again.
    Evaluate,
    /// Run with this configuration from now on (listeners, error handler, peers' copy).
    ConfigApplied(Arc<ValidatedConfig>),
    /// Answer the pending drains.
    DrainDone,
    /// Stop the executor: the job is removed here.
    Stop,
    /// The fire is refused (reported to the job's error handler).
    Refuse(String),
    /// Items newly flagged misfire.
    Misfired(Vec<ShardItem>),
    /// A fire (or part of it) ran nothing: counted, and logged at WARN when it starts a streak.
    Skipped {
        /// Why.
        reason: SkipReason,
        /// Items concerned (0 for a whole fire).
        items: usize,
        /// Whether the fire is dropped, and why (`None`: its items run later, flagged misfire).
        missed: Option<MissReason>,
        /// Whether this skip starts a streak (log it at WARN).
        warn: bool,
    },
    /// Log at WARN.
    Warn(String),
    /// The job's part in a workflow run ended (reported by the job's leader, once per run):
    /// counted and published as an event.
    WorkflowRunEnded {
        /// The workflow run.
        run: crate::decide::workflow::run::RunId,
        /// How it ended.
        outcome: crate::decide::workflow::records::WorkflowOutcome,
    },
    /// Send [`Input::TimerFired`] with `run_id` and `timer` after `after` (a timer whose run has
    /// ended meanwhile is ignored).
    StartTimer {
        /// The run.
        run_id: u64,
        /// Which timer.
        timer: Timer,
        /// When.
        after: Duration,
    },
    /// The run is past its timeout: cancel its items (a script's process group gets TERM), and
    /// an item that ends with an error from now on ends as timed out.
    TimeOut {
        /// The run.
        run_id: u64,
        /// How long its processes have between SIGTERM and SIGKILL.
        grace: Duration,
    },
    /// The run's grace after its timeout ran out: drop what of its items still runs (a script's
    /// process group gets KILL) and end them as timed out.
    Abandon {
        /// The run.
        run_id: u64,
    },
    /// These failed items will not be retried after all (the job stops here, the items moved,
    /// no work may start): their last failure, which the error handler did not hear
    /// (`shardcron.retry.notify: final`), is final and is reported to it now.
    FailureStands(Vec<ShardItem>),
    /// The fire of this instant was taken ahead of it: the trigger need not send its `Fire`.
    FiredAhead(DateTime<Utc>),
    /// Open the gate of this run, handed back at its instant ([`Input::HeldBack`]): its items
    /// start, but for those cancelled meanwhile.
    Go(u64),
}

/// How the machine sees its session's link to the registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Link {
    /// Connected: work starts.
    Connected,
    /// Disconnected: no work starts; running items are cancelled at the fencing deadline.
    Disconnected,
    /// The node may have been paused past its session: check the session before any fire.
    Suspect,
}

/// Whose `instances/{me}` node stands, as far as this machine knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Registration {
    /// The mirror showed it owned by this session.
    Confirmed,
    /// This session's create of it succeeded (registration's, a take-over's or a re-creation);
    /// the mirror does not show it yet. An older session's node the mirror still shows meanwhile
    /// is the mirror's lag: taking it over would delete ours.
    Written,
    /// Being written by this session, or unknown; not yet seen in the mirror.
    Unconfirmed,
    /// It belongs to an older session of this instance: being replaced by ours (nothing starts
    /// until then).
    Older(i64),
}
