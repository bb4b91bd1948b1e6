//! RegistryActor: owns the session, the one recursive watch (through the mirror feed) and the
//! session-scoped subtree. A terminal session state tears the subtree down and opens a new session;
//! the new subtree replays its state from the re-listed mirror.

use std::sync::Arc;
use std::time::Duration;

use ractor::{Actor, ActorProcessingErr, ActorRef, SupervisionEvent};
use tokio::task::JoinHandle;

use crate::decide::scope;
use crate::events::EngineEvent;
use crate::paths::JobNode;
use crate::registry::mirror::{FeedHandle, FeedRoots, MirrorEvent, MirrorFeed};
use crate::registry::{NodeEventKind, Registry, SessionState};

use super::context::{lock_jobs, JobConfigs, JobEvent, NodeContext, SessionCtx};
use super::error::{child_ended, EngineError};
use super::mail::{NodeMsg, RegistryMsg};
use super::session::{SessionActor, SessionArgs, SessionMsg, Singletons};
use super::spec::{job_name, JobSpec};
use super::writes::WriteBatcher;

/// The RegistryActor.
#[derive(Debug)]
pub(crate) struct RegistryActor;

struct Active {
    registry: Arc<dyn Registry>,
    _feed: FeedHandle,
    forward: JoinHandle<()>,
    session: ActorRef<SessionMsg>,
    singletons: Singletons,
    ctx: SessionCtx,
}

/// State of the RegistryActor.
pub(crate) struct RegistryState {
    node: Arc<NodeContext>,
    active: Option<Active>,
    generation: u64,
    backoff: Duration,
    /// A connection attempt is under way (its task answers `Opened`).
    connecting: bool,
    /// Requests that came meanwhile, handled in order once it ended.
    parked: Vec<RegistryMsg>,
}

impl std::fmt::Debug for RegistryState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegistryState")
            .field("generation", &self.generation)
            .finish()
    }
}

impl RegistryState {
    async fn spawn_session(
        &self,
        myself: &ActorRef<RegistryMsg>,
        ctx: SessionCtx,
        singletons: Singletons,
    ) -> Result<ActorRef<SessionMsg>, ActorProcessingErr> {
        let name = self
            .node
            .actor_name(&format!("session-{}", self.generation));
        let args = SessionArgs { ctx, singletons };
        let (session, _) =
            Actor::spawn_linked(Some(name), SessionActor, args, myself.get_cell()).await?;
        Ok(session)
    }

    /// Ends the subtree of a dead session and waits for it (no drain: nothing can be written), so
    /// the next session's actors can take the same names.
    async fn teardown(&mut self) {
        if let Some(active) = self.active.take() {
            active.forward.abort();
            let _ = active.session.send_message(SessionMsg::Abandon);
            let _ = tokio::time::timeout(Duration::from_secs(5), active.session.wait(None)).await;
        }
    }
}

fn route(ev: &MirrorEvent) -> Option<JobEvent> {
    let (path, kind) = match ev {
        MirrorEvent::Created { path } => (path, NodeEventKind::Created),
        MirrorEvent::Changed { path } => (path, NodeEventKind::DataChanged),
        MirrorEvent::Deleted { path } => (path, NodeEventKind::Deleted),
        _ => return None,
    };
    let (job, node) = JobNode::parse(path).ok()?;
    Some(JobEvent { job, node, kind })
}

