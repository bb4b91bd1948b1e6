//! Writing a fire's `running` markers just ahead of its instant, so that the instant itself needs
//! no registry write: the trigger asks each monitored job to prepare a little before the cron
//! instant, the markers of the items that are free go out in one multi-op, and the fire then runs
//! those items at once ([`LocalRuns::marked`] in [`plan_run`](super::execution::plan_run)).
//!
//! Only items plainly free are marked: owned, enabled, not running here or elsewhere, no `misfire`
//! flag, no marker at all. Anything else is decided at the instant, as before.

use crate::model::{CreateMode, Op};
use crate::paths::JobNode;
use crate::types::{InstanceId, JobName, ShardItem};
use crate::view::JobView;

use super::execution::{FireSettings, LocalRuns};

/// The markers to write ahead of a fire.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PreparePlan {
    /// Items marked by `ops`, ascending.
    pub items: Vec<ShardItem>,
    /// One multi-op creating their `running` markers.
    pub ops: Vec<Op>,
}

/// Plans the markers of the coming fire. Nothing when the job does not monitor executions, when
/// resharding is pending (its leader waits for running items to end), or when no item is free.
pub fn plan_prepare(
    view: &JobView,
    job: &JobName,
    me: &InstanceId,
    settings: FireSettings,
    local: &LocalRuns,
) -> PreparePlan {
    let mut plan = PreparePlan::default();
    if !settings.monitor_execution || view.sharding_necessary || view.sharding_processing {
        return plan;
    }
    let mode = if settings.failover {
        CreateMode::Persistent
    } else {
        CreateMode::Ephemeral
    };
    for (item, v) in view.items.range(..ShardItem(settings.total)) {
        let free = v.owner.as_ref() == Some(me)
            && !v.disabled
            && !super::failover::taken_off(v, settings.failover)
            && (v.running.is_none() || local.ended.contains(item))
            && !v.misfire
            && !local.running.contains(item)
            && !local.marked.contains(item)
            && !local.misfire_flagged.contains(item);
        if free {
            plan.items.push(*item);
            plan.ops.push(Op::create(
                JobNode::ShardingRunning(*item).to_path(job),
                me.as_str(),
                mode,
            ));
        }
    }
    plan
}

/// The deletions that release marked items no run will use (the job is drained, removed,
/// rescheduled, or parks its fire for a reshard).
pub fn release_ops(job: &JobName, marked: impl IntoIterator<Item = ShardItem>) -> Vec<Op> {
    marked
        .into_iter()
        .map(|item| Op::delete(JobNode::ShardingRunning(item).to_path(job)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::fixtures::*;

    const MONITORED: FireSettings = FireSettings {
        monitor_execution: true,
        failover: true,
        misfire: true,
        allow_overlap: false,
        total: 10,
    };

    #[test]
    fn only_free_owned_items_are_marked_in_one_multi_op() {
        let a = inst("10.0.0.1@-@1");
        let b = inst("10.0.0.2@-@1");
        let v = owned(
            view(&[&a, &b], Some(&a)),
            &[
                (0, &a),
                (1, &b),
                (2, &a),
                (3, &a),
                (4, &a),
                (5, &a),
                (6, &a),
            ],
        );
        let v = with_item(v, 2, |i| i.disabled = true);
        let v = with_item(v, 3, |i| i.running = Some(b.to_string()));
        let v = with_item(v, 4, |i| i.misfire = true);
        let local = LocalRuns {
            running: [ShardItem(5)].into(),
            marked: [ShardItem(6)].into(),
            ..Default::default()
        };
        let plan = plan_prepare(&v, &job(), &a, MONITORED, &local);
        assert_eq!(plan.items, vec![ShardItem(0)]);
        assert_eq!(
            plan.ops,
            vec![Op::create(
                "/orders/sharding/0/running",
                a.as_str(),
                CreateMode::Persistent
            )]
        );
    }

    #[test]
    fn nothing_is_marked_without_monitor_execution_or_while_resharding_is_pending() {
        let a = inst("10.0.0.1@-@1");
        let v = owned(view(&[&a], Some(&a)), &[(0, &a)]);
        let off = FireSettings {
            monitor_execution: false,
            ..MONITORED
        };
        let none = LocalRuns::default();
        assert_eq!(
            plan_prepare(&v, &job(), &a, off, &none),
            PreparePlan::default()
        );
        for (necessary, processing) in [(true, false), (false, true)] {
            let mut v = v.clone();
            v.sharding_necessary = necessary;
            v.sharding_processing = processing;
            assert_eq!(
                plan_prepare(&v, &job(), &a, MONITORED, &none),
                PreparePlan::default()
            );
        }
    }

    #[test]
    fn ephemeral_markers_without_failover_and_releases_delete_them() {
        let a = inst("10.0.0.1@-@1");
        let v = owned(view(&[&a], Some(&a)), &[(0, &a), (1, &a)]);
        let s = FireSettings {
            failover: false,
            ..MONITORED
        };
        let plan = plan_prepare(&v, &job(), &a, s, &LocalRuns::default());
        assert!(plan.ops.iter().all(|op| matches!(
            op,
            Op::Create {
                mode: CreateMode::Ephemeral,
                ..
            }
        )));
        assert_eq!(
            release_ops(&job(), plan.items),
            vec![
                Op::delete("/orders/sharding/0/running"),
                Op::delete("/orders/sharding/1/running")
            ]
        );
    }
}
