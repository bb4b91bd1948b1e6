//! The FailoverActor's and the leader's decisions around [`failover`](super::failover)'s
//! operations: whether this instance may claim and how many marks it takes (its share), what each
//! registry answer to a mark or a claim means, which records turning failover off clears, and the
//! leader's check of an item's owner. The actors only read the mirror and carry these out.
//!
//! ```text
//!  marks exist ──▶ eligible (registered, enabled, carries the label)? ──no──▶ nothing
//!                        │ yes
//!                  the executor idle? (asked off the actor's handler, in the job's lane)
//!                        │ yes
//!                  share = ceil(marks / eligible instances) ──▶ claim(share) ──▶ Write
//!  claim answered: Done ──▶ hand over │ a node there or gone ──▶ lost a race: the winner's
//!                                     │   events bring the next try │ else ──▶ WARN
//!  each mark answered: Done ──▶ next │ there, gone or moved ──▶ not needed, next │ else ──▶ stop
//! ```

use std::sync::Arc;

use crate::model::Op;
use crate::paths::JobNode;
use crate::types::{InstanceId, JobName, ShardItem};
use crate::view::{JobView, ServerStatus};

use super::answer::Answer;

/// The marks this instance tries to claim in one go, or `None` when it may not claim: no marks,
/// not registered, its server disabled, or without the job's label (an instance that does not
/// carry the label takes no item of the job, not even a failed-over one).
pub fn eligible_share(view: &JobView, me: &InstanceId, label: Option<&str>) -> Option<usize> {
    let registered = view.instances.contains(me)
        && view.server_status(me.ip()) == ServerStatus::Enabled
        && view.carries(me, label);
    if view.failover_marks.is_empty() || !registered {
        return None;
    }
    // Spread the marks over the instances that could take them rather than take them all.
    let share = view
        .failover_marks
        .len()
        .div_ceil(view.eligible_instances(label).len().max(1));
    Some(share)
}

/// What a claim's answer means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimEnd {
    /// The items are this instance's: hand them to the executor.
    HandOver,
    /// Lost a race the mirror did not show yet: the winner's claim deletes the marks it took, and
    /// those events bring the next attempt, with the marks as they are then.
    LostRace,
    /// The claim failed (worth a WARN); the next event or run end tries again.
    Failed(String),
}

/// Classifies the answer to a claim's multi-op.
pub fn claim_answered(answer: &Answer) -> ClaimEnd {
    match answer {
        Answer::Done => ClaimEnd::HandOver,
        a if a.already() => ClaimEnd::LostRace,
        a => ClaimEnd::Failed(a.describe()),
    }
}

/// What a mark's answer means for the marks after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MarkEnd {
    /// Applied: go on.
    Marked,
    /// A node created or deleted meanwhile: as good as applied (another survivor marked the item,
    /// took it over, or the run is no longer as seen). Go on.
    NotNeeded,
    /// The registry failed (worth a WARN): the marks after it are left for the next event.
    Stop(String),
}

/// Classifies the answer to one mark's guarded multi-op (or to the creation of the marks' parent).
pub fn mark_answered(answer: &Answer) -> MarkEnd {
    match answer {
        Answer::Done => MarkEnd::Marked,
        a if a.already() || matches!(a, Answer::BadVersion { .. }) => MarkEnd::NotNeeded,
        a => MarkEnd::Stop(a.describe()),
    }
}

/// The removals that turning failover off asks for: every `failover` and `failovering` record
/// and every mark, as ElasticJob's FailoverSettingsChangedJobListener does.
pub fn clear_ops(view: &JobView, job: &JobName) -> Vec<Op> {
    let mut ops = Vec::new();
    for (item, v) in &view.items {
        if v.failover.is_some() {
            ops.push(Op::delete(JobNode::ShardingFailover(*item).to_path(job)));
        }
        if v.failovering.is_some() {
            ops.push(Op::delete(JobNode::ShardingFailovering(*item).to_path(job)));
        }
    }
    for item in &view.failover_marks {
        ops.push(Op::delete(JobNode::LeaderFailoverItem(*item).to_path(job)));
    }
    ops
}

/// With failover off, the removals the leader makes; nothing elsewhere (only the leader clears).
pub fn clear_when_off(view: &JobView, job: &JobName, me: &InstanceId) -> Vec<Op> {
    if view.leader.as_ref() != Some(me) {
        return Vec::new();
    }
    clear_ops(view, job)
}

/// The single nodes of a job the owner check reads (O(1) in the number of items: a commit of a
/// huge plan sends one event per item).
pub trait NodeData {
    /// The mirrored data of one of the job's nodes; `None` when absent.
    fn data(&self, node: &JobNode) -> Option<Arc<[u8]>>;
}

/// The leader's check of an item whose owner changed: `Some(owner)` when this instance leads, no
/// reshard is under way, and the owner cannot run the item (written by hand or by a stale tool:
/// gone, its server disabled, or without the job's label); the leader then says so and reshards
/// rather than wait for the reconcile tick.
pub fn unavailable_owner(
    nodes: &dyn NodeData,
    me: &InstanceId,
    item: ShardItem,
    label: Option<&str>,
) -> Option<String> {
    let leads = nodes
        .data(&JobNode::LeaderElectionInstance)
        .is_some_and(|d| &*d == me.as_str().as_bytes());
    if !leads
        || nodes.data(&JobNode::LeaderShardingNecessary).is_some()
        || nodes.data(&JobNode::LeaderShardingProcessing).is_some()
    {
        return None;
    }
    let data = nodes.data(&JobNode::ShardingInstance(item))?;
    let owner = String::from_utf8_lossy(&data).trim().to_owned();
    let label = label.filter(|l| !l.is_empty());
    let available = InstanceId::parse(owner.as_str()).is_ok_and(|o| {
        let instance = nodes.data(&JobNode::Instance(o.clone()));
        let carries = |data: &[u8]| {
            let path = || format!("instances/{o}");
            crate::sharding::carries(Some(&crate::sharding::parse_labels(data, path)), label)
        };
        instance.is_some_and(|d| carries(&d))
            && nodes
                .data(&JobNode::Server(o.ip().to_owned()))
                .is_none_or(|d| ServerStatus::from_data(&d) == ServerStatus::Enabled)
    });
    (!available).then_some(owner)
}

#[cfg(test)]
#[path = "failover_claim_tests.rs"]
mod tests;
