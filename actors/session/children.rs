//! The SessionActor's children: spawning each (the four singletons, one executor per job),
//! handing the executors their peers' refs, and restarting a child that ended (one helper for a
//! failure and a termination alike), or forgetting it when its job was removed.

use std::sync::Arc;

use ractor::{Actor, ActorCell, ActorProcessingErr, ActorRef};

use crate::actors::context::{lock_jobs, SessionCtx};
use crate::actors::error::EngineError;
use crate::actors::executor::{registration_failed, ExecutorActor, ExecutorArgs, JOB_REMOVED};
use crate::actors::failover::{FailoverActor, FailoverArgs};
use crate::actors::leader::LeaderActor;
use crate::actors::mail::{ExecutorMsg, LeaderMsg, Peers};
use crate::actors::sharding::ShardingActor;
use crate::actors::trigger::{TriggerActor, TriggerArgs};
use crate::types::JobName;

use super::{Child, Reply, SessionActorState, SessionMsg, RESTART_RETRY};

/// Spawns the executor of `job`, which registers the job as its first step and then answers
/// `reply` (the spawn itself waits on no registry call).
async fn spawn_executor(
    ctx: &Arc<SessionCtx>,
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

impl SessionActorState {
    pub(super) async fn spawn(
        &mut self,
        myself: &ActorCell,
        child: Child,
    ) -> Result<(), ActorProcessingErr> {
        let ctx = self.ctx.clone();
        let name = |what: &str| Some(ctx.node.actor_name(what));
        let (cell, kind) = match &child {
            Child::Leader => {
                let (r, _) = Actor::spawn_linked(
                    name("leader"),
                    LeaderActor,
                    SessionCtx::clone(&ctx),
                    myself.clone(),
                )
                .await?;
                self.leader = Some(r.clone());
                (r.get_cell(), "leader")
            }
            Child::Sharding => {
                let (r, _) = Actor::spawn_linked(
                    name("sharding"),
                    ShardingActor,
                    SessionCtx::clone(&ctx),
                    myself.clone(),
                )
                .await?;
                self.sharding = Some(r.clone());
                (r.get_cell(), "sharding")
            }
            Child::Failover => {
                let args = FailoverArgs {
                    ctx: SessionCtx::clone(&ctx),
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
                    ctx: SessionCtx::clone(&ctx),
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
    pub(super) async fn spawn_job(
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

    /// What the SessionActor does when its child `cell` ended for `reason`: forgets an executor
    /// whose job is gone or whose registration was refused, starts the successor of a replaced one,
    /// restarts the rest.
    pub(super) async fn child_ended(
        &mut self,
        myself: &ActorRef<SessionMsg>,
        cell: ActorCell,
        reason: String,
    ) -> Result<(), ActorProcessingErr> {
        let Some(child) = self.children.remove(&cell.get_id()) else {
            return Ok(());
        };
        if let Child::Executor(job) = &child {
            if reason == registration_failed(false) {
                // Refused (an invalid config, another job type at the root): not restarted; the
                // job is registered again on the next session.
                self.forget_executor(job, &cell);
                return Ok(());
            }
            if reason == registration_failed(true) {
                self.forget_executor(job, &cell);
                tracing::warn!(%job, retry_in = ?RESTART_RETRY, "registering again later");
                let child = child.clone();
                myself.send_after(RESTART_RETRY, move || SessionMsg::Restart(child));
                return Ok(());
            }
            if let Some(reply) = self.replacing.remove(job) {
                // The replaced executor stopped: its successor starts now.
                self.removing.retain(|j| j != job);
                self.forget_executor(job, &cell);
                if let Err(e) = self.spawn_job(&myself.get_cell(), job, Some(reply)).await {
                    tracing::error!(%job, error = %e, "job not started on this session");
                }
                return Ok(());
            }
            let asked = self.removing.iter().position(|j| j == job);
            if let Some(pos) = asked {
                self.removing.remove(pos);
            }
            let removed = asked.is_some() || reason == JOB_REMOVED;
            if removed || !lock_jobs(&self.ctx.node).contains_key(job) {
                if reason == JOB_REMOVED && asked.is_none() {
                    // Removed from the registry side (operator shutdown, job deleted): this node
                    // forgets the job until it is added again.
                    lock_jobs(&self.ctx.node).remove(job);
                }
                self.forget_executor(job, &cell);
                return Ok(());
            }
        }
        tracing::warn!(?child, %reason, "session child ended; restarting it");
        // The same helper restarts every kind of child, failed or terminated. A child that cannot
        // start again (the registry refuses its registration) is retried later, never taking the
        // session down with it.
        if let Err(e) = self.spawn(&myself.get_cell(), child.clone()).await {
            tracing::warn!(?child, error = %e, retry_in = ?RESTART_RETRY, "restart failed; retrying");
            myself.send_after(RESTART_RETRY, move || SessionMsg::Restart(child));
        }
        Ok(())
    }
}
