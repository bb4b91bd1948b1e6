//! ShardingActor: when a fire finds a job's resharding flag up and this instance leads, it waits
//! (as state, not by blocking) for the job's running items to end, then marks `processing` and
//! commits the whole plan in one multi-op. Followers wait for the commit as a mirror event.

use std::collections::{BTreeMap, BTreeSet};

use ractor::{Actor, ActorProcessingErr, ActorRef};

use crate::decide::resharding::{self, ShardingStep};
use crate::events::EngineEvent;
use crate::paths::JobNode;
use crate::registry::NodeEventKind;
use crate::registry::Op;
use crate::types::JobName;
use crate::types::{InstanceId, ShardItem};
use crate::view::{namespace_load, owners_in_mirror, JobView};

use super::context::{JobEvent, SessionCtx};
use super::lanes::{self, Lanes};

/// The most operations one multi-op carries. ZooKeeper refuses a request past `jute.maxbuffer`
/// (1 MiB by default) and drops the connection; a plan for a huge `shardingTotalCount` is therefore
/// committed in chunks. Followers see no partial plan: `processing` stays up until the last chunk,
/// which also removes `necessary`, and a leader that dies mid-way leaves `necessary` up for the next.
const MAX_OPS_PER_MULTI: usize = 1000;

async fn apply_in_chunks(
    ctx: &SessionCtx,
    ops: &[Op],
) -> Result<(), crate::registry::RegistryError> {
    for chunk in ops.chunks(MAX_OPS_PER_MULTI) {
        ctx.apply(chunk).await?;
    }
    Ok(())
}

/// The owners a commit writes, item by item.
fn assignment_of(commit: &[Op]) -> Vec<(ShardItem, InstanceId)> {
    let mut out: Vec<(ShardItem, InstanceId)> = commit
        .iter()
        .filter_map(|op| {
            let (path, data) = match op {
                Op::Create { path, data, .. } | Op::Set { path, data, .. } => (path, data),
                _ => return None,
            };
            match JobNode::parse(path) {
                Ok((_, JobNode::ShardingInstance(item))) => {
                    InstanceId::parse(String::from_utf8_lossy(data).into_owned())
                        .ok()
                        .map(|i| (item, i))
                }
                _ => None,
            }
        })
        .collect();
    out.sort();
    out
}

/// The ShardingActor.
#[derive(Debug)]
pub(crate) struct ShardingActor;

/// Messages of the ShardingActor.
#[derive(Debug)]
pub(crate) enum ShardingMsg {
    /// A fire found the job's resharding flag up: shard it if this instance leads.
    ShardIfNecessary(JobName),
    /// A node of a job changed.
    Job(JobEvent),
    /// The mirror was re-listed: retry every waiting job.
    Resynced,
    /// Retry a waiting job (after a burst of `running` deletions).
    Retry(JobName),
    /// A sharding step of `job` ended; `waiting`: it waits for running items or a retry.
    Sharded {
        /// The job.
        job: JobName,
        /// Whether it waits.
        waiting: bool,
    },
}

/// State of the ShardingActor.
#[derive(Debug)]
pub(crate) struct ShardingState {
    ctx: SessionCtx,
    /// Jobs whose sharding waits for running items to end.
    waiting: BTreeSet<JobName>,
    /// Waiting jobs with a retry already on its way.
    retrying: BTreeSet<JobName>,
    /// Jobs with a sharding step in flight.
    lanes: Lanes<()>,
    /// Plans of NAMESPACE_BALANCE jobs this leader committed and the mirror may not show yet (the
    /// owner of each item), with when they were decided: the next such decision counts them, so
    /// that jobs sharded one after the other do not all pick the instance that looked idle.
    recent: BTreeMap<JobName, Vec<InstanceId>>,
    recent_at: BTreeMap<JobName, tokio::time::Instant>,
}

/// How long a recent plan stands in for the mirror at most (a commit that failed, or a job that
/// another leader has resharded since).
const RECENT_FOR: std::time::Duration = std::time::Duration::from_secs(30);

