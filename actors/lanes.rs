//! Per-job lanes for the session-wide actors (leader, sharding): the work for one job runs in a
//! task of its own, at most one per job at a time, so that ten thousand jobs are handled side by
//! side (their registry calls pipelined on the session) instead of one round trip after another
//! inside the actor. A request for a job whose task is still running is merged into one follow-up
//! that starts when the task reports back (a message, never a wait inside the handler).

use std::collections::HashMap;

use crate::types::JobName;

/// A request that can absorb another for the same job.
pub(crate) trait Merge {
    /// Folds `later` into `self`.
    fn merge(&mut self, later: Self);
}

impl Merge for () {
    fn merge(&mut self, _later: Self) {}
}

/// Which jobs have a task in flight, and what to do for each once it ends.
#[derive(Debug)]
pub(crate) struct Lanes<R> {
    busy: HashMap<JobName, Option<R>>,
}

impl<R> Default for Lanes<R> {
    fn default() -> Self {
        Self {
            busy: HashMap::new(),
        }
    }
}

impl<R: Merge> Lanes<R> {
    /// Returns the request when the caller should start a task for `job` now; otherwise it is
    /// kept (merged with any other kept one) for when the running task ends.
    pub(crate) fn admit(&mut self, job: &JobName, request: R) -> Option<R> {
        match self.busy.get_mut(job) {
            None => {
                self.busy.insert(job.clone(), None);
                Some(request)
            }
            Some(Some(kept)) => {
                kept.merge(request);
                None
            }
            Some(slot) => {
                *slot = Some(request);
                None
            }
        }
    }

    /// `job`'s task ended: the kept request to start next (the lane stays busy), or none (the
    /// lane is free).
    pub(crate) fn done(&mut self, job: &JobName) -> Option<R> {
        match self.busy.get_mut(job) {
            Some(slot @ Some(_)) => slot.take(),
            _ => {
                self.busy.remove(job);
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq)]
    struct Flags(u8);

    impl Merge for Flags {
        fn merge(&mut self, later: Self) {
            self.0 |= later.0;
        }
    }

    #[test]
    fn one_task_per_job_and_requests_meanwhile_merge_into_one_follow_up() {
        let (a, b) = (
            JobName::new("a").expect("a job name"),
            JobName::new("b").expect("a job name"),
        );
        let mut lanes = Lanes::default();
        assert_eq!(lanes.admit(&a, Flags(1)), Some(Flags(1)));
        assert_eq!(
            lanes.admit(&b, Flags(1)),
            Some(Flags(1)),
            "jobs run side by side"
        );
        assert_eq!(lanes.admit(&a, Flags(2)), None);
        assert_eq!(lanes.admit(&a, Flags(4)), None);
        assert_eq!(lanes.done(&a), Some(Flags(6)), "merged follow-up");
        assert_eq!(
            lanes.admit(&a, Flags(1)),
            None,
            "the follow-up holds the lane"
        );
        assert_eq!(lanes.done(&a), Some(Flags(1)));
        assert_eq!(lanes.done(&a), None);
        assert_eq!(
            lanes.admit(&a, Flags(8)),
            Some(Flags(8)),
            "a free lane starts at once"
        );
    }
}
