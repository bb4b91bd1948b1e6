//! Reading and writing the `config` node's YAML as the Java side does.
//!
//! ElasticJob writes with SnakeYAML, whose bean introspection orders properties alphabetically and
//! leaves out nulls; empty `props` and `jobListenerTypes` are left out too. [`JobConfig::to_yaml`]
//! reproduces that layout, so a config written here reads as the Java side would have written it.
//!
//! Reading parses the text once, with the typed reader (its errors name the field and the line).
//! Only a text whose top-level keys include one this crate does not know (found by a look at its
//! lines, `may_hold_unknown_fields`) is parsed a second time, untyped, to keep those fields so
//! that writing the config back keeps them.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer};
use serde_yaml_ng::{Mapping, Value};

use super::untrusted::{check_yaml, UntrustedYamlError};
use super::JobConfig;

/// The YAML names of [`JobConfig`]'s fields; anything else is kept in `unknown_fields`.
const KNOWN_FIELDS: [&str; 22] = [
    "jobName",
    "cron",
    "timeZone",
    "shardingTotalCount",
    "shardingItemParameters",
    "jobParameter",
    "monitorExecution",
    "failover",
    "misfire",
    "maxTimeDiffSeconds",
    "reconcileIntervalMinutes",
    "jobShardingStrategyType",
    "jobExecutorThreadPoolSizeProviderType",
    "jobExecutorServiceHandlerType",
    "jobErrorHandlerType",
    "jobListenerTypes",
    "description",
    "props",
    "disabled",
    "overwrite",
    "label",
    "staticSharding",
];

/// Why a config could not be read from or written to YAML.
#[derive(Debug, thiserror::Error)]
pub enum ConfigYamlError {
    /// The text is too large or holds an alias: refused before parsing (see [`super::untrusted`]).
    #[error("refusing job config YAML: {source}")]
    Refused {
        /// Which bound it breaks, and where.
        #[source]
        source: UntrustedYamlError,
    },
    /// The text is not YAML, or a field has the wrong type; the message names the field and the
    /// line (serde_yaml_ng's `field: problem at line L column C`).
    #[error("reading job config YAML: {source}")]
    Read {
        /// The parser's error, with its location.
        #[source]
        source: serde_yaml_ng::Error,
    },
    /// Collecting the fields this crate does not know failed (a top-level key is not a string).
    #[error("reading job config YAML: keeping the unknown fields: {source}")]
    ReadUnknownFields {
        /// The parser's error, with its location.
        #[source]
        source: serde_yaml_ng::Error,
    },
    /// A kept unknown field could not be written back.
    #[error("writing job config YAML: {source}")]
    Write {
        /// The emitter's error.
        #[source]
        source: serde_yaml_ng::Error,
    },
}

impl JobConfig {
    /// Reads the `config` node's YAML. Unknown fields are kept in
    /// [`unknown_fields`](JobConfig::unknown_fields); values are not validated here. Text larger
    /// than ZooKeeper's 1 MiB or holding a YAML alias is refused before it is parsed
    /// ([`super::untrusted::check_yaml`]): whoever writes the node must not be able to exhaust the
    /// memory of every reader.
    ///
    /// ```
    /// use shardcron::config::JobConfig;
    /// let config = JobConfig::from_yaml("jobName: orders\nshardingTotalCount: 3\n").unwrap();
    /// assert_eq!((config.job_name.as_str(), config.misfire), ("orders", true));
    /// let err = JobConfig::from_yaml("jobName: orders\nshardingTotalCount: many\n").unwrap_err();
    /// assert!(err.to_string().contains("shardingTotalCount"));
    /// let bomb = JobConfig::from_yaml("jobName: &n orders\ndescription: *n\n").unwrap_err();
    /// assert!(bomb.to_string().contains("alias at line 2"));
    /// ```
    pub fn from_yaml(text: &str) -> Result<Self, ConfigYamlError> {
        check_yaml(text.as_bytes()).map_err(|source| ConfigYamlError::Refused { source })?;
        let mut config: JobConfig =
            serde_yaml_ng::from_str(text).map_err(|source| ConfigYamlError::Read { source })?;
        if may_hold_unknown_fields(text) {
            let mut all: BTreeMap<String, Value> = serde_yaml_ng::from_str(text)
                .map_err(|source| ConfigYamlError::ReadUnknownFields { source })?;
            all.retain(|key, _| !KNOWN_FIELDS.contains(&key.as_str()));
            config.unknown_fields = all;
        }
        Ok(config)
    }

