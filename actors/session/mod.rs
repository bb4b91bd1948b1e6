//! SessionActor: the root of one session's subtree. It spawns the leader, sharding, failover and
//! trigger actors and one executor per job, routes registry events to them, restarts any that
//! fails, and on stop drains the executors (running items get the shutdown timeout to finish).
//!
//! Here the actor's protocol, state and handlers; in `children.rs` the spawning and restarting of
//! its children; in `route.rs` the routing of mirror events to the actors that react to them.

mod children;
mod route;

use std::collections::HashMap;
use std::sync::Arc;

use ractor::{ActorCell, ActorId, ActorProcessingErr, ActorRef, RpcReplyPort};

use crate::decide::lifecycle::{FenceBudget, Input};
use crate::registry::SessionState;
use crate::types::JobName;

use super::context::{lock_jobs, JobEvent, SessionCtx};
use super::error::EngineError;
use super::mail::{ExecutorMsg, FailoverMsg, LeaderMsg, Peers, ShardingMsg, TriggerMsg};
use super::spec::{job_name, JobSpec};
use super::Handled;

/// How long to wait before trying again to start a child whose restart failed.
const RESTART_RETRY: std::time::Duration = std::time::Duration::from_secs(1);

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
    /// Nodes of jobs changed, in order.
    Jobs(Vec<JobEvent>),
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

/// The executors' link after a disconnection ([`SessionActorState::relink`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Relink {
    /// Told as the session reports it.
    Up,
    /// Disconnected: the executors heard it.
    Down,
    /// Connected again, the mirror not listed since: `Connected` waits for the `Resynced`.
    Relisting,
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
    /// Shared with every executor (one pointer a job, not the context's fields).
    ctx: Arc<SessionCtx>,
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
    /// Where the link stands for the executors: after a disconnection they hear `Connected` only
    /// once the session is connected again *and* the mirror was listed after that, so that no
    /// fire decides from a mirror that missed the disconnection's changes (the re-list may wait
    /// for its share of the spread window).
    relink: Relink,
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

supervisor_actor!(SessionActor: SessionMsg, SessionActorState, SessionArgs);

