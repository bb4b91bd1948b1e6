//! SessionActor: the root of one session's subtree. It spawns the leader, sharding, failover and
//! trigger actors and one executor per job, routes registry events to them, restarts any that
//! fails, and on stop drains the executors (running items get the shutdown timeout to finish).

use std::collections::HashMap;
use std::sync::Arc;

use ractor::{
    Actor, ActorCell, ActorId, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent,
};

use crate::decide::lifecycle::heed::heeded;
use crate::decide::lifecycle::{FenceBudget, Input};
use crate::paths::JobNode;
use crate::registry::{NodeEventKind, SessionState};
use crate::types::JobName;

use super::context::{lock_jobs, JobEvent, SessionCtx};
use super::error::{child_ended, EngineError};
use super::executor::{registration_failed, ExecutorActor, ExecutorArgs, JOB_REMOVED};
use super::failover::{FailoverActor, FailoverArgs, Reaction as FailoverReaction};
use super::leader::{LeaderActor, Reaction as LeaderReaction};
use super::mail::{ExecutorMsg, FailoverMsg, LeaderMsg, Peers, ShardingMsg, TriggerMsg};
use super::sharding::ShardingActor;
use super::spec::{job_name, JobSpec};
use super::trigger::{TriggerActor, TriggerArgs};

/// How long to wait before trying again to start a child whose restart failed.
const RESTART_RETRY: std::time::Duration = std::time::Duration::from_secs(1);

/// Spawns the executor of `job`, which registers the job as its first step and then answers
/// `reply` (the spawn itself waits on no registry call).
async fn spawn_executor(
    ctx: &SessionCtx,
    supervisor: &ActorCell,
    job: &JobName,
    peers: Arc<Peers>,
    reply: Option<Reply>,
) -> Result<ActorRef<ExecutorMsg>, ActorProcessingErr> {
    let Some(spec) = lock_jobs(&ctx.node).get(job).cloned() else {
        reply.map(|r| r.send(Err(EngineError::UnknownJob(job.clone()))));
        return Err(EngineError::UnknownJob(job.clone()).into());
    };
    let args = ExecutorArgs {
        ctx: ctx.clone(),
        spec,
        peers,
        reply,
    };
    // Unnamed: one per job, and a name costs ~190 bytes a job (the cell's copy, the processing
    // loop's copy, ractor's registry entry). Reached through the session's `executors`.
    let (r, _) = Actor::spawn_linked(None, ExecutorActor, args, supervisor.clone()).await?;
    Ok(r)
}

/// The cells of a session's four singletons as they run now, shared with the RegistryActor: when
/// the SessionActor fails, its parent stops and waits for them before a new subtree takes their
/// names (a dead SessionActor can no longer be asked).
pub(crate) type Singletons = Arc<std::sync::Mutex<HashMap<&'static str, ActorCell>>>;

/// Arguments of the SessionActor.
#[derive(Debug)]
pub(crate) struct SessionArgs {
    pub(crate) ctx: SessionCtx,
    pub(crate) singletons: Singletons,
}

/// The answer to an `AddJob` or `RemoveJob`.
type Reply = RpcReplyPort<Result<(), EngineError>>;

/// The SessionActor.
#[derive(Debug)]
pub(crate) struct SessionActor;

/// Messages of the SessionActor.
#[derive(Debug)]
pub(crate) enum SessionMsg {
    /// A node of a job changed.
    Job(JobEvent),
    /// The mirror was re-listed: every actor re-evaluates every job.
    Resynced,
    /// The session was disconnected or reconnected.
    SessionState(SessionState),
    /// Start running a job on this session.
    AddJob(
        std::sync::Arc<JobSpec>,
        RpcReplyPort<Result<(), EngineError>>,
    ),
    /// Stop running a job.
    RemoveJob(JobName, RpcReplyPort<Result<(), EngineError>>),
    /// Run a job's items now.
    Trigger(JobName, RpcReplyPort<Result<(), EngineError>>),
    /// The cell of a job's executor (supervision, diagnostics).
    Executor(JobName, RpcReplyPort<Result<ActorCell, EngineError>>),
    /// The session is gone (expired): stop without draining, cancelling what runs.
    Abandon,
    /// Try again to start a child whose restart failed.
    Restart(Child),
    /// The disconnection numbered `epoch` has lasted the fencing budget.
    DisconnectDeadline(u64),
    /// The watchdog's tick, with the instant its timer fired: a late one means the node was not scheduled (SIGSTOP, a stalled
    /// runtime) and may have outlived its session.
    Watchdog(tokio::time::Instant),
    /// Every job of the session's replay has registered (or failed to): the events held
    /// meanwhile are routed.
    Replayed,
}

