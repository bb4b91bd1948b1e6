//! A job's whole life on one instance as one pure state machine, in the shape of openraft's
//! `Engine`: the ExecutorActor turns its messages into [`Input`]s, [`JobMachine::step`] changes
//! the state and returns [`Command`]s, and the actor carries the commands out (writes, runs,
//! timers, messages) and feeds their outcomes back as inputs. The machine makes no call: what it
//! needs from the mirror and the clock it reads through [`Facts`], which tests fake.
//!
//! ```text
//!  inputs                                   state                          commands
//!  ──────                                   ─────                          ────────
//!  Prepare, Fire, Trigger ──┐         ┌─ link: Connected │ Disconnected    Write{ops, then}
//!  RunFinished, RunEnded ───┤         │        │ Suspect (check first)     SubmitEnd (batched)
//!  Written{purpose,outcome} ┤         ├─ registration: Confirmed │        Launch / Cancel
//!  Event (mirror) ──────────┼─▶ step ─┤   Unconfirmed │ Older(session) ─▶ Schedule / Unschedule
//!  Resynced, Config ────────┤         ├─ runs, marks, misfire flags        AskReshard, CheckSession
//!  Session, Fenced, Paused ─┤         ├─ parked fire (+ items taken)      FailoverIdle, Evaluate
//!  SessionChecked ──────────┤         ├─ held fire (awaiting the check)   DrainDone, Stop
//!  Drain, Remove, Claimed ──┘         └─ draining │ leaving               Misfired, Skipped, Warn
//! ```
//!
//! A fire goes: coalesced if it was due before the previous fire's handling ended; held for a session
//! check if it is late past [`FenceBudget::late_fire_bound`] or the link is suspect; skipped while
//! disconnected or while this instance's node belongs to an older session; parked while a reshard
//! is pending (items seen running elsewhere meanwhile are left out when it resumes: the fire is
//! bound to the plan it was fired under); otherwise planned by
//! [`plan_run`](super::execution::plan_run).

mod backfill;
mod catchup;
mod fence;
mod fire;
pub mod heed;
mod manual;
mod mirror_facts;
mod overlap;
mod policy;
mod registration;
#[cfg(test)]
mod tests;
mod workflow;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};

pub use fence::FenceBudget;

use crate::config::ValidatedConfig;
use crate::model::ExecutionSource;
use crate::model::{NodeEventKind, Op, RegistryError, SessionState};
use crate::paths::JobNode;
use crate::types::{InstanceId, JobName, ShardItem};
use crate::view::JobView;

use super::execution::LocalRuns;

