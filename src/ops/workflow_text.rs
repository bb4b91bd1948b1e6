//! The workflow views as text, for `shardcronctl workflow show` and `workflow runs`: one block
//! per job (layer by layer) and one block per run (newest first). Job names are quoted when not
//! plain ([`super::quote_name`]), so a registry name cannot forge a line.

use std::fmt::Write;

use super::quote_name;
use crate::decide::workflow::view::{ItemCounts, StepRun, WorkflowGraph, WorkflowRun};
use crate::types::JobName;

fn names(jobs: &[JobName]) -> String {
    if jobs.is_empty() {
        return "-".to_owned();
    }
    jobs.iter()
        .map(|j| quote_name(j.as_str()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `success 3, running 1`; `no item record` when every count is zero.
fn counts(items: &ItemCounts) -> String {
    let all = [
        ("success", items.success),
        ("failed", items.failed),
        ("timeout", items.timeout),
        ("skipped", items.skipped),
        ("running", items.running),
        ("unreadable", items.unreadable),
    ];
    let shown: Vec<String> = all
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(what, n)| format!("{what} {n}"))
        .collect();
    if shown.is_empty() {
        "no item record".to_owned()
    } else {
        shown.join(", ")
    }
}

fn run_name(run: &str, at: Option<chrono::DateTime<chrono::Utc>>) -> String {
    match at {
        Some(at) => format!("{run} ({})", at.format("%Y-%m-%dT%H:%M:%S%.3fZ")),
        None => run.to_owned(),
    }
}

fn outcome(step: &StepRun) -> String {
    let mut line = format!("{}: {}", serde_plain(&step.state), counts(&step.items));
    if let Some(decision) = &step.decision {
        let _ = write!(line, "; decision {decision}");
    }
    line
}

/// A state's name as the JSON shows it (`running`, `succeeded`, ...).
fn serde_plain(state: &impl serde::Serialize) -> String {
    match serde_json::to_value(state) {
        Ok(serde_json::Value::String(s)) => s,
        _ => "?".to_owned(),
    }
}

/// The graph: each job with its layer, upstreams and policy, downstreams and newest run.
pub fn render_graph(graph: &WorkflowGraph) -> String {
    let mut out = String::new();
    if graph.steps.is_empty() {
        return "no workflow: no job names another in shardcron.after\n".to_owned();
    }
    for step in &graph.steps {
        let _ = writeln!(
            out,
            "{} (layer {})",
            quote_name(step.job.as_str()),
            step.layer
        );
        if let Some(problem) = &step.problem {
            let _ = writeln!(out, "  problem: {problem}");
        }
        if let Some(on) = step.on {
            let _ = writeln!(out, "  after: {} (on {on})", names(&step.after));
        }
        let _ = writeln!(out, "  downstream: {}", names(&step.downstream));
        match &step.last {
            Some(last) => {
                let _ = writeln!(
                    out,
                    "  last run {}: {}",
                    run_name(&last.run, last.at),
                    outcome(last)
                );
            }
            None => out.push_str("  last run: none recorded\n"),
        }
    }
    out
}

/// The runs, newest first, each step's part on a line of its own.
pub fn render_runs(runs: &[WorkflowRun]) -> String {
    if runs.is_empty() {
        return "no workflow run recorded\n".to_owned();
    }
    let width = runs
        .iter()
        .flat_map(|r| &r.steps)
        .map(|s| quote_name(s.job.as_str()).chars().count())
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for run in runs {
        let _ = writeln!(out, "run {}", run_name(&run.run, run.at));
        for step in &run.steps {
            let name = quote_name(step.job.as_str());
            let _ = writeln!(out, "  {name:<width$}  {}", outcome(step));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::decide::workflow::graph::{Dependency, RunWhen};
    use crate::decide::workflow::records::parse_records;
    use crate::decide::workflow::view::{graph, members, runs, JobFacts};

    fn job(name: &str) -> JobName {
        JobName::new(name).unwrap()
    }

    fn two_steps() -> BTreeMap<JobName, JobFacts> {
        let records =
            |r: &[(&str, &str)]| parse_records(r.iter().map(|(n, d)| (*n, d.as_bytes(), 1)));
        BTreeMap::from([
            (
                job("import"),
                JobFacts {
                    dependency: Ok(Dependency::default()),
                    total: 2,
                    runs: records(&[
                        ("1767225600000@0", "success"),
                        ("1767225600000@1", "failed"),
                    ]),
                },
            ),
            (
                job("report"),
                JobFacts {
                    dependency: Ok(Dependency {
                        after: vec![job("import")],
                        on: RunWhen::Success,
                    }),
                    total: 1,
                    runs: records(&[
                        ("1767225600000@start", "skip:import:failed"),
                        ("1767225600000@0", "skipped"),
                    ]),
                },
            ),
        ])
    }

    #[test]
    fn the_graph_reads_as_one_block_per_job_with_its_policy_and_last_run() {
        let jobs = two_steps();
        let text = render_graph(&graph(&jobs, &members(&jobs, None)));
        assert_eq!(
            text,
            "import (layer 0)\n  downstream: report\n  last run 1767225600000 (2026-01-01T00:00:00.000Z): failed: success 1, failed 1\n\
             report (layer 1)\n  after: import (on success)\n  downstream: -\n  last run 1767225600000 (2026-01-01T00:00:00.000Z): skipped: skipped 1; decision skip:import:failed\n"
        );
    }

    #[test]
    fn the_runs_read_as_one_block_per_run_with_a_line_per_step() {
        let jobs = two_steps();
        let text = render_runs(&runs(&jobs, &members(&jobs, Some(&job("report"))), 20));
        assert_eq!(
            text,
            "run 1767225600000 (2026-01-01T00:00:00.000Z)\n  import  failed: success 1, failed 1\n  report  skipped: skipped 1; decision skip:import:failed\n"
        );
        assert_eq!(render_runs(&[]), "no workflow run recorded\n");
    }
}
