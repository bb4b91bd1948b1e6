//! One workflow run: when an upstream run has completed, and whether a downstream job starts,
//! waits or is skipped for it.
//!
//! A workflow run is named by its root fire's scheduled instant (epoch milliseconds), so roots on
//! the same cron share their runs and a fan-in of them meets; a run started by hand gets an id of
//! its own. Every step of the run carries the id in its context, history row and events.

use std::collections::BTreeMap;
use std::fmt;

use crate::types::{JobName, ShardItem};

use super::graph::{Dependency, RunWhen};

/// A workflow run's identity.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RunId(String);

impl RunId {
    /// The run a root fire scheduled at `millis` (epoch milliseconds) starts.
    pub fn scheduled(millis: i64) -> Self {
        Self(millis.to_string())
    }

    /// A run started by hand, named `m{n}` where `n` is unique to the caller (a registry sequence
    /// number, for example).
    pub fn manual(n: u64) -> Self {
        Self(format!("m{n}"))
    }

    /// Reads an id from a registry node's name: digits, or `m` and digits, at most 20 characters.
    pub fn parse(text: &str) -> Option<Self> {
        let digits = text.strip_prefix('m').unwrap_or(text);
        let ok =
            !digits.is_empty() && text.len() <= 20 && digits.bytes().all(|b| b.is_ascii_digit());
        ok.then(|| Self(text.to_owned()))
    }

    /// The root fire's instant this run names; `None` for a run started by hand.
    pub fn instant(&self) -> Option<chrono::DateTime<chrono::Utc>> {
        self.0
            .parse::<i64>()
            .ok()
            .and_then(chrono::DateTime::from_timestamp_millis)
    }

    /// The id as written in node names, contexts and history.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// How one item of an upstream run ended, after its last attempt (retries, failover and misfire
/// runs of the same fire included).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ItemEnd {
    /// It succeeded.
    Succeeded,
    /// Its fire was skipped (an overlap policy, a disabled item): it did not run.
    Skipped,
    /// It failed.
    Failed,
    /// It ran past its timeout.
    TimedOut,
}

impl ItemEnd {
    /// The value stored in the item's record.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Succeeded => "success",
            Self::Skipped => "skipped",
            Self::Failed => "failed",
            Self::TimedOut => "timeout",
        }
    }

    /// Reads a stored value; `None` for anything else (another writer's data is not trusted).
    pub fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "success" => Self::Succeeded,
            "skipped" => Self::Skipped,
            "failed" => Self::Failed,
            "timeout" => Self::TimedOut,
            _ => return None,
        })
    }
}

/// How a whole upstream run ended: its worst item (success < skipped < failed < timeout).
pub type RunEnd = ItemEnd;

/// Whether the run of a job with `total` items has ended, from the records of its items: the
/// worst item's end once every item `0..total` has a record, `None` while one has not. A record
/// of an item beyond `total` (the count shrank) does not count; an unreadable record counts as a
/// failure, never as success.
pub fn run_end(total: u32, records: &BTreeMap<ShardItem, Option<ItemEnd>>) -> Option<RunEnd> {
    if total == 0 {
        return None;
    }
    let mut worst = ItemEnd::Succeeded;
    for item in 0..total {
        let end = records.get(&ShardItem(item))?;
        worst = worst.max(end.unwrap_or(ItemEnd::Failed));
    }
    Some(worst)
}

/// What a downstream job does for one workflow run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Start {
    /// Not every upstream has ended this run yet.
    Wait {
        /// The upstreams still running (or not started) in this run.
        pending: Vec<JobName>,
    },
    /// Every upstream ended as the dependency asks: the downstream runs once, for this run.
    Run,
    /// An upstream ended otherwise and the dependency asks for success: the downstream does not
    /// run, and records its own run as skipped so that the skip travels down the graph.
    Skip {
        /// The first upstream (in declaration order) that did not succeed.
        upstream: JobName,
        /// How it ended.
        end: RunEnd,
    },
}

/// Whether the downstream of `dependency` starts for a workflow run, given how its upstreams
/// ended it (`ends`: the upstreams whose run has ended). Fan-in waits for every upstream.
pub fn start(dependency: &Dependency, ends: &BTreeMap<JobName, RunEnd>) -> Start {
    let pending: Vec<JobName> = dependency
        .after
        .iter()
        .filter(|upstream| !ends.contains_key(*upstream))
        .cloned()
        .collect();
    if !pending.is_empty() {
        return Start::Wait { pending };
    }
    if dependency.on == RunWhen::Success {
        let failed = dependency.after.iter().find_map(|up| {
            ends.get(up)
                .filter(|end| **end != ItemEnd::Succeeded)
                .map(|end| (up, *end))
        });
        if let Some((upstream, end)) = failed {
            return Start::Skip {
                upstream: upstream.clone(),
                end,
            };
        }
    }
    Start::Run
}
