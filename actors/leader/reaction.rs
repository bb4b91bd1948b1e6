//! What a job event asks of the LeaderActor: the SessionActor routes it the events that ask
//! something, the actor reads the same answer when one arrives.

use crate::paths::JobNode;
use crate::registry::NodeEventKind;
use crate::types::ShardItem;

use super::Evaluation;

/// What a job event asks of the LeaderActor. The SessionActor sends it only the events that ask
/// something.
#[derive(Debug, PartialEq, Eq)]
pub(in crate::actors) enum Reaction {
    Nothing,
    /// An owner node changed: whether its item's owner is still live.
    CheckOwner(ShardItem),
    /// Membership, the election, the config or a commit changed: evaluate the job.
    Evaluate(Evaluation),
}

pub(in crate::actors) fn reaction(node: &JobNode, kind: NodeEventKind) -> Reaction {
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
