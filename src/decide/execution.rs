//! One fire of one job on one instance: which items run, which are skipped because they still
//! run (and flagged `misfire`), and the writes before and after the run.
//!
//! The instance's own knowledge of what it runs and of the markers it wrote comes in as
//! [`LocalRuns`]: the mirror may not yet hold the instance's latest writes, and no registry read
//! may sit on this path.

use std::collections::BTreeSet;

use super::item_set::ItemSet;
use crate::model::{CreateMode, Op};
use crate::paths::JobNode;
use crate::types::{InstanceId, JobName, ShardItem};
use crate::view::JobView;

/// The job settings a fire depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FireSettings {
    /// `monitorExecution`: write `running` markers.
    pub monitor_execution: bool,
    /// `failover`: `running` markers are persistent so a survivor can see them after a crash.
    pub failover: bool,
    /// `misfire`: flag skipped items and run them once after the current run.
    pub misfire: bool,
    /// `shardcron.overlap: allow_all`: an item running here runs again beside itself (the job
    /// writes no `running` markers: `monitorExecution` is off).
    pub allow_overlap: bool,
    /// `shardingTotalCount`: only items below it exist. A plan of a larger count (the count was
    /// just lowered, the leader has not resharded yet) still names items beyond it; they never
    /// run (ElasticJob reads an instance's items for `0..shardingTotalCount` only).
    pub total: u32,
}

/// What this instance knows of its own runs. Each set frees its memory as its last item goes
/// ([`ItemSet`]): ten thousand idle jobs hold none.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LocalRuns {
    /// Items running here now.
    pub running: ItemSet,
    /// Items whose `misfire` node this instance wrote and has not removed.
    pub misfire_flagged: ItemSet,
    /// Items whose `running` marker this instance wrote ahead of a fire
    /// ([`super::prepare::plan_prepare`]) and that no run has used yet.
    pub marked: ItemSet,
    /// Items marked whose marker write has not answered yet (it is not awaited: the fire runs
    /// them at its instant, and a refused marker is the machine's next input).
    pub unconfirmed: ItemSet,
    /// Items whose `running` marker this instance deleted at the end of a run while the mirror
    /// may still show it (its data possibly unread): such a marker is not someone else's run.
    pub ended: ItemSet,
}

/// The decision for one fire.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunPlan {
    /// Items to run now, ascending.
    pub run: Vec<ShardItem>,
    /// Items skipped because they still run (here or, after a reshard, on their previous owner).
    pub skipped: Vec<ShardItem>,
    /// Items newly flagged `misfire` by this plan.
    pub flagged: Vec<ShardItem>,
    /// Writes before the run: one multi-op.
    pub start_ops: Vec<Op>,
    /// Writes after the run: one multi-op.
    pub end_ops: Vec<Op>,
    /// Marked items ([`LocalRuns::marked`]) this plan uses or releases; once `start_ops` are
    /// written they are no longer marked.
    pub unmarked: Vec<ShardItem>,
}

/// Plans a fire. `only` restricts the run to some items (a misfire catch-up); otherwise every item
/// the view assigns to `me` is considered.
pub fn plan_run(
    view: &JobView,
    job: &JobName,
    me: &InstanceId,
    settings: FireSettings,
    local: &LocalRuns,
    only: Option<&BTreeSet<ShardItem>>,
) -> RunPlan {
    let mut plan = RunPlan::default();
    for (item, v) in view.items.range(..ShardItem(settings.total)) {
        if v.owner.as_ref() != Some(me) || v.disabled {
            continue;
        }
        if only.is_some_and(|o| !o.contains(item)) {
            continue;
        }
        if super::failover::taken_off(v, settings.failover) && !local.marked.contains(item) {
            // Another instance took it over: its until that run ends (ElasticJob's take-off).
            continue;
        }
        if local.marked.contains(item) && !local.running.contains(item) {
            // Its marker was written ahead of the instant (or is on its way: a marker the mirror
            // shows meanwhile may be ours with its data unread, so its answer decides, not the
            // mirror): it runs with no write now.
            plan.run.push(*item);
            plan.unmarked.push(*item);
            if settings.monitor_execution {
                plan.end_ops
                    .push(Op::delete(JobNode::ShardingRunning(*item).to_path(job)));
            }
            continue;
        }
        let running_elsewhere =
            v.running.as_deref().is_some_and(|r| r != me.as_str()) && !local.ended.contains(item);
        let running_here = local.running.contains(item) && !settings.allow_overlap;
        if running_here || running_elsewhere {
            plan.skipped.push(*item);
            let flagged = v.misfire || local.misfire_flagged.contains(item);
            if settings.misfire && !flagged {
                plan.flagged.push(*item);
                if settings.monitor_execution {
                    plan.start_ops.push(Op::create(
                        JobNode::ShardingMisfire(*item).to_path(job),
                        "",
                        CreateMode::Persistent,
                    ));
                }
            }
            continue;
        }
        plan.run.push(*item);
        if settings.monitor_execution {
            // Bound to the plan it was planned under: a commit of a new plan that this mirror
            // has not shown yet changes the owner node's version and fails the whole write, so
            // the old owner never starts an item the new owner starts for the same fire.
            plan.start_ops.push(Op::Check {
                path: JobNode::ShardingInstance(*item).to_path(job),
                version: v.owner_version,
            });
            // A marker naming this instance that it does not know of is left from an earlier
            // incarnation (actor restart): replace it in the same multi-op.
            let running = JobNode::ShardingRunning(*item).to_path(job);
            if v.running.is_some() {
                plan.start_ops.push(Op::delete(running.clone()));
            }
            let mode = if settings.failover {
                CreateMode::Persistent
            } else {
                CreateMode::Ephemeral
            };
            plan.start_ops
                .push(Op::create(running.clone(), me.as_str(), mode));
            if v.misfire || local.misfire_flagged.contains(item) {
                plan.start_ops
                    .push(Op::delete(JobNode::ShardingMisfire(*item).to_path(job)));
            }
            plan.end_ops.push(Op::delete(running));
        }
    }
    // Markers written ahead for items this instance no longer runs (reassigned, disabled) go in
    // the same write.
    for item in &local.marked {
        let mine = view
            .items
            .get(item)
            .is_some_and(|v| v.owner.as_ref() == Some(me) && !v.disabled);
        if !mine && !local.running.contains(item) {
            plan.start_ops
                .push(Op::delete(JobNode::ShardingRunning(*item).to_path(job)));
            plan.unmarked.push(*item);
        }
    }
    plan
}

#[cfg(test)]
mod tests;