/// What the machine reads from the mirror and the clock, only when an input needs it.
pub trait Facts {
    /// The job's nodes as the mirror holds them: one snapshot per input (the facts of a step are
    /// read once however many decisions of the step look at them).
    fn view(&self) -> std::rc::Rc<JobView>;
    /// Whether `sharding/{item}/instance` names this instance.
    fn owns(&self, item: ShardItem) -> bool;
    /// Whether the mirror still shows `sharding/{item}/running`.
    fn marker_mirrored(&self, item: ShardItem) -> bool;
    /// The ephemeral owner (session id) of `instances/{me}` as mirrored; `None` when absent.
    fn instance_owner(&self) -> Option<i64>;
    /// The ephemeral owner of the last `instances/{me}` the mirror saw removed (lately); `None`
    /// when it knows of none, or the removed node's owner was never read.
    fn removed_instance_owner(&self) -> Option<i64>;
    /// Whether `leader/failover/items` has children.
    fn has_failover_marks(&self) -> bool;
    /// Now, by the injected clock.
    fn now(&self) -> DateTime<Utc>;
    /// The last measured difference between the local and the registry's clock.
    fn clock_skew(&self) -> Option<Duration>;
    /// The catch-up record `shardcron/fired/{i}` as mirrored (read only by a job with a catch-up
    /// window); none by default.
    fn fired(&self) -> crate::decide::catchup::FiredRecord {
        crate::decide::catchup::FiredRecord::default()
    }
    /// Item `item`'s catch-up record as mirrored (`None`: none, or not an instant).
    fn fired_item(&self, item: ShardItem) -> Option<DateTime<Utc>> {
        self.fired().items.get(&item).copied().flatten()
    }
    /// The data of `shardcron/trigger/{me}`, the parameters of this instance's pending trigger
    /// ([`crate::decide::trigger_params`]); none by default.
    fn trigger_params(&self) -> Option<Vec<u8>> {
        None
    }
    /// The data of `shardcron/backfill`, a backfill's request ([`crate::decide::backfill`]);
    /// none by default.
    fn backfill_request(&self) -> Option<Vec<u8>> {
        None
    }
    /// The data of each `shardcron/backfill/{i}`, the items' progress; none by default.
    fn backfill_progress(&self) -> std::collections::BTreeMap<ShardItem, Vec<u8>> {
        std::collections::BTreeMap::new()
    }
    /// The workflow records of `job` (this job or an upstream): each child of
    /// `/{job}/shardcron/workflow` as (name, data, creation transaction id); none by default.
    fn workflow_records(&self, _job: &JobName) -> Vec<(String, Vec<u8>, i64)> {
        Vec::new()
    }
    /// How many items `job` has (its `sharding/{i}` nodes); 0 by default.
    fn item_total(&self, _job: &JobName) -> u32 {
        0
    }
    /// Whether `/{job}` exists; true by default.
    fn job_exists(&self, _job: &JobName) -> bool {
        true
    }
    /// The creation transaction id of `/{upstream}/shardcron/downstream/{downstream}`; `None`
    /// when absent (the default).
    fn downstream_since(&self, _upstream: &JobName, _downstream: &JobName) -> Option<i64> {
        None
    }
    /// Whether some job runs after this one (`shardcron/downstream` has children); false by
    /// default.
    fn has_downstream(&self) -> bool {
        false
    }
}

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
    /// Check the session (one registry round trip, off the handler), answer with
    /// [`Input::SessionChecked`].
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
    /// Written by this session (or unknown); not yet seen in the mirror.
    Unconfirmed,
    /// It belongs to an older session of this instance: being replaced by ours (nothing starts
    /// until then).
    Older(i64),
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Run {
    items: Vec<ShardItem>,
    end_ops: Vec<Op>,
    started: DateTime<Utc>,
    /// Its timeout ran out: it was cancelled and its grace runs.
    timed_out: bool,
    /// 1 for a first run, 2 for its first retry, and so on.
    attempt: u32,
    source: ExecutionSource,
    scheduled: Option<DateTime<Utc>>,
    /// A retry waiting for its backoff: its items hold their `running` markers (a crash of this
    /// instance fails them over) and count as running here.
    backing_off: bool,
    /// The job parameter a trigger with parameters gave it.
    parameter: Option<Arc<str>>,
    /// The workflow run it is a step of (its items' records are ended by its end write).
    workflow: Option<crate::decide::workflow::run::RunId>,
}

/// A trigger's parameters, kept until its manual run launches.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Manual {
    parameter: Option<Arc<str>>,
    items: Option<BTreeSet<ShardItem>>,
    /// The workflow run the trigger starts (a root job's, `shardcron/trigger/{me}` naming one).
    workflow: Option<crate::decide::workflow::run::RunId>,
}

/// A planned run waiting for its start write.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Starting {
    source: ExecutionSource,
    scheduled: Option<DateTime<Utc>>,
    plan: super::execution::RunPlan,
}

/// A fire waiting for a reshard to end.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Parked {
    source: ExecutionSource,
    scheduled: Option<DateTime<Utc>>,
    /// Items seen running on another instance since the fire: they ran (or run) under the plan
    /// before the reshard, and this fire does not run them again.
    taken: BTreeSet<ShardItem>,
}

/// One job's state on one instance, for one session.
#[derive(Debug)]
pub struct JobMachine {
    job: JobName,
    me: InstanceId,
    session: i64,
    fence: FenceBudget,
    config: Arc<ValidatedConfig>,
    runs: Vec<(u64, Run)>,
    local: LocalRuns,
    next_run: u64,
    starting: Option<Box<Starting>>,
    parked: Option<Box<Parked>>,
    held: Option<Box<(ExecutionSource, Option<DateTime<Utc>>)>>,
    link: Link,
    registration: Registration,
    trigger_queued: bool,
    draining: bool,
    leaving: bool,
    resharding: bool,
    /// When the last cron fire's handling ended: fires due before it were queued behind a stall.
    served_until: Option<DateTime<Utc>>,
    /// A skip streak is under way (logged once at WARN, not at every fire).
    behind: bool,
    /// `shardcron.overlap: buffer_all`: the fires each item still owes, run one after another
    /// once its current run ends (empty, and allocating nothing, under any other policy).
    buffered: overlap::Owed,
    /// The labels this instance carries, written in its `instances/{me}` node.
    labels: Vec<String>,
    /// Deletions of `instances/{me}` this machine's own take-overs made and whose events have not
    /// come yet: a take-over judged on a mirror that lagged may delete this session's own node
    /// (and create it again in the same write), and that deletion is nobody's shutdown.
    own_deletions: u8,
    /// The catch-up window's state; `None` for a job without one.
    catchup: Option<Box<catchup::CatchUp>>,
    /// What the pending manual run was asked to carry (a trigger with parameters).
    manual: Option<Box<Manual>>,
    /// The backfill this instance takes part in; `None` when there is none.
    backfill: Option<Box<backfill::Backfilling>>,
    /// The job's part in workflows; `None` for a job outside any.
    flow: Option<Box<workflow::Flow>>,
}

