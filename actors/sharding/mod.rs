//! ShardingActor: when a fire finds a job's resharding flag up and this instance leads, it waits
//! (as state, not by blocking) for the job's running items to end, then marks `processing` and
//! commits the whole plan in one multi-op. Followers wait for the commit as a mirror event.
//!
//! For the jobs that balance over the namespace it also watches the namespace: a while after any
//! job's plan, config or instances change, it looks whether a balanced job it leads drifted from
//! the namespace's plan ([`Namespace::drifted`](crate::decide::namespace::Namespace::drifted)) and
//! raises that job's flag.
//!
//! Here the actor's protocol, state and handlers, and the job's lane task; in `step.rs` one
//! sharding step of a job, decided and applied in that task; in `balance.rs` the watch over the balanced jobs; in
//! `reaction.rs` what each job event asks of the actor.

mod balance;
mod reaction;
mod step;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use ractor::ActorRef;

use crate::types::JobName;
use crate::view::NamespaceCache;

use super::context::SessionCtx;
use super::lanes::{self, Lanes, Merge};
use super::mail::{ShardingMsg, ShardingOutcome as Outcome};

use balance::balanced;
pub(super) use reaction::{reaction, Reaction};
use step::{apply, decide};

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
            // A panic is reported; the job waits and is tried again.
            let retry = ShardingMsg::Retry;
            let outcome =
                lanes::or_retry("sharding", &myself, &job, work, retry, Outcome::Waits).await;
            // The actor may be gone (session ending): nobody is left to tell.
            let _ = myself.send_message(ShardingMsg::Sharded { job, outcome });
        });
    }
}

sync_actor!(ShardingActor: ShardingMsg, ShardingState, SessionCtx);

impl ShardingState {
    /// The state of a new ShardingActor.
    fn started(_myself: &ActorRef<ShardingMsg>, ctx: SessionCtx) -> Self {
        Self {
            ctx,
            waiting: BTreeSet::new(),
            retrying: BTreeSet::new(),
            lanes: Lanes::default(),
            failures: HashMap::new(),
            rebalance_due: false,
            last_change: tokio::time::Instant::now(),
            namespace: NamespaceCache::new(),
            balanced_jobs: None,
        }
    }

    /// One message, handled without waiting: a sharding step runs in its job's lane.
    fn handle(&mut self, myself: &ActorRef<ShardingMsg>, msg: ShardingMsg) {
        match msg {
            ShardingMsg::ShardIfNecessary(job) => self.shard(myself, &job),
            ShardingMsg::FlagRaised(job) => {
                self.shard_with(myself, &job, Request { flag_raised: true })
            }
            ShardingMsg::Job(ev) => {
                let Reaction {
                    flagged,
                    unblocks,
                    moves_balance,
                } = reaction(&ev.node, ev.kind);
                if moves_balance {
                    self.note_change(myself, &ev.job);
                }
                if flagged {
                    self.shard(myself, &ev.job);
                } else if unblocks
                    && self.waiting.contains(&ev.job)
                    && self.retrying.insert(ev.job.clone())
                {
                    let job = ev.job.clone();
                    myself.send_after(RETRY_AFTER, move || ShardingMsg::Retry(job));
                }
            }
            ShardingMsg::Rebalance => {
                self.rebalance_due = false;
                let quiet = self.last_change.elapsed();
                if quiet < REBALANCE_AFTER {
                    self.rebalance_due = true;
                    myself.send_after(REBALANCE_AFTER - quiet, || ShardingMsg::Rebalance);
                } else {
                    self.rebalance();
                }
            }
            ShardingMsg::Retry(job) => {
                self.retrying.remove(&job);
                if self.waiting.contains(&job) {
                    self.shard(myself, &job);
                }
            }
            ShardingMsg::Sharded { job, outcome } => {
                if !matches!(outcome, Outcome::Failed(_)) {
                    self.failures.remove(&job);
                }
                match outcome {
                    Outcome::Done => {
                        self.waiting.remove(&job);
                    }
                    Outcome::Waits => {
                        self.waiting.insert(job.clone());
                    }
                    Outcome::Failed(error) => {
                        let failures = self.failures.entry(job.clone()).or_default();
                        *failures += 1;
                        if *failures == FAILURES_BEFORE_WARN || *failures % WARN_EVERY == 0 {
                            tracing::warn!(%job, failures = *failures, %error, "sharding commits keep failing; will retry");
                        }
                        self.waiting.insert(job.clone());
                        if self.retrying.insert(job.clone()) {
                            let again = job.clone();
                            myself.send_after(COMMIT_RETRY, move || ShardingMsg::Retry(again));
                        }
                    }
                }
                if let Some((job, next)) = self.lanes.done(&job) {
                    self.spawn_shard(myself, job, next);
                }
            }
            ShardingMsg::Resynced => {
                self.namespace.relist();
                self.balanced_jobs = None;
                if self.runs_balanced() {
                    self.schedule_look(myself);
                }
                let waiting: Vec<_> = self.waiting.iter().cloned().collect();
                for job in waiting {
                    self.shard(myself, &job);
                }
            }
        }
    }
}
