//! Resharding: when a job needs it, and the commit of a new plan.
//!
//! The leader flags `leader/sharding/necessary`; at the next fire it waits (without blocking) for the
//! job's running items to end, creates the ephemeral `leader/sharding/processing`, and commits the
//! whole plan in one multi-op that also removes both flags. Each item the plan moves is guarded
//! against a run the leader's mirror does not show yet ([`not_running`]).
//!
//! Sharding sees the *eligible* instances: live, server enabled, and carrying the job's `label` when
//! it has one. With `staticSharding`, a job that has owners keeps them: membership changes only
//! reshard when an owner can no longer run its items, and the commit moves only those items
//! ([`keep_owners`]).

use std::collections::{BTreeMap, BTreeSet};

use crate::config::ValidatedConfig;
use crate::model::{CreateMode, Op};
use crate::paths::JobNode;
use crate::sharding::{keep_owners, ShardingInput, ShardingPlan, ShardingStrategy};
use crate::types::{InstanceId, JobName, ShardItem};
use crate::view::JobView;

/// What of a job's config sharding follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rules<'a> {
    /// `shardingTotalCount`.
    pub total: u32,
    /// `staticSharding`.
    pub static_sharding: bool,
    /// `label`: only instances carrying it take items.
    pub label: Option<&'a str>,
}

impl<'a> Rules<'a> {
    /// The rules of a validated config.
    pub fn of(config: &'a ValidatedConfig) -> Self {
        Self {
            total: config.sharding_total_count(),
            static_sharding: config.config().static_sharding,
            label: config.config().label.as_deref().filter(|l| !l.is_empty()),
        }
    }

    /// `total` items, dynamic sharding, no label.
    pub fn items(total: u32) -> Self {
        Self {
            total,
            static_sharding: false,
            label: None,
        }
    }
}

/// What the leader knows beyond the job's nodes when it shards: the time, and the items each
/// eligible instance holds in the namespace's other jobs (empty unless the strategy reads it).
#[derive(Debug, Clone, Copy)]
pub struct Facts<'a> {
    /// Milliseconds since the Unix epoch, from the node's clock.
    pub now_millis: i64,
    /// Items held elsewhere, per eligible instance.
    pub held: &'a BTreeMap<InstanceId, usize>,
}

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

/// The flag to raise for a job that balances over the namespace and drifted from the namespace's
/// plan: only its leader raises it (every instance sees the drift; one flag is enough), and only
/// when it is not up already.
pub fn rebalance_flag(view: &JobView, job: &JobName, me: &InstanceId) -> Option<Op> {
    if view.leader.as_ref() != Some(me) {
        return None;
    }
    flag(view, job)
}

/// Whether the job has been sharded: some item names an owner (ElasticJob asks whether `sharding/`
/// has children; an item node without an owner says nothing about a plan).
fn has_owners(view: &JobView) -> bool {
    view.items.values().any(|v| v.has_owner_node)
}

/// Why instances coming or going (or a server's status changing) need a reshard. Always, as in
/// ElasticJob, unless `staticSharding` holds and the job has owners: then only when an owner can no
/// longer run its items (see [`reconcile_reason`]).
pub fn membership_reason(view: &JobView, rules: Rules<'_>) -> Option<String> {
    if rules.static_sharding && has_owners(view) {
        reconcile_reason(view, rules)
    } else {
        Some("instances or servers changed".to_owned())
    }
}

