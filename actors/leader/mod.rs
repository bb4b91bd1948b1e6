//! LeaderActor: per job, stands for leadership when nobody leads, steps down when its server is
//! disabled, and while leading raises the resharding flag when instances come or go, a server is
//! enabled or disabled, or the periodic reconcile finds the assignment stale.
//!
//! Here the actor's protocol, state and handlers, the owner check and the job's lane task; in
//! `evaluate.rs` one evaluation of a job (election, resharding flags, reconcile), run in that task; in
//! `reaction.rs` what each job event asks of the actor.

mod evaluate;
mod reaction;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use dashmap::DashMap;
use ractor::ActorRef;

use crate::decide::drift::Seen;
use crate::decide::failover_claim;
use crate::decide::membership::MembershipMemo;
use crate::paths::JobNode;
use crate::registry::{CreateMode, Op};
use crate::types::JobName;

use super::context::SessionCtx;
use super::lanes::{self, Lanes, Merge};
use super::mail::{LeaderMsg, Memory, ShardingMsg};

use evaluate::evaluate;
pub(super) use reaction::{reaction, Reaction};

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
            // A panic is reported; the job is evaluated again once the slot is free.
            let retry = LeaderMsg::Evaluate;
            let memory = lanes::or_retry("leader", &myself, &job, work, retry, Memory::Keep).await;
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

sync_actor!(LeaderActor: LeaderMsg, LeaderState, SessionCtx);

impl LeaderState {
    /// The state of a new LeaderActor, its reconcile tick started.
    fn started(myself: &ActorRef<LeaderMsg>, ctx: SessionCtx) -> Self {
        myself.send_interval(RECONCILE_TICK, || LeaderMsg::ReconcileTick);
        Self {
            ctx,
            last_reconcile: HashMap::new(),
            lanes: Lanes::default(),
            flagged: HashMap::new(),
            memos: Arc::default(),
            sharding: None,
        }
    }

    /// One message, handled without waiting: an evaluation runs in its job's lane.
    fn handle(&mut self, myself: &ActorRef<LeaderMsg>, msg: LeaderMsg) {
        match msg {
            LeaderMsg::Job(ev) => match reaction(&ev.node, ev.kind) {
                Reaction::Nothing => {}
                Reaction::CheckOwner(item) => self.check_owner(&ev.job, item),
                Reaction::Evaluate(evaluation) => self.evaluate(myself, &ev.job, evaluation),
            },
            LeaderMsg::Resynced => {
                let jobs: Vec<JobName> = self.ctx.configs.iter().map(|e| e.key().clone()).collect();
                for job in jobs {
                    self.evaluate(myself, &job, RECONCILE);
                }
            }
            LeaderMsg::Evaluate(job) => self.evaluate(myself, &job, RECONCILE),
            LeaderMsg::Sharding(sharding) => self.sharding = Some(sharding),
            LeaderMsg::Evaluated(job, memory) => {
                match memory {
                    Memory::Keep => {}
                    Memory::Set(seen) => {
                        self.flagged.insert(job.clone(), seen);
                    }
                    Memory::Forget => {
                        self.flagged.remove(&job);
                    }
                }
                if let Some((job, next)) = self.lanes.done(&job) {
                    self.spawn_evaluation(myself, job, next);
                }
            }
            LeaderMsg::ReconcileTick => {
                let now = self.ctx.node.clock.now();
                let due: Vec<JobName> = self
                    .ctx
                    .configs
                    .iter()
                    .filter(|e| {
                        let minutes = e.value().config().reconcile_interval_minutes;
                        minutes > 0
                            && self.last_reconcile.get(e.key()).is_none_or(|last| {
                                now - *last >= chrono::Duration::minutes(minutes.into())
                            })
                    })
                    .map(|e| e.key().clone())
                    .collect();
                for job in due {
                    self.last_reconcile.insert(job.clone(), now);
                    self.evaluate(myself, &job, RECONCILE);
                }
            }
        }
    }
}
