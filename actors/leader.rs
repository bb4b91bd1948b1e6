//! LeaderActor: per job, stands for leadership when nobody leads, steps down when its server is
//! disabled, and while leading raises the resharding flag when instances come or go, a server is
//! enabled or disabled, or the periodic reconcile finds the assignment stale.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use dashmap::DashMap;
use ractor::{Actor, ActorProcessingErr, ActorRef};

use crate::decide::answer::Answer;
use crate::decide::drift::{self, Drift, Seen};
use crate::decide::election::{self, ElectionDecision, Stood};
use crate::decide::failover_claim;
use crate::decide::membership::{Look, MembershipMemo};
use crate::decide::{reconcile, resharding};
use crate::events::EngineEvent;
use crate::paths::JobNode;
use crate::registry::NodeEventKind;
use crate::registry::{CreateMode, Op};
use crate::types::JobName;
use crate::types::ShardItem;
use crate::view::JobView;

use super::context::SessionCtx;
use super::lanes::{self, Lanes, Merge};
use super::mail::{LeaderMsg, Memory, ShardingMsg};
use super::writes::apply_each_tolerant;

/// How often the leader looks whether a job's reconcile interval has passed.
const RECONCILE_TICK: Duration = Duration::from_secs(60);

/// A full look at a job: election, stale assignments, records of dead owners.
const RECONCILE: Evaluation = Evaluation {
    instances_changed: false,
    reconcile: true,
};

/// The LeaderActor.
#[derive(Debug)]
pub(crate) struct LeaderActor;

/// State of the LeaderActor.
#[derive(Debug)]
pub(crate) struct LeaderState {
    ctx: SessionCtx,
    last_reconcile: HashMap<JobName, DateTime<Utc>>,
    lanes: Lanes<Evaluation>,
    /// Plans this instance flagged as stale while not leading (see [`drift`]).
    flagged: HashMap<JobName, Seen>,
    /// Per job, the instances its plan accounts for (read and written by its evaluation only).
    memos: Arc<DashMap<JobName, MembershipMemo>>,
    /// Where a flag this leader raised goes at once (`None` until handed down).
    sharding: Option<ActorRef<ShardingMsg>>,
}

/// A job's single nodes, read from the mirror (the owner check reads a handful, not the job).
struct MirrorNodes<'a> {
    mirror: &'a crate::registry::mirror::Mirror,
    job: &'a JobName,
}

impl failover_claim::NodeData for MirrorNodes<'_> {
    fn data(&self, node: &JobNode) -> Option<Arc<[u8]>> {
        self.mirror.data(&node.to_path(self.job))
    }
}

impl LeaderState {
    /// An item's owner changed: when this instance leads and the owner cannot run it (written by
    /// hand or by a stale tool), say so and reshard rather than wait for the reconcile tick.
    fn check_owner(&mut self, job: &JobName, item: crate::types::ShardItem) {
        let label = self.ctx.config(job).and_then(|c| c.config().label.clone());
        let nodes = MirrorNodes {
            mirror: self.ctx.mirror(),
            job,
        };
        let me = self.ctx.me();
        let Some(owner) = failover_claim::unavailable_owner(&nodes, me, item, label.as_deref())
        else {
            return;
        };
        let node = |n: JobNode| n.to_path(job);
        let path = node(JobNode::ShardingInstance(item));
        tracing::warn!(%job, %item, owner = ?owner, %path,
            "an item is assigned to an instance that is not available: resharding");
        let op = Op::create(
            node(JobNode::LeaderShardingNecessary),
            "",
            CreateMode::Persistent,
        );
        // Off the handler: the flag's event brings the reshard.
        let (ctx, job) = (self.ctx.clone(), job.clone());
        tokio::spawn(async move { ctx.raise_flag(&job, op).await });
    }

    /// Starts an evaluation of `job` in its lane, or merges it into the one that follows the
    /// evaluation in flight.
    fn evaluate(&mut self, myself: &ActorRef<LeaderMsg>, job: &JobName, request: Evaluation) {
        if let Some(request) = self.lanes.admit(job, request) {
            self.spawn_evaluation(myself, job.clone(), request);
        }
    }

    fn spawn_evaluation(&self, myself: &ActorRef<LeaderMsg>, job: JobName, request: Evaluation) {
        let ctx = self.ctx.clone();
        let myself = myself.clone();
        let flagged = self.flagged.get(&job).cloned();
        let memos = self.memos.clone();
        let sharding = self.sharding.clone();
        tokio::spawn(async move {
            let work = evaluate(&ctx, &memos, &job, request, flagged, sharding.as_ref());
            let memory = match lanes::guarded("leader", &job, work).await {
                Ok(memory) => memory,
                Err(_) => {
                    // Reported (logged, counted); evaluated again once the slot is free.
                    let retry = job.clone();
                    myself.send_after(lanes::PANIC_RETRY, move || LeaderMsg::Evaluate(retry));
                    Memory::Keep
                }
            };
            // The actor may be gone (session ending): nobody is left to tell.
            let _ = myself.send_message(LeaderMsg::Evaluated(job, memory));
        });
    }
}

/// What an evaluation looks at; requests for a job merge by "or".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Evaluation {
    instances_changed: bool,
    reconcile: bool,
}

impl Merge for Evaluation {
    fn merge(&mut self, later: Self) {
        self.instances_changed |= later.instances_changed;
        self.reconcile |= later.reconcile;
    }
}

