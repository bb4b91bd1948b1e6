//! Failover, on ElasticJob 3.0.x's wire protocol (a Java instance may be either party), with an
//! atomic claim instead of a latch: which items of a vanished instance are marked in
//! `leader/failover/items/{i}`, which marked items an idle instance claims and the one multi-op
//! that claims them, and the writes that end a taken-over run.
//!
//! The steps, as both languages take them (ARCHITECTURE.md, "Failover protocol"):
//!
//! 1. **Mark** (any survivor that sees `instances/{x}` vanish): for each item `x` was running, when
//!    no `failover` node exists, create the mark and *delete the item's `running`* (ElasticJob's
//!    `setCrashedFailoverFlag`). A Java claimer never touches `running` and a Java fire filters out
//!    items that have one, so a mark left beside a stale `running` is never re-run and stalls the
//!    Java taker and every leader's resharding. Items `x` ran as a taker (`failovering` names it)
//!    are marked the same way (`setCrashedFailoverFlagDirectly` + `clearRunningInfo`).
//! 2. **Claim** (an idle survivor): delete the mark, create `failover` (ephemeral) and
//!    `failovering` (persistent) naming the taker. A Java claimer then fires the job and writes
//!    `running` when the run begins; shardcron writes it in the claim itself, the state a Java taker
//!    reaches once its run has begun. An item that still has a `running` is not claimed: its
//!    marker has not finished (a Java marker takes two writes) or a run still goes.
//! 3. **Run and end** (the taker): delete `running`, `failover`, `failovering`.
//!
//! Only items that were *running* are failed over: an item its owner held but was not running is
//! resharded by the leader and runs at its next fire. A claim replaces ElasticJob's latch with one
//! transaction that deletes the mark, so two claimants can never both win an item: the loser's
//! delete fails and nothing of its claim applies. Every multi-op here leaves the nodes a Java
//! instance reads in a state the Java sequence of writes passes through.

use crate::model::{CreateMode, Op, ANY_VERSION};
use crate::paths::JobNode;
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

/// Whether the item's `running` names a live instance other than `gone`: the item's run now is
/// that instance's. A `failovering` still naming `gone` then records a taken-over run that was cut
/// short (its session expired mid-run and its marker was cleared when it registered again) before
/// the owner ran the item anew: a stale record, not a run to fail over. Marking it would delete the
/// live run's `running` and have a taker run the item beside it.
fn run_by_live_other(view: &JobView, v: &ItemView, gone: &InstanceId) -> bool {
    running_owner(v).is_some_and(|r| r != *gone && view.instances.contains(&r))
}

/// Deletes a stale `failovering` (see [`run_by_live_other`]).
fn clear_stale_taker(job: &JobName, item: ShardItem) -> Vec<Op> {
    vec![Op::delete(JobNode::ShardingFailovering(item).to_path(job))]
}

/// Creating and deleting the item's `failover` in one multi-op: fails when an instance holds it,
/// which is ElasticJob's `isFailoverAssigned` check made part of the write.
fn no_taker_guard(job: &JobName, item: ShardItem) -> [Op; 2] {
    let failover = JobNode::ShardingFailover(item).to_path(job);
    [
        Op::create(failover.clone(), "", CreateMode::Ephemeral),
        Op::delete(failover),
    ]
}

/// Creating and deleting `instances/{gone}` in one multi-op: fails once `gone` is registered
/// again. An instance keeps its id across sessions, so after an expiry its new session's first fire
/// writes a `running` that names it again, and a survivor whose mirror lags that return by a few
/// milliseconds still sees the old run. Unguarded, its mark deleted the new run's `running` and a
/// taker ran the item beside it (the soak's overlap after a whole-ensemble pause). Watchers get
/// a created and a deleted event of a node that was already gone: shardcron's decisions read the
/// mirror, unchanged by the pair, and ElasticJob's Curator cache reports neither (it reads a
/// created node's data before reporting it, and reports deletions of nodes it held).
pub fn gone_guard(job: &JobName, gone: &InstanceId) -> [Op; 2] {
    let instance = JobNode::Instance(gone.clone()).to_path(job);
    [
        Op::create(instance.clone(), "", CreateMode::Ephemeral),
        Op::delete(instance),
    ]
}

