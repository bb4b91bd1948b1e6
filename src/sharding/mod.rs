//! Sharding strategies: who runs which items of a job.
//!
//! A strategy is a pure function from the available instances (in [`sharding_order`]) and the item
//! count to a [`ShardingPlan`]. The three ElasticJob built-ins reproduce the Java results exactly,
//! Java's `String.hashCode` included ([`java_string_hash`]), so that Java and Rust instances can
//! share a job and agree on its plan:
//!
//! | name | strategy | what it does |
//! | --- | --- | --- |
//! | `AVG_ALLOCATION` (default) | [`AverageAllocation`] | contiguous blocks, remainder to the first instances |
//! | `ODEVITY` | [`Odevity`] | reverse the order when the job name's hash is even, then average |
//! | `ROUND_ROBIN` | [`RoundRobin`] | rotate the order by the job name's hash, then average |
//! | `SINGLE_SHARDING_BALANCE` | [`SingleShardingBalance`] | rotate by the hash plus the sharding's time (ElasticJob 3.0.5) |
//! | `NAMESPACE_BALANCE` (ours) | [`NamespaceBalance`] | least loaded first, counting the items held in the namespace's other jobs |
//!
//! A [`StrategyRegistry`] maps the configured `jobShardingStrategyType` to a strategy, user
//! strategies included. The two balancing strategies need more than the instances: the leader hands
//! every strategy a [`ShardingInput`] with the sharding's time and, for a strategy that
//! [asks](ShardingStrategy::uses_namespace_load), the items each instance holds in the other jobs.
//!
//! With `staticSharding`, the configured strategy shards a job only once; afterwards
//! [`keep_owners`] moves only the items whose owner cannot run them.

/// Declares a built-in strategy: a unit struct (with the doc given) and the name it is configured
/// by, `jobShardingStrategyType`.
macro_rules! builtin_strategy {
    ($(#[$doc:meta])* $strategy:ident = $name:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, Default)]
        pub struct $strategy;

        impl $strategy {
            /// The name under which the strategy is configured (`jobShardingStrategyType`).
            pub const NAME: &'static str = $name;
        }
    };
}
use builtin_strategy;

mod average;
mod java_hash;
mod labels;
mod namespace_balance;
pub mod namespace_plan;
mod odevity;
mod round_robin;
mod single_balance;
mod static_sharding;

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::Arc;

pub use average::{average_allocation, AverageAllocation};
pub use java_hash::java_string_hash;
pub use labels::{carries, check_label, instance_node_data, parse_labels, LabelError};
pub use namespace_balance::NamespaceBalance;
pub use odevity::Odevity;
pub use round_robin::RoundRobin;
pub use single_balance::SingleShardingBalance;
pub use static_sharding::keep_owners;

use crate::{InstanceId, JobName, ShardItem};

/// The items each instance runs. Every instance the strategy was given is a key, with an empty list
/// when it gets no item.
pub type ShardingPlan = BTreeMap<InstanceId, Vec<ShardItem>>;

/// A way to spread items `0..total` over instances.
///
/// Implementations must be deterministic: every leader computes the same plan from the same input.
pub trait ShardingStrategy: Send + Sync + Debug {
    /// Assigns items `0..total` to `instances`, which come in [`sharding_order`] (distinct, descending,
    /// as the Java registry client returns them). The plan holds every given instance.
    fn shard(&self, instances: &[InstanceId], job: &JobName, total: u32) -> ShardingPlan;

    /// Assigns items with everything the leader knows ([`ShardingInput`]); by default the plan of
    /// [`ShardingStrategy::shard`]. The engine always calls this one.
    fn shard_with(&self, input: &ShardingInput<'_>) -> ShardingPlan {
        self.shard(input.instances, input.job, input.total)
    }

    /// Whether the strategy reads [`ShardingInput::held`]; the leader counts the namespace's items
    /// only for a strategy that does.
    fn uses_namespace_load(&self) -> bool {
        false
    }
}

/// What the leader knows when it shards a job.
#[derive(Debug, Clone, Copy)]
pub struct ShardingInput<'a> {
    /// The available instances, in [`sharding_order`].
    pub instances: &'a [InstanceId],
    /// The job.
    pub job: &'a JobName,
    /// `shardingTotalCount`.
    pub total: u32,
    /// The sharding's wall-clock time, in milliseconds since the Unix epoch (from the node's clock).
    pub now_millis: i64,
    /// Items each available instance holds in the namespace's other jobs; empty unless the strategy
    /// [uses it](ShardingStrategy::uses_namespace_load).
    pub held: &'a BTreeMap<InstanceId, usize>,
}

