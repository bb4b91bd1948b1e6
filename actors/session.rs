//! SessionActor: the root of one session's subtree. It spawns the leader, sharding, failover and
//! trigger actors and one executor per job, routes registry events to them, restarts any that
//! fails, and on stop drains the executors (running items get the shutdown timeout to finish).

use std::collections::HashMap;

use futures::StreamExt;

use ractor::{
    Actor, ActorCell, ActorId, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent,
};

use crate::registry::SessionState;
use crate::types::JobName;

use super::context::{write, JobEvent, JobSpec, SessionCtx};
use super::executor::{ExecutorActor, ExecutorArgs, ExecutorMsg, JOB_REMOVED};
use super::failover::{FailoverActor, FailoverMsg};
use super::leader::{LeaderActor, LeaderMsg};
use super::node::EngineError;
use super::registry::lock_jobs;
use super::sharding::{ShardingActor, ShardingMsg};
use super::trigger::TriggerActor;

/// How long to wait before trying again to start a child whose restart failed.
const RESTART_RETRY: std::time::Duration = std::time::Duration::from_secs(1);

/// Jobs registering at the same time when a session starts.
const REGISTERING_AT_ONCE: usize = 512;

/// Spawns (and so registers) the executor of `job`, recording its ref in the directory.
async fn spawn_executor(
    ctx: &SessionCtx,
    supervisor: &ActorCell,
    job: &JobName,
) -> Result<ActorCell, ActorProcessingErr> {
    let spec = lock_jobs(&ctx.node)
        .get(job)
        .cloned()
        .ok_or_else(|| EngineError::UnknownJob(job.clone()))?;
    let args = ExecutorArgs {
        ctx: ctx.clone(),
        spec,
    };
    let name = Some(ctx.node.actor_name(&format!("executor/{job}")));
    let (r, _) = Actor::spawn_linked(name, ExecutorActor, args, supervisor.clone()).await?;
    ctx.dir.executors.insert(job.clone(), r.clone());
    Ok(r.get_cell())
}

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
    /// The session is gone (expired): stop without draining, cancelling what runs.
    Abandon,
    /// Try again to start a child whose restart failed.
    Restart(Child),
    /// The disconnection numbered `epoch` has lasted two thirds of the session timeout.
    DisconnectDeadline(u64),
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
    children: HashMap<ActorId, Child>,
    /// Jobs removed on purpose: their executors' termination is not a failure.
    removing: Vec<JobName>,
    /// Set when the session expired: no drain on stop.
    abandoned: bool,
    /// Counts disconnections; `Some` while disconnected.
    disconnected: Option<u64>,
    epochs: u64,
}

impl SessionActorState {
    async fn spawn(&mut self, myself: &ActorCell, child: Child) -> Result<(), ActorProcessingErr> {
        let ctx = self.ctx.clone();
        let name = |what: &str| Some(ctx.node.actor_name(what));
        let cell = match &child {
            Child::Leader => {
                let (r, _) =
                    Actor::spawn_linked(name("leader"), LeaderActor, ctx.clone(), myself.clone())
                        .await?;
                write(&ctx.dir.leader, Some(r.clone()));
                r.get_cell()
            }
            Child::Sharding => {
                let (r, _) = Actor::spawn_linked(
                    name("sharding"),
                    ShardingActor,
                    ctx.clone(),
                    myself.clone(),
                )
                .await?;
                write(&ctx.dir.sharding, Some(r.clone()));
                r.get_cell()
            }
            Child::Failover => {
                let (r, _) = Actor::spawn_linked(
                    name("failover"),
                    FailoverActor,
                    ctx.clone(),
                    myself.clone(),
                )
                .await?;
                write(&ctx.dir.failover, Some(r.clone()));
                r.get_cell()
            }
            Child::Trigger => {
                let (r, _) =
                    Actor::spawn_linked(name("trigger"), TriggerActor, ctx.clone(), myself.clone())
                        .await?;
                write(&ctx.dir.trigger, Some(r.clone()));
                r.get_cell()
            }
            Child::Executor(job) => spawn_executor(&ctx, myself, job).await?,
        };
        self.children.insert(cell.get_id(), child);
        Ok(())
    }

    fn broadcast(&self, make: impl Fn() -> (LeaderMsg, ShardingMsg, FailoverMsg, ExecutorMsg)) {
        let (l, s, f, _) = make();
        if let Some(r) = self.ctx.leader() {
            let _ = r.send_message(l);
        }
        if let Some(r) = self.ctx.sharding() {
            let _ = r.send_message(s);
        }
        if let Some(r) = self.ctx.failover() {
            let _ = r.send_message(f);
        }
        for e in self.ctx.dir.executors.iter() {
            let (_, _, _, m) = make();
            let _ = e.value().send_message(m);
        }
    }
}

