//! The life of the RegistryActor's session subtree: started under a SessionActor on a session just
//! opened, rebuilt on the same session when the SessionActor died while the session lives (its
//! singletons stopped first, so the new ones can take their names), torn down with a dead session.

use std::sync::Arc;
use std::time::Duration;

use ractor::{Actor, ActorProcessingErr, ActorRef};

use crate::actors::context::{JobConfigs, SessionCtx};
use crate::actors::mail::RegistryMsg;
use crate::actors::session::{SessionActor, SessionArgs, SessionMsg, Singletons};
use crate::actors::writes::WriteBatcher;
use crate::registry::mirror::MirrorFeed;
use crate::registry::Registry;

use super::{Active, RegistryState};

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
    pub(super) async fn teardown(&mut self) {
        if let Some(active) = self.active.take() {
            active.forward.abort();
            let _ = active.session.send_message(SessionMsg::Abandon);
            let _ = tokio::time::timeout(Duration::from_secs(5), active.session.wait(None)).await;
        }
    }

    /// Rebuilds the session subtree on the same session, whose SessionActor ended while the
    /// session lives.
    pub(super) async fn rebuild_session(
        &mut self,
        myself: &ActorRef<RegistryMsg>,
    ) -> Result<(), ActorProcessingErr> {
        let Some((ctx, singletons)) =
            (self.active.as_ref()).map(|a| (a.ctx.clone(), a.singletons.clone()))
        else {
            return Ok(());
        };
        // Its singletons may outlive it for a moment: stop them so the new ones can take the names.
        stop_stragglers(&singletons).await;
        let ctx = SessionCtx {
            configs: Arc::new(JobConfigs::default()),
            ..ctx
        };
        let session = (self.spawn_session(myself, ctx.clone(), singletons)).await?;
        if let Some(a) = self.active.as_mut() {
            a.session = session;
            a.ctx = ctx;
        }
        Ok(())
    }
}

/// Starts the subtree of a session just opened.
pub(super) async fn start_session(
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
            crate::actors::context::REGISTERING_AT_ONCE,
        )),
    };
    let singletons = Singletons::default();
    let session = (state.spawn_session(myself, ctx.clone(), singletons.clone())).await?;
    let me = myself.clone();
    let states = registry.session_state();
    let forward = tokio::spawn(crate::actors::feed::forward(events, states, me, generation));
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
