//! ShardingActor: when a fire finds a job's resharding flag up and this instance leads, it waits
//! (as state, not by blocking) for the job's running items to end, then marks `processing` and
//! commits the whole plan in one multi-op. Followers wait for the commit as a mirror event.
//!
//! For the jobs that balance over the namespace it also watches the namespace: a while after any
//! job's plan, config or instances change, it looks whether a balanced job it leads drifted from
//! the namespace's plan ([`Namespace::drifted`](crate::decide::namespace::Namespace::drifted)) and
//! raises that job's flag.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use ractor::{Actor, ActorProcessingErr, ActorRef};

use crate::decide::answer::Answer;
use crate::decide::commit::{Commit, CommitEnd, CommitStep};
use crate::decide::resharding::{self, ShardingStep};
use crate::events::EngineEvent;
use crate::paths::JobNode;
use crate::registry::NodeEventKind;
use crate::types::InstanceId;
use crate::types::JobName;
use crate::view::{JobView, NamespaceCache};

use super::context::SessionCtx;
use super::lanes::{self, Lanes, Merge};
use super::mail::{ShardingMsg, ShardingOutcome as Outcome};

/// The ShardingActor.
#[derive(Debug)]
pub(crate) struct ShardingActor;

/// How long after a failed commit the job is sharded again.
const COMMIT_RETRY: std::time::Duration = std::time::Duration::from_millis(200);

/// Failed commits of one job in a row before a WARN. One failure is the ordinary race of a
/// commit decided on a mirror that has not yet seen the registry's latest change (often this
/// leader's own commit a moment before: a follow-up request decided before its echo arrived);
/// its retry, 200 ms later, finds the mirror caught up. Failures that go on are worth a WARN.
const FAILURES_BEFORE_WARN: u32 = 3;

/// While failures go on, one WARN per this many (every 10 s at [`COMMIT_RETRY`]).
const WARN_EVERY: u32 = 50;

/// State of the ShardingActor.
#[derive(Debug)]
pub(crate) struct ShardingState {
    ctx: SessionCtx,
    /// Jobs whose sharding waits for running items to end.
    waiting: BTreeSet<JobName>,
    /// Waiting jobs with a retry already on its way.
    retrying: BTreeSet<JobName>,
    /// Jobs with a sharding step in flight.
    lanes: Lanes<Request>,
    /// Jobs whose last commits failed, and how many in a row.
    failures: HashMap<JobName, u32>,
    /// A [`ShardingMsg::Rebalance`] is on its way.
    rebalance_due: bool,
    /// When the last change that may move the balanced plan arrived: the look waits for a quiet
    /// moment, so that a burst of registrations and commits gives one look after it.
    last_change: tokio::time::Instant,
    /// The namespace as the balanced jobs see it.
    namespace: NamespaceCache,
    /// The jobs this instance runs whose strategy balances over the namespace, as of their last
    /// config event (every job's at a re-list): kept one job at a time, so that a plan event never
    /// counts over 10,000 jobs. `None` until counted.
    balanced_jobs: Option<BTreeSet<JobName>>,
}

/// How long the namespace must be quiet (no plan, config or membership change) before the
/// balanced jobs are looked at.
const REBALANCE_AFTER: std::time::Duration = std::time::Duration::from_millis(300);

/// How long a burst of `running` deletions (one per item at the end of a run) is gathered before
/// a waiting job is looked at again: one check of the whole job instead of one per item.
const RETRY_AFTER: std::time::Duration = std::time::Duration::from_millis(5);

/// A request to shard a job; requests merge by "or".
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Request {
    /// This instance's leader raised the flag: it is up even while the mirror does not show it.
    flag_raised: bool,
}

impl Merge for Request {
    fn merge(&mut self, later: Self) {
        self.flag_raised |= later.flag_raised;
    }
}

impl ShardingState {
    /// Starts sharding `job` in its lane, or once more after the run in flight.
    fn shard(&mut self, myself: &ActorRef<ShardingMsg>, job: &JobName) {
        self.shard_with(myself, job, Request::default());
    }

    fn shard_with(&mut self, myself: &ActorRef<ShardingMsg>, job: &JobName, request: Request) {
        if let Some(request) = self.lanes.admit(job, request) {
            self.spawn_shard(myself, job.clone(), request);
        }
    }

    fn spawn_shard(&mut self, myself: &ActorRef<ShardingMsg>, job: JobName, request: Request) {
        let ctx = self.ctx.clone();
        let myself = myself.clone();
        // A balanced job's plan counts the namespace, which this actor keeps: read here.
        let held = if balanced(&ctx, &job) {
            let now = ctx.node.clock.now().timestamp_millis();
            self.namespace
                .held_before(ctx.mirror(), &ctx.node.strategies, &job, now)
        } else {
            BTreeMap::new()
        };
        tokio::spawn(async move {
            let work = async {
                match decide(&ctx, &job, &held, request.flag_raised) {
                    Some(step) => apply(&ctx, &job, step).await,
                    None => Outcome::Done,
                }
            };
            let outcome = match lanes::guarded("sharding", &job, work).await {
                Ok(outcome) => outcome,
                Err(_) => {
                    // Reported (logged, counted); the job waits and is tried again.
                    let retry = job.clone();
                    myself.send_after(lanes::PANIC_RETRY, move || ShardingMsg::Retry(retry));
                    Outcome::Waits
                }
            };
            // The actor may be gone (session ending): nobody is left to tell.
            let _ = myself.send_message(ShardingMsg::Sharded { job, outcome });
        });
    }

