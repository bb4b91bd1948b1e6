//! TriggerActor: one timer schedule for every job of the node. It keeps each job's next fire in
//! one ordered queue of instants, each with the jobs due at it, and arms a single [`Alarm`] for the
//! earliest; when it rings, every due job gets `ExecutorMsg::Fire` and its next instant is queued.
//! No task or timer per job.
//!
//! The queue holds a list of jobs per instant rather than an entry per job: jobs on one cron
//! share their instants, and a tree entry per job (its instant and name, 32 bytes, in nodes
//! about half full when filled in order) was about 130 bytes a job at 10,000 jobs. Taking a job
//! out of its instant's list is a search of that list, done when a job is unscheduled or
//! rescheduled, never at a fire.
//!
//! A job that monitors executions is also sent `ExecutorMsg::Prepare` [`PREPARE_LEAD`] before each
//! instant, so its `running` markers are written ahead and the instant itself waits on no write.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
// hashbrown's default hasher (foldhash, seeded per process): the ring looks up every due job.
use hashbrown::HashMap;
use ractor::{Actor, ActorProcessingErr, ActorRef};

use crate::config::ValidatedConfig;
use crate::cron::NextFireMemo;
use crate::decide::lifecycle::Input;
use crate::types::JobName;

use super::alarm::Alarm;
use super::context::SessionCtx;
use super::mail::{ExecutorMsg, TriggerMsg};

/// How long before a monitored job's instant its markers are written: several ZooKeeper round
/// trips, and time for a busy instant's markers to go out in a few large multi-ops.
pub(crate) const PREPARE_LEAD: chrono::TimeDelta = chrono::TimeDelta::milliseconds(200);

/// What a queue entry asks of its job (prepare sorts before fire at the same instant).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Phase {
    Prepare,
    Fire,
}

/// The TriggerActor.
#[derive(Debug)]
pub(crate) struct TriggerActor;

/// The jobs due at each instant, by phase, in the order they were queued.
#[derive(Debug, Default)]
struct Queue(BTreeMap<(DateTime<Utc>, Phase), Vec<JobName>>);

impl Queue {
    fn insert(&mut self, at: DateTime<Utc>, phase: Phase, job: JobName) {
        self.0.entry((at, phase)).or_default().push(job);
    }

    fn remove(&mut self, at: DateTime<Utc>, phase: Phase, job: &JobName) {
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
    fn first(&self) -> Option<DateTime<Utc>> {
        self.0.first_key_value().map(|((at, _), _)| *at)
    }

    /// The earliest instant's jobs of one phase, taken out, when that instant is not after `now`.
    fn pop_due(&mut self, now: DateTime<Utc>) -> Option<(DateTime<Utc>, Phase, Vec<JobName>)> {
        let entry = self.0.first_entry().filter(|e| e.key().0 <= now)?;
        let ((at, phase), jobs) = entry.remove_entry();
        Some((at, phase, jobs))
    }
}

/// State of the TriggerActor.
#[derive(Debug)]
pub(crate) struct TriggerState {
    ctx: SessionCtx,
    /// Each scheduled job's next instant, the prepare entry queued for it (if any), its config
    /// and its executor.
    next: HashMap<JobName, Scheduled>,
    queue: Queue,
    alarm: Alarm,
    generation: u64,
    /// The last next-instant computed: jobs requeued together mostly share their schedule.
    memo: NextFireMemo,
}

#[derive(Debug)]
struct Scheduled {
    at: DateTime<Utc>,
    /// Its prepare is queued, at `at - PREPARE_LEAD` (a flag, not the instant: 16 bytes less a
    /// job in the schedule's table).
    prepare_queued: bool,
    config: std::sync::Arc<ValidatedConfig>,
    executor: ActorRef<ExecutorMsg>,
}

/// Arguments of the TriggerActor: the session, and after a restart the jobs already running.
#[derive(Debug)]
pub(crate) struct TriggerArgs {
    pub(crate) ctx: SessionCtx,
    pub(crate) jobs: Vec<(
        JobName,
        std::sync::Arc<ValidatedConfig>,
        ActorRef<ExecutorMsg>,
    )>,
}

impl TriggerState {
    fn unschedule(&mut self, job: &JobName) {
        if let Some(s) = self.next.remove(job) {
            self.queue.remove(s.at, Phase::Fire, job);
            if s.prepare_queued {
                self.queue.remove(s.at - PREPARE_LEAD, Phase::Prepare, job);
            }
        }
    }

