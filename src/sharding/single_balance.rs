//! SINGLE_SHARDING_BALANCE (ElasticJob 3.0.5's `SingleShardingBalanceJobShardingStrategy`): like
//! ROUND_ROBIN, but the rotation also depends on the time of the sharding, so that a one-item job
//! does not stay on the one instance its name's hash picks.

use std::time::{SystemTime, UNIX_EPOCH};

use super::{average_allocation, java_string_hash, ShardingInput, ShardingPlan, ShardingStrategy};
use crate::{InstanceId, JobName};

super::builtin_strategy! {
    /// SINGLE_SHARDING_BALANCE: the instance list is rotated left by `offset = |jobName.hashCode()
    /// + (int) nowMillis| % n` (Java's 32-bit wrapping sum of the hash and the low 32 bits of the
    /// sharding's wall-clock milliseconds), then items are averaged.
    ///
    /// What it balances, read from the Java code: the offset is drawn at each *resharding* (an
    /// instance joins or leaves, a server is enabled or disabled, the item count changes, a
    /// reconcile), not at each run; between two reshardings a one-item job stays on one instance,
    /// as in Java. Across many jobs the offsets are spread by the time, so one-item jobs no longer
    /// all land on the instance their hash picks. For a balance that does not depend on chance, see
    /// [`super::NamespaceBalance`].
    ///
    /// As for ROUND_ROBIN, Java fails where we do not: with no instances (a division by zero) and
    /// when the sum is `i32::MIN` (`Math.abs` stays negative); we take the absolute value in 64
    /// bits, which equals Java's offset wherever Java succeeds.
    SingleShardingBalance = "SINGLE_SHARDING_BALANCE"
}

impl SingleShardingBalance {
    /// The plan for a sharding at `now_millis` (milliseconds since the Unix epoch).
    pub fn shard_at(
        instances: &[InstanceId],
        job: &JobName,
        total: u32,
        now_millis: i64,
    ) -> ShardingPlan {
        if instances.is_empty() {
            return ShardingPlan::new();
        }
        // `((Long) System.currentTimeMillis()).intValue()`: the low 32 bits, as a signed int.
        let low = now_millis as i32;
        let sum = java_string_hash(job.as_str()).wrapping_add(low);
        // The remainder is below `instances.len()`, so it fits back into usize.
        let offset = (u64::from(sum.unsigned_abs()) % instances.len() as u64) as usize;
        let mut rotated = instances.to_vec();
        rotated.rotate_left(offset);
        average_allocation(&rotated, total)
    }
}

impl ShardingStrategy for SingleShardingBalance {
    /// Without an injected time, the system clock's, as Java reads it.
    fn shard(&self, instances: &[InstanceId], job: &JobName, total: u32) -> ShardingPlan {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        Self::shard_at(instances, job, total, now)
    }

    fn shard_with(&self, input: &ShardingInput<'_>) -> ShardingPlan {
        Self::shard_at(input.instances, input.job, input.total, input.now_millis)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sharding::tests::{ids, job, plan, Ips, Items};

    #[test]
    fn single_sharding_balance_rotates_by_the_hash_plus_the_low_32_bits_of_the_time() {
        // "a" hashes to 97 and "orders" to -1008770331 (OpenJDK 17).
        // (job, now ms, instances as given, total, expected items per instance in the given order)
        let table: &[(&str, i64, Ips, u32, Items)] = &[
            // 97 + 0 = 97, 97 % 3 = 1: rotate left by one.
            ("a", 0, &["3", "2", "1"], 1, &[&[], &[0], &[]]),
            // 97 + 2 = 99, 99 % 3 = 0: no rotation.
            ("a", 2, &["3", "2", "1"], 1, &[&[0], &[], &[]]),
            // 97 + 1 = 98, 98 % 3 = 2.
            ("a", 1, &["3", "2", "1"], 1, &[&[], &[], &[0]]),
            // Only the low 32 bits of the time count: 2^32 + 2 behaves as 2.
            ("a", (1 << 32) + 2, &["3", "2", "1"], 1, &[&[0], &[], &[]]),
            // A negative sum: |-1008770331 + 1008770330| = 1, 1 % 3 = 1.
            (
                "orders",
                1_008_770_330,
                &["3", "2", "1"],
                4,
                &[&[2], &[0, 3], &[1]],
            ),
            // i32::MIN (hash 97, low bits i32::MIN - 97): 2^31 % 3 = 2, where Java would throw.
            (
                "a",
                i64::from(i32::MIN) - 97 + (1 << 32),
                &["3", "2", "1"],
                3,
                &[&[1], &[2], &[0]],
            ),
            ("a", 5, &[], 3, &[]),
            ("a", 5, &["1"], 2, &[&[0, 1]]),
        ];
        for &(name, now, given, total, expected) in table {
            let given = ids(given);
            assert_eq!(
                SingleShardingBalance::shard_at(&given, &job(name), total, now),
                plan(&given, expected),
                "job {name} at {now} over {given:?} with {total} items"
            );
        }
    }

    #[test]
    fn a_one_item_job_visits_every_instance_as_the_time_of_sharding_moves() {
        let given = ids(&["4", "3", "2", "1"]);
        let owners: std::collections::BTreeSet<InstanceId> = (0..4)
            .map(|now| {
                let plan = SingleShardingBalance::shard_at(&given, &job("report"), 1, now);
                plan.into_iter()
                    .find(|(_, items)| !items.is_empty())
                    .unwrap()
                    .0
            })
            .collect();
        assert_eq!(
            owners.len(),
            4,
            "four consecutive milliseconds, four owners"
        );
    }
}
