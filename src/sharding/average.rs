//! AVG_ALLOCATION, ElasticJob's default strategy, and the allocation the other two end with.

use std::collections::BTreeSet;

use super::{ShardingPlan, ShardingStrategy};
use crate::{InstanceId, JobName, ShardItem};

super::builtin_strategy! {
    /// AVG_ALLOCATION: contiguous blocks of items in instance order, the remainder one each to the
    /// first instances (ElasticJob's `AverageAllocationJobShardingStrategy`).
    AverageAllocation = "AVG_ALLOCATION"
}

impl ShardingStrategy for AverageAllocation {
    fn shard(&self, instances: &[InstanceId], _job: &JobName, total: u32) -> ShardingPlan {
        average_allocation(instances, total)
    }
}

/// Splits items `0..total` over `instances` in the given order: with `n` instances, `q = total / n`
/// and `r = total % n`, the instance at position `p` gets `p*q ..= (p+1)*q - 1`, and the first `r`
/// instances get one more item each, `q*n + p`.
///
/// Every instance is in the plan, with no items when there are fewer items than instances. No
/// instances give an empty plan. A repeated instance keeps only its first position: Java would let
/// the repeat overwrite the first one's items and so leave items unassigned.
///
/// ```
/// use shardcron::{sharding::average_allocation, InstanceId, ShardItem};
/// let ids: Vec<InstanceId> = ["c@-@1", "b@-@1", "a@-@1"].map(|s| InstanceId::parse(s).unwrap()).into();
/// let plan = average_allocation(&ids, 8);
/// assert_eq!(plan[&ids[0]], [0, 1, 6].map(ShardItem));
/// assert_eq!(plan[&ids[2]], [4, 5].map(ShardItem));
/// ```
pub fn average_allocation(instances: &[InstanceId], total: u32) -> ShardingPlan {
    let mut seen = BTreeSet::new();
    let distinct: Vec<&InstanceId> = instances.iter().filter(|id| seen.insert(*id)).collect();
    let mut plan = ShardingPlan::new();
    // `n` fits in u32 whenever it matters: more instances than u32::MAX would all get nothing anyway.
    let n = u32::try_from(distinct.len()).unwrap_or(u32::MAX);
    if n == 0 {
        return plan;
    }
    let (q, r) = (total / n, total % n);
    for (p, id) in (0..n).zip(distinct) {
        // (p + 1) * q <= n * q <= total, and q * n + p < total for p < r: no overflow.
        let mut items: Vec<ShardItem> = (p * q..(p + 1) * q).map(ShardItem).collect();
        if p < r {
            items.push(ShardItem(q * n + p));
        }
        plan.insert(id.clone(), items);
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sharding::tests::{ids, plan, Ips, Items};

    #[test]
    fn avg_allocation_matches_the_seed_examples_and_the_edges() {
        // (instances in sharding order, total, expected items per instance in the same order)
        let table: &[(Ips, u32, Items)] = &[
            (&["3", "2", "1"], 9, &[&[0, 1, 2], &[3, 4, 5], &[6, 7, 8]]),
            (&["3", "2", "1"], 8, &[&[0, 1, 6], &[2, 3, 7], &[4, 5]]),
            (
                &["3", "2", "1"],
                10,
                &[&[0, 1, 2, 9], &[3, 4, 5], &[6, 7, 8]],
            ),
            (&[], 5, &[]),
            (&["1"], 4, &[&[0, 1, 2, 3]]),
            (&["1"], 0, &[&[]]),
            (&["3", "2", "1"], 2, &[&[0], &[1], &[]]),
            (&["4", "3", "2", "1"], 0, &[&[], &[], &[], &[]]),
        ];
        for &(names, total, expected) in table {
            let given = ids(names);
            assert_eq!(
                average_allocation(&given, total),
                plan(&given, expected),
                "{names:?} with {total} items"
            );
        }
    }

    #[test]
    fn avg_allocation_gives_the_remainder_to_the_first_instances() {
        let given = ids(&["b", "a"]);
        let plan = average_allocation(&given, 5);
        assert_eq!(plan[&given[0]], [0, 1, 4].map(ShardItem));
        assert_eq!(plan[&given[1]], [2, 3].map(ShardItem));
    }

    #[test]
    fn a_repeated_instance_keeps_its_first_position_and_no_item_is_lost() {
        let given = ids(&["b", "a", "b"]);
        assert_eq!(
            average_allocation(&given, 3),
            plan(&given[..2], &[&[0, 2], &[1]])
        );
    }
}