impl JobMachine {
    /// A machine for `job` on `me`, registered on session `session` (`registration` says whether
    /// the instance node is ours), running with `config`.
    pub fn new(
        job: JobName,
        me: InstanceId,
        session: i64,
        fence: FenceBudget,
        config: Arc<ValidatedConfig>,
        registration: Registration,
    ) -> Self {
        let catchup = catchup::CatchUp::for_config(&config);
        let flow = workflow::Flow::for_config(&config);
        Self {
            catchup,
            flow,
            manual: None,
            backfill: None,
            job,
            me,
            session,
            fence,
            config,
            runs: Vec::new(),
            local: LocalRuns::default(),
            next_run: 0,
            starting: None,
            parked: None,
            held: None,
            link: Link::Connected,
            registration,
            trigger_queued: false,
            draining: false,
            leaving: false,
            resharding: false,
            served_until: None,
            behind: false,
            buffered: overlap::Owed::default(),
            labels: Vec::new(),
            own_deletions: 0,
        }
    }

    /// The labels this instance carries (`NodeBuilder::labels`): every `instances/{me}` node the
    /// machine writes names them, as the first registration did.
    pub fn with_labels(mut self, labels: Vec<String>) -> Self {
        self.labels = labels;
        self
    }

    /// The labels this instance carries.
    pub(crate) fn labels(&self) -> &[String] {
        &self.labels
    }

    /// The job.
    pub fn job(&self) -> &JobName {
        &self.job
    }

    /// The configuration the job runs with.
    pub fn config(&self) -> &Arc<ValidatedConfig> {
        &self.config
    }

    /// Whether no run is in progress and the job may take failover claims.
    pub fn is_idle(&self) -> bool {
        self.runs.is_empty() && !self.draining && !self.leaving && self.link == Link::Connected
    }

    /// The link as the machine sees it.
    pub fn link(&self) -> Link {
        self.link
    }

    /// The registration as the machine sees it.
    pub fn registration(&self) -> Registration {
        self.registration
    }

    /// Items running now.
    pub fn running(&self) -> &BTreeSet<ShardItem> {
        &self.local.running
    }

    /// Gives back the memory of empty collections (ten thousand idle jobs hold nothing).
    pub fn release_empty(&mut self) {
        self.local.release_empty();
        if self.runs.is_empty() {
            self.runs = Vec::new();
        }
        if self.buffered.is_empty() {
            self.buffered.clear();
        }
    }

