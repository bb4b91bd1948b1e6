//! TriggerActor: one timer schedule for every job of the node. It keeps each job's next fire in
//! one ordered queue and arms a single timer for the earliest; when it rings, every due job gets
//! `ExecutorMsg::Fire` and its next instant is queued. No task or timer per job.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use chrono::{DateTime, Utc};
use ractor::{Actor, ActorProcessingErr, ActorRef};
use tokio::task::JoinHandle;

use crate::config::ValidatedConfig;
use crate::types::JobName;

use super::context::SessionCtx;
use super::executor::ExecutorMsg;

/// The TriggerActor.
#[derive(Debug)]
pub(crate) struct TriggerActor;

/// Messages of the TriggerActor.
#[derive(Debug)]
pub(crate) enum TriggerMsg {
    /// Schedule (or reschedule) a job by its configuration's cron and time zone; a job without cron
    /// is unscheduled.
    Schedule(JobName, std::sync::Arc<ValidatedConfig>),
    /// Stop firing a job.
    Unschedule(JobName),
    /// The timer of arming `generation` rang.
    Tick(u64),
}

/// State of the TriggerActor.
#[derive(Debug)]
pub(crate) struct TriggerState {
    ctx: SessionCtx,
    next: HashMap<JobName, (DateTime<Utc>, std::sync::Arc<ValidatedConfig>)>,
    queue: BTreeSet<(DateTime<Utc>, JobName)>,
    timer: Option<JoinHandle<Result<(), ractor::MessagingErr<TriggerMsg>>>>,
    generation: u64,
}

impl TriggerState {
    fn unschedule(&mut self, job: &JobName) {
        if let Some((at, _)) = self.next.remove(job) {
            self.queue.remove(&(at, job.clone()));
        }
    }

    fn schedule_after(
        &mut self,
        job: JobName,
        config: std::sync::Arc<ValidatedConfig>,
        after: DateTime<Utc>,
    ) {
        self.unschedule(&job);
        if let Some(at) = config.next_fire_after(after) {
            self.queue.insert((at, job.clone()));
            self.next.insert(job, (at, config));
        }
    }

    fn arm(&mut self, myself: &ActorRef<TriggerMsg>) {
        if let Some(t) = self.timer.take() {
            t.abort();
        }
        self.generation += 1;
        let Some((first, _)) = self.queue.first() else {
            return;
        };
        let delay = (*first - self.ctx.node.clock.now())
            .to_std()
            .unwrap_or(Duration::ZERO);
        let generation = self.generation;
        self.timer = Some(myself.send_after(delay, move || TriggerMsg::Tick(generation)));
    }
}

impl Actor for TriggerActor {
    type Msg = TriggerMsg;
    type State = TriggerState;
    type Arguments = SessionCtx;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        ctx: SessionCtx,
    ) -> Result<Self::State, ActorProcessingErr> {
        let mut state = TriggerState {
            ctx,
            next: HashMap::new(),
            queue: BTreeSet::new(),
            timer: None,
            generation: 0,
        };
        // After a restart, the jobs already running are scheduled again from their current configs.
        let now = state.ctx.node.clock.now();
        let jobs: Vec<_> = state
            .ctx
            .dir
            .configs
            .iter()
            .map(|e| (e.key().clone(), e.value().clone()))
            .collect();
        for (job, config) in jobs {
            state.schedule_after(job, config, now);
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
            TriggerMsg::Schedule(job, config) => {
                let now = state.ctx.node.clock.now();
                state.schedule_after(job, config, now);
                state.arm(&myself);
            }
            TriggerMsg::Unschedule(job) => {
                state.unschedule(&job);
                state.arm(&myself);
            }
            TriggerMsg::Tick(generation) => {
                if generation != state.generation {
                    return Ok(()); // a timer armed before the queue changed
                }
                let now = state.ctx.node.clock.now();
                while let Some((at, job)) = state.queue.first().cloned() {
                    if at > now {
                        break;
                    }
                    state.queue.pop_first();
                    let Some((_, config)) = state.next.remove(&job) else {
                        continue;
                    };
                    if let Some(exec) = state.ctx.executor(&job) {
                        let _ = exec.send_message(ExecutorMsg::Fire { scheduled: at });
                    }
                    // Fires missed while the node was busy or asleep collapse into the one just sent.
                    let after = if config.next_fire_after(at).is_some_and(|n| n <= now) {
                        now
                    } else {
                        at
                    };
                    state.schedule_after(job, config, after);
                }
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
        if let Some(t) = state.timer.take() {
            t.abort();
        }
        Ok(())
    }
}
