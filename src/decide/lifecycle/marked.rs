//! Markers written ahead of a fire, not awaited. The trigger asks a monitored job to prepare a
//! little before its instant ([`Input::Prepare`]); the machine counts the free items as marked
//! at once and queues their `running` markers ([`WriteMode::Submitted`]), and the fire runs them
//! at its instant whether or not the write has answered: at ten thousand jobs an instant's
//! markers take the registry a second, longer than any lead, and the fire no longer waits on them.
//!
//! The answer ([`Input::Written`] with [`Purpose::Prepare`]) is the machine's next input:
//!
//! - done: the markers stand. An item released meanwhile (its fire parked, the job drained) gets
//!   its marker deleted again, since the release may have reached the registry first.
//! - refused (another instance's marker is there): the items are no longer marked; a run of them
//!   here is cancelled and its end write leaves that marker alone.
//! - failed (no answer from the registry): the items are no longer marked; a run of them goes on
//!   (its end write tolerates a marker that is not there).
//!
//! A run that ends before its markers' answer holds its end write until then ([`Run`]'s
//! `end_held`): a deletion queued behind a refused creation would delete the other's marker.
//!
//! [`Input::Prepare`]: super::Input::Prepare
//! [`Input::Written`]: super::Input::Written
//! [`Run`]: super::Run

use crate::decide::prepare::release_ops;
use crate::paths::JobNode;
use crate::types::ShardItem;

use super::{Command, Facts, JobMachine, Outcome, Purpose, WriteMode};

impl JobMachine {
    /// Counts `items` as marked while their markers are on their way.
    pub(super) fn marking(&mut self, items: &[ShardItem]) {
        for i in items {
            self.local.ended.remove(i);
        }
        self.local.marked.extend(items.iter().copied());
        self.local.unconfirmed.extend(items.iter().copied());
    }

    /// The markers of `items` written ahead answered `outcome`.
    pub(super) fn marked_answered(
        &mut self,
        items: &[ShardItem],
        outcome: Outcome,
        facts: &dyn Facts,
        out: &mut Vec<Command>,
    ) {
        for i in items {
            self.local.unconfirmed.remove(i);
        }
        // The items a run here holds now (read only when a marker is missing).
        let ran = |m: &Self| -> Vec<ShardItem> {
            (items.iter())
                .filter(|i| m.local.running.contains(i))
                .copied()
                .collect()
        };
        match outcome {
            Outcome::Done => {
                let stray: Vec<ShardItem> = (items.iter())
                    .filter(|i| !self.local.marked.contains(i) && !self.local.running.contains(i))
                    .copied()
                    .collect();
                if !stray.is_empty() {
                    out.push(Command::Write {
                        ops: release_ops(&self.job, stray),
                        mode: WriteMode::Tolerant,
                        then: Purpose::ClearUnknown,
                    });
                }
            }
            Outcome::Conflict | Outcome::Stale => {
                for i in items {
                    self.local.marked.remove(i);
                }
                let ran = ran(self);
                if !ran.is_empty() {
                    for (_, run) in &mut self.runs {
                        run.end_ops.retain(|op| {
                            !matches!(JobNode::parse(op.path()),
                                Ok((_, JobNode::ShardingRunning(i))) if ran.contains(&i))
                        });
                    }
                    out.push(Command::Warn(format!(
                        "the running markers of items {ran:?} written ahead were refused (another \
                         instance's marker is there): their run here is cancelled"
                    )));
                    out.push(Command::Cancel(ran));
                }
            }
            Outcome::Failed(e) => {
                for i in items {
                    self.local.marked.remove(i);
                }
                let ran = ran(self);
                if !ran.is_empty() {
                    out.push(Command::Warn(format!(
                        "writing the running markers of items {ran:?} ahead failed ({e}): their \
                         run here goes on without them"
                    )));
                }
            }
        }
        self.end_held(facts, out);
        self.release_gated(out);
    }

    /// The runs whose end write waited for their markers' answer and have it now end.
    fn end_held(&mut self, facts: &dyn Facts, out: &mut Vec<Command>) {
        while let Some(at) = self.runs.iter().position(|(_, r)| {
            r.end_held && !r.items.iter().any(|i| self.local.unconfirmed.contains(i))
        }) {
            let (run_id, run) = &mut self.runs[at];
            let run_id = *run_id;
            run.end_held = false;
            if run.end_ops.is_empty() {
                self.finish(run_id, true, facts, out);
            } else {
                out.push(Command::SubmitEnd {
                    run_id,
                    ops: run.end_ops.clone(),
                });
            }
        }
    }
}
