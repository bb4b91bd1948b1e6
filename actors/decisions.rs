//! When this instance saw each workflow decision of a job appear (`{run}@start` created), for
//! `shardcron_workflow_step_wait_seconds`: the executor notes the instant it writes the record
//! (the instance that decides) or gets its creation event (the others), whichever comes first,
//! and hands it to the run that starts the job's items of that run. Only a job in
//! a workflow receives such events; a job outside any workflow keeps this empty and its launches
//! never look here (they are not workflow steps).

use std::collections::VecDeque;

use chrono::{DateTime, Utc};

use crate::decide::workflow::run::RunId;
use crate::registry::{NodeEventKind, Op};

/// The most decisions remembered (a step runs one workflow run at a time here; older ones have
/// started or never will).
const REMEMBERED: usize = 16;

/// The decisions seen, oldest first.
#[derive(Debug, Default)]
pub(crate) struct DecisionsSeen(VecDeque<(RunId, DateTime<Utc>)>);

impl DecisionsSeen {
    /// A workflow record `name` of the job changed at `now`: a created `{run}@start` is noted.
    pub(crate) fn record_changed(&mut self, name: &str, kind: NodeEventKind, now: DateTime<Utc>) {
        if kind == NodeEventKind::Created {
            self.seen(name, now);
        }
    }

    /// This instance writes `ops` to decide workflow runs at `now`.
    pub(crate) fn deciding(&mut self, ops: &[Op], now: DateTime<Utc>) {
        for op in ops {
            if let Op::Create { path, .. } = op {
                let name = path.rsplit('/').next().unwrap_or_default();
                self.seen(name, now);
            }
        }
    }

    /// Notes `{run}@start` seen at `now`, unless noted already.
    fn seen(&mut self, name: &str, now: DateTime<Utc>) {
        let Some(run) = name.strip_suffix("@start").and_then(RunId::parse) else {
            return;
        };
        if self.0.iter().any(|(r, _)| *r == run) {
            return;
        }
        if self.0.len() == REMEMBERED {
            self.0.pop_front();
        }
        self.0.push_back((run, now));
    }

    /// When the decision of `run` was seen (and forgets it: one step start per run here).
    pub(crate) fn take(&mut self, run: &RunId) -> Option<DateTime<Utc>> {
        let at = self.0.iter().position(|(r, _)| r == run)?;
        self.0.remove(at).map(|(_, seen)| seen)
    }
}