/// How long a burst of `running` deletions (one per item at the end of a run) is gathered before
/// a waiting job is looked at again: one check of the whole job instead of one per item.
const RETRY_AFTER: std::time::Duration = std::time::Duration::from_millis(5);

impl ShardingState {
    /// Starts sharding `job` in its lane, or once more after the run in flight.
    fn shard(&mut self, myself: &ActorRef<ShardingMsg>, job: &JobName) {
        if self.lanes.admit(job, ()).is_some() {
            self.spawn_shard(myself, job.clone());
        }
    }

    fn spawn_shard(&mut self, myself: &ActorRef<ShardingMsg>, job: JobName) {
        let ctx = self.ctx.clone();
        let myself = myself.clone();
        if balanced(&ctx, &job) {
            // Decided here, one job at a time, against the plans committed just before.
            self.forget_caught_up();
            let step = decide(&ctx, &job, &self.recent);
            if let Some(ShardingStep::Commit { commit, .. }) = &step {
                let owners = assignment_of(commit).into_iter().map(|(_, o)| o).collect();
                self.recent.insert(job.clone(), owners);
                self.recent_at
                    .insert(job.clone(), tokio::time::Instant::now());
            }
            tokio::spawn(async move {
                let waiting = match step {
                    Some(step) => apply(&ctx, &job, step).await,
                    None => false,
                };
                let _ = myself.send_message(ShardingMsg::Sharded { job, waiting });
            });
            return;
        }
        tokio::spawn(async move {
            let work = async {
                match decide(&ctx, &job, &BTreeMap::new()) {
                    Some(step) => apply(&ctx, &job, step).await,
                    None => false,
                }
            };
            let waiting = match lanes::guarded("sharding", &job, work).await {
                Ok(waiting) => waiting,
                Err(_) => {
                    // Reported (logged, counted); the job waits and is tried again.
                    let retry = job.clone();
                    myself.send_after(lanes::PANIC_RETRY, move || ShardingMsg::Retry(retry));
                    true
                }
            };
            // The actor may be gone (session ending): nobody is left to tell.
            let _ = myself.send_message(ShardingMsg::Sharded { job, waiting });
        });
    }

    /// Drops the recent plans the mirror shows by now, or that are too old to trust.
    fn forget_caught_up(&mut self) {
        let mirror = self.ctx.mirror();
        let now = tokio::time::Instant::now();
        let stale: Vec<JobName> = self
            .recent
            .iter()
            .filter(|(job, owners)| {
                self.recent_at
                    .get(*job)
                    .is_none_or(|at| now.duration_since(*at) > RECENT_FOR)
                    || owners_in_mirror(mirror, job) == **owners
            })
            .map(|(job, _)| job.clone())
            .collect();
        for job in stale {
            self.recent.remove(&job);
            self.recent_at.remove(&job);
        }
    }
}

/// Whether `job`'s strategy balances over the namespace (its decisions are then serialized).
fn balanced(ctx: &SessionCtx, job: &JobName) -> bool {
    ctx.config(job).is_some_and(|config| {
        ctx.node
            .strategies
            .get(config.config().job_sharding_strategy_type.as_deref())
            .is_ok_and(|s| s.uses_namespace_load())
    })
}

/// Decides one sharding step of `job` from the mirror (and `recent` plans); `None` when the job
/// or its strategy is unknown.
fn decide(
    ctx: &SessionCtx,
    job: &JobName,
    recent: &BTreeMap<JobName, Vec<InstanceId>>,
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
    let view = JobView::read(ctx.mirror(), job);
    let i_lead = view.leader.as_ref() == Some(ctx.me());
    let rules = resharding::Rules::of(&config);
    // Counting the namespace's items reads every job's owners: only for a strategy that needs it,
    // and only when a commit is about to be computed.
    let held = if i_lead && view.sharding_necessary && strategy.uses_namespace_load() {
        let eligible = view.eligible_instances(rules.label);
        namespace_load(ctx.mirror(), job, &eligible, recent)
    } else {
        BTreeMap::new()
    };
    let facts = resharding::Facts {
        now_millis: ctx.node.clock.now().timestamp_millis(),
        held: &held,
    };
    Some(resharding::step(
        &view, job, rules, &*strategy, facts, i_lead,
    ))
}

