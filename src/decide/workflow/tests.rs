//! Table tests of the workflow decisions.

use std::collections::BTreeMap;

use super::graph::{
    dependency_from_props, Dependency, DependencyError, Graph, GraphError, RunWhen,
};
use super::run::{run_end, start, ItemEnd, RunId, Start};
use crate::types::{JobName, ShardItem};

fn job(name: &str) -> JobName {
    JobName::new(name).unwrap()
}

fn after(names: &[&str], on: RunWhen) -> Dependency {
    Dependency {
        after: names.iter().map(|n| job(n)).collect(),
        on,
    }
}

fn graph(edges: Edges<'_>) -> Result<Graph, GraphError> {
    Graph::new(
        edges
            .iter()
            .map(|(name, ups)| (job(name), after(ups, RunWhen::Success))),
    )
}

/// A namespace's declarations: each job with the jobs it runs after.
type Edges<'a> = &'a [(&'a str, &'a [&'a str])];
/// The items' records of an upstream run.
type ItemRecords = BTreeMap<ShardItem, Option<ItemEnd>>;

fn props(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn a_diamond_is_a_graph_with_one_root_and_fan_out_and_fan_in() {
    let g = graph(&[
        ("root", &[]),
        ("left", &["root"]),
        ("right", &["root"]),
        ("join", &["left", "right"]),
    ])
    .unwrap();
    let mut below: Vec<_> = g.downstream_of(&job("root")).cloned().collect();
    below.sort();
    assert_eq!(below, vec![job("left"), job("right")]);
    assert_eq!(
        g.roots_of(&job("join")).into_iter().collect::<Vec<_>>(),
        vec![job("root")]
    );
    assert!(g.missing().is_empty());
}

#[test]
fn a_cycle_is_refused_with_its_path_in_run_order() {
    let cases: &[(Edges<'_>, &str)] = &[
        (&[("a", &["b"]), ("b", &["a"])], "a -> b -> a"),
        (
            &[("a", &["c"]), ("b", &["a"]), ("c", &["b"]), ("d", &["a"])],
            "a -> b -> c -> a",
        ),
        (
            &[("x", &[]), ("a", &["x", "c"]), ("b", &["a"]), ("c", &["b"])],
            "a -> b -> c -> a",
        ),
    ];
    for (edges, expected) in cases {
        let err = graph(edges).unwrap_err();
        let GraphError::Cycle { path } = &err else {
            panic!("{err}")
        };
        let text = path
            .iter()
            .map(JobName::as_str)
            .collect::<Vec<_>>()
            .join(" -> ");
        // The cycle may be entered at any of its jobs; rotate it to start at the smallest name.
        let ring: Vec<&str> = text.split(" -> ").collect();
        let body = &ring[..ring.len() - 1];
        let at = body.iter().enumerate().min_by_key(|(_, n)| **n).unwrap().0;
        let mut rotated: Vec<&str> = body[at..].iter().chain(&body[..at]).copied().collect();
        rotated.push(rotated[0]);
        assert_eq!(rotated.join(" -> "), *expected, "{err}");
        assert!(
            err.to_string()
                .starts_with("shardcron.after makes a cycle: "),
            "{err}"
        );
    }
}

#[test]
fn a_job_after_itself_is_refused_and_a_missing_upstream_is_reported() {
    assert_eq!(
        graph(&[("a", &["a"])]).unwrap_err(),
        GraphError::SelfDependency { job: job("a") }
    );
    let g = graph(&[("a", &["ghost", "b"]), ("b", &[])]).unwrap();
    assert_eq!(g.missing(), vec![(job("a"), job("ghost"))]);
}

#[test]
fn a_config_write_that_would_close_a_cycle_is_refused_and_one_that_would_not_is_taken() {
    let g = graph(&[("a", &[]), ("b", &["a"]), ("c", &["b"])]).unwrap();
    assert!(matches!(
        g.with(job("a"), after(&["c"], RunWhen::Success)),
        Err(GraphError::Cycle { .. })
    ));
    let g2 = g
        .with(job("d"), after(&["a", "c"], RunWhen::Completed))
        .unwrap();
    assert_eq!(g2.dependency(&job("d")).unwrap().on, RunWhen::Completed);
}

#[test]
fn a_declaration_is_read_from_props_and_a_bad_value_names_its_key() {
    let cases: Vec<(
        BTreeMap<String, String>,
        Result<Dependency, DependencyError>,
    )> = vec![
        (props(&[]), Ok(Dependency::default())),
        (
            props(&[("shardcron.after", "import")]),
            Ok(after(&["import"], RunWhen::Success)),
        ),
        (
            props(&[
                ("shardcron.after", " a, b ,a"),
                ("shardcron.after.on", "completed"),
            ]),
            Ok(after(&["a", "b"], RunWhen::Completed)),
        ),
        (
            props(&[("shardcron.after", "a,,b")]),
            Err(DependencyError::EmptyName {
                value: "a,,b".into(),
            }),
        ),
        (
            props(&[("shardcron.after", "a"), ("shardcron.after.on", "always")]),
            Err(DependencyError::BadOn {
                value: "always".into(),
            }),
        ),
        (
            props(&[("shardcron.after.on", "success")]),
            Err(DependencyError::OnWithoutAfter),
        ),
    ];
    for (input, expected) in cases {
        assert_eq!(dependency_from_props(&input), expected, "{input:?}");
    }
    let bad = dependency_from_props(&props(&[("shardcron.after", "a/b")])).unwrap_err();
    assert!(
        bad.to_string()
            .starts_with("props.shardcron.after: \"a/b\""),
        "{bad}"
    );
    let many = (0..65)
        .map(|i| format!("j{i}"))
        .collect::<Vec<_>>()
        .join(",");
    assert_eq!(
        dependency_from_props(&props(&[("shardcron.after", &many)])),
        Err(DependencyError::TooMany)
    );
}

#[test]
fn an_upstream_run_ends_when_every_item_has_its_last_attempt_recorded_and_takes_the_worst_end() {
    use ItemEnd::*;
    let records = |ends: &[(u32, Option<ItemEnd>)]| -> ItemRecords {
        ends.iter().map(|(i, e)| (ShardItem(*i), *e)).collect()
    };
    let cases: Vec<(u32, ItemRecords, Option<ItemEnd>)> = vec![
        (
            4,
            records(&[
                (0, Some(Succeeded)),
                (1, Some(Succeeded)),
                (2, Some(Succeeded)),
            ]),
            None,
        ),
        (
            2,
            records(&[(0, Some(Succeeded)), (1, Some(Succeeded))]),
            Some(Succeeded),
        ),
        (
            2,
            records(&[(0, Some(Skipped)), (1, Some(Succeeded))]),
            Some(Skipped),
        ),
        (
            3,
            records(&[(0, Some(TimedOut)), (1, Some(Failed)), (2, Some(Succeeded))]),
            Some(TimedOut),
        ),
        (1, records(&[(0, None)]), Some(Failed)),
        (
            1,
            records(&[(0, Some(Succeeded)), (5, Some(Failed))]),
            Some(Succeeded),
        ),
        (0, records(&[]), None),
    ];
    for (total, input, expected) in cases {
        assert_eq!(run_end(total, &input), expected, "{total} {input:?}");
    }
}

#[test]
fn a_downstream_waits_for_every_upstream_then_runs_or_skips_as_its_policy_says() {
    use ItemEnd::*;
    let ends = |pairs: &[(&str, ItemEnd)]| -> BTreeMap<JobName, ItemEnd> {
        pairs.iter().map(|(n, e)| (job(n), *e)).collect()
    };
    let fan_in = after(&["a", "b"], RunWhen::Success);
    let anyway = after(&["a", "b"], RunWhen::Completed);
    let cases: Vec<(&Dependency, BTreeMap<JobName, ItemEnd>, Start)> = vec![
        (
            &fan_in,
            ends(&[]),
            Start::Wait {
                pending: vec![job("a"), job("b")],
            },
        ),
        (
            &fan_in,
            ends(&[("a", Succeeded)]),
            Start::Wait {
                pending: vec![job("b")],
            },
        ),
        (
            &fan_in,
            ends(&[("a", Succeeded), ("b", Succeeded)]),
            Start::Run,
        ),
        (
            &fan_in,
            ends(&[("a", Succeeded), ("b", TimedOut)]),
            Start::Skip {
                upstream: job("b"),
                end: TimedOut,
            },
        ),
        (
            &fan_in,
            ends(&[("a", Skipped), ("b", Failed)]),
            Start::Skip {
                upstream: job("a"),
                end: Skipped,
            },
        ),
        (&anyway, ends(&[("a", Failed), ("b", TimedOut)]), Start::Run),
        (
            &anyway,
            ends(&[("a", Failed)]),
            Start::Wait {
                pending: vec![job("b")],
            },
        ),
    ];
    for (dependency, input, expected) in cases {
        assert_eq!(
            start(dependency, &input),
            expected,
            "{dependency:?} {input:?}"
        );
    }
}

#[test]
fn a_run_id_is_a_scheduled_instant_or_a_manual_number_and_nothing_else_is_read() {
    assert_eq!(
        RunId::scheduled(1_732_580_000_000).as_str(),
        "1732580000000"
    );
    assert_eq!(RunId::manual(7).as_str(), "m7");
    for good in ["1732580000000", "m7"] {
        assert_eq!(RunId::parse(good).unwrap().as_str(), good);
    }
    for bad in ["", "m", "x1", "12a", "../1", "123456789012345678901"] {
        assert_eq!(RunId::parse(bad), None, "{bad}");
    }
    for end in [
        ItemEnd::Succeeded,
        ItemEnd::Skipped,
        ItemEnd::Failed,
        ItemEnd::TimedOut,
    ] {
        assert_eq!(ItemEnd::parse(end.as_str()), Some(end));
    }
    assert_eq!(ItemEnd::parse("SUCCESS"), None);
}
