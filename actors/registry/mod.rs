//! RegistryActor: owns the session, the one recursive watch (through the mirror feed) and the
//! session-scoped subtree. A terminal session state tears the subtree down and opens a new session;
//! the new subtree replays its state from the re-listed mirror.
//!
//! Here the actor's protocol, state and handlers; in `subtree.rs` the life of the session's
//! subtree (started on a session just opened, rebuilt on the same session, torn down with a dead
//! one); in `requests.rs` the node's requests, passed on to the SessionActor.

mod requests;
mod subtree;

use std::sync::Arc;
use std::time::Duration;

use ractor::{ActorCell, ActorProcessingErr, ActorRef};
use tokio::task::JoinHandle;

use crate::events::EngineEvent;
use crate::paths::JobNode;
use crate::registry::mirror::{FeedHandle, MirrorEvent};
use crate::registry::{NodeEventKind, Registry, SessionState};

use super::context::{lock_jobs, JobEvent, NodeContext, SessionCtx};
use super::mail::{NodeMsg, RegistryMsg};
use super::session::{SessionMsg, Singletons};
use super::Handled;

use requests::on_request;
use subtree::start_session;

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

/// Hands the job events gathered so far to the session, as one message.
fn send_jobs(session: &ActorRef<SessionMsg>, jobs: &mut Vec<JobEvent>) {
    if !jobs.is_empty() {
        let _ = session.send_message(SessionMsg::Jobs(std::mem::take(jobs)));
    }
}

supervisor_actor!(RegistryActor: RegistryMsg, RegistryState, Arc<NodeContext>);

