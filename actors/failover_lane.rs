//! The work of one job's lane task in the FailoverActor: clearing when failover is off, marking
//! the runs of vanished instances, asking the executor whether it is idle, and the claim, each
//! decided by [`crate::decide::failover`] and [`crate::decide::failover_claim`]. It runs in a task
//! of its own per job, so nothing here waits in the actor's handler.

use std::collections::BTreeSet;
use std::time::Duration;

use ractor::ActorRef;

use crate::decide::answer::Answer;
use crate::decide::failover;
use crate::decide::failover_claim::{self, ClaimEnd, MarkEnd};
use crate::decide::lifecycle::Input;
use crate::events::EngineEvent;
use crate::job::fencing::{FencingToken, OwnershipZxids};
use crate::paths::JobNode;
use crate::registry::mirror::Mirror;
use crate::registry::Op;
use crate::types::{InstanceId, JobName, ShardItem};
use crate::view::JobView;

use super::context::SessionCtx;
use super::lanes::Merge;
use super::mail::ExecutorMsg;
use super::writes::apply_each_tolerant;

/// How long the executor may take to say whether it is idle (its mailbox may hold a fire).
const IDLE_QUERY_TIMEOUT: Duration = Duration::from_secs(5);

/// One lane task of `job`: clear, mark, claim, in that order.
pub(super) async fn handle_job(
    ctx: &SessionCtx,
    executor: Option<&ActorRef<ExecutorMsg>>,
    job: &JobName,
    request: Request,
) {
    if request.check {
        clear_when_off(ctx, job).await;
    }
    for crashed in &request.crashed {
        let view = JobView::read(ctx.mirror(), job);
        let marks = failover::marks_for_crashed(&view, job, crashed);
        mark(ctx, job, marks, "instance vanished while running").await;
    }
    if request.orphans {
        let view = JobView::read(ctx.mirror(), job);
        let marks = failover::marks_for_orphans(&view, job);
        mark(ctx, job, marks, "runs of instances that are gone").await;
    }
    if request.claim {
        claim(ctx, executor, job).await;
    }
}

/// Clears the failover records when the job's failover is off and this instance leads.
async fn clear_when_off(ctx: &SessionCtx, job: &JobName) {
    let view = JobView::read(ctx.mirror(), job);
    let ops = failover_claim::clear_when_off(&view, job, ctx.me());
    if !ops.is_empty() {
        tracing::info!(%job, count = ops.len(), "failover turned off: clearing failover records");
        if let Err(e) = apply_each_tolerant(&*ctx.registry, &ops).await {
            tracing::warn!(%job, error = %e, "clearing failover records failed");
        }
    }
}

/// Creates marks, each with its guarded multi-op; each answer says whether to go on
/// ([`failover_claim::mark_answered`]).
async fn mark(ctx: &SessionCtx, job: &JobName, marks: Vec<Vec<Op>>, why: &str) {
    if marks.is_empty() {
        return;
    }
    tracing::info!(%job, count = marks.len(), why, "marking items for failover");
    // Java instances never create `leader/failover/items` at registration; we do not either.
    let parent = JobNode::LeaderFailoverItems.to_path(job);
    if let Err(e) = ctx.registry.ensure_path(&parent).await {
        tracing::warn!(%job, error = %e, "marking items for failover failed");
        return;
    }
    for ops in marks {
        let answer = Answer::of(&ctx.registry.multi(&ops).await);
        match failover_claim::mark_answered(&answer) {
            MarkEnd::Marked => {}
            MarkEnd::NotNeeded => {
                tracing::debug!(%job, answer = %answer.describe(), "mark not needed any more");
            }
            MarkEnd::Stop(error) => {
                tracing::warn!(%job, %error, "marking items for failover failed");
                return;
            }
        }
    }
}

/// Whether the job's executor here has no run in progress. Asked, not tracked, so that a
/// restarted executor or FailoverActor never leaves a stale answer behind; asked in the job's
/// lane, so a busy executor delays no other job.
async fn executor_idle(executor: Option<&ActorRef<ExecutorMsg>>) -> bool {
    let Some(exec) = executor else {
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
async fn claim(ctx: &SessionCtx, executor: Option<&ActorRef<ExecutorMsg>>, job: &JobName) {
    let Some(config) = ctx.config(job).filter(|c| c.config().failover) else {
        return;
    };
    if !has_marks(ctx.mirror(), job) {
        return;
    }
    let me = ctx.me();
    let label = config.config().label.as_deref();
    let share = failover_claim::eligible_share(&JobView::read(ctx.mirror(), job), me, label);
    let Some(share) = share else {
        return;
    };
    if !executor_idle(executor).await {
        return;
    }
    // Read again: the marks may have moved while the executor was asked.
    let view = JobView::read(ctx.mirror(), job);
    let Some((items, ops)) = failover::claim(&view, job, me, share) else {
        return;
    };
    // Read before the claim: once applied, the mirror may show the marks gone before the
    // claim's own nodes.
    let fences = items
        .iter()
        .map(|i| (*i, OwnershipZxids::read(ctx.mirror(), job, *i).token()))
        .collect();
    match failover_claim::claim_answered(&Answer::of(&ctx.apply(&ops).await)) {
        ClaimEnd::HandOver => hand_over(ctx, executor, job, items, fences),
        ClaimEnd::LostRace => {
            tracing::debug!(%job, ?items, "lost a failover claim race; waiting for the winner's claim to show");
        }
        ClaimEnd::Failed(error) => {
            tracing::warn!(%job, %error, "claiming failover items failed")
        }
    }
}

fn hand_over(
    ctx: &SessionCtx,
    executor: Option<&ActorRef<ExecutorMsg>>,
    job: &JobName,
    items: Vec<ShardItem>,
    fences: Vec<(ShardItem, FencingToken)>,
) {
    tracing::info!(%job, ?items, instance = %ctx.me(), "claimed items for failover");
    ctx.node.events.emit(EngineEvent::FailoverClaimed {
        job: job.clone(),
        items: items.clone(),
    });
    crate::metrics::failover_claimed(ctx.me(), job, items.len());
    match executor {
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

/// What a job's lane task does; requests merge by union.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Request {
    /// Clear the failover records if failover is off and this instance leads.
    pub(super) check: bool,
    /// Instances that vanished: mark their runs.
    pub(super) crashed: BTreeSet<InstanceId>,
    /// Mark the runs of instances absent from `instances/`.
    pub(super) orphans: bool,
    /// Claim what is marked.
    pub(super) claim: bool,
}

impl Request {
    pub(super) fn everything() -> Self {
        Self {
            check: true,
            orphans: true,
            claim: true,
            ..Self::default()
        }
    }
}

impl Merge for Request {
    fn merge(&mut self, later: Self) {
        self.check |= later.check;
        self.crashed.extend(later.crashed);
        self.orphans |= later.orphans;
        self.claim |= later.claim;
    }
}

pub(super) fn has_marks(mirror: &Mirror, job: &JobName) -> bool {
    mirror.has_children(&JobNode::LeaderFailoverItems.to_path(job))
}
