//! What the workflow views show: the connected part of the graph, its layers and policies, each
//! step's state in a run from its records, and the runs newest first.

use std::collections::BTreeMap;

use super::graph::{Dependency, RunWhen};
use super::records::parse_records;
use super::run::RunId;
use super::view::*;
use crate::types::JobName;

/// A step as the graph test reads it: job, layer, upstreams, policy, downstreams.
type Shape<'a> = (&'a str, usize, Vec<&'a str>, Option<&'a str>, Vec<&'a str>);
/// A state case: what, item count, records, the state expected.
type StateCase = (
    &'static str,
    u32,
    &'static [(&'static str, &'static str)],
    StepState,
);

fn job(name: &str) -> JobName {
    JobName::new(name).unwrap()
}

/// A job of `total` items after `after` (on `on`), with `records` as `(name, data)`.
fn facts(after: &[&str], on: RunWhen, total: u32, records: &[(&str, &str)]) -> JobFacts {
    JobFacts {
        dependency: Ok(Dependency {
            after: after.iter().map(|a| job(a)).collect(),
            on,
        }),
        total,
        runs: parse_records(records.iter().map(|(n, d)| (*n, d.as_bytes(), 1))),
    }
}

/// `import -> enrich -> report`, `import -> report` (on completed), and `lonely` outside.
fn namespace() -> BTreeMap<JobName, JobFacts> {
    BTreeMap::from([
        (
            job("import"),
            facts(
                &[],
                RunWhen::Success,
                2,
                &[
                    ("100@0", "success"),
                    ("100@1", "success"),
                    ("200@0", "failed"),
                    ("200@1", "success"),
                ],
            ),
        ),
        (
            job("enrich"),
            facts(
                &["import"],
                RunWhen::Success,
                1,
                &[
                    ("100@start", "run"),
                    ("100@0", "running:10.0.0.1@-@1"),
                    ("200@start", "skip:import:failed"),
                    ("200@0", "skipped"),
                ],
            ),
        ),
        (
            job("report"),
            facts(&["import", "enrich"], RunWhen::Completed, 2, &[]),
        ),
        (
            job("lonely"),
            facts(&[], RunWhen::Success, 1, &[("300@0", "success")]),
        ),
    ])
}