/// A child of the SessionActor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Child {
    Leader,
    Sharding,
    Failover,
    Trigger,
    Executor(JobName),
}

/// State of the SessionActor.
#[derive(Debug)]
pub(crate) struct SessionActorState {
    ctx: SessionCtx,
    singletons: Singletons,
    children: HashMap<ActorId, Child>,
    /// Jobs removed on purpose: their executors' termination is not a failure.
    removing: Vec<JobName>,
    /// Jobs added again while their executor ran: the new executor starts once the old one has
    /// stopped, and answers the `AddJob`.
    replacing: HashMap<JobName, Reply>,
    /// Set when the session expired: no drain on stop.
    abandoned: bool,
    /// Counts disconnections; `Some` while disconnected.
    disconnected: Option<u64>,
    epochs: u64,
    trigger: Option<ActorRef<TriggerMsg>>,
    leader: Option<ActorRef<LeaderMsg>>,
    sharding: Option<ActorRef<ShardingMsg>>,
    failover: Option<ActorRef<FailoverMsg>>,
    /// The handles executors get; `None` until the four actors above run.
    peers: Option<Arc<Peers>>,
    executors: HashMap<JobName, ActorRef<ExecutorMsg>>,
    /// The jobs here that run after each upstream job (`shardcron.after`, as their specs name
    /// it): told when the upstream's config appears, to register under it.
    downstream: HashMap<JobName, Vec<JobName>>,
    /// The session's fencing budget.
    fence: FenceBudget,
    /// The watchdog's period and its last tick.
    watchdog: (std::time::Duration, tokio::time::Instant),
    /// `Some` while the new session's jobs register: the mirror's events meanwhile, routed once
    /// every registration has answered (each actor then sees each job's state as registered,
    /// not every step of it).
    held: Option<Vec<JobEvent>>,
}

impl SessionActorState {
    /// Notes the upstream jobs `job` runs after, from its spec (nothing for most jobs).
    fn note_upstreams(&mut self, job: &JobName) {
        let key = crate::decide::workflow::graph::AFTER_KEY;
        let after = lock_jobs(&self.ctx.node)
            .get(job)
            .and_then(|spec| spec.config.props.get(key).cloned());
        if let Some(after) = after {
            self.note_after(job, &after);
        }
    }

    /// Notes the upstreams a config of `job` written at runtime names (its executor reads and
    /// validates the config itself; a config that does not parse names none here).
    fn note_upstreams_written(&mut self, job: &JobName) {
        if !self.executors.contains_key(job) {
            return;
        }
        let key = crate::decide::workflow::graph::AFTER_KEY;
        let path = JobNode::Config.to_path(job);
        let after = (self.ctx.mirror().data(&path))
            .and_then(|data| String::from_utf8(data.to_vec()).ok())
            .filter(|yaml| yaml.contains(key))
            .and_then(|yaml| crate::config::JobConfig::from_yaml(&yaml).ok())
            .and_then(|config| config.props.get(key).cloned());
        if let Some(after) = after {
            self.note_after(job, &after);
        }
    }

    fn note_after(&mut self, job: &JobName, after: &str) {
        for up in after.split(',').filter_map(|n| JobName::new(n.trim()).ok()) {
            let downs = self.downstream.entry(up).or_default();
            if !downs.contains(job) {
                downs.push(job.clone());
            }
        }
    }

