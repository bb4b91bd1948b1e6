use super::*;

fn job(name: &str) -> JobName {
    JobName::new(name).unwrap()
}

/// A SCRIPT job created at runtime, unlabelled, valid, not run otherwise.
fn created(job: &JobName) -> JobFacts<'_> {
    JobFacts {
        job,
        root: Some("SCRIPT"),
        marker: Some(Marker::Created),
        label: None,
        config_problem: None,
        runs_otherwise: false,
    }
}

fn both() -> Adoption {
    Adoption::new(
        AdoptPolicy::new([RuntimeType::Script, RuntimeType::Http]),
        vec!["eu".into()],
    )
}

fn adopt(j: &JobName, kind: RuntimeType) -> Option<AdoptCommand> {
    Some(AdoptCommand::Adopt {
        job: j.clone(),
        kind,
    })
}

fn is_left_alone(c: &Option<AdoptCommand>, needle: &str) -> bool {
    matches!(c, Some(AdoptCommand::LeaveAlone { why, .. }) if why.contains(needle))
}

#[test]
fn a_created_job_of_an_adopted_type_is_adopted_once() {
    let j = job("nightly");
    let mut a = both();
    assert_eq!(a.step(&created(&j)), adopt(&j, RuntimeType::Script));
    assert_eq!(a.step(&created(&j)), None, "already adopted");
    let http = JobFacts {
        root: Some("HTTP"),
        ..created(&j)
    };
    let k = job("ping");
    let http = JobFacts { job: &k, ..http };
    assert_eq!(a.step(&http), adopt(&k, RuntimeType::Http));
    assert_eq!(a.adopted().count(), 2);
}

#[test]
fn jobs_not_created_at_runtime_or_without_a_root_are_ignored_silently() {
    let j = job("orders");
    let mut a = both();
    let cases = [
        JobFacts {
            marker: None,
            ..created(&j)
        },
        JobFacts {
            root: None,
            ..created(&j)
        },
        JobFacts {
            marker: Some(Marker::Removing),
            ..created(&j)
        },
        JobFacts {
            runs_otherwise: true,
            ..created(&j)
        },
    ];
    for facts in cases {
        assert_eq!(a.step(&facts), None, "{facts:?}");
    }
}

#[test]
fn a_job_this_node_cannot_run_is_left_alone_and_said_so_once() {
    let j = job("x");
    let script_only = || Adoption::new(AdoptPolicy::new([RuntimeType::Script]), vec![]);
    let gpu_only = || {
        Adoption::new(
            AdoptPolicy::new([RuntimeType::Script]).only_labelled("gpu"),
            vec!["gpu".into()],
        )
    };
    let cases: Vec<(Adoption, JobFacts<'_>, &str)> = vec![
        (
            both(),
            JobFacts {
                root: Some("com.acme.OrdersJob"),
                ..created(&j)
            },
            "not one a node adopts",
        ),
        (
            script_only(),
            JobFacts {
                root: Some("HTTP"),
                ..created(&j)
            },
            "adopts SCRIPT jobs only",
        ),
        (gpu_only(), created(&j), "only jobs labelled \"gpu\""),
        (
            gpu_only(),
            JobFacts {
                label: Some("cpu"),
                ..created(&j)
            },
            "its label is \"cpu\"",
        ),
        (
            both(),
            JobFacts {
                label: Some("gpu"),
                ..created(&j)
            },
            "does not carry",
        ),
        (
            both(),
            JobFacts {
                config_problem: Some("props.script.command.line: missing".into()),
                ..created(&j)
            },
            "props.script.command.line",
        ),
    ];
    for (mut a, facts, why) in cases {
        let first = a.step(&facts);
        assert!(is_left_alone(&first, why), "{facts:?}: {first:?}");
        assert_eq!(a.step(&facts), None, "said once: {facts:?}");
        assert_eq!(a.adopted().count(), 0);
    }
}

