//! One sharding step of a job, run in the job's lane task: decided from the mirror (and, for a
//! strategy that balances over the namespace, the items held elsewhere), then applied, a commit
//! driven by its step machine; its outcome is the actor's.

use std::collections::BTreeMap;

use crate::actors::context::SessionCtx;
use crate::actors::mail::ShardingOutcome as Outcome;
use crate::decide::answer::Answer;
use crate::decide::commit::{Commit, CommitEnd, CommitStep};
use crate::decide::resharding::{self, ShardingStep};
use crate::events::EngineEvent;
use crate::types::{InstanceId, JobName};
use crate::view::JobView;

/// Decides one sharding step of `job` from the mirror and `held`, the items held elsewhere for a
/// strategy that balances over the namespace; `None` when the job or its strategy is unknown.
pub(super) fn decide(
    ctx: &SessionCtx,
    job: &JobName,
    held: &BTreeMap<InstanceId, usize>,
    flag_raised: bool,
) -> Option<ShardingStep> {
    let config = ctx.config(job)?;
    let strategy = match ctx
        .node
        .strategies
        .get(config.config().job_sharding_strategy_type.as_deref())
    {
        Ok(s) => s,
        Err(e) => {
            tracing::error!(%job, error = %e, "cannot shard");
            return None;
        }
    };
    let mut view = JobView::read(ctx.mirror(), job);
    // Raised by this leader a moment ago: only this leader's commit takes it down again.
    view.sharding_necessary |= flag_raised;
    let i_lead = view.leader.as_ref() == Some(ctx.me());
    let rules = resharding::Rules::of(&config);
    let facts = resharding::Facts {
        now_millis: ctx.node.clock.now().timestamp_millis(),
        held,
    };
    Some(resharding::step(
        &view, job, rules, &*strategy, facts, i_lead,
    ))
}

/// Applies one sharding step of `job`: a commit is driven by its step machine
/// ([`Commit`]), each write's answer handed back to it; this function decides nothing.
pub(super) async fn apply(ctx: &SessionCtx, job: &JobName, step: ShardingStep) -> Outcome {
    match step {
        ShardingStep::Nothing => Outcome::Done,
        ShardingStep::WaitForRunningItems(items) => {
            tracing::debug!(%job, ?items, "sharding waits for running items");
            Outcome::Waits
        }
        ShardingStep::Commit { processing, commit } => {
            let (mut machine, mut next) = Commit::start(processing, commit);
            let end = loop {
                next = match next {
                    CommitStep::Write(ops) => machine.written(Answer::of(&ctx.apply(&ops).await)),
                    CommitStep::WriteAfter(pause, ops) => {
                        // In the lane's task, not in a handler.
                        tokio::time::sleep(pause).await;
                        machine.written(Answer::of(&ctx.apply(&ops).await))
                    }
                    CommitStep::Ended(end) => break end,
                };
            };
            committed(ctx, job, end)
        }
    }
}

/// Reports how a commit ended; the outcome for the actor.
fn committed(ctx: &SessionCtx, job: &JobName, end: CommitEnd) -> Outcome {
    match end {
        CommitEnd::Committed(assignment) => {
            tracing::info!(%job, "sharding committed");
            ctx.node.events.emit(EngineEvent::ShardingChanged {
                job: job.clone(),
                assignment,
            });
            crate::metrics::resharding_committed(ctx.me(), job);
            Outcome::Done
        }
        CommitEnd::NotMarked(error) => {
            tracing::warn!(%job, %error, "cannot mark sharding as processing");
            Outcome::Done
        }
        CommitEnd::Failed(error) => {
            // The mirror was behind the registry: retried on the next event, fire or retry.
            tracing::debug!(%job, %error, "sharding commit failed; will retry");
            Outcome::Failed(error)
        }
        CommitEnd::UndoFailed { commit, undo } => {
            tracing::warn!(%job, error = %commit, undo_error = %undo, "sharding commit failed and leader/sharding/processing could not be removed; the retry's commit removes it");
            Outcome::Failed(commit)
        }
    }
}