/// One item's mark, as a multi-op that applies only while the run it fails over is as the view
/// saw it: `gone` is still absent from `instances/`, `proof` (the node naming it) still exists,
/// and no instance holds the item's `failover`. The item's `running` goes in the same multi-op,
/// as ElasticJob's marker deletes it. A survivor whose view lags behind another survivor's claim,
/// behind the re-run that followed, or behind `gone`'s return, so marks nothing; unguarded, its
/// late mark had the item run a second time.
fn mark(
    job: &JobName,
    item: ShardItem,
    v: &ItemView,
    proof: JobNode,
    gone: &InstanceId,
) -> Vec<Op> {
    let running = JobNode::ShardingRunning(item);
    let mut ops = Vec::with_capacity(7);
    ops.extend(gone_guard(job, gone));
    if proof != running {
        ops.push(Op::Check {
            path: proof.to_path(job),
            version: ANY_VERSION,
        });
    }
    ops.push(Op::create(
        JobNode::LeaderFailoverItem(item).to_path(job),
        "",
        CreateMode::Persistent,
    ));
    ops.extend(no_taker_guard(job, item));
    // Deleting `running` proves it still exists when it is the proof.
    if v.running.is_some() || proof == running {
        ops.push(Op::delete(running.to_path(job)));
    }
    ops
}

/// The node that shows who ran `item` when that instance vanished, and that instance: its
/// `failovering` when it ran the item as a taker, else its `running`. `None` when neither names a
/// gone instance (a `running` whose data is no instance id).
fn proof(
    v: &ItemView,
    item: ShardItem,
    gone: impl Fn(&InstanceId) -> bool,
) -> Option<(JobNode, InstanceId)> {
    if let Some(taker) = v.failovering.as_ref().filter(|t| gone(t)) {
        return Some((JobNode::ShardingFailovering(item), taker.clone()));
    }
    let owner = running_owner(v).filter(|r| gone(r))?;
    Some((JobNode::ShardingRunning(item), owner))
}

/// The instance the item's `running` names, when its data is an instance id.
fn running_owner(v: &ItemView) -> Option<InstanceId> {
    v.running.as_deref().and_then(|r| InstanceId::parse(r).ok())
}

/// `mark` with the proof [`proof`] finds; nothing when there is none.
fn mark_proven(
    job: &JobName,
    item: ShardItem,
    v: &ItemView,
    gone: impl Fn(&InstanceId) -> bool,
) -> Vec<Op> {
    proof(v, item, gone).map_or_else(Vec::new, |(node, who)| mark(job, item, v, node, &who))
}

/// The marks to create when `crashed` vanished from `instances/`: every item it was running
/// (`running` names it) or running as a taker (`failovering` names it), unless taken over by a
/// live instance; one guarded multi-op per item (see `mark`). The caller creates the marks'
/// parent first and tolerates a multi-op that fails (marked meanwhile, or no longer needed).
///
/// An item already marked (a mark an earlier crash left, which no claim has taken yet) is not
/// marked twice, but its `running` naming `crashed` is still deleted, as ElasticJob's marker
/// deletes it whether or not the mark existed: left, it would keep the item from every claim
/// and every reshard waiting for ever.
pub fn marks_for_crashed(view: &JobView, job: &JobName, crashed: &InstanceId) -> Vec<Vec<Op>> {
    if back(view, crashed) {
        return Vec::new();
    }
    view.items
        .iter()
        .filter(|(_, v)| {
            let ran = v.running.as_deref() == Some(crashed.as_str())
                || v.failovering.as_ref() == Some(crashed);
            ran && !taken_by_live(view, v, Some(crashed))
        })
        .map(|(item, v)| {
            if view.failover_marks.contains(item) {
                if v.running.as_deref() != Some(crashed.as_str()) {
                    return Vec::new();
                }
                return finish_marker(job, *item, crashed);
            }
            if run_by_live_other(view, v, crashed) {
                return clear_stale_taker(job, *item);
            }
            mark_proven(job, *item, v, |t| t == crashed)
        })
        .filter(|ops| !ops.is_empty())
        .collect()
}

/// The end of a marker that stopped half way, or of a mark made before: the marked item's
/// `running` of `gone` deleted, while `gone` is still absent (see [`gone_guard`]) and no instance
/// holds the item's `failover`.
fn finish_marker(job: &JobName, item: ShardItem, gone: &InstanceId) -> Vec<Op> {
    let mut ops = gone_guard(job, gone).to_vec();
    ops.extend(no_taker_guard(job, item));
    ops.push(Op::delete(JobNode::ShardingRunning(item).to_path(job)));
    ops
}

