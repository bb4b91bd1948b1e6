//! A job's workflow records as read from the registry (`/{job}/shardcron/workflow/*`), and the
//! decisions taken on them: which workflow runs a downstream job must start (or skip) now, and
//! which records are old enough to delete.
//!
//! | record | data |
//! | --- | --- |
//! | `{run}@{i}` | `running:{instance}` while item `i` runs for workflow run `run`, then its end: `success`, `failed`, `timeout` or `skipped` |
//! | `{run}@start` | the job's decision for the run, created once: `run`, or `skip:{upstream}:{end}` |

use std::collections::BTreeMap;

use crate::types::{JobName, ShardItem};

use super::graph::Dependency;
use super::run::{run_end, start, ItemEnd, RunEnd, RunId, Start};

/// How many workflow runs a job keeps records of; older ones are deleted by its leader.
pub const KEEP_RUNS: usize = 50;

/// One item's record in a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ItemRecord {
    /// Running on this instance (as written at the item's start).
    Running(String),
    /// Ended; `None` when the data is unreadable (counted as a failure, never as success).
    Ended(Option<ItemEnd>),
}

impl ItemRecord {
    /// The data of an item's record while it runs on `instance`.
    pub fn running(instance: &str) -> String {
        format!("running:{instance}")
    }

    /// Reads a record's data.
    pub fn parse(data: &[u8]) -> Self {
        let text = std::str::from_utf8(data).unwrap_or("");
        match text.strip_prefix("running:") {
            Some(instance) => Self::Running(instance.to_owned()),
            None => Self::Ended(ItemEnd::parse(text)),
        }
    }
}

/// A downstream job's decision for one workflow run (`{run}@start`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Its items run for the workflow run.
    Run,
    /// Its items are recorded as skipped: `upstream` ended the run with `end`.
    Skip {
        /// The upstream that did not succeed.
        upstream: JobName,
        /// How it ended.
        end: RunEnd,
    },
}

impl Decision {
    /// The record's data.
    pub fn encode(&self) -> String {
        match self {
            Self::Run => "run".into(),
            Self::Skip { upstream, end } => format!("skip:{upstream}:{}", end.as_str()),
        }
    }

    /// Reads a record's data; `None` for anything else.
    pub fn parse(data: &[u8]) -> Option<Self> {
        let text = std::str::from_utf8(data).ok()?;
        if text == "run" {
            return Some(Self::Run);
        }
        let (upstream, end) = text.strip_prefix("skip:")?.rsplit_once(':')?;
        Some(Self::Skip {
            upstream: JobName::new(upstream).ok()?,
            end: ItemEnd::parse(end)?,
        })
    }
}

/// The records of one workflow run of one job.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RunRecords {
    /// `{run}@start`, if written; `Some(None)` when unreadable.
    pub start: Option<Option<Decision>>,
    /// `{run}@{i}` per item, with the registry's creation transaction id of each.
    pub items: BTreeMap<ShardItem, (ItemRecord, i64)>,
}

impl RunRecords {
    /// How the run ended for a job of `total` items ([`run_end`]); `None` while an item runs or
    /// has no record.
    pub fn end(&self, total: u32) -> Option<RunEnd> {
        let ended: BTreeMap<ShardItem, Option<ItemEnd>> = self
            .items
            .iter()
            .filter_map(|(i, (r, _))| match r {
                ItemRecord::Ended(end) => Some((*i, *end)),
                ItemRecord::Running(_) => None,
            })
            .collect();
        run_end(total, &ended)
    }
}

/// How a job's part in a workflow run ended, as `shardcron_workflow_runs_total` and the
/// `workflow_run_ended` event name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WorkflowOutcome {
    /// Every item succeeded.
    Completed,
    /// An item failed or timed out (or its record is unreadable).
    Failed,
    /// The job's decision was to skip the run, or every item's fire was skipped.
    Skipped,
}

impl WorkflowOutcome {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Skipped => "skipped",
        }
    }
}

