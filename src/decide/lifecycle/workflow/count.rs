//! The count of a job's workflow runs (`shardcron_workflow_runs_total`, the
//! `workflow_run_ended` event): the job's leader reports each run of the job once its records
//! show how it ended ([`RunRecords::outcome`]), so the cluster counts each run once.
//!
//! An instance that becomes leader first takes note of the runs already ended (the previous
//! leader, or this instance before a restart, reported them) and reports only the runs that end
//! after; a run that ends while the leadership changes hands may so go unreported, never twice.
//! The runs reported are remembered while their records exist (the leader prunes all but the
//! newest [`crate::decide::workflow::records::KEEP_RUNS`]), so the memory is bounded.

use std::collections::BTreeSet;

use crate::decide::workflow::records::RunRecords;
use crate::decide::workflow::run::RunId;

use super::super::{Command, Facts, JobMachine};
use super::records_of;

/// The runs this instance, as the job's leader, has reported ended.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(in crate::decide::lifecycle) struct Counted {
    /// Whether the runs already ended when this instance became leader are noted.
    primed: bool,
    /// The ended runs, reported or noted; only runs that still have records.
    ended: BTreeSet<RunId>,
}

impl JobMachine {
    /// The leader reports the runs of the job that ended since it last looked.
    pub(super) fn workflow_count(&mut self, facts: &dyn Facts, out: &mut Vec<Command>) {
        let leader = facts.view().leader.as_ref() == Some(&self.me);
        let Some(flow) = self.flow.as_deref_mut() else {
            return;
        };
        if !leader {
            // Another instance reports now; noted afresh on coming back.
            flow.counted = Counted::default();
            return;
        }
        let own = records_of(facts, &self.job);
        let total = facts.item_total(&self.job);
        let counted = &mut flow.counted;
        counted.ended.retain(|run| own.contains_key(run));
        for (run, records) in &own {
            if counted.ended.contains(run) {
                continue;
            }
            let Some(outcome) = RunRecords::outcome(records, total) else {
                continue;
            };
            counted.ended.insert(run.clone());
            if counted.primed {
                out.push(Command::WorkflowRunEnded {
                    run: run.clone(),
                    outcome,
                });
            }
        }
        counted.primed = true;
    }
}
