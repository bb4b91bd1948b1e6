//! Whether a job's item runs capture their output, and how much of it: `shardcron.output` in the
//! job's `props`, a number of KiB (`64` keeps the last 64 KiB of each item run's output). Absent
//! or `0`: no capture, and nothing is held or done per run. A Java ElasticJob 3.0.x instance
//! loads the key as a plain property and ignores it.
//!
//! What is captured and where it goes is [`crate::job::output`]'s business; this file only reads
//! the knob.

use super::{ConfigError, JobConfig};

/// The `props` key: the KiB of output kept per item run (`0` or absent: off).
pub const OUTPUT_PROP: &str = "shardcron.output";

/// The field a bad [`OUTPUT_PROP`] is reported under.
const OUTPUT_FIELD: &str = "props.shardcron.output";

/// The largest bound a job may ask for: 16 MiB per item run, written to the history with the run.
pub const MAX_OUTPUT_KIB: u32 = 16 * 1024;

/// How much of an item run's output is kept: the last `bytes` of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OutputLimit {
    bytes: usize,
}

impl OutputLimit {
    /// A bound of `kib` KiB; `None` for 0 (off) or more than [`MAX_OUTPUT_KIB`].
    pub fn kib(kib: u32) -> Option<Self> {
        (1..=MAX_OUTPUT_KIB).contains(&kib).then(|| Self {
            bytes: kib as usize * 1024,
        })
    }

    /// The bound in bytes.
    pub fn bytes(self) -> usize {
        self.bytes
    }

    /// Reads [`OUTPUT_PROP`]'s value: `None` for `0` (off), an error naming the key otherwise.
    pub fn parse(value: &str) -> Result<Option<Self>, ConfigError> {
        let bad = || ConfigError {
            field: OUTPUT_FIELD,
            problem: format!("{value:?} is not a number of KiB from 0 (off) to {MAX_OUTPUT_KIB}"),
        };
        let kib: u32 = value.trim().parse().map_err(|_| bad())?;
        match kib {
            0 => Ok(None),
            kib => Self::kib(kib).map(Some).ok_or_else(bad),
        }
    }
}

impl JobConfig {
    /// The output capture the config asks for in [`OUTPUT_PROP`]; `None` when off.
    pub fn output_limit(&self) -> Result<Option<OutputLimit>, ConfigError> {
        match self.props.get(OUTPUT_PROP) {
            Some(value) => OutputLimit::parse(value),
            None => Ok(None),
        }
    }

    /// Sets `shardcron.output`: keep the last `kib` KiB of each item run's output (stdout and
    /// stderr of a script, an HTTP job's answer, the lines a handler prints), `0` for none.
    ///
    /// ```
    /// use shardcron::config::JobConfig;
    /// let config = JobConfig::test("orders").capture_output(64);
    /// assert_eq!(config.output_limit().unwrap().unwrap().bytes(), 64 * 1024);
    /// ```
    pub fn capture_output(self, kib: u32) -> Self {
        self.prop(OUTPUT_PROP, kib.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_or_zero_captures_nothing_and_a_number_is_kib() {
        assert_eq!(JobConfig::test("a").output_limit(), Ok(None));
        assert_eq!(OutputLimit::parse("0"), Ok(None));
        assert_eq!(OutputLimit::parse(" 8 ").unwrap().unwrap().bytes(), 8192);
        let most = MAX_OUTPUT_KIB.to_string();
        assert!(OutputLimit::parse(&most).unwrap().is_some());
    }

    #[test]
    fn validation_carries_the_bound_and_refuses_a_bad_one_naming_the_key() {
        use crate::config::{JobKind, ValidationContext};
        let ctx = ValidationContext::builtin(JobKind::Simple);
        let plain = JobConfig::test("a").validate(&ctx).unwrap();
        assert_eq!(plain.output_limit(), None, "no prop: no capture");
        let asking = JobConfig::test("a")
            .capture_output(2)
            .validate(&ctx)
            .unwrap();
        assert_eq!(asking.output_limit(), OutputLimit::kib(2));
        let err = JobConfig::test("a")
            .prop(OUTPUT_PROP, "lots")
            .validate(&ctx)
            .unwrap_err();
        assert_eq!(err.fields(), ["props.shardcron.output"]);
    }

    #[test]
    fn a_bad_bound_is_refused_naming_the_key() {
        for value in ["-1", "lots", "1.5", "", "16385"] {
            let err = OutputLimit::parse(value).unwrap_err();
            assert_eq!(err.field, "props.shardcron.output", "{value:?}");
            assert!(err.problem.contains("KiB"), "{}", err.problem);
        }
    }
}