impl RegistryState {
    /// The state of a new RegistryActor: its first connection asked for, its clock check started.
    async fn started(
        myself: &ActorRef<RegistryMsg>,
        node: Arc<NodeContext>,
    ) -> Result<Self, ActorProcessingErr> {
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

    /// One message: connections and sessions opened off the mailbox, requests passed on or parked.
    async fn handle(&mut self, myself: &ActorRef<RegistryMsg>, msg: RegistryMsg) -> Handled {
        match msg {
            RegistryMsg::Connect => {
                if self.active.is_some() || self.connecting {
                    return Ok(());
                }
                // Off the mailbox: the connection and the mirror's first listing take round
                // trips (seconds when the registry is slow); requests are answered meanwhile.
                self.connecting = true;
                let (node, me) = (self.node.clone(), myself.clone());
                tokio::spawn(async move {
                    let opened = super::feed::open(&node).await;
                    let _ = me.send_message(RegistryMsg::Opened(Box::new(opened)));
                });
            }
            RegistryMsg::Opened(opened) => {
                self.connecting = false;
                let result = match *opened {
                    Ok((registry, feed, roots)) => {
                        start_session(self, myself, registry, feed, roots).await
                    }
                    Err(e) => Err(e.into()),
                };
                for request in std::mem::take(&mut self.parked) {
                    on_request(self, myself, request);
                }
                match result {
                    Ok(()) => self.backoff = self.node.options.reconnect_initial,
                    Err(e) => {
                        tracing::warn!(target = %self.node.connector.describe(), error = %e,
                            retry_in = ?self.backoff, "cannot open a registry session");
                        myself.send_after(self.backoff, || RegistryMsg::Connect);
                        self.backoff = (self.backoff * 2).min(self.node.options.reconnect_max);
                    }
                }
            }
            RegistryMsg::FeedEnded(generation) => {
                if self.active.is_none() || generation != self.generation {
                    return Ok(()); // a feed already torn down
                }
                tracing::warn!(
                    "the mirror's watch ended while the session lives; opening a new session"
                );
                self.teardown().await;
                // After the reconnect backoff: a watch that cannot be set up at all must not
                // churn sessions back to back.
                myself.send_after(self.backoff, || RegistryMsg::Connect);
                self.backoff = (self.backoff * 2).min(self.node.options.reconnect_max);
            }
            RegistryMsg::MirrorChanged(generation, events) => {
                // Node events go to the session together, in order with the other kinds.
                let mut jobs = Vec::new();
                for ev in events {
                    let Some(active) = self
                        .active
                        .as_ref()
                        .filter(|_| generation == self.generation)
                    else {
                        return Ok(()); // from a feed already torn down
                    };
                    if !matches!(
                        ev,
                        MirrorEvent::Created { .. }
                            | MirrorEvent::Changed { .. }
                            | MirrorEvent::Deleted { .. }
                    ) {
                        send_jobs(&active.session, &mut jobs);
                    }
                    match ev {
                        MirrorEvent::Session(s) if s.is_terminal() => {
                            self.node
                                .events
                                .emit(EngineEvent::SessionChanged { state: s });
                            tracing::warn!(state = ?s, "registry session ended; opening a new one");
                            self.teardown().await;
                            myself.send_message(RegistryMsg::Connect)?;
                            // What follows came from the feed just torn down.
                            return Ok(());
                        }
                        MirrorEvent::Session(s) => {
                            self.node
                                .events
                                .emit(EngineEvent::SessionChanged { state: s });
                            let _ = active.session.send_message(SessionMsg::SessionState(s));
                            if s == SessionState::Connected {
                                // The watches may have missed changes while disconnected, whether
                                // or not their own copies of the states say so: the feed lists
                                // again, and its `Resynced` lets the executors start again.
                                active.ctx.roots.relist();
                            }
                        }
                        MirrorEvent::Resynced => {
                            let _ = active.session.send_message(SessionMsg::Resynced);
                            super::adopt::resynced(&self.node, myself);
                        }
                        other => {
                            if let Some(ev) = route(&other) {
                                crate::metrics::registry_event(
                                    &self.node.instance_id,
                                    lock_jobs(&self.node).contains_key(&ev.job),
                                );
                                if self.node.adoption.is_some() && super::adopt::concerns(&ev) {
                                    super::adopt::heard(&self.node, myself, &ev.job);
                                }
                                jobs.push(ev);
                            }
                        }
                    }
                }
                if let Some(active) = &self.active {
                    send_jobs(&active.session, &mut jobs);
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
                if self.connecting {
                    self.parked.push(request);
                } else {
                    on_request(self, myself, request);
                }
            }
            RegistryMsg::CheckClock => {
                let Some(active) = &self.active else {
                    return Ok(());
                };
                let job = lock_jobs(&self.node)
                    .iter()
                    .find(|(_, s)| s.config.max_time_diff_seconds >= 0)
                    .map(|(j, _)| j.clone());
                if let Some(job) = job {
                    // Off the mailbox: a registry write whose answer only updates a number.
                    let (registry, node) = (active.registry.clone(), self.node.clone());
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
                let session = self.active.as_ref().and_then(|a| {
                    let connected = *a.registry.session_state().borrow() == SessionState::Connected;
                    (connected && self.node.mirror.is_synced())
                        .then(|| a.registry.session_info().id)
                });
                let _ = reply.send(session);
            }
            RegistryMsg::Request(NodeMsg::Session(reply)) => {
                let _ = reply.send(self.active.as_ref().map(|a| a.registry.clone()));
            }
        }
        Ok(())
    }

    /// A child ended: when it is the current session's subtree, it is rebuilt on the same session.
    async fn child_ended(
        &mut self,
        myself: &ActorRef<RegistryMsg>,
        cell: ActorCell,
        reason: String,
    ) -> Handled {
        let id = cell.get_id();
        let is_current = self
            .active
            .as_ref()
            .is_some_and(|a| a.session.get_id() == id);
        if is_current {
            // The session subtree died while its session lives: rebuild it on the same session.
            tracing::warn!(%reason, "session actor ended; restarting it");
            self.rebuild_session(myself).await?;
        }
        Ok(())
    }

    /// The session subtree drained and stopped, then the session closed.
    async fn stopping(&mut self, _myself: &ActorRef<RegistryMsg>) -> Handled {
        if let Some(active) = self.active.take() {
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
