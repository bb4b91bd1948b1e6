//! How many of a job's items may run at once on one instance: ElasticJob's per-job executor pool,
//! chosen by `jobExecutorThreadPoolSizeProviderType` (3.0.3 on; 3.0.0-3.0.2 named it
//! `jobExecutorServiceHandlerType`, which is read when the newer field is absent).
//!
//! | value | limit | as ElasticJob |
//! | --- | --- | --- |
//! | `CPU` | twice the available cores | `CPUUsageJobExecutorThreadPoolSizeProvider` |
//! | `SINGLE_THREAD` | 1: items one after the other | `SingleThreadJobExecutorThreadPoolSizeProvider` |
//! | a positive integer, e.g. `4` | that many | shardcron's extension; a Java peer refuses the name |
//! | absent or empty | no limit | ElasticJob defaults to `CPU`; see below |
//!
//! Items beyond the limit wait in order (first come, first served) and start as others end. The
//! limit covers every run of the job on the instance (a fire, a misfire catch-up, a failover run),
//! as ElasticJob's pool does, and a changed config applies at once: a raised limit starts waiting
//! items, a lowered one lets running items finish and starts no more until below it.
//!
//! Absent means no limit, unlike ElasticJob: its pool size bounds blocked threads, while an item
//! here is a task that costs no thread while it awaits, so a limit is a choice about the work (a
//! database that takes four connections), not a cost of the engine. `CPU` is kept for Java's
//! meaning.

use std::num::NonZeroUsize;

use super::{ConfigError, JobConfig};

/// The YAML field (ElasticJob 3.0.3 and later).
pub const POOL_SIZE_FIELD: &str = "jobExecutorThreadPoolSizeProviderType";
/// The YAML field of ElasticJob 3.0.0-3.0.2, read when [`POOL_SIZE_FIELD`] is absent.
pub const LEGACY_POOL_FIELD: &str = "jobExecutorServiceHandlerType";

/// A job's item concurrency on one instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ItemConcurrency {
    /// No limit (the field is absent).
    #[default]
    Unbounded,
    /// `CPU`: twice the available cores.
    Cpu,
    /// `SINGLE_THREAD`: one item at a time.
    SingleThread,
    /// A number of items (shardcron's extension).
    Fixed(NonZeroUsize),
}

impl ItemConcurrency {
    /// The limit on this machine; `None` for no limit.
    pub fn limit(self) -> Option<usize> {
        self.limit_with(cores())
    }

    /// The limit on a machine of `cores` cores.
    pub fn limit_with(self, cores: usize) -> Option<usize> {
        match self {
            Self::Unbounded => None,
            Self::Cpu => Some(cores.max(1) * 2),
            Self::SingleThread => Some(1),
            Self::Fixed(n) => Some(n.get()),
        }
    }

    /// Reads one field's value.
    fn parse(field: &'static str, value: &str) -> Result<Self, ConfigError> {
        match value.trim() {
            "" => Ok(Self::Unbounded),
            "CPU" => Ok(Self::Cpu),
            "SINGLE_THREAD" => Ok(Self::SingleThread),
            other => other
                .parse::<NonZeroUsize>()
                .map(Self::Fixed)
                .map_err(|_| ConfigError {
                    field,
                    problem: format!(
                        "{other:?} is not CPU, SINGLE_THREAD or a positive number of items"
                    ),
                }),
        }
    }
}

/// The cores available to this process, counted once: every job asks at its start, and counting
/// reads cgroup files (1% of a 10,000-job node's start-up CPU, counted at each job).
fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, NonZeroUsize::get))
}

impl JobConfig {
    /// The item concurrency the config asks for in [`POOL_SIZE_FIELD`] (a config that spells it
    /// [`LEGACY_POOL_FIELD`] is read into the same field, and written back under the new name,
    /// since ElasticJob 3.0.5+ refuses the old one).
    pub fn item_concurrency(&self) -> Result<ItemConcurrency, ConfigError> {
        let current = self.job_executor_thread_pool_size_provider_type.as_deref();
        match current.filter(|v| !v.trim().is_empty()) {
            Some(v) => ItemConcurrency::parse(POOL_SIZE_FIELD, v),
            None => Ok(ItemConcurrency::Unbounded),
        }
    }

