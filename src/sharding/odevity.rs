//! ODEVITY: the parity of the job name's hash picks the instance order before averaging, so that
//! jobs with few items do not all land on the same instances.

use super::{average_allocation, java_string_hash, ShardingPlan, ShardingStrategy};
use crate::{InstanceId, JobName};

super::builtin_strategy! {
    /// ODEVITY (ElasticJob's `OdevitySortByNameJobShardingStrategy`).
    ///
    /// Our reading, taken from the Java code rather than from its doc comment: when
    /// `(long) jobName.hashCode() % 2 == 0` the instance list is reversed, otherwise it is used as
    /// given, then items are averaged. The list the Java leader passes comes from the registry in
    /// descending order, so an even hash shards in ascending order and an odd hash (negative odd
    /// ones too: Java's `%` gives -1) in descending order. The doc comment ("odd: ascending, even:
    /// descending") and the seed's example hold only for a list given in ascending order; we follow
    /// the code, because a Java leader and a Rust leader of the same job must produce the same
    /// plan.
    Odevity = "ODEVITY"
}

impl ShardingStrategy for Odevity {
    fn shard(&self, instances: &[InstanceId], job: &JobName, total: u32) -> ShardingPlan {
        if java_string_hash(job.as_str()) % 2 == 0 {
            let reversed: Vec<InstanceId> = instances.iter().rev().cloned().collect();
            average_allocation(&reversed, total)
        } else {
            average_allocation(instances, total)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sharding::tests::{assert_table, Ips, Items};

    #[test]
    fn odevity_reverses_the_given_order_only_for_an_even_hash() {
        // Hashes from OpenJDK 17: "a" 97 (odd), "orders" -1008770331 (negative odd),
        // "b" 98 (even), "orders_v2" -390665706 (negative even).
        // (job, instances as given, total, expected items per instance in the given order)
        let table: &[(&str, Ips, u32, Items)] = &[
            // The seed's example, with the list in ascending order as the seed assumes.
            ("a", &["1", "2", "3"], 2, &[&[0], &[1], &[]]),
            ("b", &["1", "2", "3"], 2, &[&[], &[1], &[0]]),
            // The registry's descending order, as a leader really passes it.
            ("a", &["3", "2", "1"], 2, &[&[0], &[1], &[]]),
            ("orders", &["3", "2", "1"], 2, &[&[0], &[1], &[]]),
            ("b", &["3", "2", "1"], 2, &[&[], &[1], &[0]]),
            (
                "orders_v2",
                &["3", "2", "1"],
                8,
                &[&[4, 5], &[2, 3, 7], &[0, 1, 6]],
            ),
            ("b", &[], 3, &[]),
            ("b", &["1"], 3, &[&[0, 1, 2]]),
        ];
        assert_table(&Odevity, table);
    }
}
