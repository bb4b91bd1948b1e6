//! A round of one phase: this instance's items registered, its writes' answers, the claim of the
//! hook call by exactly one instance, and the clearing that releases every waiting instance.

use super::*;

impl DistributeOnce {
    pub(super) fn begin(
        &mut self,
        phase: Phase,
        items: Vec<ShardItem>,
        facts: &dyn Fn(Phase) -> PhaseFacts,
        out: &mut Vec<GuaranteeCommand>,
    ) {
        let f = facts(phase);
        let slot = &mut self.rounds[phase.index()];
        match slot {
            Some(r) => r.items.extend(items.iter().copied()),
            None => {
                self.next += 1;
                *slot = Some(Round {
                    id: self.next,
                    items: items.iter().copied().collect(),
                    registered: false,
                    claiming: false,
                    calling: false,
                    timed_out: false,
                    lost_at: None,
                });
                out.push(GuaranteeCommand::Timer(
                    phase,
                    self.next,
                    self.timeouts[phase.index()],
                ));
            }
        }
        let path = |n: JobNode| n.to_path(&self.job);
        let mut ops = Vec::new();
        if !f.parent {
            ops.push(Op::create(
                path(JobNode::Guarantee),
                "",
                CreateMode::Persistent,
            ));
        }
        if f.root.is_none() {
            ops.push(Op::create(path(phase.root()), "", CreateMode::Persistent));
        }
        for i in items {
            if !f.registered.contains(&i) {
                ops.push(Op::create(path(phase.item(i)), "", CreateMode::Persistent));
            }
        }
        out.push(GuaranteeCommand::Write(phase, Step::Register, ops));
    }

    pub(super) fn written(
        &mut self,
        phase: Phase,
        step: Step,
        outcome: Outcome,
        facts: &dyn Fn(Phase) -> PhaseFacts,
        out: &mut Vec<GuaranteeCommand>,
    ) {
        let Some(r) = self.rounds[phase.index()].as_mut() else {
            return;
        };
        match (step, outcome) {
            (Step::Register, Outcome::Failed(e)) => {
                out.push(GuaranteeCommand::Warn(format!(
                    "distribute-once: registering {} items failed: {e}; waiting for the timeout",
                    phase.as_str()
                )));
                r.registered = true;
            }
            (Step::Register, _) => {
                r.registered = true;
                self.evaluate(phase, &facts(phase), out);
            }
            (Step::Claim, Outcome::Done) => {
                r.claiming = false;
                r.lost_at = None;
                r.calling = true;
                let missing = if r.timed_out {
                    facts(phase).missing()
                } else {
                    Vec::new()
                };
                out.push(GuaranteeCommand::Call(phase, missing));
            }
            (Step::Claim, _) => {
                // Another instance claimed it: its clearing (or the timeout) ends the wait.
                r.claiming = false;
                if r.timed_out {
                    r.calling = true;
                    let ops = self.clear_ops(phase, &facts(phase));
                    out.push(GuaranteeCommand::Write(phase, Step::Clear, ops));
                }
            }
            (Step::Clear, outcome) => {
                if let Outcome::Failed(e) = outcome {
                    out.push(GuaranteeCommand::Warn(format!(
                        "distribute-once: clearing guarantee/{} failed: {e}",
                        phase.as_str()
                    )));
                }
                self.resolve(phase, out);
            }
        }
    }

    /// Claims the round when every item is accounted for and nobody has.
    pub(super) fn evaluate(
        &mut self,
        phase: Phase,
        f: &PhaseFacts,
        out: &mut Vec<GuaranteeCommand>,
    ) {
        let Some(r) = &self.rounds[phase.index()] else {
            return;
        };
        if !r.registered || r.claiming || r.calling {
            return;
        }
        if let Some((version, claimer)) = &f.root {
            if claimer.is_empty() && f.missing().is_empty() && r.lost_at != Some(*version) {
                self.claim(phase, *version, out);
            }
        }
    }

    pub(super) fn claim(&mut self, phase: Phase, version: i32, out: &mut Vec<GuaranteeCommand>) {
        if let Some(r) = self.rounds[phase.index()].as_mut() {
            r.claiming = true;
            r.lost_at = Some(version);
        }
        let op = Op::Set {
            path: phase.root().to_path(&self.job),
            data: self.me.as_str().as_bytes().to_vec(),
            version: Some(version),
        };
        out.push(GuaranteeCommand::Write(phase, Step::Claim, vec![op]));
    }

    /// Deletes the phase's item nodes the mirror shows (and ours), then its root.
    pub(super) fn clear_ops(&self, phase: Phase, f: &PhaseFacts) -> Vec<Op> {
        let mut items = f.registered.clone();
        if let Some(r) = &self.rounds[phase.index()] {
            items.extend(r.items.iter().copied());
        }
        let mut ops: Vec<Op> = items
            .into_iter()
            .map(|i| Op::delete(phase.item(i).to_path(&self.job)))
            .collect();
        ops.push(Op::delete(phase.root().to_path(&self.job)));
        ops
    }

    pub(super) fn resolve(&mut self, phase: Phase, out: &mut Vec<GuaranteeCommand>) {
        if self.rounds[phase.index()].take().is_some() && phase == Phase::Started {
            out.push(GuaranteeCommand::Go);
        }
    }
}