impl Actor for RegistryActor {
    type Msg = RegistryMsg;
    type State = RegistryState;
    type Arguments = Arc<NodeContext>;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        node: Self::Arguments,
    ) -> Result<Self::State, ActorProcessingErr> {
        myself.send_message(RegistryMsg::Connect)?;
        myself.send_interval(node.options.clock_check_interval, || {
            RegistryMsg::CheckClock
        });
        let backoff = node.options.reconnect_initial;
        Ok(RegistryState {
            node,
            active: None,
            generation: 0,
            backoff,
            connecting: false,
            parked: Vec::new(),
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            RegistryMsg::Connect => {
                if state.active.is_some() || state.connecting {
                    return Ok(());
                }
                // Off the mailbox: the connection and the mirror's first listing take round
                // trips (seconds when the registry is slow); requests are answered meanwhile.
                state.connecting = true;
                let (node, me) = (state.node.clone(), myself.clone());
                tokio::spawn(async move {
                    let opened = super::feed::open(&node).await;
                    let _ = me.send_message(RegistryMsg::Opened(Box::new(opened)));
                });
            }
            RegistryMsg::Opened(opened) => {
                state.connecting = false;
                let result = match *opened {
                    Ok((registry, feed, roots)) => {
                        start_session(state, &myself, registry, feed, roots).await
                    }
                    Err(e) => Err(e.into()),
                };
                for request in std::mem::take(&mut state.parked) {
                    on_request(state, &myself, request);
                }
                match result {
                    Ok(()) => state.backoff = state.node.options.reconnect_initial,
                    Err(e) => {
                        tracing::warn!(target = %state.node.connector.describe(), error = %e,
                            retry_in = ?state.backoff, "cannot open a registry session");
                        myself.send_after(state.backoff, || RegistryMsg::Connect);
                        state.backoff = (state.backoff * 2).min(state.node.options.reconnect_max);
                    }
                }
            }
            RegistryMsg::FeedEnded(generation) => {
                if state.active.is_none() || generation != state.generation {
                    return Ok(()); // a feed already torn down
                }
                tracing::warn!(
                    "the mirror's watch ended while the session lives; opening a new session"
                );
                state.teardown().await;
                // After the reconnect backoff: a watch that cannot be set up at all must not
                // churn sessions back to back.
                myself.send_after(state.backoff, || RegistryMsg::Connect);
                state.backoff = (state.backoff * 2).min(state.node.options.reconnect_max);
            }
            RegistryMsg::MirrorChanged(generation, ev) => {
                let Some(active) = state
                    .active
                    .as_ref()
                    .filter(|_| generation == state.generation)
                else {
                    return Ok(()); // from a feed already torn down
                };
                match ev {
                    MirrorEvent::Session(s) if s.is_terminal() => {
                        state
                            .node
                            .events
                            .emit(EngineEvent::SessionChanged { state: s });
                        tracing::warn!(state = ?s, "registry session ended; opening a new one");
                        state.teardown().await;
                        myself.send_message(RegistryMsg::Connect)?;
                    }
                    MirrorEvent::Session(s) => {
                        state
                            .node
                            .events
                            .emit(EngineEvent::SessionChanged { state: s });
                        let _ = active.session.send_message(SessionMsg::SessionState(s));
                    }
                    MirrorEvent::Resynced => {
                        let _ = active.session.send_message(SessionMsg::Resynced);
                        super::adopt::resynced(&state.node, &myself);
                    }
                    other => {
                        if let Some(ev) = route(&other) {
                            crate::metrics::registry_event(
                                &state.node.instance_id,
                                lock_jobs(&state.node).contains_key(&ev.job),
                            );
                            if state.node.adoption.is_some() && super::adopt::concerns(&ev) {
                                super::adopt::heard(&state.node, &myself, &ev.job);
                            }
                            let _ = active.session.send_message(SessionMsg::Job(ev));
                        }
                    }
                }
            }
            // A request that comes while a session opens waits for it (parked, not awaited).
            request @ (RegistryMsg::Request(
                NodeMsg::AddJob(..)
                | NodeMsg::RemoveJob(..)
                | NodeMsg::Trigger(..)
                | NodeMsg::Executor(..),
            )
            | RegistryMsg::Dropped(_)) => {
                if state.connecting {
                    state.parked.push(request);
                } else {
                    on_request(state, &myself, request);
                }
            }
            RegistryMsg::CheckClock => {
                let Some(active) = &state.active else {
                    return Ok(());
                };
                let job = lock_jobs(&state.node)
                    .iter()
                    .find(|(_, s)| s.config.max_time_diff_seconds >= 0)
                    .map(|(j, _)| j.clone());
                if let Some(job) = job {
                    // Off the mailbox: a registry write whose answer only updates a number.
                    let (registry, node) = (active.registry.clone(), state.node.clone());
                    tokio::spawn(async move {
                        let path = JobNode::SystemTimeCurrent.to_path(&job);
                        match registry.server_time_millis(&path).await {
                            Ok(server) => {
                                let local = node.clock.now().timestamp_millis();
                                node.clock_skew_ms.0.store(
                                    local.abs_diff(server),
                                    std::sync::atomic::Ordering::Relaxed,
                                );
                            }
                            Err(e) => {
                                tracing::warn!(%path, error = %e, "cannot read the registry's time")
                            }
                        }
                    });
                }
            }
            RegistryMsg::Request(NodeMsg::ReadySession(reply)) => {
                let session = state.active.as_ref().and_then(|a| {
                    let connected = *a.registry.session_state().borrow() == SessionState::Connected;
                    (connected && state.node.mirror.is_synced())
                        .then(|| a.registry.session_info().id)
                });
                let _ = reply.send(session);
            }
            RegistryMsg::Request(NodeMsg::Session(reply)) => {
                let _ = reply.send(state.active.as_ref().map(|a| a.registry.clone()));
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
        let id = cell.get_id();
        let is_current = state
            .active
            .as_ref()
            .is_some_and(|a| a.session.get_id() == id);
        if is_current {
            // The session subtree died while its session lives: rebuild it on the same session.
            tracing::warn!(%reason, "session actor ended; restarting it");
            let Some((ctx, singletons)) =
                (state.active.as_ref()).map(|a| (a.ctx.clone(), a.singletons.clone()))
            else {
                return Ok(());
            };
            // Its singletons may outlive it for a moment: stop them so the new ones can take the names.
            stop_stragglers(&singletons).await;
            let ctx = SessionCtx {
                configs: Arc::new(JobConfigs::default()),
                ..ctx
            };
            let session = (state.spawn_session(&myself, ctx.clone(), singletons)).await?;
            if let Some(a) = state.active.as_mut() {
                a.session = session;
                a.ctx = ctx;
            }
        }
        Ok(())
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<Self::Msg>,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        if let Some(active) = state.active.take() {
            active.forward.abort();
            // Drains the executors (bounded by the shutdown timeout) in the session actor's post_stop.
            active
                .session
                .stop_and_wait(Some("node stopping".into()), None)
                .await
                .ok();
            // Closing the session removes this instance's ephemerals (instances/, leadership) at once,
            // so the others react now rather than after the session timeout.
            active.registry.close().await;
        }
        Ok(())
    }
}

/// Sends a request carrying its reply port to the session; a session already gone answers it
/// with an error here.
fn forward_to_session(session: &ActorRef<SessionMsg>, msg: SessionMsg) {
    if let Err(ractor::MessagingErr::SendErr(msg)) = session.send_message(msg) {
        let gone = || Err(EngineError::Actor("the session actor is gone".to_owned()));
        match msg {
            SessionMsg::AddJob(_, reply) | SessionMsg::RemoveJob(_, reply) => {
                let _ = reply.send(gone());
            }
            _ => {}
        }
    }
}

/// The node's requests (and an adopted job's drop): their reply ports go on to the SessionActor,
/// so this waits for no registration; with no session, a job is kept for the next one.
fn on_request(state: &mut RegistryState, myself: &ActorRef<RegistryMsg>, msg: RegistryMsg) {
    match msg {
        RegistryMsg::Request(NodeMsg::AddJob(spec, reply)) => match job_name(&spec.config) {
            Err(e) => drop(reply.send(Err(e))),
            Ok(name) => {
                let spec: Arc<JobSpec> = Arc::from(spec);
                lock_jobs(&state.node).insert(name.clone(), spec.clone());
                match &state.active {
                    Some(a) => {
                        // The job's subtree is watched and listed before its executor registers
                        // (registration decides from the mirror).
                        let roots = scope::roots_of(&name, &spec.config);
                        let session = a.session.clone();
                        a.ctx.roots.add(roots, move || {
                            forward_to_session(&session, SessionMsg::AddJob(spec, reply))
                        });
                    }
                    None => drop(reply.send(Ok(()))),
                }
            }
        },
        RegistryMsg::Request(NodeMsg::RemoveJob(job, reply)) => {
            lock_jobs(&state.node).remove(&job);
            match &state.active {
                // Behind any addition still being watched (nothing to add: the request keeps
                // its place). The job's subtree stays watched until the session ends.
                Some(a) => {
                    let session = a.session.clone();
                    a.ctx.roots.add(Vec::new(), move || {
                        forward_to_session(&session, SessionMsg::RemoveJob(job, reply))
                    });
                }
                None => drop(reply.send(Ok(()))),
            }
        }
        RegistryMsg::Dropped(job) => super::adopt::dropped(&state.node, myself, &job),
        RegistryMsg::Request(NodeMsg::Trigger(job, reply)) => match &state.active {
            Some(a) => {
                let _ = a.session.send_message(SessionMsg::Trigger(job, reply));
            }
            None => {
                let _ = reply.send(Err(EngineError::NoSession));
            }
        },
        RegistryMsg::Request(NodeMsg::Executor(job, reply)) => match &state.active {
            Some(a) => {
                let _ = a.session.send_message(SessionMsg::Executor(job, reply));
            }
            None => {
                let _ = reply.send(Err(EngineError::NoSession));
            }
        },
        other => tracing::debug!(?other, "not a request"),
    }
}

/// Starts the subtree of a session just opened.
async fn start_session(
    state: &mut RegistryState,
    myself: &ActorRef<RegistryMsg>,
    registry: Arc<dyn Registry>,
    feed: MirrorFeed,
    roots: FeedRoots,
) -> Result<(), ActorProcessingErr> {
    state.generation += 1;
    let generation = state.generation;
    let (events, handle) = feed.split();
    let ctx = SessionCtx {
        node: state.node.clone(),
        registry: registry.clone(),
        configs: Arc::new(JobConfigs::default()),
        writes: WriteBatcher::start(registry.clone()),
        roots,
        registering: Arc::new(tokio::sync::Semaphore::new(
            super::context::REGISTERING_AT_ONCE,
        )),
    };
    let singletons = Singletons::default();
    let session = (state.spawn_session(myself, ctx.clone(), singletons.clone())).await?;
    let me = myself.clone();
    let states = registry.session_state();
    let forward = tokio::spawn(super::feed::forward(events, states, me, generation));
    myself.send_message(RegistryMsg::CheckClock)?;
    tracing::info!(session = registry.session_info().id, target = %state.node.connector.describe(),
        "registry session opened");
    state.active = Some(Active {
        registry,
        _feed: handle,
        forward,
        session,
        singletons,
        ctx,
    });
    Ok(())
}

/// Stops the four singletons a failed SessionActor left behind (its children outlive it for a
/// moment) and waits for them (bounded), so that the new subtree can register the same names.
/// Their cells are those the SessionActor recorded as it spawned them (a dead subtree has nobody
/// left to ask).
///
/// Executors are unnamed (a name cost ~190 bytes a job), so they clash with nothing, and none is
/// waited for here. An old executor of a job beside the new session's executor of that job is
/// still excluded where it matters: ractor ends a dead actor by killing its children (the
/// `Kill` signal goes to every child before the supervisor hears of the death), and a killed
/// actor takes no further message (signals come before messages) and is cancelled at its
/// handler's next `.await`. So the old executor fires, claims and writes nothing more once we
/// are told. The one thing a wait still bought is the end of the handler step it was in when
/// killed (its synchronous code up to that `.await`), nothing a new executor waits on. What
/// outlives it (its run tasks, reporting to a dead ref) outlived it just as much when it was
/// waited for by name: the same case as a single executor's restart, where the new one starts
/// beside the old runs.
async fn stop_stragglers(singletons: &Singletons) {
    let cells: Vec<_> = {
        let mut singletons = singletons.lock().unwrap_or_else(|p| p.into_inner());
        singletons.drain().map(|(_, cell)| cell).collect()
    };
    let stops = cells.iter().map(|c| {
        c.stop_and_wait(
            Some("session subtree restarting".into()),
            Some(Duration::from_secs(5)),
        )
    });
    futures::future::join_all(stops).await;
}
