//! FailoverActor: re-runs the items a crashed instance was running, on ElasticJob 3.0.x's failover
//! protocol (so Java instances may mark, claim and run beside it) with an atomic claim instead of
//! a latch, and keeps the failover nodes consistent with each job's `failover` setting.
//!
//! - An instance node vanishes: the items it was running are marked in `leader/failover/items`,
//!   and their `running` deleted in the same multi-op, as ElasticJob's marker does.
//! - On registration and after a re-list, runs of instances absent from `instances/` are marked too
//!   (the whole cluster was down, or the vanishing was missed), and a marker that stopped half way
//!   has its `running` deletion finished.
//! - An idle instance claims marked items that have no `running` in one multi-op
//!   ([`crate::decide::failover::claim`]) and hands them to its executor, which runs them at once;
//!   a busy one claims when its run ends (the executor sends `RunEnded`); a `running` deletion
//!   asks again. A lost race re-reads the marks and retries with what is left.
//! - Failover turned off: the leader removes the `failover`/`failovering` records and the marks, as
//!   ElasticJob's FailoverSettingsChangedJobListener does.

use std::collections::HashMap;
use std::time::Duration;

use ractor::{Actor, ActorId, ActorProcessingErr, ActorRef};

use crate::decide::failover;
use crate::decide::lifecycle::Input;
use crate::events::EngineEvent;
use crate::job::fencing::{FencingToken, OwnershipZxids};
use crate::paths::JobNode;
use crate::registry::mirror::Mirror;
use crate::registry::{NodeEventKind, Op};
use crate::types::{InstanceId, JobName, ShardItem};
use crate::view::{JobView, ServerStatus};

use super::context::{apply_each_tolerant, JobEvent, SessionCtx};
use super::executor::ExecutorMsg;

/// How long the executor may take to say whether it is idle (its mailbox may hold a fire).
const IDLE_QUERY_TIMEOUT: Duration = Duration::from_secs(5);

/// The FailoverActor.
#[derive(Debug)]
pub(crate) struct FailoverActor;

/// Messages of the FailoverActor.
#[derive(Debug)]
pub(crate) enum FailoverMsg {
    /// A node of a job changed.
    Job(JobEvent),
    /// The mirror was re-listed.
    Resynced,
    /// A job's configuration changed.
    ConfigChanged(JobName),
    /// A job's executor has no run in progress any more: claim what is marked.
    RunEnded(JobName),
    /// A job's executor started: claimed items of the job go to it.
    Executor(JobName, ActorRef<ExecutorMsg>),
    /// A job's executor stopped (forgotten unless a newer one replaced it).
    ExecutorGone(JobName, ActorId),
}

/// Arguments of the FailoverActor: the session, and after a restart the executors running.
#[derive(Debug)]
pub(crate) struct FailoverArgs {
    pub(crate) ctx: SessionCtx,
    pub(crate) executors: HashMap<JobName, ActorRef<ExecutorMsg>>,
}

/// State of the FailoverActor.
#[derive(Debug)]
pub(crate) struct FailoverState {
    ctx: SessionCtx,
    /// Each job's executor, as the executors announced themselves (handles, not a directory).
    executors: HashMap<JobName, ActorRef<ExecutorMsg>>,
}

/// The removals that turning failover off asks for.
pub(crate) fn clear_failover_ops(view: &JobView, job: &JobName) -> Vec<Op> {
    let mut ops = Vec::new();
    for (item, v) in &view.items {
        if v.failover.is_some() {
            ops.push(Op::delete(JobNode::ShardingFailover(*item).to_path(job)));
        }
        if v.failovering.is_some() {
            ops.push(Op::delete(JobNode::ShardingFailovering(*item).to_path(job)));
        }
    }
    for item in &view.failover_marks {
        ops.push(Op::delete(JobNode::LeaderFailoverItem(*item).to_path(job)));
    }
    ops
}

