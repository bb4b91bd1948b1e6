//! The machine's fires: prepare, fire, park for a reshard and resume, misfire catch-up, queued
//! trigger, drain; a run's start write, launch and end write in `runs.rs`.

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};

use crate::config::Overlap;
use crate::decide::execution::{plan_run, FireSettings};
use crate::decide::prepare::plan_prepare;
use crate::model::ExecutionSource;
use crate::types::ShardItem;
use crate::view::{JobView, ServerStatus};

use super::{
    Command, Facts, Held, JobMachine, Link, MissReason, Parked, Purpose, Registration, SkipReason,
    Starting, WriteMode, SESSION_CHECK_LOST_AFTER, UNANSWERED_BOUND,
};

impl JobMachine {
    pub(super) fn settings(&self) -> FireSettings {
        let c = self.config.config();
        let overlap = self.config.policy().overlap;
        FireSettings {
            monitor_execution: c.monitor_execution,
            failover: c.failover,
            // `misfire` unless the job names its overlap policy (`shardcron.overlap`).
            misfire: overlap != Overlap::Skip,
            allow_overlap: overlap == Overlap::AllowAll,
            total: self.config.sharding_total_count(),
        }
    }

    /// Whether work may start now: connected, our node not an older session's, not stopping.
    pub(super) fn may_start(&self) -> bool {
        !self.draining
            && !self.leaving
            && self.link == Link::Connected
            && !matches!(self.registration, Registration::Older(_))
    }

    /// Writes the markers of the coming fire's free items ahead of it. A monitored job that
    /// finds none while its plan is missing or a reshard is pending owes the prepare until its
    /// fire: the plan's arrival before the instant prepares again (`event`), so that a job
    /// sharded just before its instant does not wait there for its start write.
    pub(super) fn prepare(&mut self, facts: &dyn Facts, out: &mut Vec<Command>) {
        self.prepare_owed = false;
        if !self.may_start() || self.parked.is_some() || !self.settings().monitor_execution {
            return;
        }
        let view = facts.view();
        if view.server_status(self.me.ip()) == ServerStatus::Disabled {
            return;
        }
        let plan = plan_prepare(&view, &self.job, &self.me, self.settings(), &self.local);
        if !plan.ops.is_empty() {
            self.marking(&plan.items);
            out.push(Command::Write {
                ops: plan.ops,
                mode: WriteMode::Submitted,
                then: Purpose::Prepare(plan.items),
            });
        } else {
            let owns_none = !(view.items.values()).any(|v| v.owner.as_ref() == Some(&self.me));
            self.prepare_owed = owns_none || view.sharding_necessary || view.sharding_processing;
        }
    }

    /// A fire (or `items` of it) ran nothing: whether its work is dropped is decided here; the
    /// first skip of a streak is the one logged at WARN.
    pub(super) fn skipped(&mut self, reason: SkipReason, items: usize, out: &mut Vec<Command>) {
        let warn = !self.behind;
        self.behind = true;
        let missed = match reason {
            SkipReason::StillRunning if self.settings().misfire => None,
            SkipReason::StillRunning => Some(MissReason::OverlapSkip),
            SkipReason::Coalesced | SkipReason::AlreadyHeld => Some(MissReason::Coalesced),
            SkipReason::Disconnected
            | SkipReason::SessionLost
            | SkipReason::NotRegistered
            | SkipReason::PlanChanged => Some(MissReason::CannotStart),
            SkipReason::BufferFull => Some(MissReason::OverlapBufferFull),
        };
        out.push(Command::Skipped {
            reason,
            items,
            missed,
            warn,
        });
    }

    /// A fire (cron, manual, or misfire catch-up when `only` is given).
    pub(super) fn fire(
        &mut self,
        source: ExecutionSource,
        scheduled: Option<DateTime<Utc>>,
        facts: &dyn Facts,
        out: &mut Vec<Command>,
    ) {
        self.fire_only(source, scheduled, None, facts, out)
    }

