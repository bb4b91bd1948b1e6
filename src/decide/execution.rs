//! One fire of one job on one instance: which items run, which are skipped because they still
//! run (and flagged `misfire`), and the writes before and after the run.
//!
//! The instance's own knowledge of what it runs and of the markers it wrote comes in as
//! [`LocalRuns`]: the mirror may not yet hold the instance's latest writes, and no registry read
//! may sit on this path.

use std::collections::BTreeSet;

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
}

/// What this instance knows of its own runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LocalRuns {
    /// Items running here now.
    pub running: BTreeSet<ShardItem>,
    /// Items whose `misfire` node this instance wrote and has not removed.
    pub misfire_flagged: BTreeSet<ShardItem>,
    /// Items whose `running` marker this instance wrote ahead of a fire
    /// ([`super::prepare::plan_prepare`]) and that no run has used yet.
    pub marked: BTreeSet<ShardItem>,
    /// Items marked whose marker write has not answered yet (it is not awaited: the fire runs
    /// them at its instant, and a refused marker is the machine's next input).
    pub unconfirmed: BTreeSet<ShardItem>,
    /// Items whose `running` marker this instance deleted at the end of a run while the mirror
    /// may still show it (its data possibly unread): such a marker is not someone else's run.
    pub ended: BTreeSet<ShardItem>,
}

