//! Per-job lanes for the session-wide actors (leader, sharding): the work for one job runs in a
//! task of its own, at most one per job at a time, so that ten thousand jobs are handled side by
//! side (their registry calls pipelined on the session) instead of one round trip after another
//! inside the actor. A request for a job whose task is still running is merged into one follow-up
//! that starts when the task reports back (a message, never a wait inside the handler).
//!
//! At most [`DEFAULT_CAP`] tasks run at once; jobs beyond it wait in arrival order. A few hundred
//! in flight keep the session's pipeline full, while ten thousand tasks at once (every job at a
//! session start) would only hold ten thousand futures in memory without finishing sooner.
//!
//! A lane's task must report back whatever happens, or its slot stays taken until the session
//! ends: its work runs under [`guarded`], which turns a panic (a user `ShardingStrategy` runs in
//! the sharding lane) into an error the task reports, logged at ERROR and counted in
//! `shardcron_lane_panics_total`; the actor then frees the slot and retries the job after
//! [`PANIC_RETRY`] ([`or_retry`]).

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::time::Duration;

use futures::FutureExt;
use ractor::{ActorRef, Message};

use crate::types::JobName;

/// How long after a panicked lane task the job is tried again: long enough not to spin on a
/// strategy that always panics, short enough to recover from one that panicked once.
pub(crate) const PANIC_RETRY: Duration = Duration::from_secs(1);

/// A lane task's work panicked; the message is the panic's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the {lane} task of job {job} panicked: {message}")]
pub(crate) struct LanePanic {
    /// Which actor's lane.
    pub(crate) lane: &'static str,
    /// The job.
    pub(crate) job: JobName,
    /// The panic's message.
    pub(crate) message: String,
}

/// Runs `work` (a lane task's body) and returns its output, or the panic it raised, logged and
/// counted. Not an `async fn`: one would hold `work` twice (its argument, then the awaited
/// wrapper), doubling the size of every lane task in flight.
pub(crate) fn guarded<T>(
    lane: &'static str,
    job: &JobName,
    work: impl Future<Output = T>,
) -> impl Future<Output = Result<T, LanePanic>> {
    let job = job.clone();
    AssertUnwindSafe(work)
        .catch_unwind()
        .map(move |outcome| outcome.map_err(|payload| reported(lane, job, payload)))
}

/// Runs `work` (a lane task's body) under [`guarded`] and returns its output; after a panic,
/// `fallback`, and `retry(job)` goes to the actor after [`PANIC_RETRY`] (the panic is logged and
/// counted). Not an `async fn`, for the reason [`guarded`] gives.
pub(crate) fn or_retry<M: Message, T>(
    lane: &'static str,
    myself: &ActorRef<M>,
    job: &JobName,
    work: impl Future<Output = T>,
    retry: fn(JobName) -> M,
    fallback: T,
) -> impl Future<Output = T> {
    let (myself, again) = (myself.clone(), job.clone());
    guarded(lane, job, work).map(move |outcome| match outcome {
        Ok(output) => output,
        Err(_) => {
            myself.send_after(PANIC_RETRY, move || retry(again));
            fallback
        }
    })
}

/// Logs and counts a lane task's panic.
fn reported(lane: &'static str, job: JobName, payload: Box<dyn std::any::Any + Send>) -> LanePanic {
    let message = crate::job::handlers::panic_message(&*payload);
    let panic = LanePanic { lane, job, message };
    tracing::error!(job = %panic.job, lane, error = %panic, retry_in = ?PANIC_RETRY, "lane task panicked");
    crate::metrics::lane_panicked(lane, &panic.job);
    panic
}

/// Tasks in flight per actor unless said otherwise.
pub(crate) const DEFAULT_CAP: usize = 256;

/// A request that can absorb another for the same job.
pub(crate) trait Merge {
    /// Folds `later` into `self`.
    fn merge(&mut self, later: Self);
}

impl Merge for () {
    fn merge(&mut self, _later: Self) {}
}

/// Which jobs have a task in flight or waiting, and what to do for each next.
#[derive(Debug)]
pub(crate) struct Lanes<R> {
    lanes: HashMap<JobName, Lane<R>>,
    /// Jobs with a kept request and no task, oldest first.
    waiting: VecDeque<JobName>,
    running: usize,
    cap: usize,
}

#[derive(Debug)]
struct Lane<R> {
    running: bool,
    kept: Option<R>,
}

impl<R: Merge> Default for Lanes<R> {
    fn default() -> Self {
        Self::with_cap(DEFAULT_CAP)
    }
}

