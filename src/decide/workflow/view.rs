//! What an operator sees of a workflow: the graph (each job with its upstreams, downstreams and
//! `shardcron.after.on` policy, drawn in layers) and each step's workflow runs, summed up from
//! the records ([`super::records`]). Pure: the ops API reads the configs and records, this file
//! decides what they show, so `shardcronctl workflow` and the console show the same thing.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::types::JobName;

use super::graph::Dependency;
use super::records::{Decision, ItemRecord, RunRecords};
use super::run::{ItemEnd, RunId};

/// A job as the view reads it from the registry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobFacts {
    /// Its declaration; `Err` names why the stored config cannot be read.
    pub dependency: Result<Dependency, String>,
    /// Its item count (`shardingTotalCount`).
    pub total: u32,
    /// Its workflow records by run.
    pub runs: BTreeMap<RunId, RunRecords>,
}

impl Default for JobFacts {
    /// A job that runs after nothing, with no item and no record.
    fn default() -> Self {
        Self {
            dependency: Ok(Dependency::default()),
            total: 0,
            runs: BTreeMap::new(),
        }
    }
}

/// A step's state in one workflow run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StepState {
    /// No item of the step has started this run (its upstreams have not ended it yet).
    Waiting,
    /// Some item runs, or some have ended and others have not started.
    Running,
    /// Every item succeeded.
    Succeeded,
    /// Every item ended and one failed or timed out (an unreadable record counts as failed).
    Failed,
    /// The step's decision was to skip, or its items' fires were skipped.
    Skipped,
}

/// How many items of a step's run stand where.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct ItemCounts {
    /// Succeeded.
    pub success: u32,
    /// Failed.
    pub failed: u32,
    /// Ran past their timeout.
    pub timeout: u32,
    /// Recorded skipped.
    pub skipped: u32,
    /// Running.
    pub running: u32,
    /// With a record whose data no writer of ours writes.
    pub unreadable: u32,
}

/// One job's part in one workflow run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StepRun {
    /// The job.
    pub job: JobName,
    /// The workflow run.
    pub run: String,
    /// The instant it names: the root fire's, or the trigger's for a run started by hand.
    pub at: Option<DateTime<Utc>>,
    /// The step's state.
    pub state: StepState,
    /// Its items' records, counted.
    pub items: ItemCounts,
    /// Its `{run}@start` decision as stored (`run`, `skip:{up}:{end}`, `unreadable`); `None` for
    /// a root (its cron starts the run) or before the decision.
    pub decision: Option<String>,
}

/// One job of a workflow graph.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    /// The job.
    pub job: JobName,
    /// Its layer: 0 for a job that runs after nothing, else one more than its deepest upstream.
    pub layer: usize,
    /// The jobs it runs after.
    pub after: Vec<JobName>,
    /// `success` or `completed` (`shardcron.after.on`); `None` for a root.
    pub on: Option<&'static str>,
    /// The jobs that run after it.
    pub downstream: Vec<JobName>,
    /// Why it cannot be shown whole: no such job, or a config that does not parse.
    pub problem: Option<String>,
    /// Its newest workflow run (the newest it has a record of).
    pub last: Option<StepRun>,
    /// Its part in the graph's newest run ([`WorkflowGraph::latest`]): `waiting` while it has
    /// no record of it. What the console draws.
    pub current: Option<StepRun>,
}

/// A connected part of the namespace's workflow graph.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowGraph {
    /// Its jobs by layer, then name.
    pub steps: Vec<Step>,
    /// The newest workflow run any of its jobs recorded.
    pub latest: Option<String>,
}

/// One workflow run of a graph, every step's part in it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowRun {
    /// The run.
    pub run: String,
    /// The instant it names: the root fire's, or the trigger's for a run started by hand.
    pub at: Option<DateTime<Utc>>,
    /// Each step of the graph in layer order (waiting when it has no record of the run).
    pub steps: Vec<StepRun>,
}

/// The jobs to show: those connected to `of` through `shardcron.after` in either direction
/// (`of` alone when it is in no workflow), or, with no job, every job in a workflow.
pub fn members(jobs: &BTreeMap<JobName, JobFacts>, of: Option<&JobName>) -> BTreeSet<JobName> {
    let mut edges: BTreeMap<&JobName, BTreeSet<&JobName>> = BTreeMap::new();
    for (job, facts) in jobs {
        for up in after(facts) {
            edges.entry(job).or_default().insert(up);
            edges.entry(up).or_default().insert(job);
        }
    }
    let Some(start) = of else {
        return edges.keys().map(|j| (*j).clone()).collect();
    };
    let mut seen: BTreeSet<JobName> = BTreeSet::new();
    let mut todo = vec![start];
    while let Some(job) = todo.pop() {
        if seen.insert(job.clone()) {
            todo.extend(edges.get(job).into_iter().flatten().copied());
        }
    }
    seen
}

fn after(facts: &JobFacts) -> &[JobName] {
    facts
        .dependency
        .as_ref()
        .map_or(&[], |d| d.after.as_slice())
}

