//! A job's whole life on one instance as one pure state machine, in the shape of openraft's
//! `Engine`: the ExecutorActor turns its messages into [`Input`]s, [`JobMachine::step`] changes
//! the state and returns [`Command`]s, and the actor carries the commands out (writes, runs,
//! timers, messages) and feeds their outcomes back as inputs. The machine makes no call: what it
//! needs from the mirror and the clock it reads through [`Facts`], which tests fake.
//!
//! ```text
//!  inputs                                   state                          commands
//!  ──────                                   ─────                          ────────
//!  Prepare, Arm, Fire, ─────┐         ┌─ link: Connected │ Disconnected    Write{ops, then}
//!  Trigger                  │         │                                   FiredAhead, Go
//!  RunFinished, RunEnded ───┤         │        │ Suspect (check first)     SubmitEnd (batched)
//!  Written{purpose,outcome} ┤         ├─ registration: Confirmed │        Launch / Cancel
//!  Event (mirror) ──────────┼─▶ step ─┤  Written │ Unconfirmed │ Older ─▶ Schedule / Unschedule
//!  Resynced, Config ────────┤         ├─ runs (gated), marks, misfires     AskReshard, CheckSession
//!  Session, Fenced, Paused ─┤         ├─ parked fire (+ items taken)      FailoverIdle, Evaluate
//!  SessionChecked, HeldBack ┤         ├─ held fire (awaiting the check)   DrainDone, Stop
//!  Drain, Remove, Claimed ──┘         ├─ draining │ leaving               Misfired, Skipped, Warn
//!                                     └─ the coming instant's fire taken ahead (`ahead.rs`)
//! ```
//!
//! A fire goes: coalesced if it was due before the previous fire's handling ended; held for a session
//! check if it is late past [`FenceBudget::late_fire_bound`] or the link is suspect; skipped while
//! disconnected or while this instance's node belongs to an older session; parked while a reshard
//! is pending (items seen running elsewhere meanwhile are left out when it resumes: the fire is
//! bound to the plan it was fired under); otherwise planned by
//! [`plan_run`](super::execution::plan_run). A start write that a newer plan refused drops a cron
//! fire (its new owners fire it too) and parks a manual one until the mirror shows that plan
//! (`written.rs`).

mod ahead;
mod backfill;
mod catchup;
mod fence;
mod fire;
mod gated;
pub mod heed;
mod manual;
mod marked;
mod mirror_facts;
mod overlap;
mod policy;
mod protocol;
mod registration;
mod runs;
mod step;
#[cfg(test)]
mod tests;
mod workflow;
mod written;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};

pub use fence::FenceBudget;
pub use protocol::{
    Command, Input, Link, MissReason, Outcome, Purpose, Registration, SkipReason, Timer, WriteMode,
    SESSION_CHECK_LOST_AFTER, SESSION_CHECK_TIMEOUT, UNANSWERED_BOUND,
};

use crate::config::ValidatedConfig;
use crate::model::ExecutionSource;
use crate::model::Op;
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
    /// How long the registry session has waited on its calls without any answer
    /// ([`Silence`](crate::model::Silence)); zero when nothing waits or nobody counts.
    fn registry_silent_for(&self) -> Duration {
        Duration::ZERO
    }
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
    /// It ended while a marker of its items was still unanswered: its end write waits for the
    /// answer ([`LocalRuns::unconfirmed`](super::execution::LocalRuns::unconfirmed)), so a
    /// refused marker's deletion is never written over another instance's marker.
    end_held: bool,
    /// Handed back by the trigger at its instant on a silent registry: its task waits at a gate
    /// for [`Command::Go`] (`gated.rs`).
    gated: bool,
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

/// A fire waiting for a reshard to end, or for the plan that refused its start write to reach
/// the mirror (`written.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Parked {
    source: ExecutionSource,
    scheduled: Option<DateTime<Utc>>,
    /// Items seen running on another instance since the fire: they ran (or run) under the plan
    /// before the reshard, and this fire does not run them again.
    taken: BTreeSet<ShardItem>,
}

/// A fire held until the session check asked for it answers.
#[derive(Debug, Clone)]
struct Held {
    source: ExecutionSource,
    scheduled: Option<DateTime<Utc>>,
    /// When the check was asked.
    asked: DateTime<Utc>,
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
    held: Option<Box<Held>>,
    link: Link,
    registration: Registration,
    trigger_queued: bool,
    draining: bool,
    leaving: bool,
    resharding: bool,
    /// A prepare found nothing to mark (the job not sharded yet, or a reshard pending) and its
    /// fire has not come: the plan's arrival before the instant prepares again.
    prepare_owed: bool,
    /// When the last cron fire's handling ended: fires due before it were queued behind a stall.
    served_until: Option<DateTime<Utc>>,
    /// A skip streak is under way (logged once at WARN, not at every fire).
    behind: bool,
    /// `shardcron.overlap: buffer_all`: the fires each item still owes, run one after another
    /// once its current run ends (empty, and allocating nothing, under any other policy).
    buffered: overlap::Owed,
    /// The labels this instance carries, written in its `instances/{me}` node.
    /// (One pointer: a job of an instance without labels allocates nothing for them.)
    labels: Option<Box<Box<[String]>>>,
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
    /// The coming instant's fire decided ahead of it (`ahead.rs`).
    ahead: Option<ahead::Ahead>,
}
