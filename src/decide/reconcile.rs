//! The leader's periodic clean-up: `running`, `failover` and `failovering` records whose owner is no
//! longer a live instance describe runs that are over. With failover on, a record is kept until the
//! failover handling has marked or claimed its item, so that the item is re-run, not forgotten.

use super::failover::gone_guard;
use crate::model::Op;
use crate::paths::JobNode;
use crate::types::{InstanceId, JobName};
use crate::view::JobView;

/// The deletions that clear records of dead owners, each a write of its own (one operation, or
/// a guarded multi-op). A `running` is deleted only while its owner is still absent from
/// `instances/` ([`gone_guard`]): an owner back on a new session under the same id may have
/// written it for a run that goes now, and a leader whose mirror lags the return would otherwise
/// free the item for a claim or a reshard beside that run.
pub fn stale_records(view: &JobView, job: &JobName, failover: bool) -> Vec<Vec<Op>> {
    let dead = |who: &str| {
        InstanceId::parse(who)
            .ok()
            .filter(|id| !view.instances.contains(id))
    };
    let mut writes = Vec::new();
    for (item, v) in &view.items {
        // Safe to forget only when failover is off, or the item is already queued or taken over.
        let handled = !failover
            || view.failover_marks.contains(item)
            || v.failovering
                .as_ref()
                .is_some_and(|t| view.instances.contains(t));
        if let Some(owner) = v.running.as_deref().and_then(dead).filter(|_| handled) {
            let mut ops = gone_guard(job, &owner).to_vec();
            ops.push(Op::delete(JobNode::ShardingRunning(*item).to_path(job)));
            writes.push(ops);
        }
        if v.failover
            .as_ref()
            .is_some_and(|t| dead(t.as_str()).is_some())
        {
            writes.push(vec![Op::delete(
                JobNode::ShardingFailover(*item).to_path(job),
            )]);
        }
        let failovering_dead = v
            .failovering
            .as_ref()
            .is_some_and(|t| dead(t.as_str()).is_some());
        if failovering_dead && (!failover || view.failover_marks.contains(item)) {
            writes.push(vec![Op::delete(
                JobNode::ShardingFailovering(*item).to_path(job),
            )]);
        }
    }
    writes
}

/// The records a registering instance clears, from a session of its own that ended: `running`
/// markers and `failovering` records naming it describe runs that are over (a new registration
/// runs nothing yet; the runs of an actor tree that was replaced were cancelled). Nobody else
/// clears them while the instance is live: a stale `running` stalls the leader's reshard, and a
/// stale `failovering` has the item failed over when the instance later leaves, beside whatever
/// run the item's owner has begun since.
pub fn own_stale_records(view: &JobView, job: &JobName, me: &InstanceId) -> Vec<Op> {
    let mut ops = Vec::new();
    for (item, v) in &view.items {
        if v.running.as_deref() == Some(me.as_str()) {
            ops.push(Op::delete(JobNode::ShardingRunning(*item).to_path(job)));
        }
        if v.failovering.as_ref() == Some(me) {
            ops.push(Op::delete(JobNode::ShardingFailovering(*item).to_path(job)));
        }
    }
    ops
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::fixtures::*;
    use crate::model::CreateMode;
    use crate::types::ShardItem;

    #[test]
    fn records_of_dead_owners_are_cleared_and_live_ones_kept() {
        let a = inst("10.0.0.1@-@1");
        let dead = inst("10.0.0.9@-@9");
        let v = owned(view(&[&a], Some(&a)), &[(0, &a), (1, &a), (2, &a)]);
        let v = with_item(v, 0, |i| i.running = Some(a.to_string()));
        let v = with_item(v, 1, |i| i.running = Some(dead.to_string()));
        let v = with_item(v, 2, |i| {
            i.failover = Some(dead.clone());
            i.failovering = Some(dead.clone())
        });
        assert_eq!(
            stale_records(&v, &job(), false),
            vec![
                vec![
                    Op::create("/orders/instances/10.0.0.9@-@9", "", CreateMode::Ephemeral),
                    Op::delete("/orders/instances/10.0.0.9@-@9"),
                    Op::delete("/orders/sharding/1/running"),
                ],
                vec![Op::delete("/orders/sharding/2/failover")],
                vec![Op::delete("/orders/sharding/2/failovering")],
            ]
        );
    }

    #[test]
    fn with_failover_on_a_dead_owners_running_record_waits_until_its_item_is_marked() {
        let a = inst("10.0.0.1@-@1");
        let dead = inst("10.0.0.9@-@9");
        let v = with_item(owned(view(&[&a], Some(&a)), &[(0, &a)]), 0, |i| {
            i.running = Some(dead.to_string())
        });
        assert!(
            stale_records(&v, &job(), true).is_empty(),
            "not yet marked: kept"
        );
        let mut marked = v.clone();
        marked.failover_marks.insert(ShardItem(0));
        assert_eq!(
            stale_records(&marked, &job(), true),
            vec![vec![
                Op::create("/orders/instances/10.0.0.9@-@9", "", CreateMode::Ephemeral),
                Op::delete("/orders/instances/10.0.0.9@-@9"),
                Op::delete("/orders/sharding/0/running"),
            ]]
        );
    }

    #[test]
    fn a_registering_instance_clears_its_own_running_and_failovering_records_only() {
        let a = inst("10.0.0.1@-@1");
        let b = inst("10.0.0.2@-@1");
        let v = owned(view(&[&a, &b], Some(&a)), &[(0, &a), (1, &b), (2, &b)]);
        let v = with_item(v, 0, |i| i.running = Some(a.to_string()));
        let v = with_item(v, 1, |i| {
            i.running = Some(a.to_string());
            i.failovering = Some(a.clone())
        });
        let v = with_item(v, 2, |i| {
            i.running = Some(b.to_string());
            i.failovering = Some(a.clone())
        });
        assert_eq!(
            own_stale_records(&v, &job(), &a),
            vec![
                Op::delete("/orders/sharding/0/running"),
                Op::delete("/orders/sharding/1/running"),
                Op::delete("/orders/sharding/1/failovering"),
                Op::delete("/orders/sharding/2/failovering"),
            ]
        );
        assert_eq!(
            own_stale_records(&v, &job(), &b),
            vec![Op::delete("/orders/sharding/2/running"),]
        );
    }
}