    async fn spawn(&mut self, myself: &ActorCell, child: Child) -> Result<(), ActorProcessingErr> {
        let ctx = self.ctx.clone();
        let name = |what: &str| Some(ctx.node.actor_name(what));
        let (cell, kind) = match &child {
            Child::Leader => {
                let (r, _) =
                    Actor::spawn_linked(name("leader"), LeaderActor, ctx.clone(), myself.clone())
                        .await?;
                self.leader = Some(r.clone());
                (r.get_cell(), "leader")
            }
            Child::Sharding => {
                let (r, _) = Actor::spawn_linked(
                    name("sharding"),
                    ShardingActor,
                    ctx.clone(),
                    myself.clone(),
                )
                .await?;
                self.sharding = Some(r.clone());
                (r.get_cell(), "sharding")
            }
            Child::Failover => {
                let args = FailoverArgs {
                    ctx: ctx.clone(),
                    executors: self.executors.clone(),
                };
                let (r, _) =
                    Actor::spawn_linked(name("failover"), FailoverActor, args, myself.clone())
                        .await?;
                self.failover = Some(r.clone());
                (r.get_cell(), "failover")
            }
            Child::Trigger => {
                let jobs = self
                    .executors
                    .iter()
                    .filter_map(|(job, exec)| {
                        ctx.config(job).map(|c| (job.clone(), c, exec.clone()))
                    })
                    .collect();
                let args = TriggerArgs {
                    ctx: ctx.clone(),
                    jobs,
                };
                let (r, _) =
                    Actor::spawn_linked(name("trigger"), TriggerActor, args, myself.clone())
                        .await?;
                self.trigger = Some(r.clone());
                (r.get_cell(), "trigger")
            }
            Child::Executor(job) => return self.spawn_job(myself, job, None).await,
        };
        self.children.insert(cell.get_id(), child.clone());
        let mut singletons = self.singletons.lock().unwrap_or_else(|p| p.into_inner());
        singletons.insert(kind, cell);
        drop(singletons);
        self.hand_down_peers();
        Ok(())
    }

    /// Starts the executor of `job`; `reply` hears how its registration ended.
    async fn spawn_job(
        &mut self,
        myself: &ActorCell,
        job: &JobName,
        reply: Option<Reply>,
    ) -> Result<(), ActorProcessingErr> {
        let Some(peers) = self.peers.clone() else {
            return Err(EngineError::Actor("session actors not started".into()).into());
        };
        let r = spawn_executor(&self.ctx, myself, job, peers, reply).await?;
        self.executors.insert(job.clone(), r.clone());
        self.note_upstreams(job);
        self.children
            .insert(r.get_id(), Child::Executor(job.clone()));
        Ok(())
    }

    /// Hands a mirror event to the actors that react to it.
    fn route(&mut self, ev: JobEvent) {
        // Each actor gets the events it reacts to (its own `reaction`, the executor's
        // `heeded`): most of a registration's or a fire's events concern one of them.
        let leads = super::leader::reaction(&ev.node, ev.kind);
        if let (Some(r), false) = (&self.leader, leads == LeaderReaction::Nothing) {
            let _ = r.send_message(LeaderMsg::Job(ev.clone()));
        }
        let shards = super::sharding::reaction(&ev.node, ev.kind).any();
        if let (Some(r), true) = (&self.sharding, shards) {
            let _ = r.send_message(ShardingMsg::Job(ev.clone()));
        }
        let fails_over = super::failover::reaction(&ev, self.ctx.me());
        if let (Some(r), false) = (&self.failover, fails_over == FailoverReaction::Nothing) {
            let _ = r.send_message(FailoverMsg::Job(ev.clone()));
        }
        if let (JobNode::Config, NodeEventKind::Created | NodeEventKind::DataChanged) =
            (&ev.node, ev.kind)
        {
            // A config written at runtime may name upstreams that do not exist yet.
            self.note_upstreams_written(&ev.job);
        }
        if let (JobNode::Config, NodeEventKind::Created) = (&ev.node, ev.kind) {
            // An upstream job appeared: the jobs here that run after it register under it.
            for down in self.downstream.get(&ev.job).cloned().unwrap_or_default() {
                if let Some(r) = self.executors.get(&down) {
                    let _ = r.send_message(ExecutorMsg::Job(JobEvent {
                        job: down,
                        node: JobNode::Workflow,
                        kind: NodeEventKind::Created,
                    }));
                }
            }
        }
        if let JobNode::WorkflowRecord(_) = &ev.node {
            // The jobs that run after this one watch its workflow records.
            let under = JobNode::Downstream.to_path(&ev.job);
            for down in self.ctx.mirror().children(&under) {
                let Ok(down) = JobName::new(down.as_str()) else {
                    continue;
                };
                if let Some(r) = self.executors.get(&down) {
                    let _ = r.send_message(ExecutorMsg::Job(JobEvent {
                        job: down,
                        node: ev.node.clone(),
                        kind: ev.kind,
                    }));
                }
            }
        }
        let heeded = heeded(&ev.node, ev.kind, self.ctx.me());
        if let (Some(r), true) = (self.executors.get(&ev.job), heeded) {
            let _ = r.send_message(ExecutorMsg::Job(ev));
        }
    }
    /// Builds the executors' handles once the four session actors run, and hands new ones to
    /// every executor after one of them restarted.
    fn hand_down_peers(&mut self) {
        let (Some(trigger), Some(leader), Some(sharding), Some(failover)) = (
            self.trigger.clone(),
            self.leader.clone(),
            self.sharding.clone(),
            self.failover.clone(),
        ) else {
            return;
        };
        let peers = Arc::new(Peers {
            trigger,
            leader,
            sharding,
            failover,
        });
        for e in self.executors.values() {
            let _ = e.send_message(ExecutorMsg::Peers(peers.clone()));
        }
        let _ = peers
            .leader
            .send_message(LeaderMsg::Sharding(peers.sharding.clone()));
        self.peers = Some(peers);
    }

