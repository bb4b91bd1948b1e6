//! The machine's step: [`JobMachine::new`], what it tells its interpreter, and how each input is
//! dispatched (mirror events and configuration changes here; a write's outcome in `written.rs`,
//! fires, runs and policies in their own files).

use std::sync::Arc;

use super::*;
use crate::config::ValidatedConfig;
use crate::decide::item_set::ItemSet;
use crate::model::{ExecutionSource, NodeEventKind, Op};
use crate::paths::JobNode;
use crate::types::{InstanceId, JobName, ShardItem};

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
            prepare_owed: false,
            served_until: None,
            behind: false,
            buffered: overlap::Owed::default(),
            labels: None,
            own_deletions: 0,
            ahead: None,
        }
    }

    /// The labels this instance carries (`NodeBuilder::labels`): every `instances/{me}` node the
    /// machine writes names them, as the first registration did.
    pub fn with_labels(mut self, labels: Vec<String>) -> Self {
        self.labels = (!labels.is_empty()).then(|| Box::new(labels.into_boxed_slice()));
        self
    }

    /// The labels this instance carries.
    pub(crate) fn labels(&self) -> &[String] {
        self.labels.as_deref().map_or(&[], |l| l)
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
    pub fn running(&self) -> &ItemSet {
        &self.local.running
    }

    /// Gives back the memory of empty collections (ten thousand idle jobs hold nothing).
    pub fn release_empty(&mut self) {
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
            Input::Prepare { .. } => self.prepare(facts, &mut out),
            Input::Arm { scheduled, early } => self.arm(scheduled, early, facts, &mut out),
            Input::Fire { scheduled } => {
                if !self.fired_ahead(scheduled) {
                    self.fire(ExecutionSource::Normal, Some(scheduled), facts, &mut out)
                }
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
            Input::HeldBack { run_id } => self.held_back(run_id, facts, &mut out),
            Input::Drain => {
                self.draining = true;
                self.prepare_owed = false;
                self.release_marks(&mut out);
                out.push(Command::Unschedule);
                if self.idle_for_drain() {
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
                    let end_ops = crate::decide::failover::finish_ops(&self.job, &items);
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
        self.arm_again(facts, &mut out);
        out
    }

    /// After a re-list: `running` markers naming this instance that none of its runs, markers
    /// written ahead or starts accounts for are left from a write whose reply was lost (a start
    /// that failed on a connection loss, but applied) or from an earlier session. Nobody else
    /// removes them: this instance is live, so they are neither failed over nor cleared as a dead
    /// owner's, and the leader's reshard waits for them (and every fire parks behind it) forever.
    /// A marker a failover claim wrote (its `failovering` names this instance) may arrive before
    /// the claim does: it is left alone.
    pub(super) fn clear_unknown_markers(&mut self, facts: &dyn Facts, out: &mut Vec<Command>) {
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

    pub(super) fn run(&self, run_id: u64) -> Option<&Run> {
        self.runs.iter().find(|(i, _)| *i == run_id).map(|(_, r)| r)
    }

    pub(super) fn config_changed(&mut self, new: Arc<ValidatedConfig>, out: &mut Vec<Command>) {
        if new.config() == self.config.config() {
            // Unchanged (a resync, or a write of the same text): keep the shared copy.
            out.push(Command::Evaluate);
            return;
        }
        let (old, next) = (self.config.config(), new.config());
        let reschedule = next.cron != old.cron || next.time_zone != old.time_zone;
        if reschedule || !next.monitor_execution {
            self.release_marks(out);
            self.prepare_owed = false;
        }
        let total = new.sharding_total_count();
        if total < self.config.sharding_total_count() {
            self.items_removed(total, out);
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

    /// The config lowered `shardingTotalCount` to `total`: the items from `total` on no longer
    /// exist. Their runs here are cancelled at once (ElasticJob lets them end): the reshard to
    /// the new count waits for every running item, and every fire parks behind it, so a long
    /// run of items that are gone (a count raised far beyond the machine, then repaired) would
    /// hold the job's surviving items as long as it lasts. A plan that moves an item away
    /// cancels it the same way; this is that cancel, at the change rather than at the reshard.
    /// Their `misfire` flags here are dropped: no catch-up runs them.
    fn items_removed(&mut self, total: u32, out: &mut Vec<Command>) {
        let gone = ShardItem(total);
        self.local.misfire_flagged.retain(|i| *i < gone);
        let running: Vec<ShardItem> = self.local.running.range(gone..).copied().collect();
        if !running.is_empty() {
            out.push(Command::Cancel(running));
        }
    }

    pub(super) fn event(
        &mut self,
        node: JobNode,
        kind: NodeEventKind,
        facts: &dyn Facts,
        out: &mut Vec<Command>,
    ) {
        use NodeEventKind::{Created, DataChanged, Deleted};
        // A plan committed (an owner written, the flags deleted) may free what a prepare found
        // nothing to mark in.
        let replan = self.prepare_owed
            && matches!(
                (&node, kind),
                (JobNode::ShardingInstance(_), _)
                    | (
                        JobNode::LeaderShardingNecessary | JobNode::LeaderShardingProcessing,
                        Deleted
                    )
            );
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
                    if super::fire::a_run_shown(&facts.view(), item) {
                        p.taken.insert(item);
                    }
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
            // The mirror holds the root (the machine hears an event after the mirror applied
            // it): the deletion was an older incarnation's, or a re-list's swap that found the
            // root again. Stopping on it would drop a job that is there until the next session.
            (JobNode::Root, Deleted) if facts.job_exists(&self.job) => {}
            (JobNode::Root, Deleted) => {
                out.push(Command::Warn(
                    "job removed from the registry: stopping it here".into(),
                ));
                self.leave(facts, out);
            }
            _ => {}
        }
        if replan && self.prepare_owed {
            self.prepare(facts, out);
        }
    }
}
