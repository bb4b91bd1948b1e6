//! The catch-up window (`shardcron.catchup.window`): which missed cron instant an item runs when
//! an owner returns, and the record that tells.
//!
//! The record is one node per item, `shardcron/fired/{i}` (where a Java ElasticJob instance never
//! looks), holding the last instant the item was fired for, in RFC 3339. The owner writes it after
//! a run of the item has started (through the write batcher: the fire waits on nothing), for a
//! cron fire and for a catch-up run alike. It is persistent, so it survives every instance's crash;
//! a job without a catch-up window never writes or reads it. A run cancelled because its item moved
//! to another instance (a reshard while it ran) takes its record back in its end write
//! ([`take_back_ops`]): the item's new owner catches the instant up.
//!
//! When an owner may start work again (a new session, a reconnection, a plan committed after a
//! reshard), [`plan`] takes each owned item's floor (the last instant known fired for it: the
//! record, or what this instance fired and the mirror does not show yet) and picks the latest cron
//! instant after it and no older than the window: that one instant runs once per item, with
//! `scheduled_at` the missed instant. Instants before it are not run (a catch-up is not a backfill),
//! nor any older than the window; an item never fired (no record) has nothing to catch up.
//!
//! What counts as missed:
//! - every instance down: each item's record stops at its last fire; the first owner back runs
//!   the latest missed instant;
//! - a partition: an instance cut off from the registry runs nothing; once its items are resharded
//!   (or it reconnects in time) their owner catches up the latest instant nobody fired for them;
//! - a job disabled and enabled again (`disabled: true`, a disabled server or item): its fires are
//!   not run, so the latest instant within the window runs once when an owner takes the items
//!   again, as Kubernetes runs a CronJob's missed schedule when `suspend` is lifted.

use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};

use crate::model::{CreateMode, Op};
use crate::paths::JobNode;
use crate::types::{JobName, ShardItem};

/// How many cron instants [`latest_missed`] steps through at most (a bound on its work whatever
/// the schedule).
const MAX_STEPS: usize = 10_000;

/// The record's data for `at`.
pub fn fired_data(at: DateTime<Utc>) -> Vec<u8> {
    at.to_rfc3339_opts(SecondsFormat::Millis, true).into_bytes()
}

/// Reads a record's data; `None` for anything but an RFC 3339 instant (the item counts as never
/// fired).
pub fn parse_fired(data: &[u8]) -> Option<DateTime<Utc>> {
    let text = std::str::from_utf8(data).ok()?;
    DateTime::parse_from_rfc3339(text.trim())
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// The latest instant of a schedule (`next_after(t)`: its first instant strictly after `t`) that is
/// after `after`, not after `now`, and no older than `window`.
pub fn latest_missed(
    next_after: &dyn Fn(DateTime<Utc>) -> Option<DateTime<Utc>>,
    after: DateTime<Utc>,
    now: DateTime<Utc>,
    window: Duration,
) -> Option<DateTime<Utc>> {
    let window = chrono::TimeDelta::from_std(window).ok()?;
    // Instants at `now - window` itself are within the window.
    let oldest = now - window - chrono::TimeDelta::nanoseconds(1);
    latest_between(next_after, after.max(oldest), now)
}

/// The latest instant missed before a fire for `at` ran: the latest instant after `floor` and
/// before `at`, no older than `window` at `now`. A fire that runs after an outage finds its item's
/// record older than the instant before its own: that instant was missed, and is still owed.
pub fn missed_before(
    next_after: &dyn Fn(DateTime<Utc>) -> Option<DateTime<Utc>>,
    floor: DateTime<Utc>,
    at: DateTime<Utc>,
    now: DateTime<Utc>,
    window: Duration,
) -> Option<DateTime<Utc>> {
    let window = chrono::TimeDelta::from_std(window).ok()?;
    let oldest = now - window - chrono::TimeDelta::nanoseconds(1);
    latest_between(
        next_after,
        floor.max(oldest),
        at - chrono::TimeDelta::nanoseconds(1),
    )
}

/// The latest instant in `(after, until]`. It searches back from `until` in doubling steps, then
/// forward within the last step, so a schedule of every second under a window of days costs a few
/// dozen searches, not one per instant.
fn latest_between(
    next_after: &dyn Fn(DateTime<Utc>) -> Option<DateTime<Utc>>,
    after: DateTime<Utc>,
    until: DateTime<Utc>,
) -> Option<DateTime<Utc>> {
    if after >= until {
        return None;
    }
    let mut step = chrono::TimeDelta::seconds(1);
    loop {
        let from = (until - step).max(after);
        if let Some(first) = next_after(from).filter(|t| *t <= until) {
            // Every instant in (from, until] but the last is stepped over (bounded: a schedule
            // denser than MAX_STEPS instants in one step settles for the last one reached).
            let mut latest = first;
            for _ in 0..MAX_STEPS {
                match next_after(latest) {
                    Some(t) if t <= until => latest = t,
                    _ => break,
                }
            }
            return Some(latest);
        }
        if from == after {
            return None;
        }
        step = step * 2;
    }
}

/// One owned item as the look sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ItemFloor {
    /// The item.
    pub item: ShardItem,
    /// The last instant known fired for it; `None`: never fired.
    pub floor: Option<DateTime<Utc>>,
    /// An instant missed before a later fire ran ([`missed_before`]), not yet caught up.
    pub owed: Option<DateTime<Utc>>,
}