#[test]
fn the_members_are_the_jobs_connected_to_the_one_asked_for_or_every_job_in_a_workflow() {
    let jobs = namespace();
    let names = |set: std::collections::BTreeSet<JobName>| {
        set.iter()
            .map(|j| j.as_str().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        names(members(&jobs, Some(&job("report")))),
        ["enrich", "import", "report"]
    );
    assert_eq!(
        names(members(&jobs, Some(&job("enrich")))),
        ["enrich", "import", "report"]
    );
    assert_eq!(names(members(&jobs, None)), ["enrich", "import", "report"]);
    assert_eq!(names(members(&jobs, Some(&job("lonely")))), ["lonely"]);
}

#[test]
fn the_graph_lays_each_job_one_layer_below_its_deepest_upstream_with_its_policy() {
    let jobs = namespace();
    let graph = graph(&jobs, &members(&jobs, None));
    let shape: Vec<Shape> = graph
        .steps
        .iter()
        .map(|s| {
            (
                s.job.as_str(),
                s.layer,
                s.after.iter().map(JobName::as_str).collect(),
                s.on,
                s.downstream.iter().map(JobName::as_str).collect(),
            )
        })
        .collect();
    assert_eq!(
        shape,
        [
            ("import", 0, vec![], None, vec!["enrich", "report"]),
            ("enrich", 1, vec!["import"], Some("success"), vec!["report"]),
            (
                "report",
                2,
                vec!["import", "enrich"],
                Some("completed"),
                vec![]
            ),
        ]
    );
    assert_eq!(graph.latest.as_deref(), Some("200"));
    let now: Vec<(&str, StepState)> = graph
        .steps
        .iter()
        .map(|s| (s.job.as_str(), s.current.as_ref().unwrap().state))
        .collect();
    assert_eq!(
        now,
        [
            ("import", StepState::Failed),
            ("enrich", StepState::Skipped),
            ("report", StepState::Waiting),
        ],
        "each step's part in the newest run, waiting without a record of it"
    );
}

#[test]
fn each_steps_state_in_a_run_follows_its_records() {
    let cases: [StateCase; 8] = [
        ("no record", 2, &[], StepState::Waiting),
        (
            "decided, nothing started",
            2,
            &[("1@start", "run")],
            StepState::Waiting,
        ),
        (
            "one running",
            2,
            &[("1@0", "running:i"), ("1@1", "success")],
            StepState::Running,
        ),
        (
            "one ended, one not started",
            2,
            &[("1@0", "success")],
            StepState::Running,
        ),
        (
            "all succeeded",
            2,
            &[("1@0", "success"), ("1@1", "success")],
            StepState::Succeeded,
        ),
        (
            "one timed out",
            2,
            &[("1@0", "timeout"), ("1@1", "success")],
            StepState::Failed,
        ),
        (
            "unreadable counts as failed",
            1,
            &[("1@0", "??")],
            StepState::Failed,
        ),
        (
            "skip decided",
            2,
            &[("1@start", "skip:up:failed")],
            StepState::Skipped,
        ),
    ];
    for (what, total, records, expected) in cases {
        let facts = facts(&["up"], RunWhen::Success, total, records);
        let step = step_run(&job("down"), &RunId::scheduled(1), &facts);
        assert_eq!(step.state, expected, "{what}");
    }
}

#[test]
fn a_steps_run_counts_its_items_and_shows_its_decision_or_unreadable() {
    let jobs = BTreeMap::from([(
        job("down"),
        facts(
            &["up"],
            RunWhen::Success,
            4,
            &[
                ("7@start", "garbage"),
                ("7@0", "success"),
                ("7@1", "failed"),
                ("7@2", "running:x"),
                ("7@3", "nonsense"),
            ],
        ),
    )]);
    let step = step_run(&job("down"), &RunId::scheduled(7), &jobs[&job("down")]);
    assert_eq!(
        step.items,
        ItemCounts {
            success: 1,
            failed: 1,
            timeout: 0,
            skipped: 0,
            running: 1,
            unreadable: 1
        }
    );
    assert_eq!(step.decision.as_deref(), Some("unreadable"));
    assert_eq!(step.at.map(|a| a.timestamp_millis()), Some(7));
}

#[test]
fn runs_are_listed_newest_first_within_the_limit_with_every_step_in_graph_order() {
    let jobs = namespace();
    let all = members(&jobs, Some(&job("import")));
    let listed = runs(&jobs, &all, 5);
    let shape: Vec<(&str, Vec<(&str, StepState)>)> = listed
        .iter()
        .map(|r| {
            (
                r.run.as_str(),
                r.steps.iter().map(|s| (s.job.as_str(), s.state)).collect(),
            )
        })
        .collect();
    assert_eq!(
        shape,
        [
            (
                "200",
                vec![
                    ("import", StepState::Failed),
                    ("enrich", StepState::Skipped),
                    ("report", StepState::Waiting)
                ]
            ),
            (
                "100",
                vec![
                    ("import", StepState::Succeeded),
                    ("enrich", StepState::Running),
                    ("report", StepState::Waiting)
                ]
            ),
        ]
    );
    assert_eq!(runs(&jobs, &all, 1).len(), 1);
}

#[test]
fn runs_sort_by_the_instant_they_name_not_by_text_a_run_by_hand_by_its_trigger() {
    let jobs = BTreeMap::from([(
        job("root"),
        facts(
            &[],
            RunWhen::Success,
            1,
            &[
                ("99@0", "success"),
                ("1000@0", "success"),
                ("m500@0", "success"),
            ],
        ),
    )]);
    let all = members(&jobs, Some(&job("root")));
    let listed = runs(&jobs, &all, 10);
    let order: Vec<(&str, Option<i64>)> = listed
        .iter()
        .map(|r| (r.run.as_str(), r.at.map(|a| a.timestamp_millis())))
        .collect();
    assert_eq!(
        order,
        [("1000", Some(1000)), ("m500", Some(500)), ("99", Some(99))]
    );
}

#[test]
fn a_missing_upstream_or_an_unreadable_config_is_shown_as_a_problem_and_a_cycle_still_ends() {
    let mut jobs = BTreeMap::from([
        (job("a"), facts(&["b"], RunWhen::Success, 1, &[])),
        (job("b"), facts(&["a"], RunWhen::Success, 1, &[])),
        (job("c"), facts(&["ghost"], RunWhen::Success, 1, &[])),
    ]);
    jobs.insert(
        job("d"),
        JobFacts {
            dependency: Err("not YAML".into()),
            ..JobFacts::default()
        },
    );
    let graph = graph(&jobs, &members(&jobs, None));
    let problems: Vec<(&str, Option<&str>)> = graph
        .steps
        .iter()
        .map(|s| (s.job.as_str(), s.problem.as_deref()))
        .collect();
    assert!(
        problems.contains(&("ghost", Some("no such job"))),
        "{problems:?}"
    );
    assert!(problems.contains(&("a", None)), "{problems:?}");
    let d = members(&jobs, Some(&job("d")));
    let shown = super::view::graph(&jobs, &d);
    assert_eq!(
        shown.steps[0].problem.as_deref(),
        Some("config unreadable: not YAML")
    );
}