    /// Sets `jobExecutorThreadPoolSizeProviderType`: `CPU`, `SINGLE_THREAD` or a number.
    ///
    /// ```
    /// use shardcron::config::{ItemConcurrency, JobConfig};
    /// let config = JobConfig::test("orders").thread_pool_size_provider("SINGLE_THREAD");
    /// assert_eq!(config.item_concurrency(), Ok(ItemConcurrency::SingleThread));
    /// ```
    pub fn thread_pool_size_provider(mut self, value: impl Into<String>) -> Self {
        self.job_executor_thread_pool_size_provider_type = Some(value.into());
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The field's value, what it reads as (or the field blamed), the limit on 4 cores.
    type Case = (
        Option<&'static str>,
        Result<ItemConcurrency, &'static str>,
        Option<usize>,
    );

    #[test]
    fn pool_size_provider_names_read_as_elasticjob_with_numbers_as_an_extension() {
        let n = |v| ItemConcurrency::Fixed(NonZeroUsize::new(v).unwrap());
        let cases: [Case; 7] = [
            (None, Ok(ItemConcurrency::Unbounded), None),
            (Some(""), Ok(ItemConcurrency::Unbounded), None),
            (Some("CPU"), Ok(ItemConcurrency::Cpu), Some(8)),
            (
                Some("SINGLE_THREAD"),
                Ok(ItemConcurrency::SingleThread),
                Some(1),
            ),
            (Some("3"), Ok(n(3)), Some(3)),
            (Some("0"), Err(POOL_SIZE_FIELD), None),
            (Some("FAST"), Err(POOL_SIZE_FIELD), None),
        ];
        for (current, want, limit) in cases {
            let mut config = JobConfig::test("j");
            config.job_executor_thread_pool_size_provider_type = current.map(str::to_owned);
            let got = config.item_concurrency().map_err(|e| e.field);
            assert_eq!(got, want, "{current:?}");
            if let Ok(c) = got {
                assert_eq!(c.limit_with(4), limit, "{current:?}");
            }
        }
    }

    #[test]
    fn the_pre_3_0_5_field_name_reads_into_the_pool_size_and_is_written_under_the_new_one() {
        let yaml = "jobName: j\ncron: 0/5 * * * * ?\nshardingTotalCount: 1\njobExecutorServiceHandlerType: SINGLE_THREAD\n";
        let config = JobConfig::from_yaml(yaml).expect("the old name is read");
        assert_eq!(config.item_concurrency(), Ok(ItemConcurrency::SingleThread));
        let written = config.to_yaml().expect("written");
        assert!(written.contains(POOL_SIZE_FIELD) && !written.contains(LEGACY_POOL_FIELD));
    }

    #[test]
    fn a_bad_pool_size_in_the_registry_yaml_is_refused_naming_the_field() {
        use crate::config::{JobKind, ValidationContext};
        let ctx = ValidationContext::builtin(JobKind::Simple);
        let yaml =
            "jobName: j\nshardingTotalCount: 2\njobExecutorThreadPoolSizeProviderType: FAST\n";
        let errors = JobConfig::from_yaml(yaml)
            .unwrap()
            .validate(&ctx)
            .unwrap_err();
        assert_eq!(errors.fields(), [POOL_SIZE_FIELD]);
        let yaml = "jobName: j\nshardingTotalCount: 2\njobExecutorThreadPoolSizeProviderType: 4\n";
        let valid = JobConfig::from_yaml(yaml).unwrap().validate(&ctx).unwrap();
        assert_eq!(valid.item_concurrency().limit_with(2), Some(4));
        let back = JobConfig::from_yaml(&valid.config().to_yaml().unwrap()).unwrap();
        assert_eq!(back.item_concurrency(), valid.config().item_concurrency());
        assert!(
            back.unknown_fields.is_empty(),
            "a known field, not kept as unknown"
        );
    }
}
