//! Failover (ElasticJob 3.0.2+ semantics, claimed atomically): which items of a vanished instance
//! are marked in `leader/failover/items/{i}`, which marked items an idle instance claims and the one
//! multi-op that claims them, and the writes that end a taken-over run.
//!
//! Only items that were *running* are failed over: an item its owner held but was not running is
//! resharded by the leader and runs at its next fire. A claim replaces ElasticJob's latch with one
//! transaction that deletes the mark, so two claimants can never both win an item: the loser's
//! delete fails and nothing of its claim applies.

use crate::paths::JobNode;
use crate::registry::{CreateMode, Op, ANY_VERSION};
use crate::types::{InstanceId, JobName, ShardItem};
use crate::view::{ItemView, JobView};

/// Whether the item is already taken over by a live instance other than `gone`: then its run is in
/// good hands and marking it again would run it twice.
fn taken_by_live(view: &JobView, v: &ItemView, gone: Option<&InstanceId>) -> bool {
    v.failover
        .as_ref()
        .is_some_and(|t| Some(t) != gone && view.instances.contains(t))
}

/// Whether `gone` is back in `instances/` (a restart under the same id, or a new session after
/// an expiry): its node's deletion was an older session's, and what its `running` markers name
/// may be its new session's runs. Such an instance's runs are never failed over.
fn back(view: &JobView, gone: &InstanceId) -> bool {
    view.instances.contains(gone)
}

/// Whether the item's `running` names a live instance: its owner is back and running it, so a
/// claim would run it twice.
fn run_by_live(view: &JobView, v: &ItemView) -> bool {
    v.running
        .as_deref()
        .and_then(|r| InstanceId::parse(r).ok())
        .is_some_and(|r| view.instances.contains(&r))
}

/// One item's mark, as a multi-op that applies only while the run it fails over is as the view
/// saw it: `proof` (the node naming the vanished instance) still exists, and no instance holds the
/// item's `failover` (creating and deleting it in the same multi-op fails when one exists). A
/// survivor whose view lags behind another survivor's claim, or behind the re-run that followed,
/// so marks nothing; unguarded, its late mark had the item run a second time.
fn mark(job: &JobName, item: ShardItem, proof: JobNode) -> Vec<Op> {
    let failover = JobNode::ShardingFailover(item).to_path(job);
    vec![
        Op::Check {
            path: proof.to_path(job),
            version: ANY_VERSION,
        },
        Op::create(
            JobNode::LeaderFailoverItem(item).to_path(job),
            "",
            CreateMode::Persistent,
        ),
        Op::create(failover.clone(), "", CreateMode::Ephemeral),
        Op::delete(failover),
    ]
}

/// The node that shows who ran `item` when that instance vanished: its `failovering` when it ran
/// the item as a taker, else its `running`.
fn proof(v: &ItemView, item: ShardItem, gone: &InstanceId) -> JobNode {
    if v.failovering.as_ref() == Some(gone) {
        JobNode::ShardingFailovering(item)
    } else {
        JobNode::ShardingRunning(item)
    }
}

/// The marks to create when `crashed` vanished from `instances/`: every item it was running
/// (`running` names it) or running as a taker (`failovering` names it), unless already marked or
/// taken over by a live instance; one guarded multi-op per item (see `mark`). The caller creates
/// the marks' parent first and tolerates a multi-op that fails (marked meanwhile, or no longer
/// needed).
pub fn marks_for_crashed(view: &JobView, job: &JobName, crashed: &InstanceId) -> Vec<Vec<Op>> {
    if back(view, crashed) {
        return Vec::new();
    }
    view.items
        .iter()
        .filter(|(item, v)| {
            let ran = v.running.as_deref() == Some(crashed.as_str())
                || v.failovering.as_ref() == Some(crashed);
            ran && !view.failover_marks.contains(item) && !taken_by_live(view, v, Some(crashed))
        })
        .map(|(item, v)| mark(job, *item, proof(v, *item, crashed)))
        .collect()
}

/// The marks to create for runs whose instance is gone without this instance having seen it go
/// (the whole cluster was down, or the event was lost): a `running` or `failovering` naming an
/// instance absent from `instances/`. A `running` whose data is not an instance id (an older
/// writer) cannot be attributed and is left to the reconcile.
pub fn marks_for_orphans(view: &JobView, job: &JobName) -> Vec<Vec<Op>> {
    let gone = |id: &InstanceId| !view.instances.contains(id);
    view.items
        .iter()
        .filter(|(item, v)| {
            let running_gone = v
                .running
                .as_deref()
                .and_then(|r| InstanceId::parse(r).ok())
                .is_some_and(|r| gone(&r));
            let failovering_gone = v.failovering.as_ref().is_some_and(gone);
            (running_gone || failovering_gone)
                && !view.failover_marks.contains(item)
                && !taken_by_live(view, v, None)
        })
        .map(|(item, v)| {
            let taker_gone = v.failovering.as_ref().is_some_and(gone);
            let proof = if taker_gone {
                JobNode::ShardingFailovering(*item)
            } else {
                JobNode::ShardingRunning(*item)
            };
            mark(job, *item, proof)
        })
        .collect()
}