    /// Raises the flag of each balanced job this instance leads that drifted from the
    /// namespace's plan, unless a commit is in flight somewhere (its end brings another look).
    fn rebalance(&mut self) {
        let ctx = &self.ctx;
        let mirror = ctx.mirror();
        let mut ops = Vec::new();
        let now = ctx.node.clock.now().timestamp_millis();
        let drifted = self.namespace.drifted(mirror, &ctx.node.strategies, now);
        if drifted.is_empty() {
            return;
        }
        let committing = mirror.children("/").into_iter().any(|job| {
            JobName::new(job.as_str())
                .is_ok_and(|j| mirror.exists(&JobNode::LeaderShardingProcessing.to_path(&j)))
        });
        if committing {
            return;
        }
        for job in drifted {
            if ctx.config(&job).is_none() {
                continue;
            }
            let view = JobView::read(mirror, &job);
            if let Some(op) = resharding::rebalance_flag(&view, &job, ctx.me()) {
                tracing::info!(%job, "the job drifted from the namespace's balanced plan: resharding");
                ops.push((job, op));
            }
        }
        if ops.is_empty() {
            return;
        }
        let ctx = ctx.clone();
        tokio::spawn(async move {
            for (job, op) in ops {
                ctx.raise_flag(&job, op).await;
            }
        });
    }

    /// Notes a change to `job` that may move the balanced plan; a look follows once the namespace
    /// is quiet. Nothing is kept while no job here balances over the namespace: the cache is read
    /// again whole when one starts to.
    fn note_change(&mut self, myself: &ActorRef<ShardingMsg>, job: &JobName) {
        self.classify(job);
        if !self.runs_balanced() {
            return;
        }
        self.namespace.touch(job);
        self.schedule_look(myself);
    }

    /// Asks for a look at the balanced jobs once the namespace has been quiet for a while.
    fn schedule_look(&mut self, myself: &ActorRef<ShardingMsg>) {
        self.last_change = tokio::time::Instant::now();
        if !self.rebalance_due {
            self.rebalance_due = true;
            myself.send_after(REBALANCE_AFTER, || ShardingMsg::Rebalance);
        }
    }

    /// Whether this instance runs a job that balances over the namespace.
    fn runs_balanced(&mut self) -> bool {
        let ctx = &self.ctx;
        !self
            .balanced_jobs
            .get_or_insert_with(|| {
                ctx.configs
                    .iter()
                    .filter(|e| balanced(ctx, e.key()))
                    .map(|e| e.key().clone())
                    .collect()
            })
            .is_empty()
    }

    /// Whether `job` balances over the namespace is looked at again (its config, or whether it runs
    /// here, may have changed). When the first balanced job appears, the namespace cache, not kept
    /// until then, is read whole.
    fn classify(&mut self, job: &JobName) {
        let Some(jobs) = self.balanced_jobs.as_mut() else {
            return;
        };
        let was = !jobs.is_empty();
        if balanced(&self.ctx, job) {
            jobs.insert(job.clone());
        } else {
            jobs.remove(job);
        }
        if !was && !jobs.is_empty() {
            self.namespace.relist();
        }
    }
}

/// Whether `job`'s strategy balances over the namespace.
fn balanced(ctx: &SessionCtx, job: &JobName) -> bool {
    ctx.config(job).is_some_and(|config| {
        ctx.node
            .strategies
            .get(config.config().job_sharding_strategy_type.as_deref())
            .is_ok_and(|s| s.uses_namespace_load())
    })
}

