//! Resharding: when a job needs it, and the commit of a new plan.
//!
//! The leader flags `leader/sharding/necessary`; at the next fire it waits (without blocking) for the
//! job's running items to end, creates the ephemeral `leader/sharding/processing`, and commits the
//! whole plan in one multi-op that also removes both flags.

use std::collections::BTreeSet;

use crate::paths::JobNode;
use crate::registry::{CreateMode, Op};
use crate::sharding::ShardingStrategy;
use crate::types::{JobName, ShardItem};
use crate::view::JobView;

/// The operation that raises the resharding flag, or none when it is already up.
pub fn flag(view: &JobView, job: &JobName) -> Option<Op> {
    (!view.sharding_necessary).then(|| {
        Op::create(
            JobNode::LeaderShardingNecessary.to_path(job),
            "",
            CreateMode::Persistent,
        )
    })
}

/// Why the reconcile check wants a reshard, if it does: items without a live, enabled owner, item
/// nodes past `total`, or an available instance left without items while another has two or more.
pub fn reconcile_reason(view: &JobView, total: u32) -> Option<String> {
    let available: BTreeSet<_> = view.available_instances().into_iter().collect();
    if available.is_empty() {
        return None; // nobody could take items: resharding would assign nothing
    }
    for i in 0..total {
        match view.items.get(&ShardItem(i)).and_then(|v| v.owner.as_ref()) {
            None => return Some(format!("item {i} has no owner")),
            Some(o) if !available.contains(o) => {
                return Some(format!(
                    "item {i} is owned by {o}, which is offline or disabled"
                ))
            }
            Some(_) => {}
        }
    }
    if let Some(extra) = view.items.keys().find(|i| i.0 >= total) {
        return Some(format!("item {extra} is past shardingTotalCount {total}"));
    }
    let mut counts: std::collections::BTreeMap<_, usize> =
        available.iter().map(|i| (i.clone(), 0)).collect();
    for v in view.items.values() {
        if let Some(c) = v.owner.as_ref().and_then(|o| counts.get_mut(o)) {
            *c += 1;
        }
    }
    let (min, max) = (
        counts.values().min().copied(),
        counts.values().max().copied(),
    );
    match (min, max) {
        (Some(0), Some(m)) if m >= 2 => Some("an available instance has no items".into()),
        _ => None,
    }
}

/// What the leader does when it finds the flag up at a fire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShardingStep {
    /// Nothing: no flag, not the leader, or no instance available.
    Nothing,
    /// Items are still running: retry when a `running` node goes.
    WaitForRunningItems(Vec<ShardItem>),
    /// Create `processing`, then apply `commit` in one multi-op.
    Commit {
        /// Creates the ephemeral `leader/sharding/processing`.
        processing: Op,
        /// The plan: item nodes, owners, removal of items past the count and of both flags.
        commit: Vec<Op>,
    },
}