/// Claims up to `max_items` marked items for `me`, lowest first, as one multi-op: per item it
/// deletes the mark (first, so a lost race fails on it), replaces a stale `running` or
/// `failovering` with ones naming `me` (persistent, so a crash of `me` fails the item over again),
/// and creates the ephemeral `failover` naming `me`. `None` when nothing can be claimed.
///
/// Items `me` owns, or whose `running`/`failovering` names `me`, are left to others: such a mark
/// comes from an earlier session of this very process, whose run may still be going here, and the
/// item is `me`'s again at its next fire. Marks on items without a `sharding/{i}` node cannot
/// take children and are skipped.
pub fn claim(
    view: &JobView,
    job: &JobName,
    me: &InstanceId,
    max_items: usize,
) -> Option<(Vec<ShardItem>, Vec<Op>)> {
    let path = |n: JobNode| n.to_path(job);
    let mut items = Vec::new();
    let mut ops = Vec::new();
    for item in &view.failover_marks {
        if items.len() >= max_items {
            break;
        }
        let Some(v) = view.items.get(item) else {
            continue;
        };
        let mine = v.owner.as_ref() == Some(me)
            || v.running.as_deref() == Some(me.as_str())
            || v.failovering.as_ref() == Some(me);
        if mine || taken_by_live(view, v, None) || run_by_live(view, v) {
            continue;
        }
        let item = *item;
        ops.push(Op::delete(path(JobNode::LeaderFailoverItem(item))));
        let stale = [
            (v.running.is_some(), JobNode::ShardingRunning(item)),
            (v.failover.is_some(), JobNode::ShardingFailover(item)),
            (v.failovering.is_some(), JobNode::ShardingFailovering(item)),
        ];
        for (present, node) in stale {
            if present {
                ops.push(Op::delete(path(node)));
            }
        }
        ops.push(Op::create(
            path(JobNode::ShardingRunning(item)),
            me.as_str(),
            CreateMode::Persistent,
        ));
        ops.push(Op::create(
            path(JobNode::ShardingFailover(item)),
            me.as_str(),
            CreateMode::Ephemeral,
        ));
        ops.push(Op::create(
            path(JobNode::ShardingFailovering(item)),
            me.as_str(),
            CreateMode::Persistent,
        ));
        items.push(item);
    }
    (!items.is_empty()).then_some((items, ops))
}

/// The writes that end a run of taken-over `items`, for the run's end multi-op: the taker's
/// `running`, `failover` and `failovering`.
pub fn finish_ops(job: &JobName, items: &[ShardItem]) -> Vec<Op> {
    items
        .iter()
        .flat_map(|i| {
            [
                JobNode::ShardingRunning(*i),
                JobNode::ShardingFailover(*i),
                JobNode::ShardingFailovering(*i),
            ]
        })
        .map(|n| Op::delete(n.to_path(job)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::fixtures::*;

    fn running(v: JobView, i: u32, who: &InstanceId) -> JobView {
        with_item(v, i, |it| it.running = Some(who.to_string()))
    }

    fn marked(mut v: JobView, items: &[u32]) -> JobView {
        v.failover_marks.extend(items.iter().map(|i| ShardItem(*i)));
        v
    }

    /// The guarded multi-op marking item `i` while `proof` (`running` or `failovering`) exists.
    fn mark_op(i: u32, proof: &str) -> Vec<Op> {
        let failover = format!("/orders/sharding/{i}/failover");
        vec![
            Op::Check {
                path: format!("/orders/sharding/{i}/{proof}"),
                version: ANY_VERSION,
            },
            Op::create(
                format!("/orders/leader/failover/items/{i}"),
                "",
                CreateMode::Persistent,
            ),
            Op::create(failover.clone(), "", CreateMode::Ephemeral),
            Op::delete(failover),
        ]
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
                vec![mark_op(0, "running")],
            ),
            (
                "an item it ran as a taker is marked again",
                with_item(base.clone(), 2, |i| i.failovering = Some(x.clone())),
                vec![mark_op(2, "failovering")],
            ),
            (
                "an item already marked is not marked twice",
                marked(running(base.clone(), 0, &x), &[0]),
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
                vec![mark_op(1, "running")],
            ),
            (
                "failovering of a dead taker",
                with_item(base.clone(), 2, |i| i.failovering = Some(x.clone())),
                vec![mark_op(2, "failovering")],
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
                "already marked",
                marked(running(base.clone(), 1, &x), &[1]),
                vec![],
            ),
        ];
        for (name, v, want) in cases {
            assert_eq!(marks_for_orphans(&v, &job()), want, "{name}");
        }
    }

    #[test]
    fn a_claim_deletes_the_mark_and_replaces_the_dead_owners_running_in_one_multi_op() {
        let (a, x) = (inst("10.0.0.1@-@1"), inst("10.0.0.9@-@1"));
        let v = marked(
            running(owned(view(&[&a], Some(&a)), &[(0, &x), (1, &a)]), 0, &x),
            &[0],
        );
        let (items, ops) = claim(&v, &job(), &a, 8).expect("a claim");
        assert_eq!(items, vec![ShardItem(0)]);
        assert_eq!(
            ops,
            vec![
                Op::delete("/orders/leader/failover/items/0"),
                Op::delete("/orders/sharding/0/running"),
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
                "an item I own is mine at my next fire",
                marked(base.clone(), &[3]),
                8,
                None,
            ),
            (
                "a run of my own earlier session is not taken by me",
                marked(running(base.clone(), 1, &a), &[1]),
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
            (
                "an item whose owner is back and running it is not claimed",
                marked(running(base.clone(), 0, &b), &[0, 1]),
                8,
                items(&[1]),
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
        let v = marked(
            with_item(
                running(owned(view(&[&a], None), &[(0, &x)]), 0, &t),
                0,
                |i| i.failovering = Some(t.clone()),
            ),
            &[0],
        );
        let (_, ops) = claim(&v, &job(), &a, 1).expect("a claim");
        assert!(ops.contains(&Op::delete("/orders/sharding/0/failovering")));
        assert!(ops.contains(&Op::delete("/orders/sharding/0/running")));
        assert_eq!(ops[0], Op::delete("/orders/leader/failover/items/0"));
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
}