    /// Forgets `job`'s executor if `cell` is still the one on record.
    fn forget_executor(&mut self, job: &JobName, cell: &ActorCell) {
        if (self.executors.get(job)).is_some_and(|r| r.get_id() == cell.get_id()) {
            self.executors.remove(job);
            self.ctx.configs.remove(job);
        }
    }

    fn to_executors(&self, make: impl Fn() -> ExecutorMsg) {
        for e in self.executors.values() {
            let _ = e.send_message(make());
        }
    }

    fn broadcast(&self, make: impl Fn() -> (LeaderMsg, ShardingMsg, FailoverMsg, ExecutorMsg)) {
        let (l, s, f, _) = make();
        if let Some(r) = &self.leader {
            let _ = r.send_message(l);
        }
        if let Some(r) = &self.sharding {
            let _ = r.send_message(s);
        }
        if let Some(r) = &self.failover {
            let _ = r.send_message(f);
        }
        self.to_executors(|| make().3);
    }
}

impl Actor for SessionActor {
    type Msg = SessionMsg;
    type State = SessionActorState;
    type Arguments = SessionArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        SessionArgs { ctx, singletons }: SessionArgs,
    ) -> Result<Self::State, ActorProcessingErr> {
        let fence = FenceBudget::for_session(ctx.registry.session_info().timeout);
        let period = (fence.late_fire_bound() / 2).max(std::time::Duration::from_millis(100));
        let mut state = SessionActorState {
            ctx,
            singletons,
            children: HashMap::new(),
            removing: Vec::new(),
            replacing: HashMap::new(),
            abandoned: false,
            disconnected: None,
            epochs: 0,
            trigger: None,
            leader: None,
            sharding: None,
            failover: None,
            peers: None,
            executors: HashMap::new(),
            downstream: HashMap::new(),
            fence,
            watchdog: (period, tokio::time::Instant::now()),
            held: Some(Vec::new()),
        };
        // The instant is taken when the timer fires, so a busy mailbox does not look like a pause.
        myself.send_interval(period, || SessionMsg::Watchdog(tokio::time::Instant::now()));
        let cell = myself.get_cell();
        for child in [
            Child::Trigger,
            Child::Leader,
            Child::Sharding,
            Child::Failover,
        ] {
            state.spawn(&cell, child).await?;
        }
        // Each executor registers its job as its first step, side by side with the others (at
        // most REGISTERING_AT_ONCE at a time); a job that cannot register keeps no other from
        // running.
        let jobs: Vec<JobName> = lock_jobs(&state.ctx.node).keys().cloned().collect();
        let mut answers = Vec::with_capacity(jobs.len());
        for job in jobs {
            let (reply, answer) = ractor::concurrency::oneshot();
            answers.push(answer);
            if let Err(e) = state.spawn_job(&cell, &job, Some(reply.into())).await {
                tracing::error!(%job, error = %e, "job not started on this session");
            }
        }
        // The registrations' answers are awaited off the handler; every one comes (a registry
        // call has its timeout, a failed spawn drops its port).
        let me = myself.clone();
        tokio::spawn(async move {
            for answer in answers {
                let _ = answer.await;
            }
            let _ = me.send_message(SessionMsg::Replayed);
        });
        Ok(state)
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            SessionMsg::Replayed => {
                for ev in state.held.take().unwrap_or_default() {
                    state.route(ev);
                }
            }
            SessionMsg::Job(ev) => match &mut state.held {
                Some(held) => held.push(ev),
                None => state.route(ev),
            },
            SessionMsg::Resynced => state.broadcast(|| {
                (
                    LeaderMsg::Resynced,
                    ShardingMsg::Resynced,
                    FailoverMsg::Resynced,
                    ExecutorMsg::Resynced,
                )
            }),
            SessionMsg::SessionState(s) => {
                state.to_executors(|| ExecutorMsg::Step(Input::Session(s)));
                match s {
                    SessionState::Disconnected if state.disconnected.is_none() => {
                        // Running items must stop before the server can expire the session and a
                        // survivor take them over: the fencing budget (FenceBudget) counts from
                        // the notice, which comes at most 9 client ticks after the last answer.
                        state.epochs += 1;
                        let epoch = state.epochs;
                        state.disconnected = Some(epoch);
                        let after = state.fence.cancel_after_notice();
                        myself.send_after(after, move || SessionMsg::DisconnectDeadline(epoch));
                    }
                    SessionState::Connected => state.disconnected = None,
                    _ => {}
                }
            }
            SessionMsg::DisconnectDeadline(epoch) => {
                if state.disconnected == Some(epoch) {
                    tracing::warn!("registry disconnected past the fencing budget: cancelling running items before the session can expire");
                    state.to_executors(|| ExecutorMsg::Step(Input::Fenced));
                }
            }
            SessionMsg::Watchdog(fired) => {
                let (period, last) = state.watchdog;
                state.watchdog.1 = fired;
                let paused = fired.duration_since(last).saturating_sub(period);
                if paused > state.fence.late_fire_bound() {
                    tracing::warn!(?paused, "this node was not scheduled for a while: checking the session before any fire");
                    state.to_executors(|| ExecutorMsg::Step(Input::Paused(paused)));
                }
            }
            SessionMsg::Restart(child) => {
                let gone = match &child {
                    Child::Executor(job) => !lock_jobs(&state.ctx.node).contains_key(job),
                    _ => false,
                };
                if !gone {
                    if let Err(e) = state.spawn(&myself.get_cell(), child.clone()).await {
                        tracing::warn!(?child, error = %e, retry_in = ?RESTART_RETRY, "restart failed; retrying");
                        myself.send_after(RESTART_RETRY, move || SessionMsg::Restart(child));
                    }
                }
            }
            SessionMsg::Abandon => {
                state.abandoned = true;
                myself.stop(Some("session expired".into()));
            }
            SessionMsg::AddJob(spec, reply) => {
                let job = match job_name(&spec.config) {
                    Ok(j) => j,
                    Err(e) => {
                        let _ = reply.send(Err(e));
                        return Ok(());
                    }
                };
                if let Some(old) = state.executors.get(&job) {
                    // The new executor starts when the old one has stopped (its supervision
                    // event), so the two never schedule the job side by side.
                    old.stop(Some("job replaced".into()));
                    state.removing.push(job.clone());
                    if let Some(earlier) = state.replacing.insert(job, reply) {
                        let _ = earlier.send(Ok(())); // a later spec of the job wins
                    }
                    return Ok(());
                }
                if let Err(e) = state.spawn_job(&myself.get_cell(), &job, Some(reply)).await {
                    tracing::error!(%job, error = %e, "job not started on this session");
                }
            }
            SessionMsg::RemoveJob(job, reply) => {
                let result = match state.executors.get(&job) {
                    Some(exec) => {
                        state.removing.push(job.clone());
                        let _ = exec.send_message(ExecutorMsg::Step(Input::Remove));
                        Ok(())
                    }
                    None => Err(EngineError::UnknownJob(job)),
                };
                let _ = reply.send(result);
            }
            SessionMsg::Executor(job, reply) => {
                let result = match state.executors.get(&job) {
                    Some(exec) => Ok(exec.get_cell()),
                    None => Err(EngineError::UnknownJob(job)),
                };
                let _ = reply.send(result);
            }
            SessionMsg::Trigger(job, reply) => {
                let result = match state.executors.get(&job) {
                    Some(exec) => exec
                        .send_message(ExecutorMsg::Step(Input::Trigger))
                        .map_err(|e| EngineError::Actor(e.to_string())),
                    None => Err(EngineError::UnknownJob(job)),
                };
                let _ = reply.send(result);
            }
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<Self::Msg>,
        evt: SupervisionEvent,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        let Some((cell, reason)) = child_ended(&evt) else {
            return Ok(());
        };
        let cell = cell.clone();
        let Some(child) = state.children.remove(&cell.get_id()) else {
            return Ok(());
        };
        if let Child::Executor(job) = &child {
            if reason == registration_failed(false) {
                // Refused (an invalid config, another job type at the root): not restarted; the
                // job is registered again on the next session.
                state.forget_executor(job, &cell);
                return Ok(());
            }
            if reason == registration_failed(true) {
                state.forget_executor(job, &cell);
                tracing::warn!(%job, retry_in = ?RESTART_RETRY, "registering again later");
                let child = child.clone();
                myself.send_after(RESTART_RETRY, move || SessionMsg::Restart(child));
                return Ok(());
            }
            if let Some(reply) = state.replacing.remove(job) {
                // The replaced executor stopped: its successor starts now.
                state.removing.retain(|j| j != job);
                state.forget_executor(job, &cell);
                if let Err(e) = state.spawn_job(&myself.get_cell(), job, Some(reply)).await {
                    tracing::error!(%job, error = %e, "job not started on this session");
                }
                return Ok(());
            }
            let asked = state.removing.iter().position(|j| j == job);
            if let Some(pos) = asked {
                state.removing.remove(pos);
            }
            let removed = asked.is_some() || reason == JOB_REMOVED;
            if removed || !lock_jobs(&state.ctx.node).contains_key(job) {
                if reason == JOB_REMOVED && asked.is_none() {
                    // Removed from the registry side (operator shutdown, job deleted): this node
                    // forgets the job until it is added again.
                    lock_jobs(&state.ctx.node).remove(job);
                }
                state.forget_executor(job, &cell);
                return Ok(());
            }
        }
        tracing::warn!(?child, %reason, "session child ended; restarting it");
        // The same helper restarts every kind of child, failed or terminated. A child that cannot
        // start again (the registry refuses its registration) is retried later, never taking the
        // session down with it.
        if let Err(e) = state.spawn(&myself.get_cell(), child.clone()).await {
            tracing::warn!(?child, error = %e, retry_in = ?RESTART_RETRY, "restart failed; retrying");
            myself.send_after(RESTART_RETRY, move || SessionMsg::Restart(child));
        }
        Ok(())
    }

    async fn post_stop(
        &self,
        myself: ActorRef<Self::Msg>,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        if state.abandoned {
            // The session is dead: nothing can be written; the executors cancel their items as
            // they stop.
            state.children.clear();
            myself
                .stop_children_and_wait(Some("session expired".into()), None)
                .await;
            return Ok(());
        }
        let timeout = state.ctx.node.options.shutdown_timeout;
        let executors: Vec<_> = state.executors.values().cloned().collect();
        let drains = executors.iter().map(|e| {
            e.call(
                ExecutorMsg::Drain,
                Some(timeout + std::time::Duration::from_millis(100)),
            )
        });
        futures::future::join_all(drains).await;
        state.children.clear();
        myself
            .stop_children_and_wait(Some("session ending".into()), None)
            .await;
        Ok(())
    }
}
