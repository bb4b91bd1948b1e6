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
//!
//! Every decision is [`crate::decide::failover`]'s and [`crate::decide::failover_claim`]'s: who
//! may claim and how many, what each answer means. The handler waits on nothing: a job's work
//! (its mark writes, the question to its executor whether it is idle, the claim) runs in the job's
//! lane ([`Lanes`], as the leader and sharding actors have), so a slow executor or a slow write
//! delays that job only. Requests that come while a job's task runs merge into one follow-up.

use std::collections::{BTreeSet, HashMap};

use ractor::ActorRef;

use crate::paths::JobNode;
use crate::registry::mirror::Mirror;
use crate::registry::NodeEventKind;
use crate::types::{InstanceId, JobName, ShardItem};

use super::context::{JobEvent, SessionCtx};
use super::failover_lane::{has_marks, Request};
use super::lanes::{self, Lanes};
use super::mail::{ExecutorMsg, FailoverMsg};

/// The FailoverActor.
#[derive(Debug)]
pub(crate) struct FailoverActor;

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
    /// Jobs with a task in flight, and what each does next.
    lanes: Lanes<Request>,
}

/// Whether `job` has a failover record of any kind in the mirror: a mark under
/// `leader/failover/items`, or an item's `failover`/`failovering` node.
fn has_failover_records(mirror: &Mirror, job: &JobName) -> bool {
    if has_marks(mirror, job) {
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
    /// Starts `request` for `job` in its lane, or merges it into the follow-up of the task in
    /// flight. What needs no task is left out here, from the mirror: every `running` deletion of
    /// every job asks for a claim, and the common "no mark" case must cost no task.
    fn request(&mut self, myself: &ActorRef<FailoverMsg>, job: JobName, mut request: Request) {
        let Some(config) = self.ctx.config(&job) else {
            return;
        };
        let on = config.config().failover;
        let mirror = self.ctx.mirror();
        request.check &= !on && has_failover_records(mirror, &job);
        if !on {
            request.crashed.clear();
            request.orphans = false;
        }
        let marks_may_come = !request.crashed.is_empty() || request.orphans;
        request.claim &= on && (marks_may_come || has_marks(mirror, &job));
        if request == Request::default() {
            return;
        }
        if let Some(request) = self.lanes.admit(&job, request) {
            self.spawn(myself, job, request);
        }
    }

    fn spawn(&self, myself: &ActorRef<FailoverMsg>, job: JobName, request: Request) {
        let ctx = self.ctx.clone();
        let executor = self.executors.get(&job).cloned();
        let myself = myself.clone();
        tokio::spawn(async move {
            let work = super::failover_lane::handle_job(&ctx, executor.as_ref(), &job, request);
            // A panic is reported; the job's failover is looked at again.
            lanes::or_retry("failover", &myself, &job, work, FailoverMsg::Again, ()).await;
            // The actor may be gone (session ending): nobody is left to tell.
            let _ = myself.send_message(FailoverMsg::Handled(job));
        });
    }

    fn jobs(&self) -> Vec<JobName> {
        self.ctx.configs.iter().map(|e| e.key().clone()).collect()
    }
}

sync_actor!(FailoverActor: FailoverMsg, FailoverState, FailoverArgs);

impl FailoverState {
    /// The state of a new FailoverActor.
    fn started(_myself: &ActorRef<FailoverMsg>, args: FailoverArgs) -> Self {
        let FailoverArgs { ctx, executors } = args;
        Self {
            ctx,
            executors,
            lanes: Lanes::default(),
        }
    }

    /// One message, handled without waiting: a job's failover work runs in its lane.
    fn handle(&mut self, myself: &ActorRef<FailoverMsg>, msg: FailoverMsg) {
        let claim = Request {
            claim: true,
            ..Request::default()
        };
        match msg {
            FailoverMsg::ConfigChanged(job) | FailoverMsg::Again(job) => {
                self.request(myself, job, Request::everything())
            }
            FailoverMsg::Job(ev) => {
                let request = match reaction(&ev, self.ctx.me()) {
                    Reaction::Nothing => return,
                    Reaction::CheckSetting => Request {
                        check: true,
                        ..Request::default()
                    },
                    Reaction::Crashed(id) => Request {
                        crashed: BTreeSet::from([id]),
                        claim: true,
                        ..Request::default()
                    },
                    Reaction::Registered => Request {
                        orphans: true,
                        claim: true,
                        ..Request::default()
                    },
                    Reaction::Claim => claim,
                };
                self.request(myself, ev.job, request);
            }
            FailoverMsg::Resynced => {
                for job in self.jobs() {
                    self.request(myself, job, Request::everything());
                }
            }
            FailoverMsg::RunEnded(job) => self.request(myself, job, claim),
            FailoverMsg::Executor(job, exec) => {
                self.executors.insert(job, exec);
            }
            FailoverMsg::ExecutorGone(job, id) => {
                if self.executors.get(&job).is_some_and(|e| e.get_id() == id) {
                    self.executors.remove(&job);
                }
            }
            FailoverMsg::Handled(job) => {
                if let Some((job, next)) = self.lanes.done(&job) {
                    self.spawn(myself, job, next);
                }
            }
        }
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

#[cfg(test)]
#[path = "failover_tests.rs"]
mod lane_tests;
