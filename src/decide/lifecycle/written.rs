//! What the machine does with a write's outcome ([`Input::Written`]), and how it leaves (drain,
//! removal): the end of the write-then-continue loop.

use std::collections::BTreeSet;

use super::*;
use crate::model::Op;
use crate::paths::JobNode;
use crate::view::JobView;

impl JobMachine {
    pub(super) fn written(
        &mut self,
        purpose: Purpose,
        outcome: Outcome,
        facts: &dyn Facts,
        out: &mut Vec<Command>,
    ) {
        let start_answer = matches!(
            purpose,
            Purpose::Start | Purpose::StartTolerant | Purpose::StartClear
        );
        self.written_step(purpose, outcome, facts, out);
        // A drain heard while this start write was under way waited for its answer: the fire
        // runs (it was decided before the drain) and the drain ends with it, or nothing started.
        if start_answer && self.draining && self.idle_for_drain() {
            out.push(Command::DrainDone);
        }
    }

    /// Whether a drain has nothing left to wait for: no run, and no fire's start write under way.
    pub(super) fn idle_for_drain(&self) -> bool {
        self.runs.is_empty() && self.starting.is_none()
    }

    fn written_step(
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
                // mirror did not show. Nothing of this fire started; whether it is dropped
                // depends on whether another instance fires it ([`fired_once`]).
                self.start_refused(facts, out)
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
            (Purpose::Prepare(items), outcome) => self.marked_answered(&items, outcome, facts, out),
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

    pub(super) fn leave(&mut self, facts: &dyn Facts, out: &mut Vec<Command>) {
        if self.leaving {
            return;
        }
        // Leave the job's coordination at once: the others reshard without this instance, and
        // one of them leads if this one did.
        self.leaving = true;
        let mut ops =
            crate::decide::prepare::release_ops(&self.job, std::mem::take(&mut self.local.marked));
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

    /// The start write under way was refused by a newer plan: the fire is dropped, or parked
    /// until the mirror shows that plan when nobody else would run it ([`fired_once`]). It
    /// resumes at once if the mirror shows the plan already (an owner node the write checked has
    /// another version now: the plan's events may have been heard before this answer, and none
    /// would wake it), else at the events of the owner nodes, as a fire parked behind a reshard.
    pub(super) fn start_refused(&mut self, facts: &dyn Facts, out: &mut Vec<Command>) {
        let Some(s) = self.starting.take() else {
            return self.skipped(SkipReason::PlanChanged, 0, out);
        };
        if self.workflow_start_lost(s.source, &s.plan) {
            return;
        }
        if !fired_once(s.source) {
            return self.skipped(SkipReason::PlanChanged, 0, out);
        }
        // A fire parked already (an earlier trigger refused the same way): one fire resumes for
        // both, as when a second fire parks behind a reshard.
        let taken = (self.parked.take()).map_or_else(BTreeSet::new, |p| p.taken);
        self.parked = Some(Box::new(Parked {
            source: s.source,
            scheduled: s.scheduled,
            taken,
        }));
        if shows_newer_plan(&s.plan.start_ops, &facts.view()) {
            self.resume_parked(facts, out);
        }
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

/// Whether a fire of `source` whose start write a newer plan refused ([`Outcome::Stale`]: an
/// owner node it checks changed between the plan and the write, and nothing of the write was
/// applied) still runs here, under the new plan: whether anyone else would run it.
///
/// - a cron fire (`Normal`): no. Every instance fires the cron itself, so the owners the new
///   plan names fire this instant too; skipped here as `plan_changed`.
/// - a workflow step (`Workflow`): owed to its run and launched again by the look that follows
///   ([`JobMachine::workflow_start_lost`]), not parked.
/// - a catch-up (`CatchUp`) and a backfill run (`Backfill`): no. They are derived from records
///   in the registry (`shardcron/fired`, `shardcron/backfill`) that the refused write did not
///   touch; the owners under the new plan find them again at their next look (a commit's events
///   are one).
/// - a misfire catch-up (`Misfire`): no. Its debt is the item's `misfire` flag, which stays
///   written (and in this instance's `misfire_flagged`): it is made up after the next run here
///   ends, or folded into the next run of the item's owner, whose start deletes the flag.
/// - a failover run: never refused so, it has no start write (the claim wrote its markers).
/// - a manual trigger (`Manual`): yes. `Ops::trigger` writes one `trigger/{id}` per instance and
///   each instance runs the items it owns; this instance took its own and nobody fires it again,
///   so a skip would lose it for every item this instance owns. It is parked and resumed under
///   the new plan, for the items that plan gives this instance (none: nothing runs, as with a
///   trigger on an instance that owns nothing). Each instance reads its trigger under the plan
///   it sees, so an item that moved between the plans may run for the trigger on both owners, or
///   on neither, as with a trigger parked by a reshard.
fn fired_once(source: ExecutionSource) -> bool {
    match source {
        ExecutionSource::Manual => true,
        ExecutionSource::Normal
        | ExecutionSource::Misfire
        | ExecutionSource::Failover
        | ExecutionSource::CatchUp
        | ExecutionSource::Backfill
        | ExecutionSource::Workflow => false,
    }
}

/// Whether `view` shows an owner node at another version than the guards of `ops` check (or
/// shows it no more): the plan that refused the write is in the mirror already.
fn shows_newer_plan(ops: &[Op], view: &JobView) -> bool {
    ops.iter().any(|op| match op {
        Op::Check { path, version } => match JobNode::parse(path) {
            Ok((_, JobNode::ShardingInstance(item))) => view
                .items
                .get(&item)
                .is_none_or(|v| !v.has_owner_node || v.owner_version != *version),
            _ => false,
        },
        _ => false,
    })
}