impl SessionActorState {
    /// The state of a new SessionActor: its children spawned, each job's executor registering.
    async fn started(
        myself: &ActorRef<SessionMsg>,
        SessionArgs { ctx, singletons }: SessionArgs,
    ) -> Result<Self, ActorProcessingErr> {
        let fence = FenceBudget::for_session(ctx.registry.session_info().timeout);
        let period = (fence.late_fire_bound() / 2).max(std::time::Duration::from_millis(100));
        let mut state = SessionActorState {
            ctx: Arc::new(ctx),
            singletons,
            children: HashMap::new(),
            removing: Vec::new(),
            replacing: HashMap::new(),
            abandoned: false,
            disconnected: None,
            relink: Relink::Up,
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

    /// One message: events routed, the session's state and pauses watched, jobs added and removed.
    async fn handle(&mut self, myself: &ActorRef<SessionMsg>, msg: SessionMsg) -> Handled {
        match msg {
            SessionMsg::Replayed => {
                for ev in self.held.take().unwrap_or_default() {
                    self.route(ev);
                }
            }
            SessionMsg::Jobs(events) => match &mut self.held {
                Some(held) => held.extend(events),
                None => {
                    for ev in events {
                        self.route(ev);
                    }
                }
            },
            SessionMsg::Resynced => {
                // A listing that ended before the reconnect (still `Down`) releases nothing.
                if self.relink == Relink::Relisting {
                    self.relink = Relink::Up;
                    self.to_executors(|| {
                        ExecutorMsg::Step(Input::Session(SessionState::Connected))
                    });
                }
                self.broadcast(|| {
                    (
                        LeaderMsg::Resynced,
                        ShardingMsg::Resynced,
                        FailoverMsg::Resynced,
                        ExecutorMsg::Resynced,
                    )
                })
            }
            SessionMsg::SessionState(s) => {
                // A reconnection reaches the executors with the re-list's `Resynced` (above).
                self.relink = match (s, self.relink) {
                    (SessionState::Disconnected, _) => Relink::Down,
                    (SessionState::Connected, Relink::Down | Relink::Relisting) => {
                        Relink::Relisting
                    }
                    _ => Relink::Up,
                };
                if self.relink != Relink::Relisting {
                    self.to_executors(|| ExecutorMsg::Step(Input::Session(s)));
                }
                match s {
                    SessionState::Disconnected if self.disconnected.is_none() => {
                        // Running items must stop before the server can expire the session and a
                        // survivor take them over: the fencing budget (FenceBudget) counts from
                        // the notice, which comes at most 9 client ticks after the last answer.
                        self.epochs += 1;
                        let epoch = self.epochs;
                        self.disconnected = Some(epoch);
                        let after = self.fence.cancel_after_notice();
                        myself.send_after(after, move || SessionMsg::DisconnectDeadline(epoch));
                    }
                    SessionState::Connected => self.disconnected = None,
                    _ => {}
                }
            }
            SessionMsg::DisconnectDeadline(epoch) => {
                if self.disconnected == Some(epoch) {
                    tracing::warn!("registry disconnected past the fencing budget: cancelling running items before the session can expire");
                    self.to_executors(|| ExecutorMsg::Step(Input::Fenced));
                }
            }
            SessionMsg::Watchdog(fired) => {
                let (period, last) = self.watchdog;
                self.watchdog.1 = fired;
                let paused = fired.duration_since(last).saturating_sub(period);
                if paused > self.fence.late_fire_bound() {
                    tracing::warn!(?paused, "this node was not scheduled for a while: checking the session before any fire");
                    self.to_executors(|| ExecutorMsg::Step(Input::Paused(paused)));
                }
            }
            SessionMsg::Restart(child) => {
                let gone = match &child {
                    Child::Executor(job) => !lock_jobs(&self.ctx.node).contains_key(job),
                    _ => false,
                };
                if !gone {
                    if let Err(e) = self.spawn(&myself.get_cell(), child.clone()).await {
                        tracing::warn!(?child, error = %e, retry_in = ?RESTART_RETRY, "restart failed; retrying");
                        myself.send_after(RESTART_RETRY, move || SessionMsg::Restart(child));
                    }
                }
            }
            SessionMsg::Abandon => {
                self.abandoned = true;
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
                if let Some(old) = self.executors.get(&job) {
                    // The new executor starts when the old one has stopped (its supervision
                    // event), so the two never schedule the job side by side.
                    old.stop(Some("job replaced".into()));
                    self.removing.push(job.clone());
                    if let Some(earlier) = self.replacing.insert(job, reply) {
                        let _ = earlier.send(Ok(())); // a later spec of the job wins
                    }
                    return Ok(());
                }
                if let Err(e) = self.spawn_job(&myself.get_cell(), &job, Some(reply)).await {
                    tracing::error!(%job, error = %e, "job not started on this session");
                }
            }
            SessionMsg::RemoveJob(job, reply) => {
                let result = match self.executors.get(&job) {
                    Some(exec) => {
                        self.removing.push(job.clone());
                        let _ = exec.send_message(ExecutorMsg::Step(Input::Remove));
                        Ok(())
                    }
                    None => Err(EngineError::UnknownJob(job)),
                };
                let _ = reply.send(result);
            }
            SessionMsg::Executor(job, reply) => {
                let result = match self.executors.get(&job) {
                    Some(exec) => Ok(exec.get_cell()),
                    None => Err(EngineError::UnknownJob(job)),
                };
                let _ = reply.send(result);
            }
            SessionMsg::Trigger(job, reply) => {
                let result = match self.executors.get(&job) {
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

    /// The executors drained (or, the session dead, only stopped), then every child stopped.
    async fn stopping(&mut self, myself: &ActorRef<SessionMsg>) -> Handled {
        if self.abandoned {
            // The session is dead: nothing can be written; the executors cancel their items as
            // they stop.
            self.children.clear();
            myself
                .stop_children_and_wait(Some("session expired".into()), None)
                .await;
            return Ok(());
        }
        let timeout = self.ctx.node.options.shutdown_timeout;
        let executors: Vec<_> = self.executors.values().cloned().collect();
        let drains = executors.iter().map(|e| {
            e.call(
                ExecutorMsg::Drain,
                Some(timeout + std::time::Duration::from_millis(100)),
            )
        });
        futures::future::join_all(drains).await;
        self.children.clear();
        myself
            .stop_children_and_wait(Some("session ending".into()), None)
            .await;
        Ok(())
    }
}