/// Applies one sharding step of `job`; returns whether it waits (for running items to end, or to
/// retry a failed commit).
async fn apply(ctx: &SessionCtx, job: &JobName, step: ShardingStep) -> bool {
    match step {
        ShardingStep::Nothing => false,
        ShardingStep::WaitForRunningItems(items) => {
            tracing::debug!(%job, ?items, "sharding waits for running items");
            true
        }
        ShardingStep::Commit { processing, commit } => {
            match ctx.apply(&[processing]).await {
                Ok(()) => {}
                Err(e) if e.is_node_exists() => {}
                Err(e) => {
                    tracing::warn!(%job, error = %e, "cannot mark sharding as processing");
                    return false;
                }
            }
            match apply_in_chunks(ctx, &commit).await {
                Ok(()) => {
                    tracing::info!(%job, "sharding committed");
                    ctx.node.events.emit(EngineEvent::ShardingChanged {
                        job: job.clone(),
                        assignment: assignment_of(&commit),
                    });
                    crate::metrics::resharding_committed(ctx.me(), job);
                    false
                }
                Err(e) => {
                    // The mirror was behind the registry: undo `processing` and retry on the
                    // next event or fire.
                    tracing::warn!(%job, error = %e, "sharding commit failed; will retry");
                    let path = JobNode::LeaderShardingProcessing.to_path(job);
                    let _ = ctx.registry.delete(&path, None).await;
                    true
                }
            }
        }
    }
}

impl Actor for ShardingActor {
    type Msg = ShardingMsg;
    type State = ShardingState;
    type Arguments = SessionCtx;

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        ctx: SessionCtx,
    ) -> Result<Self::State, ActorProcessingErr> {
        Ok(ShardingState {
            ctx,
            waiting: BTreeSet::new(),
            retrying: BTreeSet::new(),
            lanes: Lanes::default(),
            recent: BTreeMap::new(),
            recent_at: BTreeMap::new(),
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            ShardingMsg::ShardIfNecessary(job) => state.shard(&myself, &job),
            ShardingMsg::Job(ev) => {
                // The leader shards as soon as the flag is up, not at its next fire: the new plan is
                // then ready before the fire (no sharding on a run's path), and a leaving instance's
                // items move at once.
                let flagged = matches!(
                    (&ev.node, ev.kind),
                    (JobNode::LeaderShardingNecessary, NodeEventKind::Created)
                );
                let unblocks = matches!(
                    (&ev.node, ev.kind),
                    (JobNode::ShardingRunning(_), NodeEventKind::Deleted)
                        | (JobNode::LeaderElectionInstance, _)
                        | (JobNode::Instance(_), _)
                );
                if flagged {
                    state.shard(&myself, &ev.job);
                } else if unblocks
                    && state.waiting.contains(&ev.job)
                    && state.retrying.insert(ev.job.clone())
                {
                    let job = ev.job.clone();
                    myself.send_after(RETRY_AFTER, move || ShardingMsg::Retry(job));
                }
            }
            ShardingMsg::Retry(job) => {
                state.retrying.remove(&job);
                if state.waiting.contains(&job) {
                    state.shard(&myself, &job);
                }
            }
            ShardingMsg::Sharded { job, waiting } => {
                if waiting {
                    state.waiting.insert(job.clone());
                    // A failed commit's plan must not count as the job's owners.
                    state.recent.remove(&job);
                    state.recent_at.remove(&job);
                } else {
                    state.waiting.remove(&job);
                }
                if let Some((job, ())) = state.lanes.done(&job) {
                    state.spawn_shard(&myself, job);
                }
            }
            ShardingMsg::Resynced => {
                let waiting: Vec<_> = state.waiting.iter().cloned().collect();
                for job in waiting {
                    state.shard(&myself, &job);
                }
            }
        }
        Ok(())
    }
}