/// Why a strategy could not be registered or found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShardingError {
    /// The configured `jobShardingStrategyType` names no registered strategy.
    #[error("unknown sharding strategy {name:?}; registered: {known:?}")]
    UnknownStrategy {
        /// The configured name.
        name: String,
        /// The names that are registered, sorted.
        known: Vec<String>,
    },
    /// A strategy is already registered under this name (the built-ins cannot be replaced).
    #[error("a sharding strategy named {name:?} is already registered")]
    DuplicateStrategy {
        /// The name.
        name: String,
    },
    /// A strategy cannot be registered under the empty name: an empty configured name means the
    /// default, as in Java.
    #[error("a sharding strategy needs a non-empty name")]
    EmptyStrategyName,
}

/// Orders instances as the strategies expect them: distinct, in descending string order.
///
/// Java sorts the children of `instances/` with `Comparator.reverseOrder()`, which compares UTF-16
/// code units; we compare the same way so that ids outside ASCII order as they do in Java.
pub fn sharding_order(instances: impl IntoIterator<Item = InstanceId>) -> Vec<InstanceId> {
    let mut ordered: Vec<InstanceId> = instances.into_iter().collect();
    ordered.sort_by(|a, b| java_order(b, a));
    ordered.dedup();
    ordered
}

/// The instances whose server is enabled, in [`sharding_order`]. `server_enabled` is asked about
/// each instance's [`InstanceId::ip`] and answers whether `servers/{ip}` reads `ENABLED`.
pub fn available_instances<'a>(
    instances: impl IntoIterator<Item = &'a InstanceId>,
    server_enabled: impl Fn(&str) -> bool,
) -> Vec<InstanceId> {
    sharding_order(
        instances
            .into_iter()
            .filter(|id| server_enabled(id.ip()))
            .cloned(),
    )
}

/// Java's `String.compareTo`: lexicographic over UTF-16 code units.
fn java_order(a: &InstanceId, b: &InstanceId) -> Ordering {
    a.as_str().encode_utf16().cmp(b.as_str().encode_utf16())
}

/// The strategies a job can name in `jobShardingStrategyType`: the three built-ins and any
/// registered by the application.
#[derive(Debug, Clone)]
pub struct StrategyRegistry {
    strategies: BTreeMap<String, Arc<dyn ShardingStrategy>>,
}

impl StrategyRegistry {
    /// The strategy used when a job names none.
    pub const DEFAULT: &'static str = AverageAllocation::NAME;

    /// A registry holding the built-ins `AVG_ALLOCATION`, `ODEVITY`, `ROUND_ROBIN`,
    /// `SINGLE_SHARDING_BALANCE` and `NAMESPACE_BALANCE`.
    pub fn new() -> Self {
        let builtins: [(&str, Arc<dyn ShardingStrategy>); 5] = [
            (AverageAllocation::NAME, Arc::new(AverageAllocation)),
            (Odevity::NAME, Arc::new(Odevity)),
            (RoundRobin::NAME, Arc::new(RoundRobin)),
            (SingleShardingBalance::NAME, Arc::new(SingleShardingBalance)),
            (NamespaceBalance::NAME, Arc::new(NamespaceBalance)),
        ];
        Self {
            strategies: builtins
                .into_iter()
                .map(|(name, strategy)| (name.to_owned(), strategy))
                .collect(),
        }
    }

    /// Registers a user strategy under `name`. Names are case-sensitive, as in Java's SPI lookup.
    pub fn register(
        &mut self,
        name: impl Into<String>,
        strategy: Arc<dyn ShardingStrategy>,
    ) -> Result<(), ShardingError> {
        let name = name.into();
        if name.is_empty() {
            return Err(ShardingError::EmptyStrategyName);
        }
        if self.strategies.contains_key(&name) {
            return Err(ShardingError::DuplicateStrategy { name });
        }
        self.strategies.insert(name, strategy);
        Ok(())
    }

    /// The strategy a job configured; `None` or an empty name is [`StrategyRegistry::DEFAULT`], as
    /// Java treats a null or empty `jobShardingStrategyType`.
    pub fn get(&self, name: Option<&str>) -> Result<Arc<dyn ShardingStrategy>, ShardingError> {
        let name = name.filter(|n| !n.is_empty()).unwrap_or(Self::DEFAULT);
        self.strategies
            .get(name)
            .cloned()
            .ok_or_else(|| ShardingError::UnknownStrategy {
                name: name.to_owned(),
                known: self.strategies.keys().cloned().collect(),
            })
    }

    /// The registered names, sorted.
    pub fn names(&self) -> Vec<&str> {
        self.strategies.keys().map(String::as_str).collect()
    }
}

