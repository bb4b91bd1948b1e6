//! What the machine does with a write's outcome ([`Input::Written`]), and how it leaves (drain,
//! removal): the end of the write-then-continue loop.

use super::*;
use crate::model::Op;
use crate::paths::JobNode;

impl JobMachine {
    pub(super) fn written(
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
                // run its items. A workflow step's are owed to its run: launched again.
                let owed = (self.starting.take())
                    .is_some_and(|s| self.workflow_start_lost(s.source, &s.plan));
                if !owed {
                    self.skipped(SkipReason::PlanChanged, 0, out);
                }
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
