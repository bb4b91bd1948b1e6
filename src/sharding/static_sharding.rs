//! `staticSharding`: once items have owners, they keep them. Only the items whose owner cannot run
//! them any more (gone, disabled, or without the job's label) get a new one.

use std::collections::BTreeMap;

use super::ShardingPlan;
use crate::{InstanceId, ShardItem};

/// The plan that keeps every item `0..total` whose current owner is in `available`, and gives each
/// other item (no owner, or an owner that is not available) to the available instance holding the
/// fewest of this job's items at that moment; ties go to the earlier instance in `available`
/// (sharding order). Owners past `total` are dropped with their items.
///
/// ElasticJob 3.0.x, with `staticSharding`, skips the resharding flag on instance and server changes
/// once `sharding/` has children, so a dead owner's items keep naming it and no instance runs them
/// until the next full resharding (a `shardingTotalCount` change). We reassign exactly those items
/// and nothing else: a joining instance gets no item until some owner leaves, a returning one gets
/// back none of its old items.
///
/// ```
/// use std::collections::BTreeMap;
/// use shardcron::{sharding::keep_owners, InstanceId, ShardItem};
/// let [a, b, gone] = ["a@-@1", "b@-@1", "c@-@1"].map(|s| InstanceId::parse(s).unwrap());
/// let owners = BTreeMap::from([(ShardItem(0), a.clone()), (ShardItem(1), gone.clone()), (ShardItem(2), a.clone())]);
/// let plan = keep_owners(&owners, &[b.clone(), a.clone()], 3);
/// assert_eq!(plan[&a], [ShardItem(0), ShardItem(2)]);
/// assert_eq!(plan[&b], [ShardItem(1)]);
/// ```
pub fn keep_owners(
    owners: &BTreeMap<ShardItem, InstanceId>,
    available: &[InstanceId],
    total: u32,
) -> ShardingPlan {
    let mut plan: ShardingPlan = available
        .iter()
        .map(|id| (id.clone(), Vec::new()))
        .collect();
    if plan.is_empty() {
        return plan;
    }
    let mut orphans = Vec::new();
    for item in (0..total).map(ShardItem) {
        match owners.get(&item).and_then(|o| plan.get_mut(o)) {
            Some(items) => items.push(item),
            None => orphans.push(item),
        }
    }
    for item in orphans {
        let least = available
            .iter()
            .min_by_key(|id| plan.get(*id).map_or(0, Vec::len))
            .expect("available is not empty");
        if let Some(items) = plan.get_mut(least) {
            items.push(item);
        }
    }
    for items in plan.values_mut() {
        items.sort_unstable();
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sharding::tests::{ids, plan};

    fn owners(ids: &[InstanceId], by_item: &[Option<usize>]) -> BTreeMap<ShardItem, InstanceId> {
        by_item
            .iter()
            .enumerate()
            .filter_map(|(i, o)| o.map(|o| (ShardItem(i as u32), ids[o].clone())))
            .collect()
    }

    #[test]
    fn static_sharding_moves_only_the_items_whose_owner_is_not_available() {
        // Instances c, b, a, and "gone" (index 3), which is never available.
        let all = ids(&["c", "b", "a", "gone"]);
        // (owner index per item, available indexes in sharding order, total, expected per available)
        type Row = (
            &'static [Option<usize>],
            &'static [usize],
            u32,
            &'static [&'static [u32]],
        );
        let table: &[Row] = &[
            // Nothing changes when every owner is available, even with an idle newcomer (a).
            (
                &[Some(0), Some(0), Some(1)],
                &[0, 1, 2],
                3,
                &[&[0, 1], &[2], &[]],
            ),
            // The items of the gone owner go to the least loaded, the earliest on a tie.
            (
                &[Some(3), Some(0), Some(3), Some(1)],
                &[0, 1, 2],
                4,
                &[&[1, 2], &[3], &[0]],
            ),
            (&[Some(3), Some(3), Some(3)], &[0, 1], 3, &[&[0, 2], &[1]]),
            // Items without an owner (a new shardingTotalCount) are filled in the same way.
            (&[Some(0), Some(1)], &[0, 1], 4, &[&[0, 2], &[1, 3]]),
            // Items past the count are dropped.
            (&[Some(0), Some(1), Some(1)], &[0, 1], 2, &[&[0], &[1]]),
            // No item assigned yet: the least loaded first, as a fresh start.
            (&[], &[0, 1, 2], 4, &[&[0, 3], &[1], &[2]]),
            (&[Some(0)], &[], 1, &[]),
        ];
        for &(by_item, available, total, expected) in table {
            let current = owners(&all, by_item);
            let available: Vec<InstanceId> = available.iter().map(|&i| all[i].clone()).collect();
            assert_eq!(
                keep_owners(&current, &available, total),
                plan(&available, expected),
                "owners {by_item:?} over {available:?} with {total} items"
            );
        }
    }
}
