//! The machine's catch-up window (`shardcron.catchup.window`, [`crate::decide::catchup`]): when
//! to look for missed instants, what to record once a fire is handled, and the cron fire a
//! catch-up already answered. A job without a window has no [`CatchUp`] and none of this runs.

use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::config::ValidatedConfig;
use crate::decide::catchup::{missed_before, plan, record_ops, take_back_ops, ItemFloor};
use crate::decide::execution::LocalRuns;
use crate::model::ExecutionSource;
use crate::model::{NodeEventKind, Op, SessionState};
use crate::paths::JobNode;
use crate::types::{InstanceId, ShardItem};
use crate::view::{ItemView, JobView, ServerStatus};

use super::{Command, Facts, Input, JobMachine, Purpose, WriteMode};

/// What the machine keeps of a job's catch-up window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct CatchUp {
    window: Duration,
    /// Instants this instance handled per item, which the mirror may not show yet.
    handled: BTreeMap<ShardItem, DateTime<Utc>>,
    /// Per item, an instant missed before a later fire ran here, to be caught up.
    owed: BTreeMap<ShardItem, DateTime<Utc>>,
    /// The latest instant caught up here: the trigger's own fire for it (a race with the
    /// catch-up) is coalesced into it.
    caught_up: Option<DateTime<Utc>>,
    /// Per running item, the instant its run recorded and the item's floor before it: what a
    /// run cancelled by a reshard takes back ([`JobMachine::catchup_end_ops`]).
    recorded: BTreeMap<ShardItem, (DateTime<Utc>, Option<DateTime<Utc>>)>,
}

impl CatchUp {
    /// The state for `config`; `None` without a window.
    pub(super) fn for_config(config: &ValidatedConfig) -> Option<Box<Self>> {
        let window = config.policy().catchup_window;
        (!window.is_zero()).then(|| {
            Box::new(Self {
                window,
                handled: BTreeMap::new(),
                owed: BTreeMap::new(),
                caught_up: None,
                recorded: BTreeMap::new(),
            })
        })
    }
}

/// The inputs after which an owner looks for missed instants: it may have come back (its
/// registration, a reconnection, a re-list), taken items (a plan committed), or seen some freed
/// (a run ended here or elsewhere). A cron fire is not one: it runs its own instant.
pub(super) fn looks_after(input: &Input) -> bool {
    use NodeEventKind::Deleted;
    match input {
        Input::Resynced
        | Input::Session(SessionState::Connected)
        | Input::RunFinished { .. }
        | Input::RunEnded { .. }
        | Input::Written {
            purpose: Purpose::EndRetry(_),
            ..
        }
        | Input::SessionChecked { alive: true } => true,
        Input::Event { node, kind } => matches!(
            (node, kind),
            (JobNode::ShardingInstance(_) | JobNode::Instance(_), _)
                | (
                    JobNode::LeaderShardingNecessary
                        | JobNode::LeaderShardingProcessing
                        | JobNode::ShardingRunning(_),
                    Deleted
                )
        ),
        _ => false,
    }
}

/// Whether an item runs, here or elsewhere, as a fire's plan sees it
/// ([`plan_run`](crate::decide::execution::plan_run)): a marker this instance deleted at the end of
/// its run and the mirror still shows is not a run.
pub(super) fn busy(local: &LocalRuns, item: ShardItem, v: &ItemView, me: &InstanceId) -> bool {
    let elsewhere =
        v.running.as_deref().is_some_and(|r| r != me.as_str()) && !local.ended.contains(&item);
    local.running.contains(&item) || elsewhere
}

impl JobMachine {
    /// A new config: a window set, changed or removed.
    pub(super) fn catchup_reconfigured(&mut self) {
        let window = self.config.policy().catchup_window;
        match (&mut self.catchup, window.is_zero()) {
            (_, true) => self.catchup = None,
            (Some(c), false) => c.window = window,
            (None, false) => self.catchup = CatchUp::for_config(&self.config),
        }
    }

    /// The job's view when extra runs (a catch-up, a backfill run) may start: work may start, no
    /// fire is starting, parked or held, and the plan is settled with this instance's server
    /// enabled; `None` otherwise.
    pub(super) fn settled_view(&self, facts: &dyn Facts) -> Option<Rc<JobView>> {
        if !self.may_start()
            || self.starting.is_some()
            || self.parked.is_some()
            || self.held.is_some()
        {
            return None;
        }
        let view = facts.view();
        let unsharded = !view.items.values().any(|v| v.has_owner_node);
        if view.sharding_necessary
            || view.sharding_processing
            || unsharded
            || view.server_status(self.me.ip()) == ServerStatus::Disabled
        {
            return None;
        }
        Some(view)
    }