/// Election first; then, while leading, flags resharding when instances changed (an event, or a
/// change the memo finds) or when the reconcile check finds a reason. Not leading, a reconcile
/// looks whether the committed plan left an instance out ([`drift::after_commit`]); `flagged` is
/// the plan flagged so before.
async fn evaluate(
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
            if let Err(e) = apply_each_tolerant(&*ctx.registry, &stale).await {
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

/// What a job event asks of the LeaderActor. The SessionActor sends it only the events that ask
/// something.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Reaction {
    Nothing,
    /// An owner node changed: whether its item's owner is still live.
    CheckOwner(ShardItem),
    /// Membership, the election, the config or a commit changed: evaluate the job.
    Evaluate(Evaluation),
}

pub(super) fn reaction(node: &JobNode, kind: NodeEventKind) -> Reaction {
    use NodeEventKind::{Created, DataChanged, Deleted};
    if let JobNode::ShardingInstance(item) = node {
        return Reaction::CheckOwner(*item);
    }
    let membership = matches!(
        (node, kind),
        (JobNode::Instance(_), Created | Deleted) | (JobNode::Server(_), _)
    );
    let election = matches!(node, JobNode::LeaderElectionInstance | JobNode::Config);
    // A commit computed before the latest membership change may have just landed: look again
    // whether the assignment fits the instances now available.
    let committed = matches!(
        (node, kind),
        (
            JobNode::LeaderShardingNecessary | JobNode::LeaderShardingProcessing,
            Deleted
        )
    );
    // A new leader (this instance, maybe) looks whether the assignment is stale.
    let elected = matches!(
        (node, kind),
        (JobNode::LeaderElectionInstance, Created | DataChanged)
    );
    if membership || election || committed {
        Reaction::Evaluate(Evaluation {
            instances_changed: membership,
            reconcile: committed || elected,
        })
    } else {
        Reaction::Nothing
    }
}

impl Actor for LeaderActor {
    type Msg = LeaderMsg;
    type State = LeaderState;
    type Arguments = SessionCtx;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        ctx: SessionCtx,
    ) -> Result<Self::State, ActorProcessingErr> {
        myself.send_interval(RECONCILE_TICK, || LeaderMsg::ReconcileTick);
        Ok(LeaderState {
            ctx,
            last_reconcile: HashMap::new(),
            lanes: Lanes::default(),
            flagged: HashMap::new(),
            memos: Arc::default(),
            sharding: None,
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            LeaderMsg::Job(ev) => match reaction(&ev.node, ev.kind) {
                Reaction::Nothing => {}
                Reaction::CheckOwner(item) => state.check_owner(&ev.job, item),
                Reaction::Evaluate(evaluation) => state.evaluate(&myself, &ev.job, evaluation),
            },
            LeaderMsg::Resynced => {
                let jobs: Vec<JobName> =
                    state.ctx.configs.iter().map(|e| e.key().clone()).collect();
                for job in jobs {
                    state.evaluate(&myself, &job, RECONCILE);
                }
            }
            LeaderMsg::Evaluate(job) => state.evaluate(&myself, &job, RECONCILE),
            LeaderMsg::Sharding(sharding) => state.sharding = Some(sharding),
            LeaderMsg::Evaluated(job, memory) => {
                match memory {
                    Memory::Keep => {}
                    Memory::Set(seen) => {
                        state.flagged.insert(job.clone(), seen);
                    }
                    Memory::Forget => {
                        state.flagged.remove(&job);
                    }
                }
                if let Some((job, next)) = state.lanes.done(&job) {
                    state.spawn_evaluation(&myself, job, next);
                }
            }
            LeaderMsg::ReconcileTick => {
                let now = state.ctx.node.clock.now();
                let due: Vec<JobName> = state
                    .ctx
                    .configs
                    .iter()
                    .filter(|e| {
                        let minutes = e.value().config().reconcile_interval_minutes;
                        minutes > 0
                            && state.last_reconcile.get(e.key()).is_none_or(|last| {
                                now - *last >= chrono::Duration::minutes(minutes.into())
                            })
                    })
                    .map(|e| e.key().clone())
                    .collect();
                for job in due {
                    state.last_reconcile.insert(job.clone(), now);
                    state.evaluate(&myself, &job, RECONCILE);
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::InstanceId;

    #[test]
    fn job_events_ask_the_leader_for_an_owner_check_an_evaluation_or_nothing() {
        use NodeEventKind::{Created, DataChanged, Deleted};
        let id = InstanceId::parse("10.0.0.2@-@1").unwrap();
        let evaluate = |instances_changed, reconcile| {
            Reaction::Evaluate(Evaluation {
                instances_changed,
                reconcile,
            })
        };
        let cases = [
            (
                JobNode::ShardingInstance(ShardItem(2)),
                DataChanged,
                Reaction::CheckOwner(ShardItem(2)),
            ),
            (
                JobNode::Instance(id.clone()),
                Deleted,
                evaluate(true, false),
            ),
            (
                JobNode::Instance(id.clone()),
                DataChanged,
                Reaction::Nothing,
            ),
            (
                JobNode::Server("10.0.0.2".into()),
                DataChanged,
                evaluate(true, false),
            ),
            (
                JobNode::LeaderElectionInstance,
                Created,
                evaluate(false, true),
            ),
            (
                JobNode::LeaderElectionInstance,
                Deleted,
                evaluate(false, false),
            ),
            (JobNode::Config, DataChanged, evaluate(false, false)),
            (
                JobNode::LeaderShardingProcessing,
                Deleted,
                evaluate(false, true),
            ),
            (JobNode::LeaderShardingNecessary, Created, Reaction::Nothing),
            (
                JobNode::ShardingRunning(ShardItem(0)),
                Created,
                Reaction::Nothing,
            ),
            (
                JobNode::LeaderFailoverItem(ShardItem(0)),
                Created,
                Reaction::Nothing,
            ),
        ];
        for (node, kind, want) in cases {
            assert_eq!(reaction(&node, kind), want, "{node:?} {kind:?}");
        }
    }
}
