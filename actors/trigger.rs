//! TriggerActor: one timer schedule for every job of the node. It keeps each job's next fire in
//! one ordered queue and arms a single [`Alarm`] for the earliest; when it rings, every due job gets
//! `ExecutorMsg::Fire` and its next instant is queued. No task or timer per job.
//!
//! A job that monitors executions is also sent `ExecutorMsg::Prepare` a little before each
//! instant, so its `running` markers are written ahead and its run launched ahead (to start at the
//! instant by its own timer): the instant itself waits on no write and no decision. The lead is
//! [`PREPARE_LEAD`], longer for an instant many jobs share ([`prepare_lead`]): their prepares
//! take the executors time, and every one must be handled before the instant. The `Fire` of a
//! job whose run was launched ahead only confirms it: it is sent [`CONFIRM_AFTER`] the instant,
//! with that job's rescheduling, so that neither its message nor the cron arithmetic competes
//! with the runs starting at the instant.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use ractor::{Actor, ActorProcessingErr, ActorRef};

use crate::config::ValidatedConfig;
use crate::decide::lifecycle::Input;
use crate::types::JobName;

use super::alarm::Alarm;
use super::context::SessionCtx;
use super::mail::{ExecutorMsg, TriggerMsg};

/// How long before a monitored job's instant its markers are written and its run launched, at
/// the least: several ZooKeeper round trips, and time for a busy instant's markers to go out in a
/// few large multi-ops.
pub(crate) const PREPARE_LEAD: TimeDelta = TimeDelta::milliseconds(200);

/// What each monitored job due at an instant adds to the instant's lead: about what its prepare
/// costs an executor (its plan, its markers queued, its run launched), twice over for a machine
/// shared with the registry.
const PREPARE_LEAD_PER_JOB: TimeDelta = TimeDelta::microseconds(100);

/// The longest lead (20,000 jobs due at one instant).
const PREPARE_LEAD_MAX: TimeDelta = TimeDelta::seconds(2);

/// How long after the instant the `Fire` of a job launched ahead is sent.
const CONFIRM_AFTER: TimeDelta = TimeDelta::milliseconds(100);

/// The lead of an instant `jobs` monitored jobs share.
pub(crate) fn prepare_lead(jobs: usize) -> TimeDelta {
    let jobs = i32::try_from(jobs).unwrap_or(i32::MAX);
    let lead = PREPARE_LEAD_PER_JOB
        .checked_mul(jobs)
        .unwrap_or(PREPARE_LEAD_MAX);
    lead.clamp(PREPARE_LEAD, PREPARE_LEAD_MAX)
}

/// The TriggerActor.
#[derive(Debug)]
pub(crate) struct TriggerActor;

/// State of the TriggerActor.
#[derive(Debug)]
pub(crate) struct TriggerState {
    ctx: SessionCtx,
    /// Each scheduled job's next instant, whether its prepare is still to be sent, its config
    /// and its executor.
    next: HashMap<JobName, Scheduled>,
    /// The fires, by instant.
    queue: BTreeSet<(DateTime<Utc>, JobName)>,
    /// The monitored jobs whose prepare is still to be sent, by instant: an instant's prepares
    /// go together ([`Prepares::due`]).
    preparing: BTreeMap<DateTime<Utc>, Prepares>,
    /// The jobs launched ahead whose instant came, until their `Fire` is sent and their next
    /// instant queued at the time `confirming` names.
    fired_ahead: HashMap<JobName, Scheduled>,
    confirming: BTreeSet<(DateTime<Utc>, JobName)>,
    alarm: Alarm,
    generation: u64,
}

/// The prepares of one instant, still to be sent.
#[derive(Debug, Default)]
struct Prepares {
    /// When the first of them was queued (the previous instant of most).
    since: Option<DateTime<Utc>>,
    jobs: BTreeSet<JobName>,
}

impl Prepares {
    /// When the prepares of the instant `at` go: [`prepare_lead`] of their number before it,
    /// but not before halfway from when they were queued (a job firing every second is not
    /// prepared for its next instant at its previous one), nor later than [`PREPARE_LEAD`].
    fn due(&self, at: DateTime<Utc>) -> DateTime<Utc> {
        let halfway = self.since.map(|s| s + (at - s) / 2);
        let early = at - prepare_lead(self.jobs.len());
        halfway
            .map_or(early, |h| h.max(early))
            .min(at - PREPARE_LEAD)
    }
}

