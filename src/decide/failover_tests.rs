//! Table tests of the failover decisions: which items are marked, which a claim takes and its one
//! multi-op, and the writes that end a taken-over run.

use super::*;
use crate::decide::fixtures::*;

fn running(v: JobView, i: u32, who: &InstanceId) -> JobView {
    with_item(v, i, |it| it.running = Some(who.to_string()))
}

fn marked(mut v: JobView, items: &[u32]) -> JobView {
    v.failover_marks.extend(items.iter().map(|i| ShardItem(*i)));
    v
}

/// The guard that `who` is still absent from `instances/`: its node created and deleted.
fn gone_guard(who: &InstanceId) -> Vec<Op> {
    let instance = format!("/orders/instances/{who}");
    vec![
        Op::create(instance.clone(), "", CreateMode::Ephemeral),
        Op::delete(instance),
    ]
}

/// The mark of item `i` after the guards: the mark, the no-taker guard, and the deletion of its
/// `running` (which also proves the run is still recorded).
fn mark_body(i: u32) -> Vec<Op> {
    let failover = format!("/orders/sharding/{i}/failover");
    vec![
        Op::create(
            format!("/orders/leader/failover/items/{i}"),
            "",
            CreateMode::Persistent,
        ),
        Op::create(failover.clone(), "", CreateMode::Ephemeral),
        Op::delete(failover),
        Op::delete(format!("/orders/sharding/{i}/running")),
    ]
}

/// The guarded multi-op marking item `i` of `who`, a vanished owner.
fn mark_op(i: u32, who: &InstanceId) -> Vec<Op> {
    let mut ops = gone_guard(who);
    ops.extend(mark_body(i));
    ops
}

/// Finishing a marker on item `i`, already marked: its `running` deleted under the guards that
/// `who` is still gone and no taker holds the item.
fn finish_op(i: u32, who: &InstanceId) -> Vec<Op> {
    let mut ops = gone_guard(who);
    ops.extend(mark_body(i).into_iter().skip(1));
    ops
}

/// Marking item `i` of `who`, a vanished taker: `failovering` is the proof; `running` goes too
/// when the view has one.
fn taker_mark_op(i: u32, who: &InstanceId, running: bool) -> Vec<Op> {
    let mut ops = gone_guard(who);
    ops.push(Op::Check {
        path: format!("/orders/sharding/{i}/failovering"),
        version: ANY_VERSION,
    });
    ops.extend(mark_body(i));
    if !running {
        ops.pop();
    }
    ops
}

#[test]
fn a_crashed_instance_has_only_the_items_it_was_running_marked() {
    let (a, b, x) = (
        inst("10.0.0.1@-@1"),
        inst("10.0.0.2@-@1"),
        inst("10.0.0.9@-@1"),
    );
    let base = owned(view(&[&a, &b], Some(&a)), &[(0, &x), (1, &x), (2, &a)]);
    let cases: Vec<(&str, JobView, Vec<Vec<Op>>)> = vec![
        (
            "running item marked, idle item left to resharding",
            running(base.clone(), 0, &x),
            vec![mark_op(0, &x)],
        ),
        (
            "an item it ran as a taker is marked again",
            with_item(base.clone(), 2, |i| i.failovering = Some(x.clone())),
            vec![taker_mark_op(2, &x, false)],
        ),
        (
            "an item it was running as a taker has its running deleted too",
            with_item(running(base.clone(), 2, &x), 2, |i| {
                i.failovering = Some(x.clone())
            }),
            vec![taker_mark_op(2, &x, true)],
        ),
        (
            "an item already marked is not marked twice, but the crashed run's running goes",
            marked(running(base.clone(), 0, &x), &[0]),
            vec![finish_op(0, &x)],
        ),
        (
            "an item already marked whose running is gone already: nothing to do",
            marked(
                with_item(base.clone(), 2, |i| i.failovering = Some(x.clone())),
                &[2],
            ),
            vec![],
        ),
        (
            "an item already marked whose running names a live instance: left alone",
            marked(
                with_item(running(base.clone(), 2, &a), 2, |i| {
                    i.failovering = Some(x.clone())
                }),
                &[2],
            ),
            vec![],
        ),
        (
            "an item a live instance took over is left alone",
            with_item(running(base.clone(), 0, &x), 0, |i| {
                i.failover = Some(b.clone())
            }),
            vec![],
        ),
        (
            "an item running on a live instance is not marked",
            running(base.clone(), 2, &a),
            vec![],
        ),
        (
            "a taken-over run cut short, its item run anew by its owner: the stale \
             failovering goes, the live run's running stays",
            with_item(running(base.clone(), 2, &a), 2, |i| {
                i.failovering = Some(x.clone())
            }),
            vec![vec![Op::delete("/orders/sharding/2/failovering")]],
        ),
    ];
    for (name, v, want) in cases {
        assert_eq!(marks_for_crashed(&v, &job(), &x), want, "{name}");
    }
}