impl<R: Merge> Lanes<R> {
    /// Lanes running at most `cap` tasks at once (at least one).
    pub(crate) fn with_cap(cap: usize) -> Self {
        Self {
            lanes: HashMap::new(),
            waiting: VecDeque::new(),
            running: 0,
            cap: cap.max(1),
        }
    }

    /// Returns the request when the caller should start a task for `job` now; otherwise it is
    /// kept (merged with any other kept one) for when a task slot or the job's lane frees up.
    pub(crate) fn admit(&mut self, job: &JobName, request: R) -> Option<R> {
        if let Some(lane) = self.lanes.get_mut(job) {
            match &mut lane.kept {
                Some(kept) => kept.merge(request),
                None => lane.kept = Some(request),
            }
            return None;
        }
        if self.running < self.cap {
            self.running += 1;
            self.lanes.insert(
                job.clone(),
                Lane {
                    running: true,
                    kept: None,
                },
            );
            return Some(request);
        }
        self.lanes.insert(
            job.clone(),
            Lane {
                running: false,
                kept: Some(request),
            },
        );
        self.waiting.push_back(job.clone());
        None
    }

    /// `job`'s task ended: the next task to start, if any (the job's own follow-up when nothing
    /// else waits, else the job that has waited longest; the follow-up queues behind it).
    pub(crate) fn done(&mut self, job: &JobName) -> Option<(JobName, R)> {
        if let Some(lane) = self.lanes.get_mut(job).filter(|l| l.running) {
            lane.running = false;
            self.running -= 1;
            if lane.kept.is_some() {
                self.waiting.push_back(job.clone());
            } else {
                self.lanes.remove(job);
            }
        }
        if self.lanes.is_empty() {
            // Idle: give the tables back (a start with ten thousand jobs sized them for all).
            self.lanes = HashMap::new();
            self.waiting = VecDeque::new();
            return None;
        }
        while self.running < self.cap {
            let next = self.waiting.pop_front()?;
            if let Some(lane) = self.lanes.get_mut(&next) {
                if let Some(request) = lane.kept.take() {
                    lane.running = true;
                    self.running += 1;
                    return Some((next, request));
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_guarded_task_that_panics_reports_the_panic_and_one_that_ends_its_output() {
        let job = JobName::new("a").expect("a job name");
        assert_eq!(guarded("sharding", &job, async { 7 }).await, Ok(7));
        let panicked = guarded("sharding", &job, async {
            if job.as_str() == "a" {
                panic!("strategy exploded");
            }
        })
        .await
        .expect_err("the panic is reported");
        assert_eq!(panicked.message, "strategy exploded");
        assert!(
            panicked.to_string().contains("sharding task of job a"),
            "{panicked}"
        );
    }

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
        assert_eq!(
            lanes.done(&a),
            Some((a.clone(), Flags(6))),
            "merged follow-up"
        );
        assert_eq!(
            lanes.admit(&a, Flags(1)),
            None,
            "the follow-up holds the lane"
        );
        assert_eq!(lanes.done(&a), Some((a.clone(), Flags(1))));
        assert_eq!(lanes.done(&a), None);
        assert_eq!(
            lanes.admit(&a, Flags(8)),
            Some(Flags(8)),
            "a free lane starts at once"
        );
    }

    #[test]
    fn tasks_beyond_the_cap_wait_in_arrival_order_and_a_follow_up_queues_behind_them() {
        let job = |n: &str| JobName::new(n).expect("a job name");
        let (a, b, c) = (job("a"), job("b"), job("c"));
        let mut lanes = Lanes::with_cap(1);
        assert_eq!(lanes.admit(&a, Flags(1)), Some(Flags(1)));
        assert_eq!(lanes.admit(&b, Flags(1)), None, "over the cap: waits");
        assert_eq!(lanes.admit(&c, Flags(1)), None);
        assert_eq!(lanes.admit(&b, Flags(2)), None, "merged while waiting");
        assert_eq!(lanes.admit(&a, Flags(4)), None, "a's follow-up");
        assert_eq!(
            lanes.done(&a),
            Some((b.clone(), Flags(3))),
            "b waited longest"
        );
        assert_eq!(lanes.done(&b), Some((c.clone(), Flags(1))));
        assert_eq!(
            lanes.done(&c),
            Some((a.clone(), Flags(4))),
            "a's follow-up last"
        );
        assert_eq!(lanes.done(&a), None);
        assert_eq!(lanes.admit(&b, Flags(8)), Some(Flags(8)), "all free again");
    }
}
