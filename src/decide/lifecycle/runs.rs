//! The machine's runs once a fire chose their items: the start write's outcome, the launch, each
//! item's end, the end write, and the release of the marks a run leaves.

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};

use crate::decide::prepare::release_ops;
use crate::model::ExecutionSource;
use crate::model::Op;
use crate::paths::JobNode;
use crate::types::ShardItem;

use super::{Command, Facts, JobMachine, Purpose, Run, Starting, WriteMode};

impl JobMachine {
    /// The start write is done (or there was none): the planned run starts.
    pub(super) fn started(&mut self, facts: &dyn Facts, out: &mut Vec<Command>) {
        let Some(s) = self.starting.take() else {
            return;
        };
        let Starting {
            source,
            scheduled,
            plan,
        } = *s;
        if source == ExecutionSource::Normal {
            self.served_until = Some(facts.now());
        }
        for i in &plan.unmarked {
            self.local.marked.remove(i);
        }
        for i in &plan.run {
            self.local.ended.remove(i);
        }
        if !plan.flagged.is_empty() {
            out.push(Command::Misfired(plan.flagged.clone()));
        }
        self.local
            .misfire_flagged
            .extend(plan.flagged.iter().copied());
        for i in &plan.run {
            self.local.misfire_flagged.remove(i);
        }
        // A job with a catch-up window records the instant for every item the fire handled.
        let handled = match (&self.catchup, scheduled) {
            (Some(_), Some(at)) => Some((
                at,
                [&plan.run[..], &plan.flagged[..], &plan.skipped[..]].concat(),
                plan.run.clone(),
            )),
            _ => None,
        };
        if source == ExecutionSource::Misfire && !self.buffered.is_empty() {
            self.unbuffer(&plan.run);
        }
        let workflow = self.workflow_run(source, scheduled);
        self.launch(
            source,
            scheduled,
            plan.run,
            (plan.end_ops, workflow),
            facts,
            out,
        );
        if let Some((at, items, running)) = handled {
            self.record_fired(source, at, (&items, &running), facts, out);
        }
    }

    /// Hands `items` to a run; `end_ops` are written when they are done; `workflow` is the
    /// workflow run it is a step of. Shared by fires and failover runs.
    pub(super) fn launch(
        &mut self,
        source: ExecutionSource,
        scheduled: Option<DateTime<Utc>>,
        items: Vec<ShardItem>,
        (mut end_ops, workflow): (Vec<Op>, Option<crate::decide::workflow::run::RunId>),
        facts: &dyn Facts,
        out: &mut Vec<Command>,
    ) {
        if items.is_empty() {
            return;
        }
        self.next_run += 1;
        let run_id = self.next_run;
        let parameter = match source {
            ExecutionSource::Manual => self.manual.take().and_then(|m| m.parameter),
            _ => None,
        };
        self.local.running.extend(items.iter().copied());
        // Kept until the run ends: its exact size, not the planner's growth.
        end_ops.shrink_to_fit();
        self.runs.reserve_exact(1);
        self.runs.push((
            run_id,
            Run {
                items: items.clone(),
                end_ops,
                started: facts.now(),
                timed_out: false,
                attempt: 1,
                source,
                scheduled,
                backing_off: false,
                parameter: parameter.clone(),
                workflow: workflow.clone(),
                end_held: false,
                gated: false,
            },
        ));
        out.push(Command::Launch {
            run_id,
            source,
            scheduled,
            items,
            attempt: 1,
            parameter,
            workflow,
        });
        self.arm_timeout(run_id, out);
    }

    /// A run's task ended: queue its end write (batched with every job's of the moment), or end
    /// it now when it has nothing to write.
    pub(super) fn run_finished(
        &mut self,
        run_id: u64,
        failed: Vec<ShardItem>,
        facts: &dyn Facts,
        out: &mut Vec<Command>,
    ) {
        if !failed.is_empty() {
            if let Some(retry) = self.config.policy().retry {
                self.retry_failed(run_id, &failed, retry, facts, out);
            }
        }
        let mut ends = self.backfill_ops(run_id, facts);
        if self.flow.is_some() {
            ends.extend(self.workflow_end_ops(run_id, &failed));
        }
        let taken_back = self.catchup_end_ops(run_id, &failed, facts);
        let Some((_, run)) = self.runs.iter_mut().find(|(i, _)| *i == run_id) else {
            return;
        };
        run.end_ops.extend(ends);
        // Before the markers' deletion: whoever sees them gone sees the record taken back.
        run.end_ops.splice(0..0, taken_back);
        if run.end_ops.is_empty() {
            self.finish(run_id, true, facts, out);
        } else if run.items.iter().any(|i| self.local.unconfirmed.contains(i)) {
            run.end_held = true;
        } else {
            out.push(Command::SubmitEnd {
                run_id,
                ops: run.end_ops.clone(),
            });
        }
    }

    /// A run is over once its end write has its outcome: misfire catch-up, queued trigger,
    /// pending drain, failover claims follow.
    pub(super) fn finish(
        &mut self,
        run_id: u64,
        removed: bool,
        facts: &dyn Facts,
        out: &mut Vec<Command>,
    ) {
        let Some(at) = self.runs.iter().position(|(i, _)| *i == run_id) else {
            return;
        };
        let (_, run) = self.runs.swap_remove(at);
        for i in &run.items {
            // Under `allow_all` another run of the item may still go.
            if self.runs.is_empty() || !self.runs.iter().any(|(_, r)| r.items.contains(i)) {
                self.local.running.remove(i);
            }
        }
        if removed {
            // Until the mirror shows the deletions, those markers are this instance's, not a run
            // elsewhere. One the mirror already shows gone needs no note: its event came first.
            for op in &run.end_ops {
                if let Ok((_, JobNode::ShardingRunning(item))) = JobNode::parse(op.path()) {
                    if facts.marker_mirrored(item) {
                        self.local.ended.insert(item);
                    }
                }
            }
        }
        let mut catch_up: BTreeSet<ShardItem> = self
            .local
            .misfire_flagged
            .iter()
            .filter(|i| !self.local.running.contains(i))
            .copied()
            .collect();
        if !self.buffered.is_empty() {
            self.buffered_due(facts, &mut catch_up);
        }
        if !catch_up.is_empty() && self.settings().misfire {
            self.fire_only(ExecutionSource::Misfire, None, Some(catch_up), facts, out);
        }
        if self.trigger_queued && self.runs.is_empty() {
            self.trigger_queued = false;
            self.fire_manual(facts, out);
        }
        if self.runs.is_empty() {
            // A fire of other items whose start write is under way: the drain waits for it too.
            if self.draining && self.idle_for_drain() {
                out.push(Command::DrainDone);
            }
            // A busy instance claims marked items when its run ends (ElasticJob does the same).
            if facts.has_failover_marks() {
                out.push(Command::FailoverIdle);
            }
        }
    }

    /// Deletes the markers written ahead that no run will use.
    pub(super) fn release_marks(&mut self, out: &mut Vec<Command>) {
        if self.local.marked.is_empty() {
            return;
        }
        out.push(Command::Write {
            ops: release_ops(&self.job, self.local.marked.iter().copied()),
            mode: WriteMode::Tolerant,
            then: Purpose::Release,
        });
    }
}
