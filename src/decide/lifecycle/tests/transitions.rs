//! The ordinary transitions: drain, trigger, write retries, failover runs, prepared markers,
//! the trigger node, the job's deletion, a parked fire, the start write's guard.

use super::*;

/// A machine with run 1 of items 0 and 1 in flight.
fn running_machine(f: &Fake) -> JobMachine {
    let mut m = machine(Registration::Confirmed);
    m.step(Input::Fire { scheduled: t(0) }, f);
    m.step(written(Purpose::Start), f);
    m
}

/// A fire whose start write is under way, a drain, then `then`.
fn drained_mid_start(then: Vec<Input>) -> Vec<Input> {
    [vec![Input::Fire { scheduled: t(0) }, Input::Drain], then].concat()
}

fn run_ended(outcome: Outcome) -> Input {
    Input::RunEnded { run_id: 1, outcome }
}

#[test]
fn the_other_transitions_give_the_commands_the_table_says() {
    let f = fake();
    let ends = vec![
        Op::delete("/orders/sharding/0/running"),
        Op::delete("/orders/sharding/1/running"),
    ];
    let failover_ends: Vec<Op> = ["running", "failover", "failovering"]
        .iter()
        .map(|n| Op::delete(format!("/orders/sharding/1/{n}")))
        .collect();
    type Case = (&'static str, bool, Vec<Input>, Vec<Command>);
    let cases: Vec<Case> = vec![
        (
            "a drain with nothing running answers at once",
            false,
            vec![Input::Drain],
            vec![Command::Unschedule, Command::DrainDone],
        ),
        (
            "a drain answers when the last run ends",
            true,
            vec![
                Input::Drain,
                Input::RunFinished {
                    run_id: 1,
                    failed: vec![],
                },
                run_ended(Outcome::Done),
            ],
            vec![Command::DrainDone],
        ),
        (
            "a drain heard while a fire's start write is under way waits for its answer",
            false,
            drained_mid_start(vec![]),
            vec![Command::Unschedule],
        ),
        (
            "that fire, once written, runs: the drain waits for it",
            false,
            drained_mid_start(vec![written(Purpose::Start)]),
            vec![launch(1, ExecutionSource::Normal, Some(t(0)), &[0, 1])],
        ),
        (
            "and the drain answers when that run ends",
            false,
            drained_mid_start(vec![written(Purpose::Start), finished(1, &[]), run_done(1)]),
            vec![Command::DrainDone],
        ),
        (
            "a drain whose fire's start write failed answers then: nothing started",
            false,
            drained_mid_start(vec![answered(
                Purpose::Start,
                Outcome::Failed("connection loss".into()),
            )]),
            vec![
                Command::Warn("fire skipped: writing running markers failed".into()),
                Command::DrainDone,
            ],
        ),
        (
            "a trigger during a run is queued and runs after it",
            true,
            vec![
                Input::Trigger,
                Input::RunFinished {
                    run_id: 1,
                    failed: vec![],
                },
                run_ended(Outcome::Done),
            ],
            vec![start(begins(&[0, 1]))],
        ),
        (
            "a failed end write is retried op by op, then the run is over",
            true,
            vec![
                Input::RunFinished {
                    run_id: 1,
                    failed: vec![],
                },
                run_ended(Outcome::Failed("connection loss".into())),
            ],
            vec![Command::Write {
                ops: ends.clone(),
                mode: WriteMode::Tolerant,
                then: Purpose::EndRetry(1),
            }],
        ),
        (
            "a start write that finds the mirror behind is retried: its guards and markers in \
             one multi-op, so that a marker another instance wrote meanwhile stops it",
            false,
            vec![
                Input::Fire { scheduled: t(0) },
                answered(Purpose::Start, Outcome::Conflict),
            ],
            vec![Command::Write {
                ops: begins(&[0, 1]),
                mode: WriteMode::Direct,
                then: Purpose::StartTolerant,
            }],
        ),
        (
            "the retried start finds a marker there (a failover claim): nothing starts",
            false,
            vec![
                Input::Fire { scheduled: t(0) },
                answered(Purpose::Start, Outcome::Conflict),
                answered(Purpose::StartTolerant, Outcome::Conflict),
            ],
            vec![Command::Warn(
                "fire skipped: writing running markers failed".into(),
            )],
        ),
        (
            "a start write refused because a newer plan was committed starts nothing here",
            false,
            vec![
                Input::Fire { scheduled: t(0) },
                answered(Purpose::Start, Outcome::Stale),
            ],
            vec![skip(
                SkipReason::PlanChanged,
                0,
                Some(MissReason::CannotStart),
                true,
            )],
        ),
        (
            "claimed failover items run at once and end with the taker's three records",
            false,
            vec![Input::FailoverClaimed(vec![ShardItem(1)])],
            vec![launch(1, ExecutionSource::Failover, None, &[1])],
        ),
        (
            "a failover run ends by deleting the taker's records",
            false,
            vec![
                Input::FailoverClaimed(vec![ShardItem(1)]),
                Input::RunFinished {
                    run_id: 1,
                    failed: vec![],
                },
            ],
            vec![submit_end(1, failover_ends)],
        ),
        (
            "markers written ahead make the fire need no write",
            false,
            vec![
                Input::Prepare { scheduled: t(0) },
                written(Purpose::Prepare(vec![ShardItem(0), ShardItem(1)])),
                Input::Fire { scheduled: t(0) },
            ],
            vec![launch(1, ExecutionSource::Normal, Some(t(0)), &[0, 1])],
        ),
        (
            "the trigger node for this instance is taken and the items run",
            false,
            vec![Input::Event {
                node: JobNode::TriggerInstance(me()),
                kind: NodeEventKind::Created,
            }],
            vec![
                Command::Write {
                    ops: vec![Op::delete(format!("/orders/trigger/{}", me()))],
                    mode: WriteMode::Direct,
                    then: Purpose::TakeTrigger,
                },
                start(begins(&[0, 1])),
            ],
        ),
    ];
    for (name, with_run, inputs, expected) in cases {
        let mut m = if with_run {
            running_machine(&f)
        } else {
            machine(Registration::Confirmed)
        };
        assert_eq!(last_step(&mut m, inputs, &f), expected, "{name}");
    }
}

#[test]
fn a_parked_fire_gives_back_the_markers_written_ahead_for_the_leader_waits_on_them() {
    let mut m = machine(Registration::Confirmed);
    let f = fake();
    m.step(Input::Prepare { scheduled: t(0) }, &f);
    m.step(
        written(Purpose::Prepare(vec![ShardItem(0), ShardItem(1)])),
        &f,
    );
    let mut f = fake();
    f.view.sharding_necessary = true;
    let out = m.step(Input::Fire { scheduled: t(0) }, &f);
    assert_eq!(
        out,
        vec![
            Command::Write {
                ops: vec![
                    Op::delete("/orders/sharding/0/running"),
                    Op::delete("/orders/sharding/1/running"),
                ],
                mode: WriteMode::Tolerant,
                then: Purpose::Release,
            },
            Command::SetResharding(true),
            Command::AskReshard,
        ]
    );
}

#[test]
fn a_fires_start_write_is_guarded_by_the_owner_node_versions_of_its_plan() {
    // The old owner's mirror has not seen the flag nor the commit: its start write checks the
    // owner nodes at the versions it planned with, so the commit (which sets them) fails it.
    let mut m = machine(Registration::Confirmed);
    let mut f = fake();
    for v in f.view.items.values_mut() {
        v.owner_version = 7;
    }
    let out = m.step(Input::Fire { scheduled: t(0) }, &f);
    let Command::Write { ops, .. } = &out[0] else {
        panic!("{out:?}")
    };
    assert_eq!(
        ops[0],
        Op::Check {
            path: "/orders/sharding/0/instance".into(),
            version: 7
        }
    );
    assert!(
        m.step(written(Purpose::Start), &f).len() == 1,
        "then it runs"
    );
}

#[test]
fn a_relist_removes_running_markers_naming_this_instance_that_no_run_here_accounts_for() {
    let clear = |items: &[u32]| Command::Write {
        ops: items
            .iter()
            .map(|i| Op::delete(format!("/orders/sharding/{i}/running")))
            .collect(),
        mode: WriteMode::Tolerant,
        then: Purpose::ClearUnknown,
    };
    let marked = |v: JobView, i: u32, who: &InstanceId| {
        with_item(v, i, |item| item.running = Some(who.to_string()))
    };
    // (case, view, machine running items 0 and 1, disconnected first, commands)
    type Case = (&'static str, JobView, bool, bool, Vec<Command>);
    let cases: Vec<Case> = vec![
        (
            "a start applied but answered as failed: its marker names us, nothing runs",
            marked(two_items(), 1, &me()),
            false,
            false,
            vec![clear(&[1])],
        ),
        (
            "both markers are our own run's",
            marked(marked(two_items(), 0, &me()), 1, &me()),
            true,
            false,
            vec![],
        ),
        (
            "another instance's marker is its own business",
            marked(two_items(), 1, &other()),
            false,
            false,
            vec![],
        ),
        (
            "a failover claim's marker may come before the claim",
            with_item(marked(two_items(), 1, &me()), 1, |i| {
                i.failovering = Some(me())
            }),
            false,
            false,
            vec![],
        ),
        (
            "an item we no longer own: the reshard waits for it, so it goes too",
            marked(owned(two_items(), &[(1, &other())]), 1, &me()),
            false,
            false,
            vec![clear(&[1])],
        ),
        (
            "disconnected: nothing is written",
            marked(two_items(), 1, &me()),
            false,
            true,
            vec![],
        ),
    ];
    for (name, view, running, disconnected, want) in cases {
        let f = Fake {
            view: two_items(),
            ..fake()
        };
        let mut m = if running {
            running_machine(&f)
        } else {
            machine(Registration::Confirmed)
        };
        if disconnected {
            m.step(Input::Session(SessionState::Disconnected), &f);
        }
        let f = Fake { view, ..fake() };
        let out = m.step(Input::Resynced, &f);
        assert_eq!(out, want, "{name}");
    }
}

#[test]
fn a_conflicting_start_applies_its_deletions_op_by_op_then_its_guards_and_markers_at_once() {
    // The mirror shows a marker of ours that no run accounts for: the plan replaces it.
    let f = Fake {
        view: with_item(two_items(), 1, |i| i.running = Some(me().to_string())),
        ..fake()
    };
    let mut m = machine(Registration::Confirmed);
    let fire = m.step(Input::Fire { scheduled: t(0) }, &f);
    let Some(Command::Write { ops, .. }) = fire.first() else {
        panic!("a start write: {fire:?}")
    };
    assert!(ops.contains(&Op::delete("/orders/sharding/1/running")));
    let conflict = answered(Purpose::Start, Outcome::Conflict);
    assert_eq!(
        m.step(conflict, &f),
        vec![Command::Write {
            ops: vec![Op::delete("/orders/sharding/1/running")],
            mode: WriteMode::Tolerant,
            then: Purpose::StartClear,
        }]
    );
    assert_eq!(
        m.step(written(Purpose::StartClear), &f),
        vec![Command::Write {
            ops: begins(&[0, 1]),
            mode: WriteMode::Direct,
            then: Purpose::StartTolerant,
        }]
    );
    assert_eq!(
        m.step(written(Purpose::StartTolerant), &f),
        vec![launch(1, ExecutionSource::Normal, Some(t(0)), &[0, 1])]
    );
}

#[test]
fn a_trigger_before_the_first_plan_runs_once_an_owner_appears_whatever_event_came_first() {
    let mut f = fake();
    for v in f.view.items.values_mut() {
        v.has_owner_node = false;
        v.owner = None;
    }
    let mut m = machine(Registration::Confirmed);
    let parked = m.step(Input::Trigger, &f);
    assert!(
        !parked.iter().any(|c| matches!(c, Command::Write { .. })),
        "no plan yet: the trigger waits: {parked:?}"
    );
    // The flags' deletion heard while the mirror shows no owner yet: still waiting.
    let flags_gone = Input::Event {
        node: JobNode::LeaderShardingNecessary,
        kind: NodeEventKind::Deleted,
    };
    assert_eq!(m.step(flags_gone, &f), vec![]);
    // Then the owners: the trigger runs.
    f.view = fake().view;
    let owner = Input::Event {
        node: JobNode::ShardingInstance(ShardItem(0)),
        kind: NodeEventKind::Created,
    };
    assert_eq!(
        m.step(owner, &f),
        vec![Command::SetResharding(false), start(begins(&[0, 1]))]
    );
}

#[test]
fn a_drain_waits_for_a_start_write_under_way_when_the_last_run_before_it_ends() {
    // A failover run of item 1, then a fire that runs item 0 beside it (start write under way),
    // then a drain: the failover run's end is not the drain's.
    let f = fake();
    let mut m = machine(Registration::Confirmed);
    m.step(Input::FailoverClaimed(vec![ShardItem(1)]), &f);
    let fired = m.step(Input::Fire { scheduled: t(0) }, &f);
    assert!(
        fired.iter().any(|c| matches!(
            c,
            Command::Write {
                then: Purpose::Start,
                ..
            }
        )),
        "item 0 starts with a start write: {fired:?}"
    );
    m.step(Input::Drain, &f);
    let ended = last_step(&mut m, vec![finished(1, &[]), run_done(1)], &f);
    assert!(!ended.contains(&Command::DrainDone), "{ended:?}");
    let started = m.step(written(Purpose::Start), &f);
    assert!(
        started.iter().any(|c| matches!(c, Command::Launch { .. })),
        "{started:?}"
    );
    assert!(!started.contains(&Command::DrainDone), "{started:?}");
    let done = last_step(&mut m, vec![finished(2, &[]), run_done(2)], &f);
    assert_eq!(done, vec![Command::DrainDone]);
}