#[test]
fn runs_of_instances_absent_from_instances_are_orphans_and_get_marked() {
    let (a, x) = (inst("10.0.0.1@-@1"), inst("10.0.0.9@-@1"));
    let base = owned(view(&[&a], Some(&a)), &[(0, &x), (1, &x), (2, &a)]);
    let cases: Vec<(&str, JobView, Vec<Vec<Op>>)> = vec![
        (
            "running of a dead owner",
            running(base.clone(), 1, &x),
            vec![mark_op(1, &x)],
        ),
        (
            "failovering of a dead taker",
            with_item(base.clone(), 2, |i| i.failovering = Some(x.clone())),
            vec![taker_mark_op(2, &x, false)],
        ),
        (
            "running of a live owner",
            running(base.clone(), 2, &a),
            vec![],
        ),
        (
            "running data that names no instance",
            with_item(base.clone(), 0, |i| i.running = Some(String::new())),
            vec![],
        ),
        (
            "failovering of a dead taker beside a live owner's run: only the record goes",
            with_item(running(base.clone(), 2, &a), 2, |i| {
                i.failovering = Some(x.clone())
            }),
            vec![vec![Op::delete("/orders/sharding/2/failovering")]],
        ),
        (
            "already marked, and its running already deleted",
            marked(owned(base.clone(), &[(1, &x)]), &[1]),
            vec![],
        ),
    ];
    for (name, v, want) in cases {
        assert_eq!(marks_for_orphans(&v, &job()), want, "{name}");
    }
}

#[test]
fn a_mark_left_by_an_earlier_crash_does_not_keep_the_next_crashed_run_of_its_item_from_a_claim() {
    // Round one left item 1 marked (its claim took item 0 only, and item 1 then ran normally);
    // the next owner of items 0 and 1, a Java instance, is killed while running both.
    let (a, x) = (inst("10.0.0.1@-@1"), inst("10.0.0.9@-@2"));
    let base = owned(view(&[&a], Some(&a)), &[(0, &x), (1, &x), (2, &a)]);
    let v = marked(running(running(base, 0, &x), 1, &x), &[1]);
    let marks = marks_for_crashed(&v, &job(), &x);
    assert_eq!(marks, vec![mark_op(0, &x), finish_op(1, &x)]);
    // Applied: both marked, neither has a `running`; the survivor, alone, claims both.
    let after = marked(
        with_item(with_item(v, 0, |i| i.running = None), 1, |i| {
            i.running = None
        }),
        &[0],
    );
    let (items, _) = claim(&after, &job(), &a, 8).expect("a claim");
    assert_eq!(items, vec![ShardItem(0), ShardItem(1)]);
}

#[test]
fn a_claim_deletes_the_mark_and_writes_the_takers_three_records_in_one_multi_op() {
    let (a, x) = (inst("10.0.0.1@-@1"), inst("10.0.0.9@-@1"));
    // As a Java or shardcron marker leaves it: the mark, and no `running`.
    let v = marked(owned(view(&[&a], Some(&a)), &[(0, &x), (1, &a)]), &[0]);
    let (items, ops) = claim(&v, &job(), &a, 8).expect("a claim");
    assert_eq!(items, vec![ShardItem(0)]);
    assert_eq!(
        ops,
        vec![
            Op::delete("/orders/leader/failover/items/0"),
            Op::create(
                "/orders/sharding/0/running",
                a.as_str(),
                CreateMode::Persistent
            ),
            Op::create(
                "/orders/sharding/0/failover",
                a.as_str(),
                CreateMode::Ephemeral
            ),
            Op::create(
                "/orders/sharding/0/failovering",
                a.as_str(),
                CreateMode::Persistent
            ),
        ]
    );
}

#[test]
fn an_instance_back_under_the_same_id_has_none_of_its_runs_marked() {
    // Killed and restarted at once (or back on a new session after an expiry): the deletion
    // seen is its old session's node; what `running` names is its new session's run.
    let (a, x) = (inst("10.0.0.1@-@1"), inst("10.0.0.9@-@1"));
    let v = running(owned(view(&[&a, &x], Some(&a)), &[(0, &x)]), 0, &x);
    assert!(marks_for_crashed(&v, &job(), &x).is_empty());
}

#[test]
fn a_mark_deletes_the_dead_owners_running_as_elasticjobs_marker_does() {
    let (a, x) = (inst("10.0.0.1@-@1"), inst("10.0.0.9@-@1"));
    let v = running(owned(view(&[&a], Some(&a)), &[(0, &x)]), 0, &x);
    let marks = marks_for_crashed(&v, &job(), &x);
    assert_eq!(marks.len(), 1);
    assert!(
        marks[0].contains(&Op::delete("/orders/sharding/0/running")),
        "a Java claimer never touches `running`, and a Java fire skips an item that has one"
    );
}