    /// One input in, the commands it asks for out.
    pub fn step(&mut self, input: Input, facts: &dyn Facts) -> Vec<Command> {
        let mut out = Vec::new();
        let look_for_missed = self.catchup.is_some() && catchup::looks_after(&input);
        let backfill = self.backfill_heard(&input);
        let flow = self.workflow_heard(&input);
        match input {
            Input::Prepare { scheduled } => self.prepare(scheduled, facts, &mut out),
            Input::Fire { scheduled } => {
                self.fire(ExecutionSource::Normal, Some(scheduled), facts, &mut out)
            }
            Input::Trigger => {
                if self.runs.is_empty() || self.settings().allow_overlap {
                    self.fire_manual(facts, &mut out)
                } else {
                    self.trigger_queued = true;
                }
            }
            Input::RunFinished { run_id, failed } => {
                self.run_finished(run_id, failed, facts, &mut out)
            }
            Input::RunEnded { run_id, outcome } => match outcome {
                Outcome::Done => self.finish(run_id, true, facts, &mut out),
                _ => {
                    if let Some(run) = self.run(run_id) {
                        out.push(Command::Write {
                            ops: run.end_ops.clone(),
                            mode: WriteMode::Tolerant,
                            then: Purpose::EndRetry(run_id),
                        });
                    }
                }
            },
            Input::Written { purpose, outcome } => self.written(purpose, outcome, facts, &mut out),
            Input::Event { node, kind } => self.event(node, kind, facts, &mut out),
            Input::Resynced => {
                self.resynced(facts, &mut out);
                self.clear_unknown_markers(facts, &mut out);
                self.resume_parked(facts, &mut out);
            }
            Input::Config(new) => self.config_changed(new, &mut out),
            Input::Session(s) => self.session_changed(s, facts, &mut out),
            Input::Fenced => {
                if self.link == Link::Disconnected && !self.runs.is_empty() {
                    out.push(Command::CancelAll);
                }
            }
            Input::Paused(for_) => self.paused(for_, &mut out),
            Input::SessionChecked { alive } => self.session_checked(alive, facts, &mut out),
            Input::Drain => {
                self.draining = true;
                self.release_marks(&mut out);
                out.push(Command::Unschedule);
                if self.runs.is_empty() {
                    out.push(Command::DrainDone);
                } else {
                    self.end_backoffs(facts, &mut out);
                }
            }
            Input::Remove => self.leave(facts, &mut out),
            Input::FailoverClaimed(items) => {
                if self.draining || self.leaving {
                    // Not run: `failovering` names this instance, so its departure fails them
                    // over again.
                    out.push(Command::Warn(format!(
                        "failover claim of items {items:?} not run: the job is stopping here"
                    )));
                } else {
                    let end_ops = super::failover::finish_ops(&self.job, &items);
                    // Items of a workflow run keep its instant and end its records.
                    let taken = self.workflow_taken(&items, facts);
                    let scheduled = taken.as_ref().and_then(|(_, at)| *at);
                    self.launch(
                        ExecutionSource::Failover,
                        scheduled,
                        items,
                        (end_ops, taken.map(|(run, _)| run)),
                        facts,
                        &mut out,
                    );
                }
            }
            Input::TimerFired { run_id, timer } => self.timer_fired(run_id, timer, facts, &mut out),
        }
        if look_for_missed {
            self.catch_up(facts, &mut out);
        }
        self.backfill_after(backfill, facts, &mut out);
        self.workflow_after(flow, facts, &mut out);
        out
    }

    /// After a re-list: `running` markers naming this instance that none of its runs, markers
    /// written ahead or starts accounts for are left from a write whose reply was lost (a start
    /// that failed on a connection loss, but applied) or from an earlier session. Nobody else
    /// removes them: this instance is live, so they are neither failed over nor cleared as a dead
    /// owner's, and the leader's reshard waits for them (and every fire parks behind it) forever.
    /// A marker a failover claim wrote (its `failovering` names this instance) may arrive before
    /// the claim does: it is left alone.
    fn clear_unknown_markers(&mut self, facts: &dyn Facts, out: &mut Vec<Command>) {
        if self.leaving || self.draining || self.link == Link::Disconnected {
            return;
        }
        let starting = self.starting.as_ref().map(|s| s.plan.run.as_slice());
        let known = |item: &ShardItem| {
            self.local.running.contains(item)
                || self.local.marked.contains(item)
                || self.local.ended.contains(item)
                || starting.is_some_and(|s| s.contains(item))
        };
        let view = facts.view();
        let ops: Vec<Op> = view
            .items
            .iter()
            .filter(|(item, v)| {
                v.running.as_deref() == Some(self.me.as_str())
                    && v.failovering.as_ref() != Some(&self.me)
                    && !known(item)
            })
            .map(|(item, _)| Op::delete(JobNode::ShardingRunning(*item).to_path(&self.job)))
            .collect();
        if !ops.is_empty() {
            out.push(Command::Write {
                ops,
                mode: WriteMode::Tolerant,
                then: Purpose::ClearUnknown,
            });
        }
    }

    fn run(&self, run_id: u64) -> Option<&Run> {
        self.runs.iter().find(|(i, _)| *i == run_id).map(|(_, r)| r)
    }

    fn config_changed(&mut self, new: Arc<ValidatedConfig>, out: &mut Vec<Command>) {
        if new.config() == self.config.config() {
            // Unchanged (a resync, or a write of the same text): keep the shared copy.
            out.push(Command::Evaluate);
            return;
        }
        let (old, next) = (self.config.config(), new.config());
        let reschedule = next.cron != old.cron || next.time_zone != old.time_zone;
        if reschedule || !next.monitor_execution {
            self.release_marks(out);
        }
        self.config = new.clone();
        self.catchup_reconfigured();
        self.overlap_changed();
        self.workflow_reconfigured();
        out.push(Command::ConfigApplied(new));
        if reschedule && !self.draining && !self.leaving {
            out.push(Command::Schedule);
        }
        out.push(Command::Evaluate);
    }