/// Whether `job` has a failover record of any kind in the mirror: a mark under
/// `leader/failover/items`, or an item's `failover`/`failovering` node.
fn has_failover_records(mirror: &Mirror, job: &JobName) -> bool {
    if !mirror
        .children(&JobNode::LeaderFailoverItems.to_path(job))
        .is_empty()
    {
        return true;
    }
    mirror
        .children(&JobNode::Sharding.to_path(job))
        .iter()
        .filter_map(|i| i.parse::<ShardItem>().ok())
        .any(|item| {
            mirror.exists(&JobNode::ShardingFailover(item).to_path(job))
                || mirror.exists(&JobNode::ShardingFailovering(item).to_path(job))
        })
}

/// What a job event asks of the FailoverActor. The SessionActor sends it only the events that
/// ask something.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Reaction {
    Nothing,
    /// Failover may have been turned off or a new leader must clear: check the setting.
    CheckSetting,
    /// Another instance vanished: mark its runs, then claim.
    Crashed(InstanceId),
    /// This instance registered: mark orphaned runs, then claim.
    Registered,
    /// Marks or records changed, or a run ended somewhere: what is marked may be claimable now.
    Claim,
}

pub(super) fn reaction(ev: &JobEvent, me: &InstanceId) -> Reaction {
    use NodeEventKind::{Created, Deleted};
    match (&ev.node, ev.kind) {
        (JobNode::LeaderElectionInstance, _) => Reaction::CheckSetting,
        (JobNode::Instance(id), Deleted) if id != me => Reaction::Crashed(id.clone()),
        (JobNode::Instance(id), Created) if id == me => Reaction::Registered,
        // A mark deleted is another instance's claim landing: the marks left may be claimable now
        // (a claim that lost a race waits for exactly this).
        (JobNode::LeaderFailoverItem(_), Created | Deleted)
        | (
            JobNode::ShardingRunning(_)
            | JobNode::ShardingFailover(_)
            | JobNode::ShardingFailovering(_),
            Deleted,
        ) => Reaction::Claim,
        _ => Reaction::Nothing,
    }
}

impl FailoverState {
    fn failover_on(&self, job: &JobName) -> bool {
        self.ctx.config(job).is_some_and(|c| c.config().failover)
    }

    /// Clears the failover records when the job's failover is off and this instance leads.
    async fn check(&mut self, job: &JobName) {
        if self.ctx.config(job).is_none() || self.failover_on(job) {
            return;
        }
        // Asked at every config change and leader change of every job: the whole job is read
        // only when a failover record exists.
        let mirror = self.ctx.mirror();
        if !has_failover_records(mirror, job) {
            return;
        }
        let view = JobView::read(mirror, job);
        if view.leader.as_ref() != Some(self.ctx.me()) {
            return;
        }
        let ops = clear_failover_ops(&view, job);
        if !ops.is_empty() {
            tracing::info!(%job, count = ops.len(), "failover turned off: clearing failover records");
            if let Err(e) = apply_each_tolerant(&*self.ctx.registry, &ops).await {
                tracing::warn!(%job, error = %e, "clearing failover records failed");
            }
        }
    }

    /// Creates marks, each with its guarded multi-op. One that fails on a node created or deleted
    /// meanwhile is as good as applied: another survivor marked the item, took it over, or the
    /// run is no longer as seen.
    async fn mark(&self, job: &JobName, marks: Vec<Vec<Op>>, why: &str) {
        if marks.is_empty() {
            return;
        }
        tracing::info!(%job, count = marks.len(), why, "marking items for failover");
        // Java instances never create `leader/failover/items` at registration; we do not either.
        let parent = JobNode::LeaderFailoverItems.to_path(job);
        if let Err(e) = self.ctx.registry.ensure_path(&parent).await {
            tracing::warn!(%job, error = %e, "marking items for failover failed");
            return;
        }
        for ops in marks {
            match self.ctx.registry.multi(&ops).await {
                Ok(_) => {}
                Err(e) if e.is_node_exists() || e.is_no_node() || e.is_bad_version() => {
                    tracing::debug!(%job, error = %e, "mark not needed any more");
                }
                Err(e) => {
                    tracing::warn!(%job, error = %e, "marking items for failover failed");
                    return;
                }
            }
        }
    }