#[test]
fn a_marked_item_whose_marker_stopped_half_way_has_its_dead_running_deleted() {
    let (a, x) = (inst("10.0.0.1@-@1"), inst("10.0.0.9@-@1"));
    let v = marked(
        running(owned(view(&[&a], Some(&a)), &[(0, &x)]), 0, &x),
        &[0],
    );
    assert_eq!(marks_for_orphans(&v, &job()), vec![finish_op(0, &x)]);
    assert_eq!(
        claim(&v, &job(), &a, 8),
        None,
        "not claimable while `running` stays"
    );
}

#[test]
fn an_owner_skips_items_another_instance_took_over_only_with_failover_on() {
    let t = inst("10.0.0.3@-@1");
    let taken = ItemView {
        failover: Some(t),
        ..ItemView::default()
    };
    assert!(taken_off(&taken, true));
    assert!(!taken_off(&taken, false));
    assert!(!taken_off(&ItemView::default(), true));
}

#[test]
fn which_marked_items_a_claim_takes() {
    let (a, b, x) = (
        inst("10.0.0.1@-@1"),
        inst("10.0.0.2@-@1"),
        inst("10.0.0.9@-@1"),
    );
    let base = owned(
        view(&[&a, &b], Some(&a)),
        &[(0, &x), (1, &x), (2, &x), (3, &a)],
    );
    let claimed = |v: &JobView, max| claim(v, &job(), &a, max).map(|(items, _)| items);
    let items = |is: &[u32]| Some(is.iter().map(|i| ShardItem(*i)).collect::<Vec<_>>());
    let cases: Vec<(&str, JobView, usize, Option<Vec<ShardItem>>)> = vec![
        ("nothing marked", base.clone(), 8, None),
        (
            "several at once, lowest first",
            marked(base.clone(), &[2, 0, 1]),
            8,
            items(&[0, 1, 2]),
        ),
        (
            "no more than max_items",
            marked(base.clone(), &[0, 1, 2]),
            2,
            items(&[0, 1]),
        ),
        (
            "an item I own is left to the other instances",
            marked(base.clone(), &[3]),
            8,
            None,
        ),
        (
            "alone, I claim an item resharded to me before anyone claimed it",
            marked(owned(view(&[&a], Some(&a)), &[(3, &a)]), &[3]),
            8,
            items(&[3]),
        ),
        (
            "an item whose `running` is still there waits for its deletion",
            marked(running(base.clone(), 1, &x), &[1]),
            8,
            None,
        ),
        (
            "a taken-over run of my own earlier session is not taken by me",
            marked(
                with_item(base.clone(), 1, |i| i.failovering = Some(a.clone())),
                &[1],
            ),
            8,
            None,
        ),
        (
            "an item a live instance took over is skipped",
            marked(
                with_item(base.clone(), 0, |i| i.failover = Some(b.clone())),
                &[0, 1],
            ),
            8,
            items(&[1]),
        ),
        (
            "a mark without its sharding node is skipped",
            marked(base.clone(), &[7]),
            8,
            None,
        ),
    ];
    for (name, v, max, want) in cases {
        assert_eq!(claimed(&v, max), want, "{name}");
    }
}

#[test]
fn a_claim_of_an_item_whose_taker_crashed_replaces_the_takers_records() {
    let (a, t, x) = (
        inst("10.0.0.1@-@1"),
        inst("10.0.0.3@-@1"),
        inst("10.0.0.9@-@1"),
    );
    // As ElasticJob's marker leaves a crashed taker's item: mark, `failovering` kept,
    // `running` deleted.
    let v = marked(
        with_item(owned(view(&[&a], None), &[(0, &x)]), 0, |i| {
            i.failovering = Some(t.clone())
        }),
        &[0],
    );
    let (_, ops) = claim(&v, &job(), &a, 1).expect("a claim");
    assert_eq!(ops[0], Op::delete("/orders/leader/failover/items/0"));
    assert_eq!(ops[1], Op::delete("/orders/sharding/0/failovering"));
    assert!(ops.contains(&Op::create(
        "/orders/sharding/0/failovering",
        a.as_str(),
        CreateMode::Persistent
    )));
}

#[test]
fn a_taken_over_run_ends_by_deleting_the_takers_three_records() {
    assert_eq!(
        finish_ops(&job(), &[ShardItem(2)]),
        vec![
            Op::delete("/orders/sharding/2/running"),
            Op::delete("/orders/sharding/2/failover"),
            Op::delete("/orders/sharding/2/failovering"),
        ]
    );
}
