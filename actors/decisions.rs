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

/// The decisions seen, oldest first; boxed and made on the first one (most jobs take part in no
/// workflow: one pointer each).
#[derive(Debug, Default)]
pub(crate) struct DecisionsSeen(Option<Box<Seen>>);

/// Each decision seen and when.
type Seen = VecDeque<(RunId, DateTime<Utc>)>;

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
        let seen = self.0.get_or_insert_with(Box::default);
        if seen.iter().any(|(r, _)| *r == run) {
            return;
        }
        if seen.len() == REMEMBERED {
            seen.pop_front();
        }
        seen.push_back((run, now));
    }

    /// When the decision of `run` was seen (and forgets it: one step start per run here).
    pub(crate) fn take(&mut self, run: &RunId) -> Option<DateTime<Utc>> {
        let seen = self.0.as_mut()?;
        let at = seen.iter().position(|(r, _)| r == run)?;
        let taken = seen.remove(at).map(|(_, at)| at);
        if seen.is_empty() {
            self.0 = None;
        }
        taken
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(secs, 0).unwrap()
    }

    fn run(n: i64) -> RunId {
        RunId::scheduled(n)
    }

    #[test]
    fn the_first_sighting_of_a_decision_is_kept_until_its_step_starts() {
        let mut seen = DecisionsSeen::default();
        let start = Op::create(
            "/report/shardcron/workflow/100@start",
            "run",
            crate::registry::CreateMode::Persistent,
        );
        seen.deciding(&[start], at(1));
        seen.record_changed("100@start", NodeEventKind::Created, at(2));
        seen.record_changed("200@start", NodeEventKind::DataChanged, at(3));
        seen.record_changed("200@0", NodeEventKind::Created, at(3));
        seen.record_changed("junk@start", NodeEventKind::Created, at(3));
        assert_eq!(seen.take(&run(100)), Some(at(1)), "the write came first");
        assert_eq!(seen.take(&run(100)), None, "taken once");
        assert_eq!(seen.take(&run(200)), None, "only a created decision counts");
    }

    #[test]
    fn at_most_sixteen_decisions_are_remembered_the_oldest_forgotten_first() {
        let mut seen = DecisionsSeen::default();
        for n in 0..=REMEMBERED as i64 {
            seen.record_changed(&format!("{n}@start"), NodeEventKind::Created, at(n));
        }
        assert_eq!(seen.take(&run(0)), None);
        assert_eq!(
            seen.take(&run(REMEMBERED as i64)),
            Some(at(REMEMBERED as i64))
        );
    }
}
