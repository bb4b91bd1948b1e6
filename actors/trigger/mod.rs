//! TriggerActor: one timer schedule for every job of the node. It keeps each job's next fire in
//! one ordered queue of instants, each with the jobs due at it, and arms a single [`Alarm`] for the
//! earliest; when it rings, every due job gets `ExecutorMsg::Fire` and its next instant is queued.
//! No task or timer per job. The queue in `queue.rs`.
//!
//! A job that monitors executions is also sent `Input::Prepare` [`PREPARE_LEAD`] before each
//! instant, so its `running` markers are written ahead and the instant itself waits on no write.
//! Every job is sent `Input::Arm` [`ARM_LEAD`] before each instant: a job with nothing under way
//! decides its fire then (`decide/lifecycle/ahead.rs`) and hands its run here to hold for the
//! instant (`TriggerMsg::Hold`). At the instant the held runs start first, then the jobs without
//! one get their `Fire` (unless `TriggerMsg::FiredAhead` said it is not needed): a busy instant's
//! runs start without waiting for ten thousand machines to step. On a registry silent at the
//! instant the held runs go back to their executors instead (`ExecutorMsg::HeldBack`), whose
//! machines decide when their items may start.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
// hashbrown's default hasher (foldhash, seeded per process): the ring looks up every due job.
use hashbrown::HashMap;
use ractor::{Actor, ActorProcessingErr, ActorRef};

use crate::config::ValidatedConfig;
use crate::cron::NextFireMemo;
use crate::decide::lifecycle::{Input, UNANSWERED_BOUND};
use crate::types::JobName;

mod queue;

use crate::actors::alarm::Alarm;
use crate::actors::context::SessionCtx;
use crate::actors::mail::{ExecutorMsg, TriggerMsg};
use crate::actors::run::{hand_back, start, start_held, HeldRun};

use queue::{Phase, Queue};

/// How long before a monitored job's instant its markers are written: several ZooKeeper round
/// trips, and time for a busy instant's markers to go out in a few large multi-ops.
pub(crate) const PREPARE_LEAD: chrono::TimeDelta = chrono::TimeDelta::milliseconds(200);

/// How long before an instant its fire is decided (`Input::Arm`): time for ten thousand jobs'
/// machines to step on two cores (about 10 µs each) before the instant.
pub(crate) const ARM_LEAD: chrono::TimeDelta = chrono::TimeDelta::milliseconds(150);

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
    queue: Queue,
    /// Runs whose fires were decided ahead, by the instant they start at.
    held: BTreeMap<DateTime<Utc>, Vec<HeldRun>>,
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
    /// Its arm is queued, at `at - ARM_LEAD`.
    arm_queued: bool,
    /// Its executor took the fire of `at` ahead: no `Fire` is sent at `at`.
    fired_ahead: bool,
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
            if s.arm_queued {
                self.queue.remove(s.at - ARM_LEAD, Phase::Arm, job);
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
        let arm_queued = at - ARM_LEAD > now;
        if arm_queued {
            self.queue.insert(at - ARM_LEAD, Phase::Arm, job.clone());
        }
        self.next.insert(
            job,
            Scheduled {
                at,
                prepare_queued,
                arm_queued,
                fired_ahead: false,
                config,
                executor,
            },
        );
    }

    fn arm(&mut self, myself: &ActorRef<TriggerMsg>) {
        self.generation += 1;
        let Some(first) = self.first() else {
            self.alarm.disarm();
            return;
        };
        let delay = (first - self.ctx.node.clock.now())
            .to_std()
            .unwrap_or(Duration::ZERO);
        self.alarm.arm(myself, delay, self.generation);
    }

    /// The earliest instant anything is due at.
    fn first(&self) -> Option<DateTime<Utc>> {
        let held = self.held.first_key_value().map(|(at, _)| *at);
        match (self.queue.first(), held) {
            (Some(q), Some(h)) => Some(q.min(h)),
            (q, h) => q.or(h),
        }
    }

    /// Holds a run decided ahead until its instant (starts it now if that has come); whether it
    /// is due before anything else queued.
    fn hold(&mut self, at: DateTime<Utc>, run: HeldRun, now: DateTime<Utc>) -> bool {
        if at <= now {
            start(run);
            return false;
        }
        if let Some(s) = self.next.get_mut(run.job()).filter(|s| s.at == at) {
            s.fired_ahead = true;
        }
        let sooner = self.first().is_none_or(|first| at < first);
        self.held.entry(at).or_default().push(run);
        sooner
    }

    /// Starts the held runs whose instant has come, then sends every entry due at `now`, then
    /// queues the fired jobs' next instants: at a busy instant the last job's `Fire` does not
    /// wait for every other job's cron arithmetic. A fired job is taken out of the schedule as it
    /// fires and put back once: one lookup each way.
    fn ring(&mut self, now: DateTime<Utc>) {
        let mut due = Vec::new();
        while let Some(entry) = self.held.first_entry().filter(|e| *e.key() <= now) {
            due.extend(entry.remove());
        }
        // On a registry that answers nothing, the markers these runs were decided on may be
        // refused: each executor decides (`decide/lifecycle/gated.rs`).
        let silence = self.ctx.registry.silence().map(|s| s.silent_for());
        if let Some(silent) = silence.filter(|s| !due.is_empty() && *s >= UNANSWERED_BOUND) {
            hand_back(due, silent);
        } else {
            start_held(due);
        }

        let mut fired = Vec::new();
        while let Some((at, phase, jobs)) = self.queue.pop_due(now) {
            for job in jobs {
                if phase != Phase::Fire {
                    if let Some(s) = self.next.get_mut(&job) {
                        let input = if phase == Phase::Prepare {
                            s.prepare_queued = false;
                            Input::Prepare { scheduled: s.at }
                        } else {
                            s.arm_queued = false;
                            // The trigger allows it; the executor may still refuse (a job
                            // taking part in distribute-once rounds).
                            Input::Arm {
                                scheduled: s.at,
                                early: true,
                            }
                        };
                        let _ = s.executor.send_message(ExecutorMsg::Step(input));
                    }
                    continue;
                }
                let Some(s) = self.next.remove(&job) else {
                    continue;
                };
                if !s.fired_ahead {
                    let _ = s
                        .executor
                        .send_message(ExecutorMsg::Step(Input::Fire { scheduled: at }));
                }
                fired.push((at, job, s));
            }
        }
        for (at, job, s) in fired {
            if s.prepare_queued {
                self.queue.remove(s.at - PREPARE_LEAD, Phase::Prepare, &job);
            }
            if s.arm_queued {
                self.queue.remove(s.at - ARM_LEAD, Phase::Arm, &job);
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
            held: BTreeMap::new(),
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
            TriggerMsg::Hold(at, run) => {
                let now = state.ctx.node.clock.now();
                if state.hold(at, run, now) {
                    state.arm(&myself);
                }
            }
            TriggerMsg::FiredAhead(job, at) => {
                if let Some(s) = state.next.get_mut(&job).filter(|s| s.at == at) {
                    s.fired_ahead = true;
                }
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
        // Runs held for their instants still start then: their executors wait for their ends.
        let held = std::mem::take(&mut state.held);
        if !held.is_empty() {
            let clock = state.ctx.node.clock.clone();
            tokio::spawn(async move {
                for (at, runs) in held {
                    let wait = (at - clock.now()).to_std().unwrap_or_default();
                    tokio::time::sleep(wait).await;
                    runs.into_iter().for_each(start);
                }
            });
        }
        Ok(())
    }
}