impl LocalRuns {
    /// Gives back the memory of the sets that are empty: a `BTreeSet` keeps its node when its
    /// last item is removed, and ten thousand idle jobs would each keep three.
    pub fn release_empty(&mut self) {
        for set in [
            &mut self.running,
            &mut self.misfire_flagged,
            &mut self.marked,
            &mut self.unconfirmed,
            &mut self.ended,
        ] {
            if set.is_empty() {
                *set = BTreeSet::new();
            }
        }
    }
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
    for (item, v) in &view.items {
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
mod tests {
    use super::*;
    use crate::decide::fixtures::*;

    /// The guard binding an item's start to the plan it was planned under.
    fn check(i: u32) -> Op {
        Op::Check {
            path: format!("/orders/sharding/{i}/instance"),
            version: 0,
        }
    }

    const MONITORED: FireSettings = FireSettings {
        monitor_execution: true,
        failover: false,
        misfire: true,
        allow_overlap: false,
    };

    #[test]
    fn a_fire_runs_own_enabled_items_with_one_write_before_and_one_after() {
        let a = inst("10.0.0.1@-@1");
        let b = inst("10.0.0.2@-@1");
        let v = owned(
            view(&[&a, &b], Some(&a)),
            &[(0, &a), (1, &b), (2, &a), (3, &a)],
        );
        let v = with_item(v, 3, |i| i.disabled = true);
        let plan = plan_run(&v, &job(), &a, MONITORED, &LocalRuns::default(), None);
        assert_eq!(plan.run, vec![ShardItem(0), ShardItem(2)]);
        assert_eq!(
            plan.start_ops,
            vec![
                check(0),
                Op::create(
                    "/orders/sharding/0/running",
                    a.as_str(),
                    CreateMode::Ephemeral
                ),
                check(2),
                Op::create(
                    "/orders/sharding/2/running",
                    a.as_str(),
                    CreateMode::Ephemeral
                ),
            ]
        );
        assert_eq!(
            plan.end_ops,
            vec![
                Op::delete("/orders/sharding/0/running"),
                Op::delete("/orders/sharding/2/running")
            ]
        );
    }

    #[test]
    fn items_still_running_are_skipped_and_flagged_misfire_once() {
        let a = inst("10.0.0.1@-@1");
        let v = owned(view(&[&a], Some(&a)), &[(0, &a), (1, &a)]);
        let local = LocalRuns {
            running: [ShardItem(1)].into(),
            ..Default::default()
        };
        let plan = plan_run(&v, &job(), &a, MONITORED, &local, None);
        assert_eq!(
            (plan.run.clone(), plan.skipped.clone()),
            (vec![ShardItem(0)], vec![ShardItem(1)])
        );
        assert!(plan.start_ops.contains(&Op::create(
            "/orders/sharding/1/misfire",
            "",
            CreateMode::Persistent
        )));
        let local = LocalRuns {
            misfire_flagged: [ShardItem(1)].into(),
            ..local
        };
        let again = plan_run(&v, &job(), &a, MONITORED, &local, None);
        assert!(
            again.flagged.is_empty(),
            "a flagged item is not flagged twice"
        );
    }

    #[test]
    fn a_catch_up_run_removes_the_misfire_flag_in_its_start_write() {
        let a = inst("10.0.0.1@-@1");
        let v = owned(view(&[&a], Some(&a)), &[(0, &a), (1, &a)]);
        let local = LocalRuns {
            misfire_flagged: [ShardItem(1)].into(),
            ..Default::default()
        };
        let only = [ShardItem(1)].into();
        let plan = plan_run(&v, &job(), &a, MONITORED, &local, Some(&only));
        assert_eq!(plan.run, vec![ShardItem(1)]);
        assert_eq!(
            plan.start_ops,
            vec![
                check(1),
                Op::create(
                    "/orders/sharding/1/running",
                    a.as_str(),
                    CreateMode::Ephemeral
                ),
                Op::delete("/orders/sharding/1/misfire"),
            ]
        );
    }

    #[test]
    fn without_monitor_execution_a_run_writes_nothing() {
        let a = inst("10.0.0.1@-@1");
        let v = owned(view(&[&a], Some(&a)), &[(0, &a)]);
        let s = FireSettings {
            monitor_execution: false,
            failover: false,
            misfire: true,
            allow_overlap: false,
        };
        let plan = plan_run(&v, &job(), &a, s, &LocalRuns::default(), None);
        assert_eq!(plan.run, vec![ShardItem(0)]);
        assert!(plan.start_ops.is_empty() && plan.end_ops.is_empty());
    }

    #[test]
    fn with_allow_overlap_an_item_running_here_runs_again_beside_itself() {
        let a = inst("10.0.0.1@-@1");
        let v = owned(view(&[&a], Some(&a)), &[(0, &a), (1, &a)]);
        let local = LocalRuns {
            running: [ShardItem(1)].into(),
            ..Default::default()
        };
        let s = FireSettings {
            monitor_execution: false,
            failover: false,
            misfire: true,
            allow_overlap: true,
        };
        let plan = plan_run(&v, &job(), &a, s, &local, None);
        assert_eq!(plan.run, vec![ShardItem(0), ShardItem(1)]);
        assert!(plan.skipped.is_empty() && plan.start_ops.is_empty());
        let elsewhere = with_item(v, 0, |i| i.running = Some("10.0.0.2@-@1".into()));
        let plan = plan_run(&elsewhere, &job(), &a, s, &local, None);
        assert_eq!(
            (plan.run, plan.skipped),
            (vec![ShardItem(1)], vec![ShardItem(0)]),
            "a run on another instance is not this instance's to overlap"
        );
    }

    #[test]
    fn with_failover_running_markers_are_persistent_and_stale_ones_are_replaced() {
        let a = inst("10.0.0.1@-@1");
        let v = with_item(owned(view(&[&a], Some(&a)), &[(0, &a)]), 0, |i| {
            i.running = Some(a.to_string())
        });
        let s = FireSettings {
            monitor_execution: true,
            failover: true,
            misfire: false,
            allow_overlap: false,
        };
        let plan = plan_run(&v, &job(), &a, s, &LocalRuns::default(), None);
        assert_eq!(
            plan.start_ops,
            vec![
                check(0),
                Op::delete("/orders/sharding/0/running"),
                Op::create(
                    "/orders/sharding/0/running",
                    a.as_str(),
                    CreateMode::Persistent
                ),
            ]
        );
    }

    #[test]
    fn marked_items_run_with_no_write_and_markers_of_items_lost_meanwhile_are_released() {
        let a = inst("10.0.0.1@-@1");
        let b = inst("10.0.0.2@-@1");
        // Items 0 and 1 were marked ahead; item 1 went to b since. The mirror may show the
        // markers with their data unread (empty).
        let v = owned(view(&[&a, &b], Some(&a)), &[(0, &a), (1, &b), (2, &a)]);
        let v = with_item(v, 0, |i| i.running = Some(String::new()));
        let v = with_item(v, 1, |i| i.running = Some(a.to_string()));
        let local = LocalRuns {
            marked: [ShardItem(0), ShardItem(1)].into(),
            ..Default::default()
        };
        let plan = plan_run(&v, &job(), &a, MONITORED, &local, None);
        assert_eq!(plan.run, vec![ShardItem(0), ShardItem(2)]);
        assert!(
            plan.skipped.is_empty(),
            "a marked item is not running elsewhere"
        );
        assert_eq!(
            plan.start_ops,
            vec![
                check(2),
                Op::create(
                    "/orders/sharding/2/running",
                    a.as_str(),
                    CreateMode::Ephemeral
                ),
                Op::delete("/orders/sharding/1/running"),
            ]
        );
        assert_eq!(
            plan.end_ops,
            vec![
                Op::delete("/orders/sharding/0/running"),
                Op::delete("/orders/sharding/2/running")
            ]
        );
        assert_eq!(plan.unmarked, vec![ShardItem(0), ShardItem(1)]);
    }

    #[test]
    fn a_catch_up_run_keeps_the_marks_of_items_it_does_not_run() {
        let a = inst("10.0.0.1@-@1");
        let v = owned(view(&[&a], Some(&a)), &[(0, &a), (1, &a)]);
        let local = LocalRuns {
            marked: [ShardItem(0)].into(),
            misfire_flagged: [ShardItem(1)].into(),
            ..Default::default()
        };
        let only = [ShardItem(1)].into();
        let plan = plan_run(&v, &job(), &a, MONITORED, &local, Some(&only));
        assert_eq!(plan.run, vec![ShardItem(1)]);
        assert!(plan.unmarked.is_empty());
    }

    #[test]
    fn a_marker_this_instance_just_deleted_is_not_a_run_elsewhere_even_with_its_data_unread() {
        let a = inst("10.0.0.1@-@1");
        // The mirror still shows the marker of the run that just ended, its owner unread.
        let v = with_item(owned(view(&[&a], Some(&a)), &[(0, &a)]), 0, |i| {
            i.running = Some(String::new())
        });
        let local = LocalRuns {
            misfire_flagged: [ShardItem(0)].into(),
            ended: [ShardItem(0)].into(),
            ..Default::default()
        };
        let only = [ShardItem(0)].into();
        let plan = plan_run(&v, &job(), &a, MONITORED, &local, Some(&only));
        assert_eq!(plan.run, vec![ShardItem(0)], "the misfire catch-up runs");
        let unknown = LocalRuns {
            ended: BTreeSet::new(),
            ..local
        };
        let plan = plan_run(&v, &job(), &a, MONITORED, &unknown, Some(&only));
        assert!(
            plan.run.is_empty(),
            "an unknown marker is someone else's run"
        );
    }

    #[test]
    fn an_item_still_running_on_its_previous_owner_is_skipped() {
        let a = inst("10.0.0.1@-@1");
        let b = inst("10.0.0.2@-@1");
        let v = with_item(owned(view(&[&a, &b], Some(&a)), &[(0, &a)]), 0, |i| {
            i.running = Some(b.to_string())
        });
        let plan = plan_run(&v, &job(), &a, MONITORED, &LocalRuns::default(), None);
        assert!(plan.run.is_empty());
        assert_eq!(plan.skipped, vec![ShardItem(0)]);
    }
}