/// Why the reconcile check wants a reshard, if it does: items without an eligible owner, item nodes
/// past `total`, or (without `staticSharding`) an eligible instance left without items while another
/// has two or more. With a `label` that no available instance carries, items still owned are a
/// reason too: the commit then takes them from their owners.
pub fn reconcile_reason(view: &JobView, rules: Rules<'_>) -> Option<String> {
    let total = rules.total;
    let eligible: BTreeSet<_> = view.eligible_instances(rules.label).into_iter().collect();
    if eligible.is_empty() {
        // Nobody could take items: resharding would assign nothing. Only a label can make owners
        // that are still available ineligible; their items must stop running there.
        let label = rules.label?;
        return view
            .items
            .iter()
            .find(|(_, v)| v.has_owner_node)
            .map(|(i, _)| {
                format!("item {i} is owned, but no available instance carries label {label:?}")
            });
    }
    for i in 0..total {
        match view.items.get(&ShardItem(i)).and_then(|v| v.owner.as_ref()) {
            None => return Some(format!("item {i} has no owner")),
            Some(o) if !eligible.contains(o) => {
                return Some(match rules.label {
                    Some(label) if view.available_instances().contains(o) => {
                        format!("item {i} is owned by {o}, which does not carry label {label:?}")
                    }
                    _ => format!("item {i} is owned by {o}, which is offline or disabled"),
                })
            }
            Some(_) => {}
        }
    }
    if let Some(extra) = view.items.keys().find(|i| i.0 >= total) {
        return Some(format!("item {extra} is past shardingTotalCount {total}"));
    }
    if rules.static_sharding {
        return None;
    }
    let mut counts: BTreeMap<_, usize> = eligible.iter().map(|i| (i.clone(), 0)).collect();
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

/// The plan for the eligible instances: the strategy's, or with `staticSharding` and existing
/// owners, the current owners kept.
fn plan(
    view: &JobView,
    job: &JobName,
    rules: Rules<'_>,
    eligible: &[InstanceId],
    strategy: &dyn ShardingStrategy,
    facts: Facts<'_>,
) -> ShardingPlan {
    if eligible.is_empty() {
        return ShardingPlan::new();
    }
    if rules.static_sharding && has_owners(view) {
        let owners: BTreeMap<ShardItem, InstanceId> = view
            .items
            .iter()
            .filter_map(|(i, v)| v.owner.clone().map(|o| (*i, o)))
            .collect();
        return keep_owners(&owners, eligible, rules.total);
    }
    strategy.shard_with(&ShardingInput {
        instances: eligible,
        job,
        total: rules.total,
        now_millis: facts.now_millis,
        held: facts.held,
    })
}

/// The guard that an item moved by a commit runs nowhere: its `running` marker created and
/// deleted again in the commit's multi-op, which fails (nothing of it written) when a marker is
/// there. The leader waits for the running items its mirror shows; this closes the window of a
/// marker its mirror does not show yet (a start write the old owner sent before it heard the
/// flag). A start the other way round, after the commit, is refused by its own guard on the owner
/// node's version. Placed after the item's owner operation: a commit in chunks never splits the
/// pair ([`Commit`](super::commit::Commit)) and the owner is written in the same chunk or before.
pub fn not_running(job: &JobName, item: ShardItem) -> [Op; 2] {
    let running = JobNode::ShardingRunning(item).to_path(job);
    [
        Op::create(running.clone(), "", CreateMode::Ephemeral),
        Op::delete(running),
    ]
}

/// Decides the leader's sharding step for a job under `strategy`.
pub fn step(
    view: &JobView,
    job: &JobName,
    rules: Rules<'_>,
    strategy: &dyn ShardingStrategy,
    facts: Facts<'_>,
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
    let eligible = view.eligible_instances(rules.label);
    // Without an eligible instance, only a label's ineligible owners give something to do.
    if eligible.is_empty() && (rules.label.is_none() || !has_owners(view)) {
        return ShardingStep::Nothing;
    }
    let total = rules.total;
    let plan = plan(view, job, rules, &eligible, strategy, facts);
    let mut commit = Vec::new();
    let mut assigned = BTreeSet::new();
    for (owner, items) in &plan {
        for item in items {
            assigned.insert(*item);
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
            if existing.is_some_and(|v| v.owner.as_ref().is_some_and(|o| o != owner)) {
                commit.extend(not_running(job, *item));
            }
        }
    }
    // Items nobody eligible may take (a label no available instance carries) lose their owner.
    for (item, v) in view.items.range(..ShardItem(total)) {
        if v.has_owner_node && !assigned.contains(item) {
            commit.push(Op::delete(JobNode::ShardingInstance(*item).to_path(job)));
            if v.owner.is_some() {
                commit.extend(not_running(job, *item));
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
#[path = "resharding_tests.rs"]
mod tests;