#[derive(Debug)]
struct Scheduled {
    at: DateTime<Utc>,
    /// Its prepare is queued in `preparing`, not sent yet.
    preparing: bool,
    /// Its fire at `at` was launched ahead.
    ahead: bool,
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
        self.fired_ahead.remove(job);
        if let Some(s) = self.next.remove(job) {
            self.queue.remove(&(s.at, job.clone()));
            if s.preparing {
                self.unprepare(s.at, job);
            }
        }
    }

    /// Takes `job`'s prepare for `at` out of the queue.
    fn unprepare(&mut self, at: DateTime<Utc>, job: &JobName) {
        if let Some(p) = self.preparing.get_mut(&at) {
            p.jobs.remove(job);
            if p.jobs.is_empty() {
                self.preparing.remove(&at);
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
        let at = config.next_fire_after(now);
        self.schedule_at(job, config, executor, at, now);
    }

    fn schedule_at(
        &mut self,
        job: JobName,
        config: std::sync::Arc<ValidatedConfig>,
        executor: ActorRef<ExecutorMsg>,
        at: Option<DateTime<Utc>>,
        now: DateTime<Utc>,
    ) {
        self.unschedule(&job);
        let Some(at) = at else {
            return;
        };
        self.queue.insert((at, job.clone()));
        // Too close to prepare: the fire writes its markers itself.
        let preparing = config.config().monitor_execution && at - PREPARE_LEAD > now;
        if preparing {
            let p = self.preparing.entry(at).or_default();
            p.since.get_or_insert(now);
            p.jobs.insert(job.clone());
        }
        self.next.insert(
            job,
            Scheduled {
                at,
                preparing,
                ahead: false,
                config,
                executor,
            },
        );
    }

    /// When the earliest instant's prepares are due (a later instant many jobs share may be
    /// due first: its lead is longer).
    fn next_prepare(&self) -> Option<DateTime<Utc>> {
        let mut first: Option<DateTime<Utc>> = None;
        for (at, p) in &self.preparing {
            if first.is_some_and(|f| *at - PREPARE_LEAD_MAX >= f) {
                break;
            }
            let due = p.due(*at);
            first = Some(first.map_or(due, |f| f.min(due)));
        }
        first
    }

    fn arm(&mut self, myself: &ActorRef<TriggerMsg>) {
        self.generation += 1;
        let fire = self.queue.first().map(|(at, _)| *at);
        let confirm = self.confirming.first().map(|(at, _)| *at);
        let Some(first) = (fire.into_iter().chain(confirm))
            .chain(self.next_prepare())
            .min()
        else {
            self.alarm.disarm();
            return;
        };
        let delay = (first - self.ctx.node.clock.now())
            .to_std()
            .unwrap_or(Duration::ZERO);
        self.alarm.arm(myself, delay, self.generation);
    }

    /// Sends every prepare and fire due at `now`, then queues the fired jobs' next instants: at
    /// a busy instant the last job's `Fire` does not wait for every other job's cron arithmetic.
    fn ring(&mut self, now: DateTime<Utc>) {
        let ready: Vec<DateTime<Utc>> = (self.preparing.iter())
            .take_while(|(at, _)| **at - PREPARE_LEAD_MAX <= now)
            .filter(|(at, p)| p.due(**at) <= now)
            .map(|(at, _)| *at)
            .collect();
        for at in ready {
            for job in self.preparing.remove(&at).unwrap_or_default().jobs {
                if let Some(s) = self.next.get_mut(&job) {
                    s.preparing = false;
                    let prepare = Input::Prepare { scheduled: s.at };
                    let _ = s.executor.send_message(ExecutorMsg::Step(prepare));
                }
            }
        }
        let mut fired = Vec::new();
        while self.queue.first().is_some_and(|(at, _)| *at <= now) {
            let Some((at, job)) = self.queue.pop_first() else {
                break;
            };
            let Some(s) = self.next.get(&job) else {
                continue;
            };
            if s.ahead {
                self.confirming.insert((at + CONFIRM_AFTER, job.clone()));
                if let Some(s) = self.next.remove(&job) {
                    self.fired_ahead.insert(job, s);
                }
                continue;
            }
            let _ = s
                .executor
                .send_message(ExecutorMsg::Step(Input::Fire { scheduled: at }));
            fired.push(job);
        }
        while self.confirming.first().is_some_and(|(at, _)| *at <= now) {
            let Some((_, job)) = self.confirming.pop_first() else {
                break;
            };
            let Some(s) = self.fired_ahead.remove(&job) else {
                continue;
            };
            let fire = Input::Fire { scheduled: s.at };
            let _ = s.executor.send_message(ExecutorMsg::Step(fire));
            self.next.insert(job.clone(), s);
            fired.push(job);
        }
        for job in fired {
            let Some(s) = self.next.remove(&job) else {
                continue;
            };
            let at = s.at;
            if s.preparing {
                self.unprepare(s.at, &job);
            }
            // Fires missed while the node was busy or asleep collapse into the one just sent.
            let next = match s.config.next_fire_after(at) {
                Some(n) if n <= now => s.config.next_fire_after(now),
                next => next,
            };
            self.schedule_at(job, s.config, s.executor, next, now);
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
            preparing: BTreeMap::new(),
            fired_ahead: HashMap::new(),
            confirming: BTreeSet::new(),
            alarm,
            generation: 0,
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
            TriggerMsg::Ahead(job, at, ahead) => {
                // An instant already passed is served by its `Fire`, sent after it in any case.
                if let Some(s) = state.next.get_mut(&job).filter(|s| s.at == at) {
                    s.ahead = ahead;
                }
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

    fn at(ms: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000, 0).unwrap() + TimeDelta::milliseconds(ms)
    }

    fn prepares(since_ms: i64, jobs: usize) -> Prepares {
        let jobs = (0..jobs)
            .map(|i| JobName::new(format!("job-{i}")).unwrap())
            .collect();
        Prepares {
            since: Some(at(since_ms)),
            jobs,
        }
    }

    #[test]
    fn an_instant_many_jobs_share_is_prepared_earlier_but_never_before_halfway() {
        // (queued at, jobs, prepares due, ms before the instant at 0)
        let cases = [
            (-10_000, 1, -200),
            (-10_000, 1_000, -200),
            (-10_000, 10_000, -1_000),
            (-10_000, 100_000, -2_000),
            (-1_000, 10_000, -500),
            (-300, 10_000, -200),
        ];
        for (since, jobs, due) in cases {
            assert_eq!(
                prepares(since, jobs).due(at(0)),
                at(due),
                "{jobs} jobs queued {since} ms"
            );
        }
    }
}