    fn event(
        &mut self,
        node: JobNode,
        kind: NodeEventKind,
        facts: &dyn Facts,
        out: &mut Vec<Command>,
    ) {
        use NodeEventKind::{Created, DataChanged, Deleted};
        match (node, kind) {
            (JobNode::LeaderShardingNecessary, Created) => {
                self.resharding = true;
                out.push(Command::SetResharding(true));
            }
            (JobNode::LeaderShardingNecessary | JobNode::LeaderShardingProcessing, Deleted) => {
                self.resume_parked(facts, out)
            }
            (JobNode::ShardingRunning(item), Deleted) => {
                self.local.ended.remove(&item);
            }
            (JobNode::DownstreamJob(_), Created) => self.downstream_seen(),
            (JobNode::FiredItem(item), DataChanged | Deleted)
                if self.record_behind(item, facts) =>
            {
                self.catch_up(facts, out)
            }
            (JobNode::ShardingRunning(item), Created) => {
                let ours = self.local.running.contains(&item) || self.local.marked.contains(&item);
                if let (Some(p), false) = (self.parked.as_mut(), ours) {
                    p.taken.insert(item);
                }
            }
            // One event per item when a plan is committed: that item's owner only.
            (JobNode::ShardingInstance(item), _)
                if self.local.running.contains(&item) && !facts.owns(item) =>
            {
                out.push(Command::Cancel(vec![item]));
            }
            // A fire parked before the job's first plan resumes once an owner appears (the
            // flags' deletion may have been heard before any owner was), and a reshard asked
            // for is over.
            (JobNode::ShardingInstance(_), _) if self.parked.is_some() || self.resharding => {
                self.resume_parked(facts, out)
            }
            (JobNode::TriggerInstance(id), Created) if id == self.me => {
                self.take_trigger(facts, out);
                let commands = self.step(Input::Trigger, facts);
                out.extend(commands);
            }
            (JobNode::Instance(id), Created | DataChanged) if id == self.me => {
                self.instance_seen(facts, out)
            }
            (JobNode::Instance(id), Deleted) if id == self.me => self.instance_deleted(facts, out),
            (JobNode::Root, Deleted) => {
                out.push(Command::Warn(
                    "job removed from the registry: stopping it here".into(),
                ));
                self.leave(facts, out);
            }
            _ => {}
        }
    }

