//! A fire launched ahead of its instant (issue 31, "trigger precision at scale"). The trigger
//! asks a monitored job to prepare a little before each instant (`PREPARE_LEAD`, 200 ms); once the markers are
//! queued, the machine decides the fire *now*, exactly as `fire_only` would at the instant, when
//! nothing can make that decision differ but an input still to come: the link is up, the node
//! registered and enabled, the plan committed and not being redone, no run of the job in
//! progress (no overlap to decide), the fire a plain cron fire (no catch-up window, workflow,
//! backfill, pending trigger, buffered fires, distribute-once round) and every item it runs
//! marked ahead (no start write). It returns a `Launch` whose `start_at` is the instant: the
//! run's task is spawned at once and waits for the instant on the tokio timer, so the instant
//! itself costs the executor nothing but confirming the `Fire` ([`JobMachine::confirm_ahead`]).
//!
//! Until its instant, the run is withdrawn by any input that could have changed the fire's
//! decision ([`JobMachine::withdraws`]): a config change, a plan, item or server change, a
//! reshard asked for, drain, removal, a manual trigger, a re-list, a link or session lost, a
//! pause, a refused marker. Its items are marked again (their markers stand) and the `Fire`
//! decides as it did before launches ahead: with those markers, under what the input changed.
//! Whether the instant has come is decided by the input's `now` against it; an input after it
//! finds a running run, handled as any.

use chrono::{DateTime, Utc};

use crate::decide::execution::plan_run;
use crate::model::{ExecutionSource, NodeEventKind, SessionState};
use crate::paths::JobNode;
use crate::view::JobView;

use super::{Command, Facts, Input, JobMachine, Link, Outcome, Purpose};

impl JobMachine {
    /// After a prepare queued its markers: launches the fire at `scheduled` now, to start at
    /// its instant, when it can be decided now (see the module's text); otherwise nothing, and
    /// the `Fire` decides at the instant.
    pub(super) fn launch_ahead(
        &mut self,
        scheduled: DateTime<Utc>,
        view: &JobView,
        facts: &dyn Facts,
        out: &mut Vec<Command>,
    ) {
        let plain = self.ahead
            && self.runs.is_empty()
            && self.starting.is_none()
            && self.held.is_none()
            && self.parked.is_none()
            && !self.resharding
            && !self.trigger_queued
            && self.manual.is_none()
            && self.catchup.is_none()
            && self.flow.is_none()
            && self.backfill.is_none()
            && self.buffered.is_empty();
        let now = facts.now();
        let coalesced = self.served_until.is_some_and(|s| scheduled < s);
        if !plain || !self.may_start() || now >= scheduled || coalesced {
            return;
        }
        let unsharded = !view.items.values().any(|v| v.has_owner_node);
        if unsharded || view.sharding_necessary || view.sharding_processing {
            return;
        }
        let skewed = self.config.max_time_diff().is_some_and(|limit| {
            let skew = facts.clock_skew();
            skew.is_some_and(|s| s > limit)
        });
        if skewed {
            return;
        }
        let settings = self.settings();
        let plan = plan_run(view, &self.job, &self.me, settings, &self.local, None);
        let decided = plan.start_ops.is_empty() && plan.skipped.is_empty();
        if plan.run.is_empty() || !decided || !plan.flagged.is_empty() {
            return;
        }
        for i in &plan.unmarked {
            self.local.marked.remove(i);
        }
        for i in &plan.run {
            self.local.ended.remove(i);
        }
        self.ahead_at = Some(scheduled);
        let ends = (plan.end_ops, None, Some(scheduled));
        let source = ExecutionSource::Normal;
        self.launch(source, Some(scheduled), plan.run, ends, facts, out);
    }

    /// The cron fired for `scheduled`: whether a run launched ahead answers it. Then the fire is
    /// only confirmed (no view read, no plan); a fire handled later than the late-fire bound
    /// (the node may have been paused past its session) has the session checked, and a lost one
    /// cancels the run, as for any running run.
    pub(super) fn confirm_ahead(
        &mut self,
        scheduled: DateTime<Utc>,
        facts: &dyn Facts,
        out: &mut Vec<Command>,
    ) -> bool {
        if self.ahead_at != Some(scheduled) {
            return false;
        }
        self.ahead_at = None;
        let now = facts.now();
        self.served_until = Some(now);
        self.behind = false;
        let late = (now - scheduled).to_std().ok();
        if late.is_some_and(|l| l > self.fence.late_fire_bound()) && self.link == Link::Connected {
            self.link = Link::Suspect;
            out.push(Command::CheckSession);
        }
        true
    }

    /// Whether `input`, before the instant of a run launched ahead, could change its fire's
    /// decision.
    pub(super) fn withdraws(&self, input: &Input) -> bool {
        use NodeEventKind::{Created, Deleted};
        match input {
            Input::Config(new) => new.config() != self.config.config(),
            Input::Event { node, kind } => match node {
                JobNode::ShardingItem(_)
                | JobNode::ShardingInstance(_)
                | JobNode::ShardingDisabled(_)
                | JobNode::ShardingMisfire(_)
                | JobNode::ShardingFailover(_)
                | JobNode::ShardingFailovering(_) => true,
                JobNode::LeaderShardingNecessary | JobNode::LeaderShardingProcessing => {
                    *kind == Created
                }
                JobNode::Server(ip) => ip == self.me.ip(),
                JobNode::Instance(id) => *id == self.me && *kind == Deleted,
                JobNode::TriggerInstance(id) => *id == self.me && *kind == Created,
                JobNode::Root => *kind == Deleted,
                _ => false,
            },
            Input::Resynced | Input::Drain | Input::Remove | Input::Trigger => true,
            Input::Session(state) => *state != SessionState::Connected,
            Input::Paused(for_) => {
                *for_ > self.fence.late_fire_bound() || *for_ >= self.fence.pause_cancels_after()
            }
            Input::SessionChecked { alive } => !alive,
            Input::Written {
                purpose: Purpose::Prepare(_),
                outcome: Outcome::Conflict | Outcome::Stale,
            } => true,
            _ => false,
        }
    }

    /// Withdraws the runs launched ahead whose instant has not come by `facts.now()`: their
    /// tasks never start, their items are marked again, and the fire decides at its instant.
    pub(super) fn withdraw_ahead(&mut self, facts: &dyn Facts, out: &mut Vec<Command>) {
        let now = facts.now();
        let mut at = 0;
        while at < self.runs.len() {
            if self.runs[at].1.start_at.is_none_or(|s| now >= s) {
                at += 1;
                continue;
            }
            let (run_id, run) = self.runs.remove(at);
            for i in &run.items {
                self.local.running.remove(i);
                self.local.marked.insert(*i);
            }
            self.ahead_at = None;
            out.push(Command::Withdraw(run_id));
        }
    }
}