/// Decides the leader's sharding step for a job of `total` items under `strategy`.
pub fn step(
    view: &JobView,
    job: &JobName,
    total: u32,
    strategy: &dyn ShardingStrategy,
    i_lead: bool,
) -> ShardingStep {
    if !i_lead || !view.sharding_necessary {
        return ShardingStep::Nothing;
    }
    let running: Vec<ShardItem> = view
        .items
        .iter()
        .filter(|(_, v)| v.running.is_some())
        .map(|(i, _)| *i)
        .collect();
    if !running.is_empty() {
        return ShardingStep::WaitForRunningItems(running);
    }
    let available = view.available_instances();
    if available.is_empty() {
        return ShardingStep::Nothing;
    }
    let plan = strategy.shard(&available, job, total);
    let mut commit = Vec::new();
    for (owner, items) in &plan {
        for item in items {
            let existing = view.items.get(item);
            if existing.is_none() {
                commit.push(Op::create(
                    JobNode::ShardingItem(*item).to_path(job),
                    "",
                    CreateMode::Persistent,
                ));
            }
            let path = JobNode::ShardingInstance(*item).to_path(job);
            if existing.is_some_and(|v| v.has_owner_node) {
                commit.push(Op::set(path, owner.as_str()));
            } else {
                commit.push(Op::create(path, owner.as_str(), CreateMode::Persistent));
            }
        }
    }
    for (item, v) in view.items.range(ShardItem(total)..) {
        let children = [
            (v.has_owner_node, JobNode::ShardingInstance(*item)),
            (v.running.is_some(), JobNode::ShardingRunning(*item)),
            (v.misfire, JobNode::ShardingMisfire(*item)),
            (v.disabled, JobNode::ShardingDisabled(*item)),
            (v.failover.is_some(), JobNode::ShardingFailover(*item)),
            (v.failovering.is_some(), JobNode::ShardingFailovering(*item)),
        ];
        for (present, node) in children {
            if present {
                commit.push(Op::delete(node.to_path(job)));
            }
        }
        commit.push(Op::delete(JobNode::ShardingItem(*item).to_path(job)));
    }
    commit.push(Op::delete(JobNode::LeaderShardingNecessary.to_path(job)));
    commit.push(Op::delete(JobNode::LeaderShardingProcessing.to_path(job)));
    ShardingStep::Commit {
        processing: Op::create(
            JobNode::LeaderShardingProcessing.to_path(job),
            "",
            CreateMode::Ephemeral,
        ),
        commit,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::fixtures::*;
    use crate::sharding::StrategyRegistry;

    fn avg() -> std::sync::Arc<dyn ShardingStrategy> {
        StrategyRegistry::new().get(None).unwrap()
    }

    #[test]
    fn no_flag_or_not_leader_means_nothing_to_do() {
        let a = inst("10.0.0.1@-@1");
        let v = view(&[&a], Some(&a));
        assert_eq!(step(&v, &job(), 2, &*avg(), true), ShardingStep::Nothing);
        let mut flagged = v.clone();
        flagged.sharding_necessary = true;
        assert_eq!(
            step(&flagged, &job(), 2, &*avg(), false),
            ShardingStep::Nothing
        );
    }

    #[test]
    fn sharding_waits_for_running_items() {
        let a = inst("10.0.0.1@-@1");
        let mut v = with_item(view(&[&a], Some(&a)), 1, |i| {
            i.running = Some(a.to_string())
        });
        v.sharding_necessary = true;
        assert_eq!(
            step(&v, &job(), 2, &*avg(), true),
            ShardingStep::WaitForRunningItems(vec![ShardItem(1)])
        );
    }

    #[test]
    fn commit_assigns_every_item_and_removes_items_past_the_count_and_both_flags() {
        let a = inst("10.0.0.1@-@1");
        let b = inst("10.0.0.2@-@1");
        let mut v = owned(view(&[&a, &b], Some(&a)), &[(0, &a), (1, &a), (2, &a)]);
        for i in 0..3 {
            v.items.get_mut(&ShardItem(i)).unwrap().has_owner_node = true;
        }
        v = with_item(v, 2, |i| i.misfire = true);
        v.sharding_necessary = true;
        let ShardingStep::Commit { processing, commit } = step(&v, &job(), 2, &*avg(), true) else {
            panic!("expected a commit")
        };
        assert_eq!(
            processing,
            Op::create(
                "/orders/leader/sharding/processing",
                "",
                CreateMode::Ephemeral
            )
        );
        // Descending order: 10.0.0.2 first, so it gets item 0.
        assert_eq!(
            commit,
            vec![
                Op::set("/orders/sharding/1/instance", a.as_str()),
                Op::set("/orders/sharding/0/instance", b.as_str()),
                Op::delete("/orders/sharding/2/instance"),
                Op::delete("/orders/sharding/2/misfire"),
                Op::delete("/orders/sharding/2"),
                Op::delete("/orders/leader/sharding/necessary"),
                Op::delete("/orders/leader/sharding/processing"),
            ]
        );
    }

    #[test]
    fn reconcile_reasons_table() {
        let a = inst("10.0.0.1@-@1");
        let b = inst("10.0.0.2@-@1");
        let gone = inst("10.0.0.9@-@1");
        let cases: Vec<(&str, JobView, bool)> = vec![
            (
                "balanced",
                owned(view(&[&a, &b], None), &[(0, &a), (1, &b)]),
                false,
            ),
            (
                "unassigned item",
                owned(view(&[&a], None), &[(0, &a)]),
                true,
            ),
            (
                "offline owner",
                owned(view(&[&a], None), &[(0, &a), (1, &gone)]),
                true,
            ),
            (
                "disabled owner",
                disabled(
                    owned(view(&[&a, &b], None), &[(0, &a), (1, &b)]),
                    "10.0.0.2",
                ),
                true,
            ),
            (
                "idle instance",
                owned(view(&[&a, &b], None), &[(0, &a), (1, &a)]),
                true,
            ),
            ("no instance at all", view(&[], None), false),
        ];
        for (name, v, want) in cases {
            assert_eq!(reconcile_reason(&v, 2).is_some(), want, "{name}");
        }
    }
}