impl Actor for SessionActor {
    type Msg = SessionMsg;
    type State = SessionActorState;
    type Arguments = SessionCtx;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        ctx: SessionCtx,
    ) -> Result<Self::State, ActorProcessingErr> {
        let mut state = SessionActorState {
            ctx,
            children: HashMap::new(),
            removing: Vec::new(),
            abandoned: false,
            disconnected: None,
            epochs: 0,
        };
        let cell = myself.get_cell();
        for child in [
            Child::Trigger,
            Child::Leader,
            Child::Sharding,
            Child::Failover,
        ] {
            state.spawn(&cell, child).await?;
        }
        let jobs: Vec<JobName> = lock_jobs(&state.ctx.node).keys().cloned().collect();
        // Jobs register side by side (their writes pipelined on the session), not one after
        // another; a few hundred at a time fill the pipeline without holding every job's
        // registration in memory at once.
        let results: Vec<_> = futures::stream::iter(jobs.clone())
            .map(|job| {
                let (ctx, cell) = (state.ctx.clone(), cell.clone());
                async move { spawn_executor(&ctx, &cell, &job).await }
            })
            .buffered(REGISTERING_AT_ONCE)
            .collect()
            .await;
        for (job, result) in jobs.into_iter().zip(results) {
            match result {
                Ok(child) => {
                    state.children.insert(child.get_id(), Child::Executor(job));
                }
                // One job that cannot register (bad config, a conflicting job root) must not keep
                // the others from running: report it and go on.
                Err(e) => tracing::error!(%job, error = %e, "job not started on this session"),
            }
        }
        Ok(state)
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            SessionMsg::Job(ev) => {
                if let Some(r) = state.ctx.leader() {
                    let _ = r.send_message(LeaderMsg::Job(ev.clone()));
                }
                if let Some(r) = state.ctx.sharding() {
                    let _ = r.send_message(ShardingMsg::Job(ev.clone()));
                }
                if let Some(r) = state.ctx.failover() {
                    let _ = r.send_message(FailoverMsg::Job(ev.clone()));
                }
                if let Some(r) = state.ctx.executor(&ev.job) {
                    let _ = r.send_message(ExecutorMsg::Job(ev));
                }
            }
            SessionMsg::Resynced => state.broadcast(|| {
                (
                    LeaderMsg::Resynced,
                    ShardingMsg::Resynced,
                    FailoverMsg::Resynced,
                    ExecutorMsg::Resynced,
                )
            }),
            SessionMsg::SessionState(s) => {
                for e in state.ctx.dir.executors.iter() {
                    let _ = e.value().send_message(ExecutorMsg::SessionState(s));
                }
                match s {
                    SessionState::Disconnected if state.disconnected.is_none() => {
                        // Running items must stop before the session can expire and a survivor
                        // takes them over: cancel them at two thirds of the negotiated timeout.
                        state.epochs += 1;
                        let epoch = state.epochs;
                        state.disconnected = Some(epoch);
                        let after = state.ctx.registry.session_info().timeout * 2 / 3;
                        myself.send_after(after, move || SessionMsg::DisconnectDeadline(epoch));
                    }
                    SessionState::Connected => state.disconnected = None,
                    _ => {}
                }
            }
            SessionMsg::DisconnectDeadline(epoch) => {
                if state.disconnected == Some(epoch) {
                    tracing::warn!("registry disconnected for 2/3 of the session timeout: cancelling running items");
                    for e in state.ctx.dir.executors.iter() {
                        let _ = e.value().send_message(ExecutorMsg::CancelRunning);
                    }
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
                let job = match super::register::job_name(&spec.config) {
                    Ok(j) => j,
                    Err(e) => {
                        let _ = reply.send(Err(e));
                        return Ok(());
                    }
                };
                if let Some(old) = state.ctx.executor(&job) {
                    state.removing.push(job.clone());
                    old.stop_and_wait(Some("job replaced".into()), None)
                        .await
                        .ok();
                }
                let result = state
                    .spawn(&myself.get_cell(), Child::Executor(job.clone()))
                    .await
                    .map_err(|e| EngineError::JobStart {
                        job,
                        reason: e.to_string(),
                    });
                let _ = reply.send(result);
            }
            SessionMsg::RemoveJob(job, reply) => {
                let result = match state.ctx.executor(&job) {
                    Some(exec) => {
                        state.removing.push(job.clone());
                        let _ = exec.send_message(ExecutorMsg::Remove);
                        Ok(())
                    }
                    None => Err(EngineError::UnknownJob(job)),
                };
                let _ = reply.send(result);
            }
            SessionMsg::Trigger(job, reply) => {
                let result = match state.ctx.executor(&job) {
                    Some(exec) => exec
                        .send_message(ExecutorMsg::TriggerNow)
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
        let (cell, reason) = match &evt {
            SupervisionEvent::ActorFailed(cell, e) => (cell.clone(), e.to_string()),
            SupervisionEvent::ActorTerminated(cell, _, r) => {
                (cell.clone(), r.clone().unwrap_or_default())
            }
            _ => return Ok(()),
        };
        let Some(child) = state.children.remove(&cell.get_id()) else {
            return Ok(());
        };
        if let Child::Executor(job) = &child {
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
                state
                    .ctx
                    .dir
                    .executors
                    .remove_if(job, |_, r| r.get_id() == cell.get_id());
                state.ctx.dir.configs.remove(job);
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
        let executors: Vec<_> = state
            .ctx
            .dir
            .executors
            .iter()
            .map(|e| e.value().clone())
            .collect();
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
