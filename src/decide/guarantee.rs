//! Distribute-once listeners' coordination (ElasticJob's `GuaranteeService` and
//! `AbstractDistributeOnceElasticJobListener`), as a pure state machine per job and phase.
//!
//! Same nodes as ElasticJob: before its items start, each instance creates
//! `guarantee/started/{i}` for the items of its fire and waits; once every item is accounted for,
//! one instance calls the listeners' "before" hook and deletes `guarantee/started`, whose
//! deletion lets every waiting instance start its items. After its items end, each instance
//! creates `guarantee/completed/{i}`; once every item is accounted for, one instance calls the
//! "after" hook and deletes `guarantee/completed`.
//!
//! Where we differ, and why:
//! - **Exactly one caller.** ElasticJob lets every instance that sees all items registered call
//!   the hook (two instances registering their last items together both call it). Here the
//!   caller claims the round first: a set of the phase root's data, guarded by the version the
//!   mirror shows, which only one instance can win.
//! - **Bounded waits.** ElasticJob waits forever by default, so one crashed item blocks every
//!   instance. Here an item is accounted for when its node exists, or its owner is gone (crashed,
//!   not yet resharded), or its server or the item is disabled, or it has no owner; and each
//!   wait ends at its timeout (the listener's, 60 s by default): the waiting instance claims the
//!   round if nobody has (the hook is called once, told which items were missing), clears it
//!   and goes on; its items run.
//! - **No blocking.** An instance waits as state; a mirror event or the timeout's message moves
//!   it on.

mod round;

use std::collections::BTreeSet;
use std::time::Duration;

use crate::model::{CreateMode, Op};
use crate::paths::JobNode;
use crate::types::{InstanceId, JobName, ShardItem};
use crate::view::{JobView, ServerStatus};

use super::lifecycle::Outcome;

/// Which of the two waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Before the fire's items start: `guarantee/started`.
    Started,
    /// After the fire's items end: `guarantee/completed`.
    Completed,
}

impl Phase {
    fn index(self) -> usize {
        match self {
            Self::Started => 0,
            Self::Completed => 1,
        }
    }

    /// The phase's root node.
    pub fn root(self) -> JobNode {
        match self {
            Self::Started => JobNode::GuaranteeStarted,
            Self::Completed => JobNode::GuaranteeCompleted,
        }
    }

    /// The phase's node of `item`.
    pub fn item(self, item: ShardItem) -> JobNode {
        match self {
            Self::Started => JobNode::GuaranteeStartedItem(item),
            Self::Completed => JobNode::GuaranteeCompletedItem(item),
        }
    }

    /// For logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Started => "started",
            Self::Completed => "completed",
        }
    }
}

/// Whether a change of `node` can move a round under way: the phase nodes, and what decides
/// whether an item is accounted for (its owner, its server, its instance, its being disabled).
pub fn moved_by(node: &JobNode) -> bool {
    matches!(
        node,
        JobNode::Guarantee
            | JobNode::GuaranteeStarted
            | JobNode::GuaranteeStartedItem(_)
            | JobNode::GuaranteeCompleted
            | JobNode::GuaranteeCompletedItem(_)
            | JobNode::Instance(_)
            | JobNode::Server(_)
            | JobNode::ShardingInstance(_)
            | JobNode::ShardingDisabled(_)
    )
}

/// What the machine reads of one phase, from the mirror.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PhaseFacts {
    /// The job's `shardingTotalCount`.
    pub total: u32,
    /// The phase root's data version and data, when it exists (data is the claimer, if any).
    pub root: Option<(i32, String)>,
    /// The phase's item nodes.
    pub registered: BTreeSet<ShardItem>,
    /// Items that will not register: no owner, owner gone, server or item disabled.
    pub excused: BTreeSet<ShardItem>,
    /// Whether `guarantee` exists.
    pub parent: bool,
}

impl PhaseFacts {
    /// Reads a phase's facts from the job's view and the phase's nodes.
    pub fn read(
        view: &JobView,
        total: u32,
        root: Option<(i32, String)>,
        registered: BTreeSet<ShardItem>,
        parent: bool,
    ) -> Self {
        let excused = (0..total)
            .map(ShardItem)
            .filter(|i| match view.items.get(i) {
                None => true,
                Some(v) if v.disabled => true,
                Some(v) => match &v.owner {
                    None => true,
                    Some(o) => {
                        !view.instances.contains(o)
                            || view.server_status(o.ip()) == ServerStatus::Disabled
                    }
                },
            })
            .collect();
        Self {
            total,
            root,
            registered,
            excused,
            parent,
        }
    }

    /// Items neither registered nor excused.
    pub fn missing(&self) -> Vec<ShardItem> {
        (0..self.total)
            .map(ShardItem)
            .filter(|i| !self.registered.contains(i) && !self.excused.contains(i))
            .collect()
    }
}

