//! Table tests of one fire's plan: which items run or are skipped, the writes before and after
//! the run under each setting (monitoring, overlap, failover), catch-up runs and lost markers.

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
    total: 10,
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
fn items_of_a_plan_beyond_a_lowered_count_neither_run_nor_are_marked_nor_flagged() {
    // The count went from 6 to 2; the leader has not resharded yet: the plan still names items
    // 2..6, two of them running here, one with its marker written ahead.
    let a = inst("10.0.0.1@-@1");
    let v = owned(
        view(&[&a], Some(&a)),
        &[(0, &a), (1, &a), (2, &a), (3, &a), (4, &a), (5, &a)],
    );
    let local = LocalRuns {
        running: [ShardItem(3), ShardItem(4)].into(),
        marked: [ShardItem(5)].into(),
        ..Default::default()
    };
    let lowered = FireSettings {
        total: 2,
        ..MONITORED
    };
    let plan = plan_run(&v, &job(), &a, lowered, &local, None);
    assert_eq!(plan.run, vec![ShardItem(0), ShardItem(1)]);
    assert!(plan.skipped.is_empty() && plan.flagged.is_empty() && plan.unmarked.is_empty());
    let only: BTreeSet<ShardItem> = [ShardItem(1), ShardItem(2)].into();
    let plan = plan_run(&v, &job(), &a, lowered, &local, Some(&only));
    assert_eq!(
        plan.run,
        vec![ShardItem(1)],
        "a re-run of named items as well"
    );
    let prepared = crate::decide::prepare::plan_prepare(&v, &job(), &a, lowered, &local);
    assert_eq!(prepared.items, vec![ShardItem(0), ShardItem(1)]);
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
        total: 10,
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
        total: 10,
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
        total: 10,
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
        ended: Default::default(),
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