#[test]
fn labels_that_fit_are_adopted() {
    let j = job("x");
    let mut gpu = Adoption::new(
        AdoptPolicy::new([RuntimeType::Script]).only_labelled("gpu"),
        vec![],
    );
    let labelled = JobFacts {
        label: Some("gpu"),
        ..created(&j)
    };
    assert_eq!(gpu.step(&labelled), adopt(&j, RuntimeType::Script));
    let mut eu = both();
    let eu_job = JobFacts {
        label: Some("eu"),
        ..created(&j)
    };
    assert_eq!(eu.step(&eu_job), adopt(&j, RuntimeType::Script));
}

#[test]
fn a_job_left_alone_is_adopted_once_it_can_run() {
    let j = job("x");
    let mut a = both();
    let broken = JobFacts {
        config_problem: Some("bad".into()),
        ..created(&j)
    };
    assert!(is_left_alone(&a.step(&broken), "bad"));
    assert_eq!(a.step(&created(&j)), adopt(&j, RuntimeType::Script));
}

#[test]
fn an_adopted_job_is_dropped_once_when_its_record_says_removing_or_it_is_gone() {
    let j = job("x");
    let removing = JobFacts {
        marker: Some(Marker::Removing),
        ..created(&j)
    };
    let gone = JobFacts {
        root: None,
        marker: None,
        ..created(&j)
    };
    for end in [removing, gone] {
        let mut a = both();
        a.step(&created(&j));
        assert_eq!(a.step(&end), Some(AdoptCommand::Drop { job: j.clone() }));
        assert_eq!(a.step(&end), None, "dropped once");
        assert_eq!(a.step(&created(&j)), None, "still dropping");
        a.forget(&j);
        assert_eq!(a.adopted().count(), 0);
        assert_eq!(
            a.step(&created(&j)),
            adopt(&j, RuntimeType::Script),
            "created again"
        );
    }
}

#[test]
fn a_job_said_left_alone_and_removed_is_judged_afresh_when_created_again() {
    let j = job("x");
    let mut a = Adoption::new(AdoptPolicy::new([RuntimeType::Http]), vec![]);
    assert!(is_left_alone(&a.step(&created(&j)), "HTTP jobs only"));
    let gone = JobFacts {
        root: None,
        marker: None,
        ..created(&j)
    };
    assert_eq!(a.step(&gone), None);
    assert!(is_left_alone(&a.step(&created(&j)), "HTTP jobs only"));
}

#[test]
fn policies_parse_from_the_flag_and_name_what_they_refuse() {
    let cases: [(&str, Result<AdoptPolicy, &str>); 7] = [
        ("script", Ok(AdoptPolicy::new([RuntimeType::Script]))),
        ("HTTP", Ok(AdoptPolicy::new([RuntimeType::Http]))),
        (
            "script,http",
            Ok(AdoptPolicy::new([RuntimeType::Script, RuntimeType::Http])),
        ),
        (
            "http:gpu",
            Ok(AdoptPolicy::new([RuntimeType::Http]).only_labelled("gpu")),
        ),
        ("ftp", Err("unknown job type \"ftp\"")),
        (":gpu", Err("names no job type")),
        ("script:g pu", Err("label \"g pu\"")),
    ];
    for (text, want) in cases {
        let got = text.parse::<AdoptPolicy>();
        match (got, want) {
            (Ok(p), Ok(w)) => assert_eq!(p, w, "{text}"),
            (Err(e), Err(w)) => assert!(e.to_string().contains(w), "{text}: {e}"),
            (got, want) => panic!("{text}: {got:?}, wanted {want:?}"),
        }
    }
}

#[test]
fn markers_read_back_from_their_data() {
    for m in [Marker::Created, Marker::Removing] {
        assert_eq!(Marker::from_data(m.as_data()), m);
    }
    assert_eq!(Marker::from_data(b""), Marker::Created);
}