    /// Writes the `config` node's YAML as the Java side does: keys in alphabetical order, nulls,
    /// empty `props` and empty `jobListenerTypes` left out, unknown fields written back.
    pub fn to_yaml(&self) -> Result<String, ConfigYamlError> {
        let write = |source| ConfigYamlError::Write { source };
        let mut fields: BTreeMap<String, Value> =
            match serde_yaml_ng::to_value(self).map_err(write)? {
                Value::Mapping(mapping) => mapping
                    .into_iter()
                    .filter_map(|(key, value)| Some((key.as_str()?.to_owned(), value)))
                    .collect(),
                _ => unreachable!("a struct serializes to a mapping"),
            };
        for (key, value) in &self.unknown_fields {
            // A known field wins over a stale copy in `unknown_fields` (set by hand).
            fields.entry(key.clone()).or_insert_with(|| value.clone());
        }
        // BTreeMap iterates in key order: the alphabetical order SnakeYAML writes.
        let sorted: Mapping = fields
            .into_iter()
            .map(|(key, value)| (Value::String(key), value))
            .collect();
        serde_yaml_ng::to_string(&sorted).map_err(write)
    }
}

/// Reads `props` as strings whatever the YAML scalar type (`timeout: 30` is `"30"`), as Java's
/// `Properties` holds them; a nested list or map is refused.
pub(super) fn scalar_props<'de, D>(deserializer: D) -> Result<BTreeMap<String, String>, D::Error>
where
    D: Deserializer<'de>,
{
    let raw = Option::<Mapping>::deserialize(deserializer)?.unwrap_or_default();
    raw.into_iter()
        .map(|(key, value)| {
            let key = scalar_text(&key).ok_or_else(|| {
                serde::de::Error::custom(format!("props: key {key:?} is not a scalar"))
            })?;
            let value = scalar_text(&value).ok_or_else(|| {
                serde::de::Error::custom(format!("props.{key}: {value:?} is not a scalar"))
            })?;
            Ok((key, value))
        })
        .collect()
}

/// The text of a YAML scalar; `None` for a list, a map or a tagged value. A null (`key:` with no
/// value) reads as empty text, and is written back as `''`.
fn scalar_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Null => Some(String::new()),
        Value::Sequence(_) | Value::Mapping(_) | Value::Tagged(_) => None,
    }
}

/// Whether `text` may hold a top-level field this crate does not know, from a look at the lines
/// that start a key of the top-level mapping (those at the first content line's indentation): a
/// key not in [`KNOWN_FIELDS`] says yes, and so does anything that is not plainly a block mapping
/// (flow style, a quoted or complex key, a tab, content after `---`). Only a yes costs the second,
/// untyped parse; a config as ElasticJob or this crate writes it is parsed once.
fn may_hold_unknown_fields(text: &str) -> bool {
    let mut root = None;
    for line in text.lines() {
        let content = line.trim_start_matches(' ');
        if content.is_empty() || content.starts_with('#') {
            continue;
        }
        let indent = line.len() - content.len();
        if indent == 0 && (content.starts_with("---") || content.starts_with("...")) {
            if matches!(content.trim_end(), "---" | "...") {
                continue;
            }
            return true;
        }
        let root = *root.get_or_insert(indent);
        if indent > root {
            continue;
        }
        match content.split_once(':') {
            Some((key, _)) if indent == root && KNOWN_FIELDS.contains(&key) => {}
            _ => return true,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_config_of_known_fields_only_is_parsed_once_and_any_other_layout_keeps_its_unknown_fields()
    {
        let known = "cron: 0/5 * * * * ?\njobName: j\nprops:\n  extra: 1\n  nested.key: x\n\
            description: |\n  one: two\n  three\nshardingTotalCount: 2\n";
        assert!(!may_hold_unknown_fields(known));
        assert!(JobConfig::from_yaml(known)
            .unwrap()
            .unknown_fields
            .is_empty());
        assert!(!may_hold_unknown_fields("---\n# a comment\njobName: j\n"));
        let cases = [
            "jobName: j\nretries: 3\n",
            "  jobName: j\n  retries: 3\n",
            "{jobName: j, retries: 3}\n",
            "--- {jobName: j, retries: 3}\n",
            "jobName: j\n\"retries\": 3\n",
        ];
        for text in cases {
            assert!(may_hold_unknown_fields(text), "{text}");
            let config = JobConfig::from_yaml(text).unwrap();
            assert_eq!(config.job_name, "j", "{text}");
            assert_eq!(
                config.unknown_fields.get("retries"),
                Some(&Value::Number(3.into())),
                "{text}"
            );
        }
    }
}
