//! The soak's workflow and its verdict: a root job on a cron and a step that runs after it
//! (`shardcron.after`), both tracked by [`super::spans`] with each run's workflow run. For every
//! workflow run the root completed (each of its items has a run that ended on its own), the step
//! runs each item exactly once, after the root's items ended; a root run that did not complete
//! runs no step.
//!
//! | found | verdict |
//! | --- | --- |
//! | a second `WORKFLOW` run of one (workflow run, step item) | duplicate: a failure anywhere |
//! | a step item that never ran for a completed root run | lost: a failure, unless a fault window covers the root's fire up to its completion (the window rule of [`super::spans`]'s fires) |
//! | a step item that started before an item of its root run ended | early: a failure |
//! | a step item of a root run that did not complete | stray: a failure |
//! | two runs of one step item at once | overlap: a failure |
//!
//! Failover re-runs of a step item are not duplicates, as for fires: an owner cut off from the
//! registry may end a run it cannot report, and the survivors take it over. They are counted.

use crate::jobs_file::{entries, script_job};
use std::collections::BTreeMap;
use std::time::Duration;

use super::spans::{self, Span, Window};
use crate::wait::wait_until_blocking_every;

/// The workflow's jobs, as YAML list entries for [`super::Cluster::with_jobs`]: `flow` (4 items of
/// 1 s every 5 s) and `flow_report` (4 items of 0.3 s after it), both with failover: an item on
/// each of the soak's four nodes, so that every node fault lands on both.
pub fn jobs() -> String {
    entries(&[
        script_job("flow", 4, "'{track} 5 0.2'")
            .cron("0/5 * * * * ?")
            .resilient(),
        script_job("flow_report", 4, "'{track} 3 0.1'")
            .resilient()
            .prop("shardcron.after", "flow"),
    ])
}

/// The root, its item count and cron period, and the step and its item count, of [`jobs`].
pub const FLOW: FlowCheck = FlowCheck {
    root: "flow",
    root_items: 4,
    period: 5,
    step: "flow_report",
    step_items: 4,
};

/// A two-step workflow the verdict checks.
#[derive(Debug, Clone, Copy)]
pub struct FlowCheck {
    /// The root job (on a cron).
    pub root: &'static str,
    /// Its item count.
    pub root_items: u32,
    /// Its cron period in seconds.
    pub period: u64,
    /// The job that runs after it.
    pub step: &'static str,
    /// Its item count.
    pub step_items: u32,
}

/// What was found.
#[derive(Debug, Clone, Default)]
pub struct FlowVerdict {
    /// Workflow runs checked (root fires in the checked span).
    pub runs: usize,
    /// Of those, the runs the root completed.
    pub completed: usize,
    /// Of those, the runs whose step ran every item.
    pub stepped: usize,
    /// Checked runs the root left incomplete with an item that started and never ended (its run
    /// interrupted and not taken over): allowed (a fault caused it), listed for the table.
    pub stuck: Vec<String>,
    /// Step item runs, by source.
    pub step_runs: BTreeMap<String, usize>,
    /// Second `WORKFLOW` runs of one (workflow run, step item).
    pub duplicates: Vec<String>,
    /// (workflow run, step item) that never ran for a completed root run, outside every window.
    pub lost: Vec<String>,
    /// The same inside a fault window: allowed.
    pub lost_in_window: usize,
    /// Step runs that started before an item of their root run ended.
    pub early: Vec<String>,
    /// Step runs of a root run that did not complete.
    pub stray: Vec<String>,
    /// Two runs of one step item at once.
    pub overlaps: Vec<String>,
}

impl FlowVerdict {
    /// Whether every completed root run had its step run once, after it, and nothing else ran.
    pub fn is_clean(&self) -> bool {
        self.duplicates.is_empty()
            && self.lost.is_empty()
            && self.early.is_empty()
            && self.stray.is_empty()
            && self.overlaps.is_empty()
    }

    /// One line for the soak's table.
    pub fn summary(&self) -> String {
        let runs: Vec<String> = self
            .step_runs
            .iter()
            .map(|(source, n)| format!("{source} {n}"))
            .collect();
        format!(
            "workflow runs checked: {} | root completed: {} (incomplete with an interrupted item: \
             {}) | step ran for: {} | step item runs: {} ({}) | duplicates: {} | lost outside \
             fault windows: {} | lost inside: {} | early: {} | for an incomplete root run: {} | \
             overlaps: {}",
            self.runs,
            self.completed,
            self.stuck.len(),
            self.stepped,
            self.step_runs.values().sum::<usize>(),
            runs.join(", "),
            self.duplicates.len(),
            self.lost.len(),
            self.lost_in_window,
            self.early.len(),
            self.stray.len(),
            self.overlaps.len()
        )
    }
}

