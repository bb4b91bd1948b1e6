//! Table tests of the step-by-step path: each node written in turn, an older session's node
//! taken over, every failure naming its step, and the root and config as the mirror holds them.

use super::*;

#[test]
fn the_step_by_step_path_writes_each_node_and_takes_over_an_older_session_s_node() {
    let facts = Fake::older_session_node();
    let steps = step_by_step(
        &facts,
        vec![
            Answer::Done,
            Answer::Done,
            Answer::Exists { at: None },
            Answer::Done,
        ],
    );
    let take_over = vec![Op::delete(INSTANCE), Op::delete(STALE), instance_create()];
    assert_eq!(
        steps[..4],
        [
            RegisterStep::EnsurePaths(
                [
                    "/orders/servers",
                    "/orders/instances",
                    "/orders/sharding",
                    "/orders/leader/election",
                    "/orders/leader/sharding"
                ]
                .map(String::from)
                .to_vec()
            ),
            direct(vec![Op::set(SERVER, "ENABLED")]),
            direct(vec![instance_create()]),
            direct(take_over),
        ]
    );
    ended_ok(&steps[4]);
}

#[test]
fn every_failure_of_the_step_by_step_path_names_its_step() {
    let facts = Fake::older_session_node();
    let take_over = vec![Op::delete(INSTANCE), Op::delete(STALE), instance_create()];
    let d = || Answer::Done;
    let cases: Vec<(Vec<Answer>, RegisterStep)> = vec![
        (vec![lost()], failed("creating parents")),
        (vec![d(), lost()], failed("writing servers/{ip}")),
        (
            vec![d(), Answer::Missing { at: None }],
            tolerant(vec![Op::create(SERVER, "ENABLED", CreateMode::Persistent)]),
        ),
        (
            vec![d(), Answer::Missing { at: None }, lost()],
            failed("writing servers/{ip}"),
        ),
        (vec![d(), d(), lost()], failed("creating instances/{id}")),
        (vec![d(), d(), d()], tolerant(vec![Op::delete(STALE)])),
        (
            vec![d(), d(), d(), lost()],
            failed("clearing stale running markers"),
        ),
        (
            vec![d(), d(), Answer::Exists { at: None }, lost()],
            failed("taking over instances/{id}"),
        ),
        (
            vec![
                d(),
                d(),
                Answer::Exists { at: None },
                Answer::Missing { at: Some(1) },
            ],
            tolerant(take_over.clone()),
        ),
        (
            vec![
                d(),
                d(),
                Answer::Exists { at: None },
                Answer::Missing { at: Some(0) },
                lost(),
            ],
            failed("taking over instances/{id}"),
        ),
    ];
    for (answers, want) in cases {
        let steps = step_by_step(&facts, answers.clone());
        assert_eq!(steps.last(), Some(&want), "{answers:?}");
    }
}

#[test]
fn the_job_root_and_the_config_follow_what_the_mirror_holds() {
    let ours = |f: Fake| Fake {
        our_yaml: Some("ours".into()),
        ..f
    };
    let other_root = || Fake::registered_before().with(JobNode::Root, "com.example.Java");
    let cases: Vec<(&str, Fake, bool, RegisterStep)> = vec![
        (
            "a root of another type nobody runs is taken over",
            other_root(),
            false,
            direct(vec![Op::set("/orders", "SCRIPT")]),
        ),
        (
            "a root of another type that runs is refused",
            Fake {
                instances: true,
                ..other_root()
            },
            false,
            RegisterStep::Ended(Err(Failure::JobTypeConflict {
                running: "com.example.Java".into(),
            })),
        ),
        (
            "overwrite sets our config",
            ours(Fake::registered_before().with(JobNode::Instance(me()), "")),
            true,
            direct(vec![Op::set("/orders/config", "ours")]),
        ),
    ];
    for (what, facts, overwrite, want) in cases {
        let mut r = register(overwrite);
        let first = r.start(&facts);
        // Overwrite alone keeps the one write: the instance node sends it step by step.
        assert_eq!(first, want, "{what}");
    }
    // After the root, the config is written, and every answer picks a branch.
    let facts = ours(Fake::default().with(JobNode::Root, "com.example.Java"));
    let cases: Vec<(Answer, Option<RegisterStep>)> = vec![
        (Answer::Done, None),
        (Answer::Exists { at: None }, None),
        (lost(), Some(failed("writing the job root"))),
    ];
    for (answer, want) in cases {
        let mut r = register(false);
        r.start(&facts);
        let next = r.written(answer.clone(), &facts);
        match want {
            Some(want) => assert_eq!(next, want, "{answer:?}"),
            None => assert_eq!(
                next,
                direct(vec![Op::create(
                    "/orders/config",
                    "ours",
                    CreateMode::Persistent
                )]),
                "{answer:?}"
            ),
        }
    }
    // The config's answers: a config there meanwhile is another instance's (read as a change).
    let cases: Vec<(Answer, Option<Option<&[u8]>>)> = vec![
        (Answer::Done, Some(Some(b"ours"))),
        (Answer::Exists { at: None }, Some(None)),
        (lost(), None),
    ];
    for (answer, yaml) in cases {
        let mut r = register(false);
        r.start(&facts);
        r.written(Answer::Done, &facts);
        let next = r.written(answer.clone(), &facts);
        match yaml {
            None => assert_eq!(next, failed("writing config")),
            Some(yaml) => {
                assert!(matches!(next, RegisterStep::EnsurePaths(_)), "{answer:?}");
                let server = r.written(Answer::Done, &facts);
                assert!(matches!(server, RegisterStep::Write(_, WriteMode::Direct)));
                let next = r.written(Answer::Done, &facts);
                let done = r.written(Answer::Done, &facts);
                assert_eq!(next, direct(vec![instance_create()]));
                let done = match done {
                    RegisterStep::Write(_, WriteMode::Tolerant) => r.written(Answer::Done, &facts),
                    other => other,
                };
                assert_eq!(ended_ok(&done).yaml.as_deref(), yaml, "{answer:?}");
            }
        }
    }
}
