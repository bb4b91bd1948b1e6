//! The machine's run policies (`shardcron.` props, [`crate::config::RunPolicy`]): a run's timeout
//! and the grace after it, and retries of failed items (the overlap policies are in `overlap.rs`). Timers are commands
//! ([`Command::StartTimer`]) and come back as inputs
//! ([`Input::TimerFired`](super::Input::TimerFired)); a timer whose run has ended is ignored.
//!
//! ```text
//!  Launch ──▶ StartTimer(Timeout, after) ─ run ends first ─▶ (timer ignored)
//!                  │ fired
//!                  ▼
//!             TimeOut(run) + StartTimer(Grace, grace) ─ run ends first ─▶ (timer ignored)
//!                                   │ fired
//!                                   ▼
//!                              Abandon(run)
//!
//!  RunFinished{failed} ─ attempts left, may start, items still ours ─▶ the failed items split off
//!      into a new run, backing off: StartTimer(Retry, delay); the others end as usual
//!  Retry fired ─ may start, items still ours ─▶ Launch(attempt + 1) (+ its timeout)
//!              └ otherwise ───────────────────▶ Warn, FailureStands (the error handler hears the
//!                                               last failure), the retry run ends (markers go)
//!  Drain ─▶ runs backing off end at once (Warn, FailureStands)
//! ```
//!
//! The timeout counts from the run's launch: an item that waits its turn under the job's item
//! concurrency spends its time waiting too (a run is one unit of work to its timeout).
//!
//! A retry backing off keeps its items' `running` markers and counts as a run in progress: a fire
//! meanwhile finds them running (the overlap policy decides: flagged misfire with `buffer_one`,
//! skipped with `skip`), failover claims wait, a reshard waits, and if this instance dies the
//! markers vanish with its session and the items fail over as a crashed run's do.

use crate::config::{Notify, Retry};
use crate::model::ExecutionSource;
use crate::model::Op;
use crate::paths::JobNode;
use crate::types::{JobName, ShardItem};

use super::{Command, Facts, JobMachine, Run, Timer};

impl JobMachine {
    /// A run was launched: start its timeout, if the job has one (a job without costs one test).
    pub(super) fn arm_timeout(&self, run_id: u64, out: &mut Vec<Command>) {
        if let Some(timeout) = self.config.policy().timeout {
            out.push(Command::StartTimer {
                run_id,
                timer: Timer::Timeout,
                after: timeout.after,
            });
        }
    }

    /// A timer ran out.
    pub(super) fn timer_fired(
        &mut self,
        run_id: u64,
        timer: Timer,
        facts: &dyn Facts,
        out: &mut Vec<Command>,
    ) {
        let grace = self.config.policy().timeout.map(|t| t.grace);
        let Some((_, run)) = self.runs.iter_mut().find(|(id, _)| *id == run_id) else {
            // The run ended before its timer: nothing to do.
            return;
        };
        match timer {
            Timer::Timeout if !run.timed_out && !run.backing_off => {
                run.timed_out = true;
                // A config change may have dropped the timeout since the launch: the default grace.
                let grace = grace.unwrap_or(crate::config::DEFAULT_GRACE);
                out.push(Command::TimeOut { run_id, grace });
                out.push(Command::StartTimer {
                    run_id,
                    timer: Timer::Grace,
                    after: grace,
                });
            }
            Timer::Timeout => {}
            Timer::Grace => out.push(Command::Abandon { run_id }),
            Timer::Retry => self.retry_due(run_id, facts, out),
        }
    }

