//! RegistryActor: owns the session, the one recursive watch (through the mirror feed) and the
//! session-scoped subtree. A terminal session state tears the subtree down and opens a new session;
//! the new subtree replays its state from the re-listed mirror.

use std::sync::Arc;
use std::time::Duration;

use ractor::{Actor, ActorProcessingErr, ActorRef, SupervisionEvent};
use tokio::task::JoinHandle;

use crate::events::EngineEvent;
use crate::paths::JobNode;
use crate::registry::mirror::{FeedHandle, FeedOptions, MirrorEvent, MirrorFeed};
use crate::registry::{NodeEventKind, Registry, SessionState};

use super::context::{lock_jobs, JobConfigs, JobEvent, NodeContext, SessionCtx};
use super::error::EngineError;
use super::mail::{Opened, RegistryMsg};
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
                    let opened = open(&node).await;
                    let _ = me.send_message(RegistryMsg::Opened(Box::new(opened)));
                });
            }
            RegistryMsg::Opened(opened) => {
                state.connecting = false;
                let result = match *opened {
                    Ok((registry, feed)) => start_session(state, &myself, registry, feed).await,
                    Err(e) => Err(e.into()),
                };
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
                            if state.node.adoption.is_some() && super::adopt::concerns(&ev) {
                                super::adopt::heard(&state.node, &myself, &ev.job);
                            }
                            let _ = active.session.send_message(SessionMsg::Job(ev));
                        }
                    }
                }
            }
            // The reply ports go on to the SessionActor: this handler waits for no registration.
            RegistryMsg::AddJob(spec, reply) => match job_name(&spec.config) {
                Err(e) => drop(reply.send(Err(e))),
                Ok(name) => {
                    let spec: Arc<JobSpec> = Arc::from(spec);
                    lock_jobs(&state.node).insert(name, spec.clone());
                    match &state.active {
                        Some(a) => forward_to_session(&a.session, SessionMsg::AddJob(spec, reply)),
                        None => drop(reply.send(Ok(()))),
                    }
                }
            },
            RegistryMsg::RemoveJob(job, reply) => {
                lock_jobs(&state.node).remove(&job);
                match &state.active {
                    Some(a) => forward_to_session(&a.session, SessionMsg::RemoveJob(job, reply)),
                    None => drop(reply.send(Ok(()))),
                }
            }
            RegistryMsg::Dropped(job) => super::adopt::dropped(&state.node, &myself, &job),
            RegistryMsg::Trigger(job, reply) => match &state.active {
                Some(a) => {
                    let _ = a.session.send_message(SessionMsg::Trigger(job, reply));
                }
                None => {
                    let _ = reply.send(Err(EngineError::NoSession));
                }
            },
            RegistryMsg::Executor(job, reply) => match &state.active {
                Some(a) => {
                    let _ = a.session.send_message(SessionMsg::Executor(job, reply));
                }
                None => {
                    let _ = reply.send(Err(EngineError::NoSession));
                }
            },
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
            RegistryMsg::ReadySession(reply) => {
                let session = state.active.as_ref().and_then(|a| {
                    let connected = *a.registry.session_state().borrow() == SessionState::Connected;
                    (connected && state.node.mirror.is_synced())
                        .then(|| a.registry.session_info().id)
                });
                let _ = reply.send(session);
            }
            RegistryMsg::Session(reply) => {
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
        let failed = match &evt {
            SupervisionEvent::ActorFailed(cell, e) => Some((cell.get_id(), e.to_string())),
            SupervisionEvent::ActorTerminated(cell, _, reason) => {
                Some((cell.get_id(), reason.clone().unwrap_or_default()))
            }
            _ => None,
        };
        let Some((id, reason)) = failed else {
            return Ok(());
        };
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

/// How long a `running` marker may stay in the mirror with its data unread.
const RUN_MARKER_SETTLE: Duration = Duration::from_secs(1);

/// `running` markers come and go around every run; nobody needs their data (the owner's id) at
/// once, so the mirror reads it only for markers that outlive [`RUN_MARKER_SETTLE`], or before it
/// applies any other change. A run then costs the mirror no registry read.
fn feed_options() -> FeedOptions {
    FeedOptions {
        lazy_data: Some(Arc::new(|path: &str| {
            // The suffix first: most paths are not markers, and parsing one allocates.
            path.ends_with("/running")
                && matches!(JobNode::parse(path), Ok((_, JobNode::ShardingRunning(_))))
        })),
        settle: RUN_MARKER_SETTLE,
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

/// Opens a session and lists the namespace into the mirror (on a task of its own).
async fn open(node: &NodeContext) -> Opened {
    let registry = (node.connector.connect().await).map_err(|e| e.to_string())?;
    let feed = (node.mirror.feed_with(registry.clone(), "/", feed_options()).await)
        .map_err(|e| e.to_string())?;
    Ok((registry, feed))
}

/// Starts the subtree of a session just opened.
async fn start_session(
    state: &mut RegistryState,
    myself: &ActorRef<RegistryMsg>,
    registry: Arc<dyn Registry>,
    feed: MirrorFeed,
) -> Result<(), ActorProcessingErr> {
    state.generation += 1;
    let generation = state.generation;
    let (events, handle) = feed.split();
    let ctx = SessionCtx {
        node: state.node.clone(),
        registry: registry.clone(),
        configs: Arc::new(JobConfigs::default()),
        writes: WriteBatcher::start(registry.clone()),
        registering: Arc::new(tokio::sync::Semaphore::new(
            super::context::REGISTERING_AT_ONCE,
        )),
    };
    let singletons = Singletons::default();
    let session = (state.spawn_session(myself, ctx.clone(), singletons.clone())).await?;
    let me = myself.clone();
    let states = registry.session_state();
    let forward = tokio::spawn(forward(events, states, me, generation));
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

/// Forwards the feed's events and the session's state changes to the actor. Session states come
/// straight from the session's own state channel, never through the feed: the feed may be stuck
/// on a read (a `get_many` of a partitioned session waits for its call timeout), and a node that
/// must stop its items when cut off cannot wait behind it. The feed's own copies of non-terminal
/// states are dropped (they arrive late or not at all); a terminal state may come either way,
/// the first one tears the session down and the actor ignores the other (its generation is gone).
async fn forward(
    mut events: tokio::sync::mpsc::UnboundedReceiver<MirrorEvent>,
    mut states: tokio::sync::watch::Receiver<SessionState>,
    me: ActorRef<RegistryMsg>,
    generation: u64,
) {
    let mut states_open = true;
    loop {
        let ev = tokio::select! {
            biased;
            changed = states.changed(), if states_open => {
                if changed.is_err() {
                    // The session dropped its state channel: the feed reports its end.
                    states_open = false;
                    continue;
                }
                MirrorEvent::Session(*states.borrow_and_update())
            }
            ev = events.recv() => match ev {
                Some(MirrorEvent::Session(s)) if !s.is_terminal() => continue,
                Some(ev) => ev,
                None => {
                    // Stopped forwarding states here used to leave the node on a session nobody
                    // watched: when it expired, nothing opened another (no instance node, no
                    // runs, ready). A feed that ended after a terminal state names a generation
                    // the actor has already left, and is ignored.
                    let _ = me.send_message(RegistryMsg::FeedEnded(generation));
                    break;
                }
            },
        };
        if me
            .send_message(RegistryMsg::MirrorChanged(generation, ev))
            .is_err()
        {
            break;
        }
    }
}