impl Default for StrategyRegistry {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Instance ips of a table row, in the order given to the strategy.
    pub(crate) type Ips = &'static [&'static str];
    /// The items of each instance of a table row, in the same order.
    pub(crate) type Items = &'static [&'static [u32]];

    /// Instance ids `{ip}@-@1` for each ip, in the given order.
    pub(crate) fn ids(ips: &[&str]) -> Vec<InstanceId> {
        ips.iter()
            .map(|ip| InstanceId::new(ip, "1").expect("test ip"))
            .collect()
    }

    pub(crate) fn job(name: &str) -> JobName {
        JobName::new(name).expect("test job name")
    }

    /// The plan giving `items[p]` to `instances[p]`.
    pub(crate) fn plan(instances: &[InstanceId], items: &[&[u32]]) -> ShardingPlan {
        assert_eq!(instances.len(), items.len(), "test plan shape");
        instances
            .iter()
            .zip(items)
            .map(|(id, items)| (id.clone(), items.iter().copied().map(ShardItem).collect()))
            .collect()
    }

    /// Checks each row `(job, instances as given, total, expected items per instance in the given
    /// order)` of a table against `strategy`.
    pub(crate) fn assert_table(strategy: &dyn ShardingStrategy, table: &[(&str, Ips, u32, Items)]) {
        for &(name, given, total, expected) in table {
            let given = ids(given);
            assert_eq!(
                strategy.shard(&given, &job(name), total),
                plan(&given, expected),
                "job {name} over {given:?} with {total} items"
            );
        }
    }

    #[test]
    fn every_builtin_assigns_each_item_exactly_once_and_balances_within_one() {
        let registry = StrategyRegistry::new();
        let job = job("orders");
        let all = ids(&["h", "g", "f", "e", "d", "c", "b", "a"]);
        for name in registry.names() {
            let strategy = registry.get(Some(name)).unwrap();
            for n in 1..8 {
                for total in 1..40 {
                    let plan = strategy.shard(&all[..n], &job, total);
                    let case = format!("{name}, {n} instances, {total} items");
                    assert_eq!(plan.len(), n, "{case}: every instance is in the plan");
                    let mut items: Vec<u32> = plan.values().flatten().map(|i| i.get()).collect();
                    items.sort_unstable();
                    assert_eq!(items, (0..total).collect::<Vec<_>>(), "{case}: items once");
                    let sizes = plan.values().map(Vec::len);
                    let spread = sizes.clone().max().unwrap() - sizes.min().unwrap();
                    assert!(spread <= 1, "{case}: sizes differ by {spread}");
                }
            }
        }
    }

    #[test]
    fn sharding_order_is_descending_in_java_order_without_repeats() {
        // U+FF01 sorts below U+1F600 by code point but above it by UTF-16 unit (0xD83D).
        let given = ids(&["10.0.0.2", "10.0.0.10", "\u{1F600}", "10.0.0.2", "\u{FF01}"]);
        let expected = ids(&["\u{FF01}", "\u{1F600}", "10.0.0.2", "10.0.0.10"]);
        assert_eq!(sharding_order(given), expected);
    }

    #[test]
    fn available_instances_keeps_enabled_servers_in_sharding_order() {
        let given = ids(&["10.0.0.1", "10.0.0.3", "10.0.0.2"]);
        let available = available_instances(&given, |ip| ip != "10.0.0.2");
        assert_eq!(available, ids(&["10.0.0.3", "10.0.0.1"]));
    }

    #[test]
    fn the_registry_resolves_builtins_defaults_and_user_strategies_by_name() {
        let mut registry = StrategyRegistry::new();
        assert_eq!(
            registry.names(),
            [
                "AVG_ALLOCATION",
                "NAMESPACE_BALANCE",
                "ODEVITY",
                "ROUND_ROBIN",
                "SINGLE_SHARDING_BALANCE"
            ]
        );
        let given = ids(&["b", "a"]);
        let default_plan = average_allocation(&given, 3);
        for name in [None, Some(""), Some("AVG_ALLOCATION")] {
            let plan = registry.get(name).unwrap().shard(&given, &job("b"), 3);
            assert_eq!(plan, default_plan, "{name:?}");
        }

        registry.register("MINE", Arc::new(Odevity)).unwrap();
        assert_eq!(
            registry.names(),
            [
                "AVG_ALLOCATION",
                "MINE",
                "NAMESPACE_BALANCE",
                "ODEVITY",
                "ROUND_ROBIN",
                "SINGLE_SHARDING_BALANCE"
            ]
        );
        assert!(registry.get(Some("MINE")).is_ok());
        assert_eq!(
            registry.register("ODEVITY", Arc::new(AverageAllocation)),
            Err(ShardingError::DuplicateStrategy {
                name: "ODEVITY".into()
            })
        );
        assert_eq!(
            registry.register("", Arc::new(AverageAllocation)),
            Err(ShardingError::EmptyStrategyName)
        );
        assert_eq!(
            registry.get(Some("avg_allocation")).unwrap_err(),
            ShardingError::UnknownStrategy {
                name: "avg_allocation".into(),
                known: registry.names().into_iter().map(String::from).collect(),
            }
        );
    }
}
