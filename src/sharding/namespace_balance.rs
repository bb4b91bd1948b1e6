//! NAMESPACE_BALANCE, ours: items go to the instances that hold the fewest items across all the
//! jobs of the namespace, so that many small jobs spread evenly (100 one-item jobs over 4
//! instances: 25 each) instead of piling up where every job's own strategy starts.

use std::collections::BTreeMap;

use super::{java_string_hash, ShardingInput, ShardingPlan, ShardingStrategy};
use crate::{InstanceId, JobName, ShardItem};

super::builtin_strategy! {
    /// NAMESPACE_BALANCE: fills the least loaded instances first, counting the items each already
    /// holds in the namespace's other jobs ([`ShardingInput::held`]).
    ///
    /// Item by item, the next item goes to the instance with the fewest items (other jobs' plus
    /// this job's so far); ties go to the earliest instance in the list rotated by the job name's
    /// hash (as ROUND_ROBIN rotates it), so that jobs sharded at the same moment from the same
    /// counts still start on different instances. Each instance then gets its count of items as one
    /// contiguous block, in that rotated order. Without counts (every instance holds nothing
    /// elsewhere) the result has ROUND_ROBIN's block sizes.
    ///
    /// The counts come from the leader's mirror, so two leaders sharding at the same instant may
    /// both see an instance as the least loaded; the hash rotation spreads such ties, and the next
    /// resharding of either job sees the other's commit.
    NamespaceBalance = "NAMESPACE_BALANCE"
}

impl NamespaceBalance {
    /// The plan given `held`, the items each instance holds in other jobs (absent: none).
    pub fn shard_held(
        instances: &[InstanceId],
        job: &JobName,
        total: u32,
        held: &BTreeMap<InstanceId, usize>,
    ) -> ShardingPlan {
        let mut order: Vec<&InstanceId> = Vec::with_capacity(instances.len());
        for id in instances {
            if !order.contains(&id) {
                order.push(id);
            }
        }
        if order.is_empty() {
            return ShardingPlan::new();
        }
        let hash = u64::from(java_string_hash(job.as_str()).unsigned_abs());
        let offset = (hash % order.len() as u64) as usize;
        order.rotate_left(offset);
        let mut load: Vec<usize> = order
            .iter()
            .map(|id| held.get(*id).copied().unwrap_or(0))
            .collect();
        let mut counts = vec![0u32; order.len()];
        for _ in 0..total {
            // The first minimum: ties go to the earlier position.
            let (p, _) = load
                .iter()
                .enumerate()
                .min_by_key(|(p, l)| (**l, *p))
                .expect("order is not empty");
            load[p] += 1;
            counts[p] += 1;
        }
        let mut next = 0;
        order
            .into_iter()
            .zip(counts)
            .map(|(id, count)| {
                let items = (next..next + count).map(ShardItem).collect();
                next += count;
                (id.clone(), items)
            })
            .collect()
    }
}

impl ShardingStrategy for NamespaceBalance {
    /// Without the namespace's counts: as if no instance held anything elsewhere.
    fn shard(&self, instances: &[InstanceId], job: &JobName, total: u32) -> ShardingPlan {
        Self::shard_held(instances, job, total, &BTreeMap::new())
    }

    fn shard_with(&self, input: &ShardingInput<'_>) -> ShardingPlan {
        Self::shard_held(input.instances, input.job, input.total, input.held)
    }

    fn uses_namespace_load(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sharding::tests::{ids, job, plan, Ips, Items};

    #[test]
    fn namespace_balance_fills_the_least_loaded_instances_first() {
        // "c" hashes to 99 (99 % 3 = 0: no rotation), "a" to 97 (97 % 3 = 1).
        // (job, instances as given, items held elsewhere in the same order, total, expected)
        let table: &[(&str, Ips, &[usize], u32, Items)] = &[
            ("c", &["3", "2", "1"], &[0, 0, 0], 1, &[&[0], &[], &[]]),
            ("c", &["3", "2", "1"], &[1, 0, 0], 1, &[&[], &[0], &[]]),
            ("c", &["3", "2", "1"], &[1, 1, 0], 1, &[&[], &[], &[0]]),
            (
                "c",
                &["3", "2", "1"],
                &[5, 0, 2],
                4,
                &[&[], &[0, 1, 2], &[3]],
            ),
            ("c", &["3", "2", "1"], &[0, 0, 0], 4, &[&[0, 1], &[2], &[3]]),
            // Rotated by one: "2" first among equals, then "1", then "3".
            ("a", &["3", "2", "1"], &[0, 0, 0], 1, &[&[], &[0], &[]]),
            ("a", &["3", "2", "1"], &[0, 0, 0], 4, &[&[3], &[0, 1], &[2]]),
            ("a", &["3", "2", "1"], &[0, 3, 0], 2, &[&[1], &[], &[0]]),
            ("a", &[], &[], 3, &[]),
        ];
        for &(name, given, held, total, expected) in table {
            let given = ids(given);
            let held: BTreeMap<InstanceId, usize> =
                given.iter().cloned().zip(held.iter().copied()).collect();
            assert_eq!(
                NamespaceBalance::shard_held(&given, &job(name), total, &held),
                plan(&given, expected),
                "job {name} over {given:?} holding {held:?} with {total} items"
            );
        }
    }

    #[test]
    fn a_hundred_one_item_jobs_sharded_in_turn_land_25_on_each_of_4_instances() {
        let given = ids(&["4", "3", "2", "1"]);
        let mut held: BTreeMap<InstanceId, usize> = BTreeMap::new();
        for n in 0..100 {
            let plan = NamespaceBalance::shard_held(&given, &job(&format!("job-{n}")), 1, &held);
            for (id, items) in plan {
                *held.entry(id).or_default() += items.len();
            }
        }
        assert_eq!(held.values().copied().collect::<Vec<_>>(), [25, 25, 25, 25]);
    }
}
