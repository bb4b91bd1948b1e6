//! The trigger's schedule: the jobs due at each instant, by phase, in the order they were queued.
//!
//! The queue holds a list of jobs per instant rather than an entry per job: jobs on one cron
//! share their instants, and a tree entry per job (its instant and name, 32 bytes, in nodes
//! about half full when filled in order) was about 130 bytes a job at 10,000 jobs. Taking a job
//! out of its instant's list is a search of that list, done when a job is unscheduled or
//! rescheduled, never at a fire.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use crate::types::JobName;

/// What a queue entry asks of its job (prepare, then arm, then fire at the same instant).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Phase {
    Prepare,
    Arm,
    Fire,
}

/// The jobs due at each instant, by phase, in the order they were queued.
#[derive(Debug, Default)]
pub(super) struct Queue(BTreeMap<(DateTime<Utc>, Phase), Vec<JobName>>);

impl Queue {
    pub(super) fn insert(&mut self, at: DateTime<Utc>, phase: Phase, job: JobName) {
        self.0.entry((at, phase)).or_default().push(job);
    }

    pub(super) fn remove(&mut self, at: DateTime<Utc>, phase: Phase, job: &JobName) {
        let Some(jobs) = self.0.get_mut(&(at, phase)) else {
            return;
        };
        if let Some(i) = jobs.iter().position(|j| j == job) {
            jobs.swap_remove(i);
        }
        if jobs.is_empty() {
            self.0.remove(&(at, phase));
        }
    }

    /// The earliest instant queued.
    pub(super) fn first(&self) -> Option<DateTime<Utc>> {
        self.0.first_key_value().map(|((at, _), _)| *at)
    }

    /// The earliest instant's jobs of one phase, taken out, when that instant is not after `now`.
    pub(super) fn pop_due(
        &mut self,
        now: DateTime<Utc>,
    ) -> Option<(DateTime<Utc>, Phase, Vec<JobName>)> {
        let entry = self.0.first_entry().filter(|e| e.key().0 <= now)?;
        let ((at, phase), jobs) = entry.remove_entry();
        Some((at, phase, jobs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(secs, 0).expect("a valid instant")
    }

    fn names(jobs: &[JobName]) -> Vec<&str> {
        jobs.iter().map(|j| j.as_str()).collect()
    }

    #[test]
    fn the_queue_gives_each_instants_prepares_before_its_fires_and_nothing_before_it_is_due() {
        let mut q = Queue::default();
        let job = |n: &str| JobName::new(n).expect("a valid name");
        q.insert(at(20), Phase::Fire, job("c"));
        q.insert(at(10), Phase::Fire, job("a"));
        q.insert(at(10), Phase::Fire, job("b"));
        q.insert(at(10), Phase::Prepare, job("a"));
        assert_eq!(q.first(), Some(at(10)));
        assert!(q.pop_due(at(9)).is_none());
        let (when, phase, jobs) = q.pop_due(at(10)).expect("the prepares are due");
        assert_eq!(
            (when, phase, names(&jobs)),
            (at(10), Phase::Prepare, vec!["a"])
        );
        let (_, phase, jobs) = q.pop_due(at(10)).expect("the fires are due");
        assert_eq!((phase, names(&jobs)), (Phase::Fire, vec!["a", "b"]));
        assert!(q.pop_due(at(19)).is_none());
        assert_eq!(q.first(), Some(at(20)));
    }

    #[test]
    fn a_job_taken_out_of_its_instant_leaves_the_others_and_an_emptied_instant_goes() {
        let mut q = Queue::default();
        let job = |n: &str| JobName::new(n).expect("a valid name");
        for n in ["a", "b", "c"] {
            q.insert(at(10), Phase::Fire, job(n));
        }
        q.insert(at(30), Phase::Fire, job("d"));
        q.remove(at(10), Phase::Fire, &job("b"));
        q.remove(at(10), Phase::Prepare, &job("a")); // not queued there: nothing changes
        q.remove(at(30), Phase::Fire, &job("d"));
        assert_eq!(q.0.len(), 1, "the instant at 30 went with its last job");
        let (_, _, jobs) = q.pop_due(at(40)).expect("due");
        let mut left = names(&jobs);
        left.sort();
        assert_eq!(left, ["a", "c"]);
        assert_eq!(q.first(), None);
    }
}
