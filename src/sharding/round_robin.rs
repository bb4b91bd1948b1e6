//! ROUND_ROBIN: the job name's hash rotates the instance list before averaging, so that jobs start
//! their blocks on different instances.

use super::{average_allocation, java_string_hash, ShardingPlan, ShardingStrategy};
use crate::{InstanceId, JobName};

super::builtin_strategy! {
    /// ROUND_ROBIN (ElasticJob's `RotateServerByNameJobShardingStrategy`, `RoundRobinByName...` in
    /// 3.x): the list is rotated left by `offset = Math.abs(jobName.hashCode()) % n`, so position
    /// `i` takes the instance at `(i + offset) % n`, then items are averaged.
    ///
    /// The seed's examples ("hash 1, 9 items: server1=\[1,2,3\], server2=\[4,5,6\],
    /// server3=\[7,8,0\]") describe shifting the items; the Java code rotates the instances, giving
    /// server2=\[0,1,2\], server3=\[3,4,5\], server1=\[6,7,8\]. We follow the code so that a Java
    /// and a Rust leader agree.
    ///
    /// Two cases where Java throws and we do not: with no instances Java divides by zero (we return
    /// an empty plan), and for a hash of `i32::MIN` Java's `Math.abs` stays negative, the offset is
    /// negative and the list lookup fails unless `n` divides 2^31. We take the absolute value in 64
    /// bits (2^31 % n), which is deterministic and equals Java's offset in every case where Java
    /// succeeds.
    RoundRobin = "ROUND_ROBIN"
}

impl ShardingStrategy for RoundRobin {
    fn shard(&self, instances: &[InstanceId], job: &JobName, total: u32) -> ShardingPlan {
        if instances.is_empty() {
            return ShardingPlan::new();
        }
        let hash = u64::from(java_string_hash(job.as_str()).unsigned_abs());
        // The remainder is below `instances.len()`, so it fits back into usize.
        let offset = (hash % instances.len() as u64) as usize;
        let mut rotated = instances.to_vec();
        rotated.rotate_left(offset);
        average_allocation(&rotated, total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sharding::tests::{assert_table, Ips, Items};

    #[test]
    fn round_robin_rotates_the_instances_left_by_the_hash_offset() {
        // Hashes from OpenJDK 17, with |hash| % 3: "c" 99 -> 0, "a" 97 -> 1, "b" 98 -> 2,
        // "orders" -1008770331 -> 0, "payments" 1382682413 -> 2,
        // "GydZG_" i32::MIN -> 2^31 % 3 = 2 (and 2^31 % 4 = 0, Java's own answer there).
        // (job, instances as given, total, expected items per instance in the given order)
        let table: &[(&str, Ips, u32, Items)] = &[
            (
                "c",
                &["1", "2", "3"],
                9,
                &[&[0, 1, 2], &[3, 4, 5], &[6, 7, 8]],
            ),
            // The seed's examples with hash 1 and hash 2, as the Java code computes them.
            (
                "a",
                &["1", "2", "3"],
                9,
                &[&[6, 7, 8], &[0, 1, 2], &[3, 4, 5]],
            ),
            (
                "b",
                &["1", "2", "3"],
                9,
                &[&[3, 4, 5], &[6, 7, 8], &[0, 1, 2]],
            ),
            (
                "orders",
                &["3", "2", "1"],
                8,
                &[&[0, 1, 6], &[2, 3, 7], &[4, 5]],
            ),
            (
                "payments",
                &["3", "2", "1"],
                8,
                &[&[2, 3, 7], &[4, 5], &[0, 1, 6]],
            ),
            ("a", &["3", "2", "1"], 1, &[&[], &[0], &[]]),
            ("GydZG_", &["3", "2", "1"], 3, &[&[1], &[2], &[0]]),
            (
                "GydZG_",
                &["4", "3", "2", "1"],
                4,
                &[&[0], &[1], &[2], &[3]],
            ),
            ("a", &[], 3, &[]),
            ("a", &["1"], 2, &[&[0, 1]]),
        ];
        assert_table(&RoundRobin, table);
    }
}