    pub(super) fn fire_only(
        &mut self,
        source: ExecutionSource,
        scheduled: Option<DateTime<Utc>>,
        only: Option<BTreeSet<ShardItem>>,
        facts: &dyn Facts,
        out: &mut Vec<Command>,
    ) {
        self.prepare_owed = false;
        if self.draining || self.leaving {
            self.release_marks(out);
            return;
        }
        let now = facts.now();
        // (A catch-up's or a backfill's instant is older than the fires before it by design.)
        let cron = source == ExecutionSource::Normal;
        if cron && scheduled.is_some_and(|at| self.served_until.is_some_and(|s| at < s)) {
            // Due before the previous fire's handling ended: queued behind a stall (a registry
            // freeze held the handler). Collapsed into that fire, as the trigger collapses the
            // fires it missed: one catch-up, not one per queued fire.
            self.skipped(SkipReason::Coalesced, 0, out);
            return;
        }
        if self.catchup.is_some() && cron && scheduled.is_some_and(|at| self.caught_up(at)) {
            // A catch-up ran this instant already (the trigger fired it as the look found it).
            self.skipped(SkipReason::Coalesced, 0, out);
            return;
        }
        match self.link {
            Link::Disconnected => {
                self.skipped(SkipReason::Disconnected, 0, out);
                return;
            }
            Link::Suspect => {
                self.hold(source, scheduled, facts, out);
                return;
            }
            Link::Connected => {}
        }
        if !self.local.unconfirmed.is_empty() && facts.registry_silent_for() >= UNANSWERED_BOUND {
            // The markers written ahead are unanswered and the registry has answered nothing
            // for a while: a stall, under which the plan they were written under may have
            // moved unseen (a run on them could be another instance's too). The fire waits
            // for a session check; by its answer the registry answers again, and the markers'
            // answer (or the plan that refused them) decides the items.
            self.link = Link::Suspect;
            self.hold(source, scheduled, facts, out);
            return;
        }
        let late = scheduled
            .and_then(|at| (now - at).to_std().ok())
            .is_some_and(|late| late > self.fence.late_fire_bound());
        if late && only.is_none() {
            // Resumed from a pause (SIGSTOP, a stalled runtime)? Check the session first.
            self.link = Link::Suspect;
            self.hold(source, scheduled, facts, out);
            return;
        }
        if let Registration::Older(_) = self.registration {
            self.release_marks(out);
            self.skipped(SkipReason::NotRegistered, 0, out);
            return;
        }
        let view = facts.view();
        if view.server_status(self.me.ip()) == ServerStatus::Disabled {
            self.release_marks(out);
            return;
        }
        // A job never sharded yet (its first leader is still being elected) waits for its first
        // plan as for a reshard.
        let unsharded = !view.items.values().any(|v| v.has_owner_node);
        if view.sharding_necessary || view.sharding_processing || unsharded {
            // The leader waits for running items to end: markers written ahead must go.
            self.release_marks(out);
            let taken = view
                .items
                .iter()
                .filter(|(i, _)| a_run_shown(&view, **i) && !self.local.running.contains(i))
                .map(|(i, _)| *i)
                .collect();
            let keep = self.parked.take().map(|p| p.taken).unwrap_or_default();
            self.parked = Some(Box::new(Parked {
                source,
                scheduled,
                taken: keep.union(&taken).copied().collect(),
            }));
            self.resharding = true;
            out.push(Command::SetResharding(true));
            if view.leader.as_ref() == Some(&self.me) {
                out.push(Command::AskReshard);
            }
            return;
        }
        if let Some(limit) = self.config.max_time_diff() {
            let skew = facts.clock_skew();
            if skew.is_some_and(|s| s > limit) {
                out.push(Command::Refuse(format!(
                    "local clock differs from the registry's by {skew:?}, over {limit:?}"
                )));
                self.release_marks(out);
                return;
            }
        }
        let mut plan = plan_run(
            &view,
            &self.job,
            &self.me,
            self.settings(),
            &self.local,
            only.as_ref(),
        );
        if self.flow.is_some() {
            // Items of this instance disabled by an operator do not run: recorded skipped, so
            // the workflow run ends.
            let disabled: Vec<ShardItem> = (view.items.iter())
                .filter(|(i, v)| {
                    v.disabled
                        && v.owner.as_ref() == Some(&self.me)
                        && only.as_ref().is_none_or(|o| o.contains(i))
                })
                .map(|(i, _)| *i)
                .collect();
            drop(view);
            self.workflow_start_ops(source, scheduled, &mut plan, &disabled);
        } else {
            drop(view);
        }
        if self.config.policy().overlap == Overlap::CancelOther {
            self.cancel_other(&plan.flagged, out);
        }
        if !plan.skipped.is_empty() {
            self.overlapped(&plan.skipped, source, out);
        } else if !plan.run.is_empty() && only.is_none() {
            self.behind = false;
        }
        plan.start_ops.shrink_to_fit();
        let start_ops = plan.start_ops.clone();
        self.starting = Some(Box::new(Starting {
            source,
            scheduled,
            plan,
        }));
        if start_ops.is_empty() {
            self.started(facts, out);
        } else {
            out.push(Command::Write {
                ops: start_ops,
                mode: WriteMode::Batched,
                then: Purpose::Start,
            });
        }
    }

