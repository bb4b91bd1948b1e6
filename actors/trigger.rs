//! TriggerActor: one timer schedule for every job of the node. It keeps each job's next fire in
//! one ordered queue and arms a single [`Alarm`] for the earliest; when it rings, every due job gets
//! `ExecutorMsg::Fire` and its next instant is queued. No task or timer per job.
//!
//! A job that monitors executions is also sent `ExecutorMsg::Prepare` [`PREPARE_LEAD`] before each
//! instant, so its `running` markers are written ahead and the instant itself waits on no write.

use std::collections::BTreeSet;
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

/// State of the TriggerActor.
#[derive(Debug)]
pub(crate) struct TriggerState {
    ctx: SessionCtx,
    /// Each scheduled job's next instant, the prepare entry queued for it (if any), its config
    /// and its executor.
    next: HashMap<JobName, Scheduled>,
    queue: BTreeSet<(DateTime<Utc>, Phase, JobName)>,
    alarm: Alarm,
    generation: u64,
    /// The last next-instant computed: jobs requeued together mostly share their schedule.
    memo: NextFireMemo,
}

#[derive(Debug)]
struct Scheduled {
    at: DateTime<Utc>,
    prepare_at: Option<DateTime<Utc>>,
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
            self.queue.remove(&(s.at, Phase::Fire, job.clone()));
            if let Some(p) = s.prepare_at {
                self.queue.remove(&(p, Phase::Prepare, job.clone()));
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
        self.queue.insert((at, Phase::Fire, job.clone()));
        // Too close to prepare: the fire writes its markers itself.
        let prepare_at = (config.config().monitor_execution && at - PREPARE_LEAD > now)
            .then(|| at - PREPARE_LEAD);
        if let Some(p) = prepare_at {
            self.queue.insert((p, Phase::Prepare, job.clone()));
        }
        self.next.insert(
            job,
            Scheduled {
                at,
                prepare_at,
                config,
                executor,
            },
        );
    }

    fn arm(&mut self, myself: &ActorRef<TriggerMsg>) {
        self.generation += 1;
        let Some((first, _, _)) = self.queue.first() else {
            self.alarm.disarm();
            return;
        };
        let delay = (*first - self.ctx.node.clock.now())
            .to_std()
            .unwrap_or(Duration::ZERO);
        self.alarm.arm(myself, delay, self.generation);
    }

    /// Sends every entry due at `now`, then queues the fired jobs' next instants: at a busy
    /// instant the last job's `Fire` does not wait for every other job's cron arithmetic. A fired
    /// job is taken out of the schedule as it fires and put back once: one lookup each way.
    fn ring(&mut self, now: DateTime<Utc>) {
        let mut fired = Vec::new();
        while self.queue.first().is_some_and(|(at, _, _)| *at <= now) {
            let Some((at, phase, job)) = self.queue.pop_first() else {
                break;
            };
            if phase == Phase::Prepare {
                if let Some(s) = self.next.get_mut(&job) {
                    s.prepare_at = None;
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
        for (at, job, s) in fired {
            if let Some(p) = s.prepare_at {
                self.queue.remove(&(p, Phase::Prepare, job.clone()));
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
            queue: BTreeSet::new(),
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