    /// The items of `view` this instance owns, enabled and not running (here or per the mirror).
    pub(super) fn idle_owned<'a>(
        &'a self,
        view: &'a JobView,
    ) -> impl Iterator<Item = (&'a ShardItem, &'a ItemView)> + 'a {
        view.items.iter().filter(|(i, v)| {
            v.owner.as_ref() == Some(&self.me)
                && !v.disabled
                && !busy(&self.local, **i, v, &self.me)
        })
    }

    /// Whether the cron fire for `scheduled` was answered by a catch-up already.
    pub(super) fn caught_up(&self, scheduled: DateTime<Utc>) -> bool {
        self.catchup
            .as_ref()
            .is_some_and(|c| c.caught_up.is_some_and(|at| scheduled <= at))
    }

    /// Runs, for the owned items not running, the latest instant missed within the window, when
    /// work may start, no fire is under way and the plan is settled. One instant per look: items
    /// whose missed instants differ (rare: they had other owners) take theirs at the next look.
    pub(super) fn catch_up(&mut self, facts: &dyn Facts, out: &mut Vec<Command>) {
        let Some(window) = self.catchup.as_ref().map(|c| c.window) else {
            return;
        };
        let Some(view) = self.settled_view(facts) else {
            return;
        };
        let owned: Vec<ShardItem> = self.idle_owned(&view).map(|(i, _)| *i).collect();
        drop(view);
        if owned.is_empty() {
            return;
        }
        let record = facts.fired();
        let Some(c) = self.catchup.as_mut() else {
            return;
        };
        let floors: Vec<ItemFloor> = owned
            .iter()
            .map(|i| ItemFloor {
                item: *i,
                floor: record
                    .items
                    .get(i)
                    .copied()
                    .flatten()
                    .max(c.handled.get(i).copied()),
                owed: c.owed.get(i).copied(),
            })
            .collect();
        let config = self.config.clone();
        let next_after = |t| config.next_fire_after(t);
        let Some((at, items)) = plan(&floors, &next_after, facts.now(), window)
            .into_iter()
            .next()
        else {
            return;
        };
        // A look before the run starts finds its start under way and waits; once it started,
        // its items run and are recorded.
        c.caught_up = c.caught_up.max(Some(at));
        self.fire_only(
            ExecutionSource::CatchUp,
            Some(at),
            Some(items.into_iter().collect()),
            facts,
            out,
        );
    }

    /// A fire for `at` was handled for `items` (run, flagged misfire, or skipped as its overlap
    /// policy says): recorded, so that no owner catches it up. A cron fire (`source` normal) that
    /// finds an item's last instant older than the one before `at` owes the item that instant.
    /// Of `running` (the items that run), the floor before is kept until the run ends.
    pub(super) fn record_fired(
        &mut self,
        source: ExecutionSource,
        at: DateTime<Utc>,
        (items, running): (&[ShardItem], &[ShardItem]),
        facts: &dyn Facts,
        out: &mut Vec<Command>,
    ) {
        let config = self.config.clone();
        let Some(c) = self.catchup.as_mut() else {
            return;
        };
        if items.is_empty() {
            return;
        }
        let record = facts.fired();
        let now = facts.now();
        let next_after = |t| config.next_fire_after(t);
        let mut newer = Vec::with_capacity(items.len());
        for i in items {
            let floor = record.items.get(i).copied().flatten();
            let floor = floor.max(c.handled.get(i).copied());
            if floor.is_none_or(|f| f < at) {
                newer.push(*i);
                if running.contains(i) {
                    c.recorded.insert(*i, (at, floor));
                }
            }
            match (source, floor) {
                (ExecutionSource::Normal, Some(floor)) => {
                    if let Some(missed) = missed_before(&next_after, floor, at, now, c.window) {
                        let owed = c.owed.entry(*i).or_insert(missed);
                        *owed = (*owed).max(missed);
                    }
                }
                (ExecutionSource::CatchUp, _) if c.owed.get(i).is_some_and(|o| *o <= at) => {
                    c.owed.remove(i);
                }
                _ => {}
            }
            let t = c.handled.entry(*i).or_insert(at);
            *t = (*t).max(at);
        }
        // What the mirror shows needs no local note any more.
        c.handled
            .retain(|i, t| record.items.get(i).copied().flatten() < Some(*t));
        // An instant older than one this instance recorded is not written (the mirror may lag).
        let (ops, creates) = record_ops(&self.job, &record, &newer, at);
        if ops.is_empty() {
            return;
        }
        let mode = if creates {
            WriteMode::Tolerant
        } else {
            WriteMode::Batched
        };
        out.push(Command::Write {
            ops,
            mode,
            then: Purpose::RecordFired,
        });
    }

    /// Whether item `item`'s record, just changed, leaves this owner an instant to catch up:
    /// the record was taken back by the instance a reshard moved the item from (with
    /// `monitorExecution` off no marker's deletion tells). One cron step, not a look: an owner's
    /// own record names the latest instant, whose next one is still to come.
    pub(super) fn record_behind(&self, item: ShardItem, facts: &dyn Facts) -> bool {
        let Some(c) = self.catchup.as_ref() else {
            return false;
        };
        if !facts.owns(item) {
            return false;
        }
        let Some(floor) = facts.fired_item(item).max(c.handled.get(&item).copied()) else {
            return false;
        };
        self.config
            .next_fire_after(floor)
            .is_some_and(|next| next <= facts.now())
    }

    /// The end of run `run_id` with `failed` items: an item that failed and is no longer this
    /// instance's was cancelled by a reshard that moved it, so the record its fire wrote is taken
    /// back (and the local note forgotten) for its new owner to catch the instant up. An item that
    /// ended on its own keeps its record, as does one that failed here (a failed fire was fired).
    pub(super) fn catchup_end_ops(
        &mut self,
        run_id: u64,
        failed: &[ShardItem],
        facts: &dyn Facts,
    ) -> Vec<Op> {
        let Some(c) = self.catchup.as_deref_mut() else {
            return Vec::new();
        };
        let Some((_, run)) = self.runs.iter().find(|(i, _)| *i == run_id) else {
            return Vec::new();
        };
        let Some(at) = run.scheduled else {
            return Vec::new();
        };
        let mut back = Vec::new();
        for item in &run.items {
            let Some((fired, before)) = c.recorded.get(item).copied() else {
                continue;
            };
            if fired != at {
                continue;
            }
            c.recorded.remove(item);
            if failed.contains(item) && !facts.owns(*item) {
                back.push((*item, before));
                if c.handled.get(item) == Some(&at) {
                    c.handled.remove(item);
                }
            }
        }
        take_back_ops(&self.job, &back)
    }
}