    fn written(
        &mut self,
        purpose: Purpose,
        outcome: Outcome,
        facts: &dyn Facts,
        out: &mut Vec<Command>,
    ) {
        let outcome = match (&purpose, outcome) {
            // Only a start write checks versions; elsewhere a mismatch is a lost race like any.
            (Purpose::Start | Purpose::StartTolerant, o) => o,
            (_, Outcome::Stale) => Outcome::Conflict,
            (_, o) => o,
        };
        match (purpose, outcome) {
            (Purpose::Start | Purpose::StartTolerant, Outcome::Done) => self.started(facts, out),
            (Purpose::Start | Purpose::StartTolerant, Outcome::Stale) => {
                // The owner nodes changed since the plan: a new plan was committed that this
                // mirror does not show yet. Nothing of this fire starts here; the new owners
                // run its items.
                self.starting = None;
                self.skipped(SkipReason::PlanChanged, 0, out);
            }
            (Purpose::Start, Outcome::Conflict) => {
                // The mirror was behind: a node it showed is gone (our own end write), or one it
                // did not show is there. The deletions and misfire flags are applied op by op,
                // then the guards and the `running` creations in one multi-op: a `running` that
                // exists now is another instance's (a failover claim this mirror has not shown)
                // or unknown, and the fire must not start beside it; tolerating it ran an item
                // on two instances at once (5-minute soak, seed 15002084389404642889).
                if let Some(s) = &self.starting {
                    let (guarded, other) = split_start(&s.plan.start_ops);
                    if other.is_empty() {
                        out.push(Command::Write {
                            ops: guarded,
                            mode: WriteMode::Direct,
                            then: Purpose::StartTolerant,
                        });
                    } else {
                        out.push(Command::Write {
                            ops: other,
                            mode: WriteMode::Tolerant,
                            then: Purpose::StartClear,
                        });
                    }
                }
            }
            (Purpose::StartClear, Outcome::Done) => {
                if let Some(s) = &self.starting {
                    out.push(Command::Write {
                        ops: split_start(&s.plan.start_ops).0,
                        mode: WriteMode::Direct,
                        then: Purpose::StartTolerant,
                    });
                }
            }
            (
                Purpose::Start | Purpose::StartTolerant | Purpose::StartClear,
                Outcome::Conflict | Outcome::Failed(_),
            )
            | (Purpose::StartClear, Outcome::Stale) => {
                self.starting = None;
                out.push(Command::Warn(
                    "fire skipped: writing running markers failed".into(),
                ));
            }
            (Purpose::Prepare(items), Outcome::Done) => {
                for i in &items {
                    self.local.ended.remove(i);
                }
                self.local.marked.extend(items);
            }
            (Purpose::Prepare(_), _) => {}
            (Purpose::Release, Outcome::Done) => self.local.marked.clear(),
            (Purpose::Release, Outcome::Conflict | Outcome::Stale | Outcome::Failed(_)) => {
                // Kept: the next fire uses them, or a new session clears this instance's markers.
                out.push(Command::Warn(
                    "releasing markers written ahead failed".into(),
                ))
            }
            (Purpose::ClearUnknown, Outcome::Failed(e)) => out.push(Command::Warn(format!(
                "removing running markers no run here accounts for failed: {e}"
            ))),
            (Purpose::ClearUnknown, _) => {}
            (Purpose::EndRetry(run_id), outcome) => {
                if outcome != Outcome::Done {
                    out.push(Command::Warn(format!(
                        "removing running markers failed: {outcome:?}"
                    )));
                }
                self.finish(run_id, outcome == Outcome::Done, facts, out)
            }
            (Purpose::Leave, Outcome::Done) => {}
            (Purpose::Leave, outcome) => out.push(Command::Warn(format!(
                "leaving the job's coordination failed: {outcome:?}"
            ))),
            (p @ (Purpose::Register | Purpose::TakeOver), outcome) => {
                self.reregistered(p, outcome, out)
            }
            (Purpose::TakeTrigger, Outcome::Failed(e)) => {
                out.push(Command::Warn(format!("cannot take the trigger node: {e}")))
            }
            (Purpose::TakeTrigger, _) => {}
            (Purpose::RecordFired, Outcome::Done) => {}
            (
                Purpose::WorkflowEnsure
                | Purpose::WorkflowStart
                | Purpose::WorkflowSkip
                | Purpose::WorkflowPrune
                | Purpose::WorkflowEnd,
                Outcome::Done | Outcome::Conflict,
            ) => {}
            (
                p @ (Purpose::WorkflowEnsure
                | Purpose::WorkflowStart
                | Purpose::WorkflowSkip
                | Purpose::WorkflowPrune
                | Purpose::WorkflowEnd),
                outcome,
            ) => out.push(Command::Warn(format!(
                "writing workflow records ({p:?}) failed: {outcome:?}"
            ))),
            (Purpose::RecordFired, outcome) => out.push(Command::Warn(format!(
                "recording the fired instant for the catch-up window failed: {outcome:?}"
            ))),
        }
    }

    fn leave(&mut self, facts: &dyn Facts, out: &mut Vec<Command>) {
        if self.leaving {
            return;
        }
        // Leave the job's coordination at once: the others reshard without this instance, and
        // one of them leads if this one did.
        self.leaving = true;
        let mut ops =
            super::prepare::release_ops(&self.job, std::mem::take(&mut self.local.marked));
        ops.push(Op::delete(
            JobNode::Instance(self.me.clone()).to_path(&self.job),
        ));
        if facts.view().leader.as_ref() == Some(&self.me) {
            ops.push(Op::delete(
                JobNode::LeaderElectionInstance.to_path(&self.job),
            ));
        }
        out.push(Command::Unschedule);
        out.push(Command::Write {
            ops,
            mode: WriteMode::Tolerant,
            then: Purpose::Leave,
        });
        out.push(Command::Stop);
    }
}

/// A start write's guards and `running` creations (applied in one multi-op after a conflict), and
/// its other writes (applied op by op before them).
fn split_start(ops: &[Op]) -> (Vec<Op>, Vec<Op>) {
    ops.iter().cloned().partition(|op| match op {
        Op::Check { .. } => true,
        Op::Create { path, .. } => {
            matches!(
                JobNode::parse(path),
                Ok((_, JobNode::ShardingRunning(_) | JobNode::WorkflowRecord(_)))
            )
        }
        _ => false,
    })
}