    /// Holds a fire until the session check answers (one check at a time, asked again when
    /// its answer is [`SESSION_CHECK_LOST_AFTER`] late).
    fn hold(
        &mut self,
        source: ExecutionSource,
        scheduled: Option<DateTime<Utc>>,
        facts: &dyn Facts,
        out: &mut Vec<Command>,
    ) {
        let now = facts.now();
        if let Some(held) = &self.held {
            let waited = (now - held.asked).to_std().unwrap_or_default();
            // One of the two fires is dropped: this one while the check may still answer (the
            // held fire runs for both), else the held one.
            self.skipped(SkipReason::AlreadyHeld, 0, out);
            if waited < SESSION_CHECK_LOST_AFTER {
                return;
            }
            // The answer is lost: this fire takes the held one's place and asks again.
            out.push(Command::Warn(format!(
                "the session check asked {waited:?} ago never answered: asking again"
            )));
        }
        self.held = Some(Box::new(Held {
            source,
            scheduled,
            asked: now,
        }));
        out.push(Command::CheckSession);
    }

    /// The reshard ended (or the plan that refused a start write is in the mirror): the parked
    /// fire runs under the new plan, without the items another instance ran for it meanwhile.
    pub(super) fn resume_parked(&mut self, facts: &dyn Facts, out: &mut Vec<Command>) {
        // Nothing waits for the reshard: every commit of every job comes here, so the view is
        // not read for nothing.
        if self.parked.is_none() && !self.resharding {
            return;
        }
        let view = facts.view();
        let unsharded = !view.items.values().any(|v| v.has_owner_node);
        if view.sharding_necessary || view.sharding_processing || unsharded {
            return;
        }
        drop(view);
        if self.resharding {
            self.resharding = false;
            out.push(Command::SetResharding(false));
        }
        let Some(p) = self.parked.take() else {
            return;
        };
        let only = if p.taken.is_empty() {
            None
        } else {
            let view = facts.view();
            let rest: BTreeSet<ShardItem> = view
                .items_owned_by(&self.me)
                .into_iter()
                .filter(|i| !p.taken.contains(i))
                .collect();
            if rest.is_empty() {
                return;
            }
            Some(rest)
        };
        // A resumed fire is late by the reshard's length, not by a pause: no session check.
        let scheduled = p.scheduled;
        self.fire_resumed(p.source, scheduled, only, facts, out);
    }

    fn fire_resumed(
        &mut self,
        source: ExecutionSource,
        scheduled: Option<DateTime<Utc>>,
        only: Option<BTreeSet<ShardItem>>,
        facts: &dyn Facts,
        out: &mut Vec<Command>,
    ) {
        // `only` set skips the lateness check; the full set of owned items stands for "all".
        let mut only =
            only.unwrap_or_else(|| facts.view().items_owned_by(&self.me).into_iter().collect());
        // A trigger that named its items runs those of them the new plan gives this instance.
        if let (ExecutionSource::Manual, Some(named)) =
            (source, self.manual.as_ref().and_then(|m| m.items.as_ref()))
        {
            only.retain(|i| named.contains(i));
        }
        self.fire_only(source, scheduled, Some(only), facts, out);
    }
}

/// Whether `view` shows `item` running as a run, not as a commit's guard
/// ([`not_running`](crate::decide::resharding::not_running)): that marker is created and deleted
/// again in the multi-op that also creates and deletes `processing`, so the mirror shows it only
/// while it shows `processing` (or no more at all, when the machine hears of it late).
pub(super) fn a_run_shown(view: &JobView, item: ShardItem) -> bool {
    !view.sharding_processing && view.items.get(&item).is_some_and(|v| v.running.is_some())
}