    async fn crashed(&mut self, job: &JobName, crashed: &InstanceId) {
        if !self.failover_on(job) {
            return;
        }
        let view = JobView::read(self.ctx.mirror(), job);
        let ops = failover::marks_for_crashed(&view, job, crashed);
        self.mark(job, ops, "instance vanished while running").await;
        self.claim(job).await;
    }

    async fn orphans(&mut self, job: &JobName) {
        if !self.failover_on(job) {
            return;
        }
        let view = JobView::read(self.ctx.mirror(), job);
        let ops = failover::marks_for_orphans(&view, job);
        self.mark(job, ops, "runs of instances that are gone").await;
        self.claim(job).await;
    }

    /// Whether the job's executor here has no run in progress. Asked, not tracked, so that a
    /// restarted executor or FailoverActor never leaves a stale answer behind.
    async fn executor_idle(&self, job: &JobName) -> bool {
        let Some(exec) = self.executors.get(job) else {
            return false;
        };
        matches!(
            exec.call(ExecutorMsg::IsIdle, Some(IDLE_QUERY_TIMEOUT))
                .await,
            Ok(ractor::rpc::CallResult::Success(true))
        )
    }

    /// Claims marked items if this instance may take them and is idle, and hands the claimed ones
    /// to the executor.
    async fn claim(&mut self, job: &JobName) {
        if !self.failover_on(job) {
            return;
        }
        // Every `running` deletion of the job asks for a claim: answer the common "no mark" case
        // without reading the whole job.
        let marks = JobNode::LeaderFailoverItems.to_path(job);
        if self.ctx.mirror().children(&marks).is_empty() {
            return;
        }
        let me = self.ctx.me().clone();
        let view = JobView::read(self.ctx.mirror(), job);
        // An instance without the job's label takes no item of it, not even a failed-over one.
        let label = self.ctx.config(job).and_then(|c| c.config().label.clone());
        let registered = view.instances.contains(&me)
            && view.server_status(me.ip()) == ServerStatus::Enabled
            && view.carries(&me, label.as_deref());
        if view.failover_marks.is_empty() || !registered || !self.executor_idle(job).await {
            return;
        }
        // Spread the marks over the instances that could take them rather than take them all.
        let share = view
            .failover_marks
            .len()
            .div_ceil(view.eligible_instances(label.as_deref()).len().max(1));
        let Some((items, ops)) = failover::claim(&view, job, &me, share) else {
            return;
        };
        // Read before the claim: once applied, the mirror may show the marks gone before the
        // claim's own nodes.
        let fences = items
            .iter()
            .map(|i| (*i, OwnershipZxids::read(self.ctx.mirror(), job, *i).token()))
            .collect();
        match self.ctx.apply(&ops).await {
            Ok(()) => self.hand_over(job, items, fences),
            Err(e) if e.is_no_node() || e.is_node_exists() => {
                // Lost a race the mirror did not show yet: the winner's claim deletes the marks it
                // took, and those events bring the next attempt, with the marks as they are then.
                tracing::debug!(%job, ?items, "lost a failover claim race; waiting for the winner's claim to show");
            }
            Err(e) => tracing::warn!(%job, error = %e, "claiming failover items failed"),
        }
    }