/// The marks to create for runs whose instance is gone without this instance having seen it go
/// (the whole cluster was down, or the event was lost): a `running` or `failovering` naming an
/// instance absent from `instances/`. A `running` whose data is not an instance id (an older
/// writer) cannot be attributed and is left to the reconcile.
///
/// An item already marked whose `running` still names a gone instance had its marker stop half
/// way (a Java marker writes the mark, then deletes `running`): the deletion is finished here, or
/// the item could never be claimed.
pub fn marks_for_orphans(view: &JobView, job: &JobName) -> Vec<Vec<Op>> {
    let gone = |id: &InstanceId| !view.instances.contains(id);
    let running_gone = |v: &ItemView| running_owner(v).filter(|r| gone(r));
    view.items
        .iter()
        .filter(|(_, v)| {
            (running_gone(v).is_some() || v.failovering.as_ref().is_some_and(gone))
                && !taken_by_live(view, v, None)
        })
        .map(|(item, v)| {
            if view.failover_marks.contains(item) {
                return running_gone(v)
                    .map_or_else(Vec::new, |owner| finish_marker(job, *item, &owner));
            }
            let taker = v.failovering.as_ref().filter(|t| gone(t));
            if taker.is_some_and(|t| run_by_live_other(view, v, t)) {
                return clear_stale_taker(job, *item);
            }
            mark_proven(job, *item, v, gone)
        })
        .filter(|ops| !ops.is_empty())
        .collect()
}

/// Claims up to `max_items` marked items for `me`, lowest first, as one multi-op: per item it
/// deletes the mark (first, so a lost race fails on it), replaces a dead taker's `failover` or
/// `failovering`, and creates `running` (persistent, so a crash of `me` fails the item over
/// again), `failover` (ephemeral) and `failovering` (persistent), all naming `me`. `None` when
/// nothing can be claimed.
///
/// Skipped:
/// - items `me` owns, unless no other instance is available: the mark may come from an earlier
///   session of this very process whose run may still be going here, so another instance re-runs
///   it; alone, `me` takes it, or the mark would stay for ever (the marker's deletion of `running`
///   lets the leader reshard the item to `me` before anyone claimed it);
/// - items with a `running`: its marker has not finished (a Java marker writes the mark, then
///   deletes `running`) or a run still goes; the deletion asks for a claim again, and `running` is
///   created here, so a claim racing a new run fails;
/// - items whose `failovering` names `me`, a taken-over run of an earlier session of this process;
/// - items taken over by a live instance, and marks on items without a `sharding/{i}` node, which
///   cannot take children.
pub fn claim(
    view: &JobView,
    job: &JobName,
    me: &InstanceId,
    max_items: usize,
) -> Option<(Vec<ShardItem>, Vec<Op>)> {
    let path = |n: JobNode| n.to_path(job);
    let alone = view.available_instances().iter().all(|i| i == me);
    let mut items = Vec::new();
    let mut ops = Vec::new();
    for item in &view.failover_marks {
        if items.len() >= max_items {
            break;
        }
        let Some(v) = view.items.get(item) else {
            continue;
        };
        let mine_for_others = v.owner.as_ref() == Some(me) && !alone;
        if v.running.is_some()
            || mine_for_others
            || v.failovering.as_ref() == Some(me)
            || taken_by_live(view, v, None)
        {
            continue;
        }
        let item = *item;
        ops.push(Op::delete(path(JobNode::LeaderFailoverItem(item))));
        let stale = [
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

/// Whether a fire of the item's owner leaves it out because another instance took it over
/// (ElasticJob's `getLocalTakeOffItems`): with failover on, an item with a `failover` node is the
/// taker's until its run ends, whether or not that run has begun.
pub fn taken_off(v: &ItemView, failover_on: bool) -> bool {
    failover_on && v.failover.is_some()
}

/// The writes that end a run of taken-over `items`, for the run's end multi-op: the taker's
/// `running`, `failover` and `failovering` (ElasticJob's `registerJobCompleted` and
/// `updateFailoverComplete`).
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
#[path = "failover_tests.rs"]
mod tests;
