//! Fires decided ahead of their instant: the trigger sends [`Input::Arm`] a little before a cron
//! instant, and a job with nothing under way takes its fire then, as if the instant had come.
//! Its run is launched for the instant ([`Command::Launch`] with `scheduled` still ahead), and the
//! executor hands it to the trigger, which starts it when the instant comes: no run starts before
//! its instant, and the trigger sends no `Fire` for an instant whose run it holds. A fire taken
//! ahead that launched no run for its instant (skipped, or waiting for its start write) says so
//! with [`Command::FiredAhead`].
//!
//! The fire is decided on what the mirror shows some milliseconds early: a change that arrives
//! between the decision and the instant is handled after the fire, as if it had arrived just after
//! the instant (the window a watch notification's delay opens anyway). A job with anything under
//! way (a run, a start write, a parked or held fire, a catch-up, backfill, workflow, manual
//! trigger or buffered fire), or without a plan or with a reshard pending, is not armed: its fire
//! stays at its instant, unless what was under way ends before the instant
//! ([`JobMachine::arm_again`]). Nor is a job whose arm says it may not fire early (one taking part
//! in distribute-once rounds).
//!
//! [`Input::Arm`]: super::Input::Arm

use std::rc::Rc;
use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::model::ExecutionSource;
use crate::types::{JobName, ShardItem};
use crate::view::JobView;

use super::{Command, Facts, JobMachine, Link};

/// Where the coming instant's early fire stands, in eight bytes (the machine is part of every
/// job's executor state, which has no room for a second instant): the instant in microseconds,
/// shifted left once, with the low bit set once the fire is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Ahead(std::num::NonZeroI64);

impl Ahead {
    /// Asked for `at`, not taken yet; `None` for an instant this cannot hold (not a whole
    /// microsecond, or beyond the year 140,000).
    fn wanted(at: DateTime<Utc>) -> Option<Self> {
        let micros = at.timestamp_micros();
        let exact = DateTime::from_timestamp_micros(micros) == Some(at);
        let shifted = micros.checked_mul(2).filter(|_| exact)?;
        std::num::NonZeroI64::new(shifted).map(Self)
    }

    /// The instant.
    fn at(self) -> Option<DateTime<Utc>> {
        DateTime::from_timestamp_micros(self.0.get() >> 1)
    }

    /// Whether the fire was taken.
    fn fired(self) -> bool {
        self.0.get() & 1 == 1
    }

    /// The same instant, its fire taken.
    fn taken(self) -> Self {
        Self(self.0 | 1)
    }
}

impl JobMachine {
    /// The trigger asks for the fire of `at` now; one that may not fire `early` waits for the
    /// instant's `Fire`.
    pub(super) fn arm(
        &mut self,
        at: DateTime<Utc>,
        early: bool,
        facts: &dyn Facts,
        out: &mut Vec<Command>,
    ) {
        self.ahead = Ahead::wanted(at).filter(|_| early);
        self.arm_again(facts, out);
    }

    /// Takes the wanted early fire if the job is idle now and its instant still ahead (after
    /// every input: a run that ends before the instant leaves the job free to be armed).
    pub(super) fn arm_again(&mut self, facts: &dyn Facts, out: &mut Vec<Command>) {
        let Some(wanted) = self.ahead.filter(|a| !a.fired()) else {
            return;
        };
        let now = facts.now();
        let Some(at) = wanted.at().filter(|at| now < *at) else {
            // Too late to fire ahead: the instant's `Fire` fires it.
            self.ahead = None;
            return;
        };
        if !self.may_fire_ahead() {
            return;
        }
        // A job without a plan, or with a reshard pending, would park its fire: that stays at the
        // instant, as without an arm (the plan's arrival before the instant arms it then).
        let view = facts.view();
        let unsharded = !view.items.values().any(|v| v.has_owner_node);
        if unsharded || view.sharding_necessary || view.sharding_processing {
            return;
        }
        drop(view);
        self.ahead = Some(wanted.taken());
        let from = out.len();
        self.fire(
            ExecutionSource::Normal,
            Some(at),
            &AtInstant { facts, at },
            out,
        );
        // A timer counts from the instant, when the run starts, not from now.
        let early = (at - now).to_std().unwrap_or_default();
        let mut launched = false;
        for c in &mut out[from..] {
            match c {
                Command::StartTimer { after, .. } => *after += early,
                Command::Launch { scheduled, .. } => launched |= *scheduled == Some(at),
                _ => {}
            }
        }
        // A run launched for the instant tells the trigger itself (it holds the run).
        if !launched {
            out.push(Command::FiredAhead(at));
        }
    }