    fn hand_over(
        &self,
        job: &JobName,
        items: Vec<ShardItem>,
        fences: Vec<(ShardItem, FencingToken)>,
    ) {
        tracing::info!(%job, ?items, instance = %self.ctx.me(), "claimed items for failover");
        self.ctx.node.events.emit(EngineEvent::FailoverClaimed {
            job: job.clone(),
            items: items.clone(),
        });
        crate::metrics::failover_claimed(self.ctx.me(), job, items.len());
        match self.executors.get(job) {
            Some(exec) => {
                let _ = exec.send_message(ExecutorMsg::FailoverFences(fences));
                if exec
                    .send_message(ExecutorMsg::Step(Input::FailoverClaimed(items)))
                    .is_err()
                {
                    tracing::warn!(%job, "executor gone after a failover claim; its session's end fails the items over again");
                }
            }
            None => tracing::warn!(%job, "no executor after a failover claim"),
        }
    }

    fn jobs(&self) -> Vec<JobName> {
        self.ctx.configs.iter().map(|e| e.key().clone()).collect()
    }
}

impl Actor for FailoverActor {
    type Msg = FailoverMsg;
    type State = FailoverState;
    type Arguments = FailoverArgs;

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        args: FailoverArgs,
    ) -> Result<Self::State, ActorProcessingErr> {
        let FailoverArgs { ctx, executors } = args;
        Ok(FailoverState { ctx, executors })
    }

    async fn handle(
        &self,
        _myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            FailoverMsg::ConfigChanged(job) => {
                state.check(&job).await;
                state.orphans(&job).await;
            }
            FailoverMsg::Job(ev) => match reaction(&ev, state.ctx.me()) {
                Reaction::Nothing => {}
                Reaction::CheckSetting => state.check(&ev.job).await,
                Reaction::Crashed(id) => state.crashed(&ev.job, &id).await,
                Reaction::Registered => state.orphans(&ev.job).await,
                Reaction::Claim => state.claim(&ev.job).await,
            },
            FailoverMsg::Resynced => {
                for job in state.jobs() {
                    state.check(&job).await;
                    state.orphans(&job).await;
                }
            }
            FailoverMsg::RunEnded(job) => state.claim(&job).await,
            FailoverMsg::Executor(job, exec) => {
                state.executors.insert(job, exec);
            }
            FailoverMsg::ExecutorGone(job, id) => {
                if state.executors.get(&job).is_some_and(|e| e.get_id() == id) {
                    state.executors.remove(&job);
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::ShardItem;

    #[test]
    fn job_events_ask_the_failover_actor_for_what_they_may_have_changed() {
        let me = InstanceId::parse("10.0.0.1@-@1").unwrap();
        let other = InstanceId::parse("10.0.0.2@-@1").unwrap();
        let item = ShardItem(3);
        use NodeEventKind::{Created, DataChanged, Deleted};
        // (node, kind, expected reaction)
        let cases: Vec<(JobNode, NodeEventKind, Reaction)> = vec![
            (
                JobNode::LeaderElectionInstance,
                Created,
                Reaction::CheckSetting,
            ),
            (
                JobNode::Instance(other.clone()),
                Deleted,
                Reaction::Crashed(other.clone()),
            ),
            (JobNode::Instance(me.clone()), Deleted, Reaction::Nothing),
            (JobNode::Instance(me.clone()), Created, Reaction::Registered),
            (JobNode::Instance(other.clone()), Created, Reaction::Nothing),
            (JobNode::LeaderFailoverItem(item), Created, Reaction::Claim),
            // Another instance's claim landing: a claim that lost the race tries again.
            (JobNode::LeaderFailoverItem(item), Deleted, Reaction::Claim),
            (JobNode::ShardingRunning(item), Deleted, Reaction::Claim),
            (JobNode::ShardingRunning(item), Created, Reaction::Nothing),
            (JobNode::ShardingFailover(item), Deleted, Reaction::Claim),
            (JobNode::ShardingFailovering(item), Deleted, Reaction::Claim),
            (JobNode::Config, DataChanged, Reaction::Nothing),
        ];
        for (node, kind, want) in cases {
            let ev = JobEvent {
                job: JobName::new("orders").unwrap(),
                node: node.clone(),
                kind,
            };
            assert_eq!(reaction(&ev, &me), want, "{node:?} {kind:?}");
        }
    }
}