impl RunRecords {
    /// How the job's part in the run ended, for a job of `total` items: skipped as soon as its
    /// decision says skip, else once every item ended ([`RunRecords::end`]); `None` before.
    pub fn outcome(&self, total: u32) -> Option<WorkflowOutcome> {
        if matches!(self.start, Some(Some(Decision::Skip { .. }))) {
            return Some(WorkflowOutcome::Skipped);
        }
        Some(match self.end(total)? {
            ItemEnd::Succeeded => WorkflowOutcome::Completed,
            ItemEnd::Skipped => WorkflowOutcome::Skipped,
            ItemEnd::Failed | ItemEnd::TimedOut => WorkflowOutcome::Failed,
        })
    }
}

/// A job's records by run, from its `(name, data, czxid)` children; names that are no record
/// are ignored.
pub fn parse_records<'a>(
    children: impl IntoIterator<Item = (&'a str, &'a [u8], i64)>,
) -> BTreeMap<RunId, RunRecords> {
    let mut runs: BTreeMap<RunId, RunRecords> = BTreeMap::new();
    for (name, data, czxid) in children {
        let Some((run, what)) = name.split_once('@') else {
            continue;
        };
        let Some(run) = RunId::parse(run) else {
            continue;
        };
        if what == "start" {
            runs.entry(run).or_default().start = Some(Decision::parse(data));
        } else if let Ok(item) = what.parse::<ShardItem>() {
            let record = ItemRecord::parse(data);
            runs.entry(run)
                .or_default()
                .items
                .insert(item, (record, czxid));
        }
    }
    runs
}

/// One upstream job as a downstream sees it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Upstream {
    /// Its item count.
    pub total: u32,
    /// When this downstream's `downstream/{job}` record was created under it (a creation
    /// transaction id): runs the upstream started before are not this downstream's to run.
    /// `None` while it is not there.
    pub since: Option<i64>,
    /// Its records by run.
    pub runs: BTreeMap<RunId, RunRecords>,
}

/// The workflow runs a downstream job starts or skips now: each run some upstream recorded
/// (after the downstream registered under it) that has no `{run}@start` of the job yet, for
/// which [`start`] says [`Start::Run`] or [`Start::Skip`]. Runs still waiting are left out.
pub fn starts_due(
    dependency: &Dependency,
    upstreams: &BTreeMap<JobName, Upstream>,
    own: &BTreeMap<RunId, RunRecords>,
) -> Vec<(RunId, Decision)> {
    let mut candidates: Vec<&RunId> = Vec::new();
    for up in upstreams.values() {
        let Some(since) = up.since else {
            continue;
        };
        for (run, records) in &up.runs {
            let after = records.items.values().all(|(_, czxid)| *czxid > since);
            if after && !records.items.is_empty() && !candidates.contains(&run) {
                candidates.push(run);
            }
        }
    }
    candidates.sort();
    let mut due = Vec::new();
    for run in candidates {
        if own.get(run).is_some_and(|r| r.start.is_some()) {
            continue;
        }
        let ends: BTreeMap<JobName, RunEnd> = dependency
            .after
            .iter()
            .filter_map(|name| {
                let up = upstreams.get(name)?;
                Some((name.clone(), up.runs.get(run)?.end(up.total)?))
            })
            .collect();
        match start(dependency, &ends) {
            Start::Wait { .. } => {}
            Start::Run => due.push((run.clone(), Decision::Run)),
            Start::Skip { upstream, end } => {
                due.push((run.clone(), Decision::Skip { upstream, end }))
            }
        }
    }
    due
}

/// The record names of the runs older than the newest `keep` runs, to delete.
pub fn prune(runs: &BTreeMap<RunId, RunRecords>, keep: usize) -> Vec<String> {
    let old = runs.len().saturating_sub(keep);
    let mut names = Vec::new();
    for (run, records) in runs.iter().take(old) {
        if records.start.is_some() {
            names.push(format!("{run}@start"));
        }
        names.extend(records.items.keys().map(|i| format!("{run}@{i}")));
    }
    names
}
