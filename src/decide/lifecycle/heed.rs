//! Which mirror events a job's executor needs to hear of. The session forwards only these: the
//! others are about nodes that only the leader, sharding and failover actors read (the election but its new leader,
//! the failover queue, other instances' nodes, the parents written at registration), and each
//! one forwarded would be a message and a machine step that ends in nothing.
//!
//! At ten thousand jobs that is most of the work of a registration or a fire reaching the
//! executors: a job's registration makes about fifteen events, of which five or six matter here.
//! Fewer messages also keep mailboxes small: an executor's channel that has held more than 32
//! messages keeps a second block (800 bytes) for good, as tokio recycles a channel's blocks
//! instead of freeing them; every fire still brings each executor a few messages, so over many
//! fires every mailbox gets there, but later.
//!
//! The test `events_the_session_drops_leave_every_machine_unchanged` steps machines in several
//! states with every event this drops and checks that nothing changes.

use crate::decide::guarantee;
use crate::model::NodeEventKind;
use crate::paths::JobNode;
use crate::types::InstanceId;

/// Whether the executor of a job on instance `me` needs the event `kind` on `node`: the events
/// [`JobMachine::step`](super::JobMachine::step) reacts to, the config (read and validated
/// before it becomes an input), and the nodes a distribute-once round under way reads.
pub fn heeded(node: &JobNode, kind: NodeEventKind, me: &InstanceId) -> bool {
    use NodeEventKind::{Created, DataChanged, Deleted};
    let machine = match (node, kind) {
        (JobNode::Config | JobNode::ShardingInstance(_), _) => true,
        (JobNode::Instance(id), _) => id == me,
        (JobNode::TriggerInstance(id), Created) => id == me,
        (JobNode::LeaderShardingNecessary | JobNode::ShardingRunning(_), Created | Deleted) => true,
        (JobNode::LeaderShardingProcessing | JobNode::Root, Deleted) => true,
        // A backfill requested or cancelled.
        (JobNode::Backfill, _) => true,
        // A workflow run's records, and a job that runs after this one.
        (JobNode::WorkflowRecord(_), _) | (JobNode::DownstreamJob(_), Created) => true,
        // A new leader: a job without a cron whose workflow run waits on a plan asks for it.
        (JobNode::LeaderElectionInstance, Created) => true,
        // A catch-up record taken back (a run its item's old owner cancelled); a job without a
        // catch-up window writes none.
        (JobNode::FiredItem(_), DataChanged | Deleted) => true,
        _ => false,
    };
    machine || guarantee::moved_by(node)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::ShardItem;

    fn inst(s: &str) -> InstanceId {
        InstanceId::parse(s).unwrap()
    }

    #[test]
    fn the_executor_hears_of_its_own_nodes_the_plan_and_a_new_leader_not_of_the_rest() {
        use NodeEventKind::{Created, DataChanged, Deleted};
        let me = inst("10.0.0.1@-@1");
        let other = inst("10.0.0.2@-@1");
        let cases = [
            (JobNode::Config, DataChanged, true),
            (JobNode::Instance(me.clone()), Deleted, true),
            (JobNode::Instance(me.clone()), DataChanged, true),
            // Another instance's node matters to a distribute-once round (is its item
            // accounted for?), which the session cannot tell apart from other jobs.
            (JobNode::Instance(other.clone()), Created, true),
            (JobNode::TriggerInstance(me.clone()), Created, true),
            (JobNode::TriggerInstance(other.clone()), Created, false),
            (JobNode::TriggerInstance(me.clone()), Deleted, false),
            (JobNode::ShardingInstance(ShardItem(3)), DataChanged, true),
            (JobNode::ShardingRunning(ShardItem(3)), Created, true),
            (JobNode::ShardingRunning(ShardItem(3)), DataChanged, false),
            (JobNode::LeaderShardingNecessary, Created, true),
            (JobNode::LeaderShardingProcessing, Created, false),
            (JobNode::LeaderShardingProcessing, Deleted, true),
            (JobNode::Root, Deleted, true),
            (JobNode::Root, Created, false),
            (JobNode::LeaderElectionInstance, Created, true),
            (JobNode::LeaderElectionInstance, Deleted, false),
            (JobNode::LeaderFailoverItem(ShardItem(0)), Created, false),
            (JobNode::ShardingFailover(ShardItem(0)), Created, false),
            (JobNode::Servers, Created, false),
            (JobNode::Server("10.0.0.2".into()), Created, true),
            (JobNode::GuaranteeStartedItem(ShardItem(1)), Created, true),
            (JobNode::Backfill, Created, true),
            (JobNode::Backfill, Deleted, true),
            (JobNode::BackfillItem(ShardItem(1)), DataChanged, false),
            (JobNode::FiredItem(ShardItem(1)), DataChanged, true),
            (JobNode::FiredItem(ShardItem(1)), Created, false),
        ];
        for (node, kind, expected) in cases {
            assert_eq!(heeded(&node, kind, &me), expected, "{node:?} {kind:?}");
        }
    }
}