    /// The cron's `Fire` for `scheduled`: whether it was taken ahead already (then it is
    /// ignored). Any other instant clears the early fire's state.
    pub(super) fn fired_ahead(&mut self, scheduled: DateTime<Utc>) -> bool {
        let ahead = self.ahead.take();
        ahead.is_some_and(|a| a.fired() && a.at() == Some(scheduled))
    }

    /// Whether nothing is under way that the fire would have to wait for or decide around.
    fn may_fire_ahead(&self) -> bool {
        self.may_start()
            && self.link == Link::Connected
            && self.runs.is_empty()
            && self.starting.is_none()
            && self.parked.is_none()
            && self.held.is_none()
            && !self.resharding
            && !self.trigger_queued
            && self.catchup.is_none()
            && self.backfill.is_none()
            && self.flow.is_none()
            && self.manual.is_none()
            && self.buffered.is_empty()
    }
}

/// The facts as they stand, at the instant `at`: the fire decided ahead is neither late nor
/// served before its instant.
struct AtInstant<'a> {
    facts: &'a dyn Facts,
    at: DateTime<Utc>,
}

impl Facts for AtInstant<'_> {
    fn view(&self) -> Rc<JobView> {
        self.facts.view()
    }
    fn owns(&self, item: ShardItem) -> bool {
        self.facts.owns(item)
    }
    fn marker_mirrored(&self, item: ShardItem) -> bool {
        self.facts.marker_mirrored(item)
    }
    fn instance_owner(&self) -> Option<i64> {
        self.facts.instance_owner()
    }
    fn removed_instance_owner(&self) -> Option<i64> {
        self.facts.removed_instance_owner()
    }
    fn has_failover_marks(&self) -> bool {
        self.facts.has_failover_marks()
    }
    fn now(&self) -> DateTime<Utc> {
        self.at.max(self.facts.now())
    }
    fn registry_silent_for(&self) -> Duration {
        // A fire taken ahead is decided on its markers whatever the session's silence (the check
        // at the arm was measured and not kept: `UNANSWERED_BOUND`'s docs); the trigger checks
        // the silence at the instant and hands the run back (`gated.rs`).
        Duration::ZERO
    }
    fn clock_skew(&self) -> Option<Duration> {
        self.facts.clock_skew()
    }
    fn fired(&self) -> crate::decide::catchup::FiredRecord {
        self.facts.fired()
    }
    fn fired_item(&self, item: ShardItem) -> Option<DateTime<Utc>> {
        self.facts.fired_item(item)
    }
    fn trigger_params(&self) -> Option<Vec<u8>> {
        self.facts.trigger_params()
    }
    fn backfill_request(&self) -> Option<Vec<u8>> {
        self.facts.backfill_request()
    }
    fn backfill_progress(&self) -> std::collections::BTreeMap<ShardItem, Vec<u8>> {
        self.facts.backfill_progress()
    }
    fn workflow_records(&self, job: &JobName) -> Vec<(String, Vec<u8>, i64)> {
        self.facts.workflow_records(job)
    }
    fn item_total(&self, job: &JobName) -> u32 {
        self.facts.item_total(job)
    }
    fn job_exists(&self, job: &JobName) -> bool {
        self.facts.job_exists(job)
    }
    fn downstream_since(&self, upstream: &JobName, downstream: &JobName) -> Option<i64> {
        self.facts.downstream_since(upstream, downstream)
    }
    fn has_downstream(&self) -> bool {
        self.facts.has_downstream()
    }
}