    /// Run `run_id` ended with `failed` items: those with attempts left, still this instance's,
    /// split off into a run that backs off before it runs them again.
    pub(super) fn retry_failed(
        &mut self,
        run_id: u64,
        failed: &[ShardItem],
        retry: Retry,
        facts: &dyn Facts,
        out: &mut Vec<Command>,
    ) {
        let may_start = self.may_start();
        let Some((_, run)) = self.runs.iter_mut().find(|(id, _)| *id == run_id) else {
            return;
        };
        if run.attempt > retry.max {
            return;
        }
        // A failover run's items name their crashed owner: the claim makes them this instance's.
        let claimed = run.source == ExecutionSource::Failover;
        // An item past the count (lowered meanwhile) no longer exists: its failure stands.
        let exists = ShardItem(self.config.sharding_total_count());
        let (again, stands): (Vec<ShardItem>, Vec<ShardItem>) = (run.items.iter())
            .filter(|i| failed.contains(i))
            .copied()
            .partition(|i| may_start && *i < exists && (claimed || facts.owns(*i)));
        if !stands.is_empty() && retry.notify == Notify::Final {
            out.push(Command::FailureStands(stands));
        }
        let Some(first) = again.first().copied() else {
            return;
        };
        let (kept, rest): (Vec<Op>, Vec<Op>) = std::mem::take(&mut run.end_ops)
            .into_iter()
            .partition(|op| op_item(op).is_some_and(|i| again.contains(&i)));
        run.end_ops = rest;
        run.items.retain(|i| !again.contains(i));
        let (attempt, source, scheduled) = (run.attempt + 1, run.source, run.scheduled);
        let parameter = run.parameter.clone();
        let workflow = run.workflow.clone();
        self.next_run += 1;
        let id = self.next_run;
        let after = retry.delay(attempt - 1, jitter_seed(&self.job, first, attempt));
        self.runs.push((
            id,
            Run {
                items: again,
                end_ops: kept,
                started: facts.now(),
                timed_out: false,
                attempt,
                source,
                scheduled,
                backing_off: true,
                parameter,
                workflow,
                end_held: false,
                gated: false,
            },
        ));
        out.push(Command::StartTimer {
            run_id: id,
            timer: Timer::Retry,
            after,
        });
    }

    /// A retry's backoff ran out: its items run again, if this instance may still run them.
    fn retry_due(&mut self, run_id: u64, facts: &dyn Facts, out: &mut Vec<Command>) {
        let may_start = self.may_start();
        let Some((_, run)) = self.runs.iter_mut().find(|(id, _)| *id == run_id) else {
            return;
        };
        if !run.backing_off {
            return;
        }
        run.backing_off = false;
        let claimed = run.source == ExecutionSource::Failover;
        let ours = claimed || run.items.iter().all(|i| facts.owns(*i));
        if may_start && ours {
            run.started = facts.now();
            out.push(Command::Launch {
                run_id,
                source: run.source,
                scheduled: run.scheduled,
                items: run.items.clone(),
                attempt: run.attempt,
                parameter: run.parameter.clone(),
                workflow: run.workflow.clone(),
            });
            self.arm_timeout(run_id, out);
        } else {
            let why = if ours {
                "the job cannot start work here now"
            } else {
                "the items moved to another instance"
            };
            out.push(Command::Warn(format!(
                "retry {} of items {:?} not run ({why}): the last failure stands",
                run.attempt - 1,
                run.items
            )));
            let items = run.items.clone();
            self.failure_stands(items, out);
            self.run_finished(run_id, Vec::new(), facts, out);
        }
    }

    /// The job stops here: retries backing off end now, their markers go.
    pub(super) fn end_backoffs(&mut self, facts: &dyn Facts, out: &mut Vec<Command>) {
        let waiting: Vec<u64> = (self.runs.iter())
            .filter(|(_, r)| r.backing_off)
            .map(|(id, _)| *id)
            .collect();
        for run_id in waiting {
            if let Some((_, run)) = self.runs.iter_mut().find(|(id, _)| *id == run_id) {
                run.backing_off = false;
                out.push(Command::Warn(format!(
                    "retry of items {:?} not run (the job stops here): the last failure stands",
                    run.items
                )));
                let items = run.items.clone();
                self.failure_stands(items, out);
            }
            self.run_finished(run_id, Vec::new(), facts, out);
        }
    }
}

impl JobMachine {
    /// A retry of `items` will not run: under `shardcron.retry.notify: final` the error handler
    /// has not heard their last failure yet.
    fn failure_stands(&self, items: Vec<ShardItem>, out: &mut Vec<Command>) {
        let unheard = (self.config.policy().retry).is_some_and(|r| r.notify == Notify::Final);
        if unheard {
            out.push(Command::FailureStands(items));
        }
    }
}

/// The item a per-item write is about.
fn op_item(op: &Op) -> Option<ShardItem> {
    use JobNode::{
        ShardingFailover, ShardingFailovering, ShardingInstance, ShardingMisfire, ShardingRunning,
    };
    match JobNode::parse(op.path()).ok()?.1 {
        ShardingRunning(i)
        | ShardingFailover(i)
        | ShardingFailovering(i)
        | ShardingMisfire(i)
        | ShardingInstance(i) => Some(i),
        _ => None,
    }
}

/// A retry's jitter, drawn from the job, the item and the attempt: items that failed together
/// spread apart, and the machine stays a pure function (FNV-1a, then splitmix64's finaliser).
fn jitter_seed(job: &JobName, item: ShardItem, attempt: u32) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let bytes = job.as_str().bytes();
    for b in bytes
        .chain(item.0.to_le_bytes())
        .chain(attempt.to_le_bytes())
    {
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}