/// Each member's layer: the longest chain of upstreams above it. A cycle (which a write refuses,
/// but stored configs may still hold) stops the count after as many rounds as there are members.
fn layers(
    jobs: &BTreeMap<JobName, JobFacts>,
    members: &BTreeSet<JobName>,
) -> BTreeMap<JobName, usize> {
    let mut layer: BTreeMap<JobName, usize> = members.iter().map(|j| (j.clone(), 0)).collect();
    for _ in 0..members.len() {
        let mut changed = false;
        for job in members {
            let Some(facts) = jobs.get(job) else { continue };
            let deepest = after(facts)
                .iter()
                .filter_map(|up| layer.get(up))
                .map(|l| l + 1)
                .max()
                .unwrap_or(0);
            if deepest > layer[job] {
                layer.insert(job.clone(), deepest);
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    layer
}

/// The instant a run names: its root fire's, or for a run started by hand (`m{millis}`, see
/// [`crate::ops::Ops::trigger`]) the trigger's.
fn run_instant(run: &RunId) -> Option<DateTime<Utc>> {
    let millis = run.as_str().trim_start_matches('m').parse::<i64>().ok()?;
    DateTime::from_timestamp_millis(millis)
}

/// Orders run ids newest first, by the instant each names (an id naming none last).
fn newest_first(runs: &mut [RunId]) {
    let key = |r: &RunId| (run_instant(r), r.as_str().starts_with('m'));
    runs.sort_by(|a, b| (key(b), b.as_str()).cmp(&(key(a), a.as_str())));
}

/// The graph of `members` with each step's newest run and its part in the graph's newest run.
pub fn graph(jobs: &BTreeMap<JobName, JobFacts>, members: &BTreeSet<JobName>) -> WorkflowGraph {
    let layer = layers(jobs, members);
    let latest = run_ids(jobs, members).into_iter().next();
    let empty = JobFacts::default();
    let mut steps: Vec<Step> = members
        .iter()
        .map(|job| {
            let facts = jobs.get(job);
            let dependency = facts.and_then(|f| f.dependency.as_ref().ok());
            let problem = match facts {
                None => Some("no such job".to_owned()),
                Some(JobFacts {
                    dependency: Err(e), ..
                }) => Some(format!("config unreadable: {e}")),
                Some(_) => None,
            };
            let last = facts.and_then(|f| {
                let mut ids: Vec<RunId> = f.runs.keys().cloned().collect();
                newest_first(&mut ids);
                let newest = ids.first()?;
                Some(step_run(job, newest, f))
            });
            Step {
                job: job.clone(),
                layer: layer.get(job).copied().unwrap_or(0),
                after: dependency.map(|d| d.after.clone()).unwrap_or_default(),
                on: dependency
                    .filter(|d| !d.after.is_empty())
                    .map(|d| d.on.as_str()),
                downstream: members
                    .iter()
                    .filter(|down| jobs.get(*down).is_some_and(|f| after(f).contains(job)))
                    .cloned()
                    .collect(),
                problem,
                last,
                current: latest
                    .as_ref()
                    .map(|run| step_run(job, run, facts.unwrap_or(&empty))),
            }
        })
        .collect();
    steps.sort_by(|a, b| (a.layer, &a.job).cmp(&(b.layer, &b.job)));
    WorkflowGraph {
        steps,
        latest: latest.map(|r| r.to_string()),
    }
}

/// Every run id any member recorded, newest first.
fn run_ids(jobs: &BTreeMap<JobName, JobFacts>, members: &BTreeSet<JobName>) -> Vec<RunId> {
    let ids: BTreeSet<&RunId> = members
        .iter()
        .filter_map(|j| jobs.get(j))
        .flat_map(|f| f.runs.keys())
        .collect();
    let mut ids: Vec<RunId> = ids.into_iter().cloned().collect();
    newest_first(&mut ids);
    ids
}

/// The newest `limit` workflow runs of `members`, each with every step's part (in the graph's
/// order).
pub fn runs(
    jobs: &BTreeMap<JobName, JobFacts>,
    members: &BTreeSet<JobName>,
    limit: usize,
) -> Vec<WorkflowRun> {
    let order: Vec<JobName> = graph(jobs, members)
        .steps
        .into_iter()
        .map(|s| s.job)
        .collect();
    let empty = JobFacts::default();
    run_ids(jobs, members)
        .into_iter()
        .take(limit)
        .map(|run| WorkflowRun {
            run: run.to_string(),
            at: run_instant(&run),
            steps: order
                .iter()
                .map(|job| step_run(job, &run, jobs.get(job).unwrap_or(&empty)))
                .collect(),
        })
        .collect()
}

/// One job's part in `run`, from its records.
pub fn step_run(job: &JobName, run: &RunId, facts: &JobFacts) -> StepRun {
    let none = RunRecords::default();
    let records = facts.runs.get(run).unwrap_or(&none);
    let mut items = ItemCounts::default();
    for (record, _) in records.items.values() {
        let count = match record {
            ItemRecord::Running(_) => &mut items.running,
            ItemRecord::Ended(None) => &mut items.unreadable,
            ItemRecord::Ended(Some(ItemEnd::Succeeded)) => &mut items.success,
            ItemRecord::Ended(Some(ItemEnd::Failed)) => &mut items.failed,
            ItemRecord::Ended(Some(ItemEnd::TimedOut)) => &mut items.timeout,
            ItemRecord::Ended(Some(ItemEnd::Skipped)) => &mut items.skipped,
        };
        *count += 1;
    }
    let decision = records.start.as_ref().map(|d| match d {
        Some(decision) => decision.encode(),
        None => "unreadable".to_owned(),
    });
    StepRun {
        job: job.clone(),
        run: run.to_string(),
        at: run_instant(run),
        state: state(records, facts.total, &items),
        items,
        decision,
    }
}

fn state(records: &RunRecords, total: u32, items: &ItemCounts) -> StepState {
    if matches!(records.start, Some(Some(Decision::Skip { .. }))) {
        return StepState::Skipped;
    }
    if items.running > 0 {
        return StepState::Running;
    }
    match records.end(total) {
        Some(ItemEnd::Succeeded) => StepState::Succeeded,
        Some(ItemEnd::Skipped) => StepState::Skipped,
        Some(ItemEnd::Failed | ItemEnd::TimedOut) => StepState::Failed,
        None if records.items.is_empty() => StepState::Waiting,
        None => StepState::Running,
    }
}
