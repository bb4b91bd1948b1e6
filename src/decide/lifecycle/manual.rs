//! The machine's manual runs: taking `trigger/{me}` with the parameters `shardcron/trigger/{me}`
//! gives it ([`crate::decide::trigger_params`]), and firing the run they ask for.

use std::sync::Arc;

use crate::decide::trigger_params::TriggerParams;
use crate::decide::workflow::run::RunId;
use crate::model::ExecutionSource;
use crate::model::Op;
use crate::paths::JobNode;

use super::{Command, Facts, JobMachine, Manual, Purpose, WriteMode};

impl JobMachine {
    /// `trigger/{me}` appeared: deleted (with its parameters, when any), and the parameters kept
    /// for the manual run. Bad parameters are reported and the trigger runs as a plain one.
    pub(super) fn take_trigger(&mut self, facts: &dyn Facts, out: &mut Vec<Command>) {
        // A new trigger replaces what an earlier one asked for: parameters a trigger left that
        // ran nothing here (none of its items owned) must not ride on a later plain trigger.
        self.manual = None;
        let mut ops = vec![Op::delete(
            JobNode::TriggerInstance(self.me.clone()).to_path(&self.job),
        )];
        let mut mode = WriteMode::Direct;
        if let Some(data) = facts.trigger_params() {
            let path = JobNode::TriggerParamsFor(self.me.clone()).to_path(&self.job);
            match TriggerParams::parse(&data) {
                Ok(p) => {
                    self.manual = Some(Box::new(Manual {
                        items: p.shard_items(),
                        parameter: p.job_parameter.map(Arc::from),
                        workflow: p.workflow_run.as_deref().and_then(RunId::parse),
                    }))
                }
                Err(e) => out.push(Command::Warn(format!(
                    "{path}: {e}; the trigger runs without parameters"
                ))),
            }
            ops.push(Op::delete(path));
            // Op by op: the parameters may be gone already (an operator cleaned up).
            mode = WriteMode::Tolerant;
        }
        out.push(Command::Write {
            ops,
            mode,
            then: Purpose::TakeTrigger,
        });
    }

    /// A manual run: every owned item, or those the trigger named, with its job parameter.
    pub(super) fn fire_manual(&mut self, facts: &dyn Facts, out: &mut Vec<Command>) {
        let only = self.manual.as_ref().and_then(|m| m.items.clone());
        if only.is_none() {
            return self.fire(ExecutionSource::Manual, None, facts, out);
        }
        self.fire_only(ExecutionSource::Manual, None, only, facts, out);
    }
}
