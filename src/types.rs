//! Newtypes for the identifiers that travel everywhere: [`JobName`], [`InstanceId`], [`ShardItem`].
//!
//! Each one is validated once, where it enters the system (config, registry path, CLI flag), so the
//! rest of the code never re-checks a bare string.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// A newtype over shared text (`struct X(Arc<str>)`, checked by `X::$check`) and what it has
/// besides its own methods: the shared string, `Display`, parsing, and serde's conversions.
macro_rules! shared_text {
    ($(#[$doc:meta])* pub struct $name:ident, checked by $check:ident;) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(Arc<str>);

        impl $name {
            /// The shared string itself (a metric label without a copy).
            pub(crate) fn shared(&self) -> Arc<str> {
                self.0.clone()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl FromStr for $name {
            type Err = IdError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Self::$check(s)
            }
        }

        impl TryFrom<String> for $name {
            type Error = IdError;
            fn try_from(s: String) -> Result<Self, Self::Error> {
                Self::$check(s)
            }
        }

        impl From<$name> for String {
            fn from(n: $name) -> String {
                n.0.to_string()
            }
        }
    };
}

/// Why an identifier was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    /// A job name is empty.
    #[error("job name is empty")]
    EmptyJobName,
    /// A job name holds a character that cannot appear in one ZooKeeper node name: `/`, a
    /// control character, or one ZooKeeper refuses (U+E000-U+F8FF, U+FFF0-U+FFFF, and anything
    /// outside the Basic Multilingual Plane, which Java spells with surrogates).
    #[error("job name {name:?} contains {ch:?}, which a ZooKeeper node name cannot hold")]
    BadJobNameChar {
        /// The refused name.
        name: String,
        /// The first offending character.
        ch: char,
    },
    /// A job name that ZooKeeper reserves or that would break path parsing.
    #[error("job name {0:?} is reserved")]
    ReservedJobName(String),
    /// An instance id that is not `{ip}@-@{pid}`.
    #[error("instance id {0:?} is not of the form {{ip}}@-@{{pid}}")]
    BadInstanceId(String),
    /// A sharding item that is not a non-negative integer.
    #[error("sharding item {0:?} is not a non-negative integer")]
    BadShardItem(String),
}

shared_text! {
    /// The name of a job; it is one path segment under the namespace. Shared text: a clone is a
    /// reference count, and a job's name is cloned into every message, run and context about it.
    pub struct JobName, checked by new;
}

impl JobName {
    /// Validates `name` as a job name: as in ElasticJob, any ZooKeeper node name without `/`
    /// (spaces, `:`, `#` and CJK included), except ZooKeeper's own reserved names (`.`, `..`,
    /// `zookeeper`) and the characters ZooKeeper refuses in a path.
    ///
    /// ```
    /// use shardcron::JobName;
    /// assert!(JobName::new("orders").is_ok());
    /// assert!(JobName::new("orders:eu#1").is_ok());
    /// assert!(JobName::new("日次 集計").is_ok());
    /// assert!(JobName::new("a/b").is_err());
    /// ```
    pub fn new(name: impl AsRef<str>) -> Result<Self, IdError> {
        // Checked as a slice and copied once, into the shared string: every mirror event's path
        // names its job, so this runs for each of them.
        let name = name.as_ref();
        if name.is_empty() {
            return Err(IdError::EmptyJobName);
        }
        if name == "." || name == ".." || name == "zookeeper" {
            return Err(IdError::ReservedJobName(name.to_owned()));
        }
        if let Some(ch) = name.chars().find(|&c| !zookeeper_allows(c)) {
            let name = name.to_owned();
            return Err(IdError::BadJobNameChar { name, ch });
        }
        Ok(Self(name.into()))
    }

    /// The name as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Whether ZooKeeper allows `c` in a path segment (its `PathUtils.validatePath`, plus `/`).
fn zookeeper_allows(c: char) -> bool {
    !matches!(c,
        '/' | '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' | '\u{e000}'..='\u{f8ff}' | '\u{fff0}'..)
}

/// The separator ElasticJob puts between the IP and the process id of an instance id.
pub const INSTANCE_ID_SEPARATOR: &str = "@-@";

shared_text! {
    /// One running instance of a job: `{ip}@-@{pid}` (ElasticJob's `jobInstanceId`).
    ///
    /// The part after the separator is usually the process id; several instances in one process (the
    /// embedded demo, tests) use `{pid}-{n}` or any other non-empty suffix. Shared text, as
    /// [`JobName`].
    pub struct InstanceId, checked by parse;
}

impl InstanceId {
    /// Parses an instance id of the form `{ip}@-@{suffix}`.
    ///
    /// ```
    /// use shardcron::InstanceId;
    /// let id = InstanceId::parse("192.0.2.2@-@9526").unwrap();
    /// assert_eq!(id.ip(), "192.0.2.2");
    /// assert_eq!(id.suffix(), "9526");
    /// ```
    pub fn parse(s: impl AsRef<str>) -> Result<Self, IdError> {
        // Checked as a slice and copied once, into the shared string: every view of a job
        // parses its owners' ids.
        let s = s.as_ref();
        match s.split_once(INSTANCE_ID_SEPARATOR) {
            Some((ip, rest))
                if !ip.is_empty()
                    && !rest.is_empty()
                    && !s.contains('/')
                    && !rest.contains(INSTANCE_ID_SEPARATOR) =>
            {
                Ok(Self(s.into()))
            }
            _ => Err(IdError::BadInstanceId(s.to_owned())),
        }
    }

    /// Parses `s`, sharing `known`'s text when `s` names it: no allocation for the id a reader
    /// expects most (this instance's own, in its jobs' views).
    pub fn parse_known(s: &str, known: &InstanceId) -> Result<Self, IdError> {
        if s == known.as_str() {
            return Ok(known.clone());
        }
        Self::parse(s)
    }

    /// Builds `{ip}@-@{suffix}`.
    pub fn new(ip: &str, suffix: &str) -> Result<Self, IdError> {
        Self::parse(format!("{ip}{INSTANCE_ID_SEPARATOR}{suffix}"))
    }

    /// The IP part, which names the instance's `servers/{ip}` node.
    pub fn ip(&self) -> &str {
        self.0
            .split_once(INSTANCE_ID_SEPARATOR)
            .map(|(ip, _)| ip)
            .unwrap_or(&self.0)
    }

    /// The part after the separator (a process id for one instance per process).
    pub fn suffix(&self) -> &str {
        self.0
            .split_once(INSTANCE_ID_SEPARATOR)
            .map(|(_, s)| s)
            .unwrap_or("")
    }

    /// The whole id.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// One sharding item of a job, `0..shardingTotalCount`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
#[serde(transparent)]
pub struct ShardItem(pub u32);

impl ShardItem {
    /// The item number.
    pub fn get(self) -> u32 {
        self.0
    }
}

impl fmt::Display for ShardItem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl FromStr for ShardItem {
    type Err = IdError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        // Reject "+1", " 1" and "01"-style spellings so that paths round-trip exactly.
        if s.is_empty()
            || !s.bytes().all(|b| b.is_ascii_digit())
            || (s.len() > 1 && s.starts_with('0'))
        {
            return Err(IdError::BadShardItem(s.to_owned()));
        }
        s.parse::<u32>()
            .map(ShardItem)
            .map_err(|_| IdError::BadShardItem(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_names_that_cannot_be_one_zookeeper_node_name_are_refused() {
        for bad in [
            "",
            "a/b",
            "..",
            ".",
            "zookeeper",
            "x\u{0}y",
            "tab\there",
            "new\nline",
            "del\u{7f}",
            "c1\u{85}",
            "private\u{e000}",
            "special\u{fffe}",
            "emoji😀",
        ] {
            assert!(JobName::new(bad).is_err(), "{bad:?} should be refused");
        }
    }

    #[test]
    fn job_names_elasticjob_accepts_are_accepted() {
        for good in [
            "orders",
            "billing-job_2.v1",
            "订单",
            "my job",
            "orders:eu#1",
            "日次 集計",
            "a.b",
            "...",
            "job=1&x?y*",
            " leading space",
        ] {
            let name = JobName::new(good).unwrap_or_else(|e| panic!("{good:?}: {e}"));
            assert_eq!(name.as_str(), good);
        }
    }

    #[test]
    fn instance_id_splits_into_ip_and_pid() {
        let id = InstanceId::parse("10.0.0.1@-@123").unwrap();
        assert_eq!((id.ip(), id.suffix()), ("10.0.0.1", "123"));
        for bad in ["10.0.0.1", "@-@1", "1.2.3.4@-@", "a/b@-@1", "1@-@2@-@3"] {
            assert!(InstanceId::parse(bad).is_err(), "{bad:?} should be refused");
        }
    }

    #[test]
    fn shard_items_parse_only_canonical_decimal() {
        assert_eq!("17".parse::<ShardItem>().unwrap(), ShardItem(17));
        assert_eq!("0".parse::<ShardItem>().unwrap(), ShardItem(0));
        for bad in ["", "-1", "+1", "01", "1a", "99999999999"] {
            assert!(
                bad.parse::<ShardItem>().is_err(),
                "{bad:?} should be refused"
            );
        }
    }
}