/// Waits until the step is registered under the root (`/{root}/shardcron/downstream/{step}`):
/// the root's fires from then on are workflow runs.
pub fn wait_registered(connect: &str, namespace: &str) {
    let path = format!("/{}/shardcron/downstream/{}", FLOW.root, FLOW.step);
    let check = || super::registry::exists(connect, namespace, &path);
    let what = format!("{} registered under {} ({path})", FLOW.step, FLOW.root);
    wait_until_blocking_every(check, &what, super::WITHIN, Duration::from_millis(200));
}

/// When each root item of a workflow run first ended (unix seconds), by run.
fn root_ends<'a>(spans: &[&'a Span]) -> BTreeMap<&'a str, BTreeMap<u32, f64>> {
    let mut ends: BTreeMap<&str, BTreeMap<u32, f64>> = BTreeMap::new();
    for span in spans.iter().filter(|s| s.ended) {
        let Some(run) = span.run.as_deref() else {
            continue;
        };
        let at = ends
            .entry(run)
            .or_default()
            .entry(span.item)
            .or_insert(span.last);
        *at = at.min(span.last);
    }
    ends
}

/// The workflow run of a root fire at `second` (unix seconds): its instant in epoch ms.
fn run_of(second: u64) -> String {
    (second * 1000).to_string()
}

/// Checks the workflow `flow` in `spans` over the root fires in `from..=to` (unix seconds).
pub fn check(
    spans: &[Span],
    flow: &FlowCheck,
    from: f64,
    to: f64,
    windows: &[Window],
) -> FlowVerdict {
    let mut verdict = FlowVerdict::default();
    let root: Vec<&Span> = spans.iter().filter(|s| s.job == flow.root).collect();
    let step: Vec<&Span> = spans.iter().filter(|s| s.job == flow.step).collect();
    let mut found = spans::Verdict::default();
    spans::overlaps(&step, &mut found);
    verdict.overlaps = found.overlaps;
    let ends = root_ends(&root);
    let mut by_run: BTreeMap<(&str, u32), Vec<&Span>> = BTreeMap::new();
    for span in &step {
        *verdict.step_runs.entry(span.source.clone()).or_default() += 1;
        match span.run.as_deref() {
            Some(run) => by_run.entry((run, span.item)).or_default().push(span),
            None => verdict
                .stray
                .push(format!("outside any workflow run: {span}")),
        }
    }
    for ((run, item), runs) in &by_run {
        let workflow: Vec<&&Span> = runs.iter().filter(|s| s.source == "WORKFLOW").collect();
        for extra in workflow.iter().skip(1) {
            verdict.duplicates.push(format!(
                "workflow run {run} step item {item} ran again: {extra} (first: {})",
                workflow[0]
            ));
        }
        let root_ended = ends.get(run);
        let complete = root_ended.is_some_and(|e| e.len() == flow.root_items as usize);
        for span in runs {
            if !complete {
                verdict.stray.push(format!(
                    "workflow run {run}: root items ended {:?}, step ran: {span}",
                    root_ended.map(|e| e.keys().collect::<Vec<_>>())
                ));
            } else if let Some((i, at)) = root_ended
                .into_iter()
                .flatten()
                .find(|(_, at)| span.start < **at)
            {
                verdict.early.push(format!(
                    "workflow run {run}: {span} started before root item {i} ended at {at:.3}"
                ));
            }
        }
    }
    let first = (from.ceil() as u64).div_ceil(flow.period) * flow.period;
    let mut fire = first;
    // A step runs a moment after its root completed: fires this close to the end are not checked.
    while (fire as f64) + 1.5 <= to {
        verdict.runs += 1;
        let run = run_of(fire);
        let ended = ends.get(run.as_str());
        let completed = ended
            .filter(|e| e.len() == flow.root_items as usize)
            .map(|e| e.values().fold(0.0_f64, |a, b| a.max(*b)));
        let unended: Vec<&&Span> = (root.iter())
            .filter(|s| s.run.as_deref() == Some(run.as_str()))
            .filter(|s| ended.is_none_or(|e| !e.contains_key(&s.item)))
            .collect();
        if completed.is_none() && !unended.is_empty() {
            let spans: Vec<String> = unended.iter().map(|s| s.to_string()).collect();
            verdict
                .stuck
                .push(format!("workflow run {run}: {}", spans.join("; ")));
        }
        if let Some(completed) = completed {
            verdict.completed += 1;
            // The step is missed by a fault from before the root completed (and its step
            // started) to after the root fired.
            let covered = windows
                .iter()
                .any(|w| w.from < completed + 1.0 && fire as f64 <= w.until);
            let mut all = true;
            for item in 0..flow.step_items {
                if by_run.contains_key(&(run.as_str(), item)) {
                    continue;
                }
                all = false;
                if covered {
                    verdict.lost_in_window += 1;
                } else {
                    verdict.lost.push(format!(
                        "workflow run {run}: root completed at {completed:.3}, step item {item} \
                         never ran"
                    ));
                }
            }
            verdict.stepped += usize::from(all);
        }
        fire += flow.period;
    }
    verdict
}
