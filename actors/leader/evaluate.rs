//! One evaluation of a job, in the job's lane task: the election first; then, while leading, the
//! resharding flag when instances changed or the reconcile finds a reason, and the records of dead
//! owners cleared; not leading, a follower's look at the committed plan. Its answer is the memory
//! of a flagged plan, for the actor.

use dashmap::DashMap;
use ractor::ActorRef;

use crate::actors::context::SessionCtx;
use crate::actors::mail::{Memory, ShardingMsg};
use crate::actors::writes::apply_writes_tolerant;
use crate::decide::answer::Answer;
use crate::decide::drift::{self, Drift, Seen};
use crate::decide::election::{self, ElectionDecision, Stood};
use crate::decide::membership::{Look, MembershipMemo};
use crate::decide::{reconcile, resharding};
use crate::events::EngineEvent;
use crate::types::JobName;
use crate::view::JobView;

use super::Evaluation;

/// Election first; then, while leading, flags resharding when instances changed (an event, or a
/// change the memo finds) or when the reconcile check finds a reason. Not leading, a reconcile
/// looks whether the committed plan left an instance out ([`drift::after_commit`]); `flagged` is
/// the plan flagged so before.
pub(super) async fn evaluate(
    ctx: &SessionCtx,
    memos: &DashMap<JobName, MembershipMemo>,
    job: &JobName,
    request: Evaluation,
    flagged: Option<Seen>,
    sharding: Option<&ActorRef<ShardingMsg>>,
) -> Memory {
    let Evaluation {
        instances_changed,
        reconcile,
    } = request;
    let Some(config) = ctx.config(job) else {
        return Memory::Keep;
    };
    let me = ctx.me().clone();
    let view = JobView::read(ctx.mirror(), job);
    let mut leading = view.leader.as_ref() == Some(&me);
    match election::decide(&view, job, &me) {
        ElectionDecision::Nothing => {}
        ElectionDecision::Stand(op) => {
            match election::stood(&Answer::of(&ctx.apply(&[op]).await)) {
                Stood::Won => {
                    tracing::info!(%job, instance = %me, "elected leader");
                    ctx.node
                        .events
                        .emit(EngineEvent::LeadershipGained { job: job.clone() });
                    crate::metrics::election_won(&me, job);
                    leading = true;
                }
                Stood::Lost => {}
                Stood::Failed(why) => {
                    tracing::warn!(%job, error = %why, "standing for leadership failed")
                }
            }
        }
        ElectionDecision::Abdicate(op) => {
            tracing::info!(%job, "server disabled: stepping down as leader");
            ctx.node
                .events
                .emit(EngineEvent::LeadershipLost { job: job.clone() });
            let answer = Answer::of(&ctx.apply(&[op]).await);
            if let Some(why) = election::abdication_failed(&answer) {
                tracing::warn!(%job, error = %why, "stepping down failed");
            }
            return Memory::Keep;
        }
    }
    let look = Look::of(&view, leading, instances_changed);
    let (instances_changed, memo_before) = {
        let mut memo = memos.entry(job.clone()).or_default();
        let before = memo.clone();
        (memo.changed(&look), before)
    };
    if !leading {
        return if reconcile {
            follow(ctx, job, &view, resharding::Rules::of(&config), flagged).await
        } else {
            Memory::Keep
        };
    }
    let rules = resharding::Rules::of(&config);
    let reason = if instances_changed {
        resharding::membership_reason(&view, rules)
    } else if reconcile || view.leader.as_ref() != Some(&me) {
        // Just elected, or the periodic check: look for a stale assignment.
        resharding::reconcile_reason(&view, rules)
    } else {
        None
    };
    if reconcile {
        let stale = reconcile::stale_records(&view, job, config.config().failover);
        if !stale.is_empty() {
            tracing::info!(%job, count = stale.len(), "clearing records of dead owners");
            if let Err(e) = apply_writes_tolerant(&*ctx.registry, &stale).await {
                tracing::warn!(%job, error = %e, "clearing records of dead owners failed");
            }
        }
    }
    if let Some(reason) = reason {
        if let Some(op) = resharding::flag(&view, job) {
            tracing::info!(%job, %reason, "resharding needed");
            if !ctx.raise_flag(job, op).await {
                // Not accounted for: the next evaluation sees the change again.
                memos.insert(job.clone(), memo_before);
            } else if let Some(sharding) = sharding {
                // Sharding starts now rather than at the flag's event, which comes after a read.
                let _ = sharding.send_message(ShardingMsg::FlagRaised(job.clone()));
            }
        }
    }
    Memory::Forget
}

/// A follower's look at a committed plan: raises the flag once for a plan that left an instance out.
async fn follow(
    ctx: &SessionCtx,
    job: &JobName,
    view: &JobView,
    rules: resharding::Rules<'_>,
    flagged: Option<Seen>,
) -> Memory {
    match drift::after_commit(view, job, rules, flagged.as_ref()) {
        Drift::Fits => Memory::Forget,
        Drift::LeaderDisagrees { reason } => {
            tracing::warn!(%job, %reason, leader = ?view.leader,
                "the leader committed again a plan this instance flagged as stale; leaving it");
            Memory::Keep
        }
        Drift::Flag { op, reason, seen } => {
            tracing::info!(%job, %reason, leader = ?view.leader,
                "the committed plan does not fit the instances: resharding needed");
            if ctx.raise_flag(job, op).await {
                Memory::Set(seen)
            } else {
                Memory::Keep
            }
        }
    }
}