/// Decides one sharding step of `job` from the mirror and `held`, the items held elsewhere for a
/// strategy that balances over the namespace; `None` when the job or its strategy is unknown.
fn decide(
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
async fn apply(ctx: &SessionCtx, job: &JobName, step: ShardingStep) -> Outcome {
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

/// What a job event asks of the ShardingActor. The SessionActor sends it only the events that
/// ask something ([`Reaction::any`]).
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Reaction {
    /// The leader shards as soon as the flag is up, not at its next fire: the new plan is then
    /// ready before the fire (no sharding on a run's path), and a leaving instance's items move
    /// at once.
    flagged: bool,
    /// A shard waiting on running items or on the election may go on.
    unblocks: bool,
    /// A change that may move the namespace's balanced plan.
    moves_balance: bool,
}

impl Reaction {
    pub(super) fn any(&self) -> bool {
        self.flagged || self.unblocks || self.moves_balance
    }
}

pub(super) fn reaction(node: &JobNode, kind: NodeEventKind) -> Reaction {
    use NodeEventKind::{Created, Deleted};
    Reaction {
        flagged: matches!((node, kind), (JobNode::LeaderShardingNecessary, Created)),
        unblocks: matches!(
            (node, kind),
            (JobNode::ShardingRunning(_), Deleted)
                | (JobNode::LeaderElectionInstance, _)
                | (JobNode::Instance(_), _)
        ),
        moves_balance: matches!(
            (node, kind),
            (JobNode::ShardingInstance(_), _)
                | (JobNode::Config, _)
                | (JobNode::Instance(_), _)
                | (JobNode::Server(_), _)
                | (JobNode::LeaderElectionInstance, _)
                | (JobNode::LeaderShardingProcessing, Deleted)
        ),
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
            failures: HashMap::new(),
            rebalance_due: false,
            last_change: tokio::time::Instant::now(),
            namespace: NamespaceCache::new(),
            balanced_jobs: None,
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
            ShardingMsg::FlagRaised(job) => {
                state.shard_with(&myself, &job, Request { flag_raised: true })
            }
            ShardingMsg::Job(ev) => {
                let Reaction {
                    flagged,
                    unblocks,
                    moves_balance,
                } = reaction(&ev.node, ev.kind);
                if moves_balance {
                    state.note_change(&myself, &ev.job);
                }
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
            ShardingMsg::Rebalance => {
                state.rebalance_due = false;
                let quiet = state.last_change.elapsed();
                if quiet < REBALANCE_AFTER {
                    state.rebalance_due = true;
                    myself.send_after(REBALANCE_AFTER - quiet, || ShardingMsg::Rebalance);
                } else {
                    state.rebalance();
                }
            }
            ShardingMsg::Retry(job) => {
                state.retrying.remove(&job);
                if state.waiting.contains(&job) {
                    state.shard(&myself, &job);
                }
            }
            ShardingMsg::Sharded { job, outcome } => {
                if !matches!(outcome, Outcome::Failed(_)) {
                    state.failures.remove(&job);
                }
                match outcome {
                    Outcome::Done => {
                        state.waiting.remove(&job);
                    }
                    Outcome::Waits => {
                        state.waiting.insert(job.clone());
                    }
                    Outcome::Failed(error) => {
                        let failures = state.failures.entry(job.clone()).or_default();
                        *failures += 1;
                        if *failures == FAILURES_BEFORE_WARN || *failures % WARN_EVERY == 0 {
                            tracing::warn!(%job, failures = *failures, %error, "sharding commits keep failing; will retry");
                        }
                        state.waiting.insert(job.clone());
                        if state.retrying.insert(job.clone()) {
                            let again = job.clone();
                            myself.send_after(COMMIT_RETRY, move || ShardingMsg::Retry(again));
                        }
                    }
                }
                if let Some((job, next)) = state.lanes.done(&job) {
                    state.spawn_shard(&myself, job, next);
                }
            }
            ShardingMsg::Resynced => {
                state.namespace.relist();
                state.balanced_jobs = None;
                if state.runs_balanced() {
                    state.schedule_look(&myself);
                }
                let waiting: Vec<_> = state.waiting.iter().cloned().collect();
                for job in waiting {
                    state.shard(&myself, &job);
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod reaction_tests {
    use super::*;
    use crate::types::ShardItem;

    #[test]
    fn job_events_ask_the_sharding_actor_to_shard_retry_or_rebalance() {
        use NodeEventKind::{Created, DataChanged, Deleted};
        let id = InstanceId::parse("10.0.0.2@-@1").unwrap();
        let r = |flagged, unblocks, moves_balance| Reaction {
            flagged,
            unblocks,
            moves_balance,
        };
        let cases = [
            (
                JobNode::LeaderShardingNecessary,
                Created,
                r(true, false, false),
            ),
            (
                JobNode::LeaderShardingNecessary,
                Deleted,
                r(false, false, false),
            ),
            (
                JobNode::ShardingRunning(ShardItem(1)),
                Deleted,
                r(false, true, false),
            ),
            (
                JobNode::ShardingRunning(ShardItem(1)),
                Created,
                r(false, false, false),
            ),
            (JobNode::Instance(id), Created, r(false, true, true)),
            (
                JobNode::LeaderElectionInstance,
                DataChanged,
                r(false, true, true),
            ),
            (
                JobNode::ShardingInstance(ShardItem(1)),
                DataChanged,
                r(false, false, true),
            ),
            (
                JobNode::LeaderShardingProcessing,
                Deleted,
                r(false, false, true),
            ),
            (
                JobNode::LeaderShardingProcessing,
                Created,
                r(false, false, false),
            ),
            (JobNode::Servers, Created, r(false, false, false)),
        ];
        for (node, kind, want) in cases {
            assert_eq!(want.any(), want != Reaction::default());
            assert_eq!(reaction(&node, kind), want, "{node:?} {kind:?}");
        }
    }
}