/// The catch-up runs of an owner: per missed instant the items that run it, the latest instant
/// first. An item runs the latest instant missed since its floor, else the instant it is owed, if
/// either is within the window.
pub fn plan(
    items: &[ItemFloor],
    next_after: &dyn Fn(DateTime<Utc>) -> Option<DateTime<Utc>>,
    now: DateTime<Utc>,
    window: Duration,
) -> Vec<(DateTime<Utc>, Vec<ShardItem>)> {
    let mut runs: Vec<(DateTime<Utc>, Vec<ShardItem>)> = Vec::new();
    let within = |t: &DateTime<Utc>| (now - *t).to_std().is_ok_and(|age| age <= window);
    // Items mostly share their floor (they were fired together): one search per floor.
    let mut searched: Vec<(DateTime<Utc>, Option<DateTime<Utc>>)> = Vec::new();
    for i in items {
        let Some(floor) = i.floor else { continue };
        let latest = match searched.iter().find(|(f, _)| *f == floor) {
            Some((_, latest)) => *latest,
            None => {
                let latest = latest_missed(next_after, floor, now, window);
                searched.push((floor, latest));
                latest
            }
        };
        let at = latest.or_else(|| i.owed.filter(|t| within(t)));
        let Some(at) = at else { continue };
        match runs.iter_mut().find(|(t, _)| *t == at) {
            Some((_, group)) => group.push(i.item),
            None => runs.push((at, vec![i.item])),
        }
    }
    runs.sort_by_key(|run| std::cmp::Reverse(run.0));
    runs
}

/// What the mirror shows of the record: whether `shardcron/fired` exists (then `shardcron` does
/// too), and which items have a node.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FiredRecord {
    /// `shardcron/fired` exists.
    pub parent: bool,
    /// Each item's record, as mirrored (`None`: a node whose data is not an instant).
    pub items: std::collections::BTreeMap<ShardItem, Option<DateTime<Utc>>>,
}

/// The writes recording that `items` were fired for `at`, and whether they must go op by op
/// (`true` when a node is created: a lagging mirror may not show one another instance created).
pub fn record_ops(
    job: &JobName,
    record: &FiredRecord,
    items: &[ShardItem],
    at: DateTime<Utc>,
) -> (Vec<Op>, bool) {
    let mut ops = Vec::with_capacity(items.len() + 2);
    let mut creates = false;
    if !record.parent {
        creates = true;
        ops.push(Op::create(
            JobNode::Extensions.to_path(job),
            Vec::new(),
            CreateMode::Persistent,
        ));
        ops.push(Op::create(
            JobNode::Fired.to_path(job),
            Vec::new(),
            CreateMode::Persistent,
        ));
    }
    for item in items {
        let path = JobNode::FiredItem(*item).to_path(job);
        match record.items.get(item) {
            // Never moved back: a later instant recorded by someone else stays.
            Some(Some(t)) if *t >= at => {}
            Some(_) => ops.push(Op::Set {
                path,
                data: fired_data(at),
                version: None,
            }),
            None => {
                creates = true;
                ops.push(Op::create(path, fired_data(at), CreateMode::Persistent));
            }
        }
    }
    if ops.len() == 2 && !record.parent {
        // Only the parents: nothing to record.
        ops.clear();
    }
    (ops, creates)
}

/// The writes that take back the record of a run cancelled because its item moved to another
/// instance: each item's record goes back to what it held before the run (`None`: no record, or
/// one that was not an instant), so that the item's new owner catches the instant up. They go in
/// the run's end write, before the deletion of its `running` markers: an owner that sees the
/// markers gone sees the record taken back.
pub fn take_back_ops(job: &JobName, items: &[(ShardItem, Option<DateTime<Utc>>)]) -> Vec<Op> {
    items
        .iter()
        .map(|(item, before)| {
            let path = JobNode::FiredItem(*item).to_path(job);
            match before {
                Some(t) => Op::Set {
                    path,
                    data: fired_data(*t),
                    version: None,
                },
                None => Op::Delete {
                    path,
                    version: None,
                },
            }
        })
        .collect()
}

#[cfg(test)]
#[path = "catchup_tests.rs"]
mod tests;
