//! What a job event asks of the ShardingActor: the SessionActor routes it the events that ask
//! something, the actor reads the same answer when one arrives.

use crate::paths::JobNode;
use crate::registry::NodeEventKind;

/// What a job event asks of the ShardingActor. The SessionActor sends it only the events that
/// ask something ([`Reaction::any`]).
#[derive(Debug, Default, PartialEq, Eq)]
pub(in crate::actors) struct Reaction {
    /// The leader shards as soon as the flag is up, not at its next fire: the new plan is then
    /// ready before the fire (no sharding on a run's path), and a leaving instance's items move
    /// at once.
    pub(super) flagged: bool,
    /// A shard waiting on running items or on the election may go on.
    pub(super) unblocks: bool,
    /// A change that may move the namespace's balanced plan.
    pub(super) moves_balance: bool,
}

impl Reaction {
    pub(in crate::actors) fn any(&self) -> bool {
        self.flagged || self.unblocks || self.moves_balance
    }
}

pub(in crate::actors) fn reaction(node: &JobNode, kind: NodeEventKind) -> Reaction {
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

#[cfg(test)]
mod reaction_tests {
    use super::*;
    use crate::types::InstanceId;
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
