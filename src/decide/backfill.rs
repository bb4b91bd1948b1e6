//! Backfill (`shardcronctl backfill JOB --from T1 --to T2`): every cron instant of a range run in
//! order, each once per item, sharded as a normal fire.
//!
//! The request is `shardcron/backfill` (JSON: an id and the instants, at most
//! [`MAX_INSTANTS`]), where a Java ElasticJob instance never looks. Each owner runs its items
//! through the instants one at a time (one backfill run per instance at a time: the job's item
//! concurrency bounds the items inside it), with `scheduled_at` the instant and the source
//! `BACKFILL`, and records each item's progress in `shardcron/backfill/{i}` when a run ends, so
//! that an item moved to another owner goes on from where it stopped. Deleting the request
//! cancels the backfill: no further instant starts and the backfill runs under way are cancelled.

use std::collections::BTreeMap;

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};

use crate::types::ShardItem;

/// The most instants one backfill runs.
pub const MAX_INSTANTS: usize = 1000;
/// The most bytes a request record may hold (a thousand instants take about 26 KiB).
pub const MAX_REQUEST_BYTES: usize = 64 * 1024;

/// Why a backfill's instants cannot be listed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BackfillError {
    /// `--to` before `--from`.
    #[error("--to {to} is before --from {from}")]
    Reversed {
        /// The start.
        from: String,
        /// The end.
        to: String,
    },
    /// The range holds more instants than one backfill runs.
    #[error(
        "more than {MAX_INSTANTS} cron instants between {from} and {to}: narrow the range \
         (several backfills in turn)"
    )]
    TooMany {
        /// The start.
        from: String,
        /// The end.
        to: String,
    },
    /// The range holds no instant.
    #[error("no cron instant between {from} and {to}")]
    Empty {
        /// The start.
        from: String,
        /// The end.
        to: String,
    },
}

fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// Every instant of a schedule (`next_after(t)`: its first instant strictly after `t`) from
/// `from` to `to`, both included; refused past [`MAX_INSTANTS`] without listing the rest.
pub fn instants(
    next_after: &dyn Fn(DateTime<Utc>) -> Option<DateTime<Utc>>,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Result<Vec<DateTime<Utc>>, BackfillError> {
    let (f, t) = (rfc3339(from), rfc3339(to));
    if to < from {
        return Err(BackfillError::Reversed { from: f, to: t });
    }
    let mut out = Vec::new();
    let mut at = next_after(from - chrono::TimeDelta::nanoseconds(1));
    while let Some(instant) = at.filter(|i| *i <= to) {
        if out.len() == MAX_INSTANTS {
            return Err(BackfillError::TooMany { from: f, to: t });
        }
        out.push(instant);
        at = next_after(instant);
    }
    if out.is_empty() {
        return Err(BackfillError::Empty { from: f, to: t });
    }
    Ok(out)
}

/// A backfill as recorded in `shardcron/backfill`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// Tells this backfill from an earlier one (progress records name it).
    pub id: String,
    /// The instants, ascending.
    pub instants: Vec<DateTime<Utc>>,
}

impl Request {
    /// The record's data.
    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// Reads a record, bounded before it is parsed; the instants must ascend.
    pub fn parse(data: &[u8]) -> Result<Self, String> {
        if data.len() > MAX_REQUEST_BYTES {
            return Err(format!("over {MAX_REQUEST_BYTES} bytes"));
        }
        let r: Self = serde_json::from_slice(data).map_err(|e| format!("not a backfill: {e}"))?;
        if r.instants.len() > MAX_INSTANTS {
            return Err(format!("more than {MAX_INSTANTS} instants"));
        }
        if r.instants.windows(2).any(|w| w[0] >= w[1]) {
            return Err("its instants do not ascend".into());
        }
        Ok(r)
    }
}

/// One item's progress, `shardcron/backfill/{i}`: how many instants of backfill `id` it ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Progress {
    /// The backfill.
    pub id: String,
    /// Instants done, from the first.
    pub done: usize,
}

impl Progress {
    /// The record's data.
    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// How many instants of `request` the record says are done (0 for another backfill's or a
    /// record that is not progress).
    pub fn done_of(data: &[u8], request: &Request) -> usize {
        match serde_json::from_slice::<Self>(data) {
            Ok(p) if p.id == request.id => p.done.min(request.instants.len()),
            _ => 0,
        }
    }
}

/// The next backfill run of an owner: the earliest instant one of `items` (with how many instants
/// each has done) has not run, and the items at that point. `None` when all are done.
pub fn next_run(
    request: &Request,
    items: &BTreeMap<ShardItem, usize>,
) -> Option<(usize, Vec<ShardItem>)> {
    let len = request.instants.len();
    let lowest = items.values().copied().filter(|d| *d < len).min()?;
    let at: Vec<ShardItem> = items
        .iter()
        .filter(|(_, d)| **d == lowest)
        .map(|(i, _)| *i)
        .collect();
    Some((lowest, at))
}

#[cfg(test)]
#[path = "backfill_tests.rs"]
mod tests;