    fn schedule_after(
        &mut self,
        job: JobName,
        config: std::sync::Arc<ValidatedConfig>,
        executor: ActorRef<ExecutorMsg>,
        now: DateTime<Utc>,
    ) {
        let at = config.next_fire_after_memo(now, &mut self.memo);
        self.unschedule(&job);
        self.insert_at(job, config, executor, at, now);
    }

    /// Queues `job` (not scheduled now) for `at`, with its prepare when it monitors executions.
    fn insert_at(
        &mut self,
        job: JobName,
        config: std::sync::Arc<ValidatedConfig>,
        executor: ActorRef<ExecutorMsg>,
        at: Option<DateTime<Utc>>,
        now: DateTime<Utc>,
    ) {
        let Some(at) = at else {
            return;
        };
        self.queue.insert(at, Phase::Fire, job.clone());
        // Too close to prepare: the fire writes its markers itself.
        let prepare_queued = config.config().monitor_execution && at - PREPARE_LEAD > now;
        if prepare_queued {
            self.queue
                .insert(at - PREPARE_LEAD, Phase::Prepare, job.clone());
        }
        self.next.insert(
            job,
            Scheduled {
                at,
                prepare_queued,
                config,
                executor,
            },
        );
    }

    fn arm(&mut self, myself: &ActorRef<TriggerMsg>) {
        self.generation += 1;
        let Some(first) = self.queue.first() else {
            self.alarm.disarm();
            return;
        };
        let delay = (first - self.ctx.node.clock.now())
            .to_std()
            .unwrap_or(Duration::ZERO);
        self.alarm.arm(myself, delay, self.generation);
    }

    /// Sends every entry due at `now`, then queues the fired jobs' next instants: at a busy
    /// instant the last job's `Fire` does not wait for every other job's cron arithmetic. A fired
    /// job is taken out of the schedule as it fires and put back once: one lookup each way.
    fn ring(&mut self, now: DateTime<Utc>) {
        let mut fired = Vec::new();
        while let Some((at, phase, jobs)) = self.queue.pop_due(now) {
            for job in jobs {
                if phase == Phase::Prepare {
                    if let Some(s) = self.next.get_mut(&job) {
                        s.prepare_queued = false;
                        let prepare = Input::Prepare { scheduled: s.at };
                        let _ = s.executor.send_message(ExecutorMsg::Step(prepare));
                    }
                    continue;
                }
                let Some(s) = self.next.remove(&job) else {
                    continue;
                };
                let _ = s
                    .executor
                    .send_message(ExecutorMsg::Step(Input::Fire { scheduled: at }));
                fired.push((at, job, s));
            }
        }
        for (at, job, s) in fired {
            if s.prepare_queued {
                self.queue.remove(s.at - PREPARE_LEAD, Phase::Prepare, &job);
            }
            // Fires missed while the node was busy or asleep collapse into the one just sent.
            let next = match s.config.next_fire_after_memo(at, &mut self.memo) {
                Some(n) if n <= now => s.config.next_fire_after_memo(now, &mut self.memo),
                next => next,
            };
            self.insert_at(job, s.config, s.executor, next, now);
        }
    }
}

impl Actor for TriggerActor {
    type Msg = TriggerMsg;
    type State = TriggerState;
    type Arguments = TriggerArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        args: TriggerArgs,
    ) -> Result<Self::State, ActorProcessingErr> {
        let TriggerArgs { ctx, jobs } = args;
        let alarm = Alarm::new(&myself, ctx.node.clock.is_real_time());
        let mut state = TriggerState {
            ctx,
            next: HashMap::new(),
            queue: Queue::default(),
            alarm,
            generation: 0,
            memo: NextFireMemo::default(),
        };
        // After a restart, the jobs already running are scheduled again from their current configs.
        let now = state.ctx.node.clock.now();
        for (job, config, executor) in jobs {
            state.schedule_after(job, config, executor, now);
        }
        state.arm(&myself);
        Ok(state)
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            TriggerMsg::Schedule(job, config, executor) => {
                let now = state.ctx.node.clock.now();
                state.schedule_after(job, config, executor, now);
                state.arm(&myself);
            }
            TriggerMsg::Unschedule(job) => {
                state.unschedule(&job);
                state.arm(&myself);
            }
            TriggerMsg::Tick(generation) => {
                if generation != state.generation {
                    return Ok(()); // an alarm armed before the queue changed
                }
                let now = state.ctx.node.clock.now();
                state.ring(now);
                state.arm(&myself);
            }
        }
        Ok(())
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<Self::Msg>,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        state.alarm.disarm();
        Ok(())
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