/// What a write of the machine was for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// This instance's item nodes.
    Register,
    /// The claim of the round (the root's data set at its version).
    Claim,
    /// The round's nodes deleted.
    Clear,
}

/// An input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GuaranteeInput {
    /// This instance's items enter a phase (a fire's run launched; that run ended).
    Begin(Phase, Vec<ShardItem>),
    /// A relevant node changed (the mirror holds it): look again.
    Changed(Phase),
    /// The phase's root was deleted (the event).
    RootDeleted(Phase),
    /// A write has its outcome.
    Written(Phase, Step, Outcome),
    /// The hooks of a phase returned.
    Called(Phase),
    /// A round's timeout elapsed.
    TimedOut(Phase, u64),
}

/// A command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GuaranteeCommand {
    /// Apply `ops` op by op, nodes already as wanted counting as done (`Tolerant`), or, for a
    /// claim, as one call; feed back `Written(phase, step, outcome)`.
    Write(Phase, Step, Vec<Op>),
    /// Call the phase's hooks; feed back `Called(phase)`. `missing` lists the items not
    /// accounted for (after a timeout).
    Call(Phase, Vec<ShardItem>),
    /// The waiting run's items may start.
    Go,
    /// Feed back `TimedOut(phase, round)` after this long.
    Timer(Phase, u64, Duration),
    /// Log at WARN.
    Warn(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Round {
    id: u64,
    items: BTreeSet<ShardItem>,
    registered: bool,
    claiming: bool,
    calling: bool,
    timed_out: bool,
    /// The root version a claim lost at: not tried again (the mirror may lag behind the winner).
    lost_at: Option<i32>,
}

/// One job's distribute-once coordination on this instance.
#[derive(Debug, Clone)]
pub struct DistributeOnce {
    job: JobName,
    me: InstanceId,
    timeouts: [Duration; 2],
    rounds: [Option<Round>; 2],
    next: u64,
}

impl DistributeOnce {
    /// The machine for `job` on `me`, with the started and completed timeouts.
    pub fn new(job: JobName, me: InstanceId, started: Duration, completed: Duration) -> Self {
        Self {
            job,
            me,
            timeouts: [started, completed],
            rounds: [None, None],
            next: 0,
        }
    }

    /// Whether a round of `phase` is under way here.
    pub fn waiting(&self, phase: Phase) -> bool {
        self.rounds[phase.index()].is_some()
    }

    /// One input in, commands out; `facts` reads the phase from the mirror.
    pub fn step(
        &mut self,
        input: GuaranteeInput,
        facts: &dyn Fn(Phase) -> PhaseFacts,
    ) -> Vec<GuaranteeCommand> {
        let mut out = Vec::new();
        match input {
            GuaranteeInput::Begin(phase, items) => self.begin(phase, items, facts, &mut out),
            GuaranteeInput::Changed(phase) => self.evaluate(phase, &facts(phase), &mut out),
            GuaranteeInput::RootDeleted(phase) => {
                let f = facts(phase);
                let ours = |r: &Round| r.items.iter().all(|i| f.registered.contains(i));
                match &self.rounds[phase.index()] {
                    // Resolved by another instance (unless the mirror already shows a new round
                    // holding our items).
                    Some(r) if r.registered && !r.calling && !(f.root.is_some() && ours(r)) => {
                        self.resolve(phase, &mut out)
                    }
                    _ => {}
                }
            }
            GuaranteeInput::Written(phase, step, outcome) => {
                self.written(phase, step, outcome, facts, &mut out)
            }
            GuaranteeInput::Called(phase) => {
                let f = facts(phase);
                out.push(GuaranteeCommand::Write(
                    phase,
                    Step::Clear,
                    self.clear_ops(phase, &f),
                ));
            }
            GuaranteeInput::TimedOut(phase, id) => {
                let f = facts(phase);
                let Some(r) = self.rounds[phase.index()].as_mut() else {
                    return out;
                };
                if r.id != id || r.calling || r.claiming {
                    return out;
                }
                r.timed_out = true;
                out.push(GuaranteeCommand::Warn(format!(
                    "distribute-once {} wait timed out after {:?}; items not accounted for: {:?}",
                    phase.as_str(),
                    self.timeouts[phase.index()],
                    f.missing()
                )));
                match &f.root {
                    Some((version, claimer)) if claimer.is_empty() => {
                        self.claim(phase, *version, &mut out)
                    }
                    // Claimed by an instance that did not finish, or already gone: clear, go on.
                    _ => {
                        let ops = self.clear_ops(phase, &f);
                        if let Some(r) = self.rounds[phase.index()].as_mut() {
                            r.calling = true;
                        }
                        out.push(GuaranteeCommand::Write(phase, Step::Clear, ops));
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
#[path = "guarantee_tests.rs"]
mod tests;
