//! Markers written ahead and not awaited: the fire runs its items before their answer, and the
//! answer (done, refused, failed) decides what follows.

use super::*;

#[test]
fn markers_written_ahead_and_their_answer_give_the_commands_the_table_says() {
    let f = fake();
    let released = Command::Write {
        ops: unmark(&[0, 1]),
        mode: WriteMode::Tolerant,
        then: Purpose::ClearUnknown,
    };
    let refused = Command::Warn(
        "the running markers of items [ShardItem(0), ShardItem(1)] written ahead were refused \
         (another instance's marker is there): their run here is cancelled"
            .into(),
    );
    let failed = Command::Warn(
        "writing the running markers of items [ShardItem(0), ShardItem(1)] ahead failed \
         (connection lost): their run here goes on without them"
            .into(),
    );
    let cases: Vec<(&str, Vec<Input>, Vec<Command>)> = vec![
        (
            "a prepare queues its markers and waits for nothing",
            vec![Input::Prepare { scheduled: t(0) }],
            vec![Command::Write {
                ops: vec![marker(0), marker(1)],
                mode: WriteMode::Submitted,
                then: prepared(),
            }],
        ),
        (
            "the fire runs the items whose markers have not answered yet, with no write",
            vec![
                Input::Prepare { scheduled: t(0) },
                Input::Fire { scheduled: t(0) },
            ],
            vec![launch(1, ExecutionSource::Normal, Some(t(0)), &[0, 1])],
        ),
        (
            "a run that ends before its markers' answer holds its end write",
            vec![
                Input::Prepare { scheduled: t(0) },
                Input::Fire { scheduled: t(0) },
                finished(1, &[]),
            ],
            vec![],
        ),
        (
            "the markers' answer lets the held end write go",
            vec![
                Input::Prepare { scheduled: t(0) },
                Input::Fire { scheduled: t(0) },
                finished(1, &[]),
                written(prepared()),
            ],
            vec![submit_end(1, unmark(&[0, 1]))],
        ),
        (
            "a run ending after its markers' answer writes its end at once",
            vec![
                Input::Prepare { scheduled: t(0) },
                Input::Fire { scheduled: t(0) },
                written(prepared()),
                finished(1, &[]),
            ],
            vec![submit_end(1, unmark(&[0, 1]))],
        ),
        (
            "refused markers cancel the run of their items here",
            vec![
                Input::Prepare { scheduled: t(0) },
                Input::Fire { scheduled: t(0) },
                answered(prepared(), Outcome::Conflict),
            ],
            vec![
                refused.clone(),
                Command::Cancel(vec![ShardItem(0), ShardItem(1)]),
            ],
        ),
        (
            "a run whose markers were refused ends without deleting the other instance's",
            vec![
                Input::Prepare { scheduled: t(0) },
                Input::Fire { scheduled: t(0) },
                finished(1, &[]),
                answered(prepared(), Outcome::Conflict),
            ],
            vec![refused, Command::Cancel(vec![ShardItem(0), ShardItem(1)])],
        ),
        (
            "a failed marker write lets the run go on and its held end write follows",
            vec![
                Input::Prepare { scheduled: t(0) },
                Input::Fire { scheduled: t(0) },
                finished(1, &[]),
                answered(prepared(), Outcome::Failed("connection lost".into())),
            ],
            vec![failed, submit_end(1, unmark(&[0, 1]))],
        ),
        (
            "refused markers of items no run took are only forgotten",
            vec![
                Input::Prepare { scheduled: t(0) },
                answered(prepared(), Outcome::Conflict),
            ],
            vec![],
        ),
        (
            "markers answered after their items were released are deleted again",
            vec![
                Input::Prepare { scheduled: t(0) },
                Input::Drain,
                written(Purpose::Release),
                written(prepared()),
            ],
            vec![released],
        ),
    ];
    for (name, inputs, expected) in cases {
        let mut m = machine(Registration::Confirmed);
        assert_eq!(last_step(&mut m, inputs, &f), expected, "{name}");
    }
}

#[test]
fn refused_markers_leave_the_items_to_be_decided_at_the_next_fire_with_a_start_write() {
    let mut m = machine(Registration::Confirmed);
    let f = fake();
    m.step(Input::Prepare { scheduled: t(0) }, &f);
    m.step(answered(prepared(), Outcome::Conflict), &f);
    assert_eq!(
        m.step(Input::Fire { scheduled: t(0) }, &f),
        vec![start(begins(&[0, 1]))]
    );
}

#[test]
fn a_marker_on_its_way_runs_even_while_the_mirror_shows_one_whose_data_is_unread() {
    // The mirror may show the marker's creation before its data (ours, read later): only the
    // write's answer tells whose it is.
    let mut m = machine(Registration::Confirmed);
    m.step(Input::Prepare { scheduled: t(0) }, &fake());
    let f = Fake {
        view: with_item(two_items(), 0, |i| i.running = Some(String::new())),
        ..fake()
    };
    assert_eq!(
        m.step(Input::Fire { scheduled: t(0) }, &f),
        vec![launch(1, ExecutionSource::Normal, Some(t(0)), &[0, 1])]
    );
}

#[test]
fn a_fire_on_unanswered_markers_checks_the_session_first_when_the_registry_went_silent() {
    use crate::decide::lifecycle::UNANSWERED_BOUND;
    let mut m = machine(Registration::Confirmed);
    m.step(Input::Prepare { scheduled: t(0) }, &fake());
    // An ensemble paused just after the prepare went: no answer to anything since.
    let stalled = Fake {
        silent: UNANSWERED_BOUND,
        ..fake()
    };
    assert_eq!(
        m.step(Input::Fire { scheduled: t(0) }, &stalled),
        vec![Command::CheckSession],
        "the items are not run on markers that may be refused"
    );
    // The registry answers again: the markers were refused (the plan moved unseen), then the
    // session check answers; the held fire runs what the plan gives it, with a start write.
    let answered_again = fake();
    m.step(answered(prepared(), Outcome::Stale), &answered_again);
    assert_eq!(
        m.step(Input::SessionChecked { alive: true }, &answered_again),
        vec![start(begins(&[0, 1]))]
    );
}

#[test]
fn a_busy_registry_or_answered_markers_do_not_hold_the_fire() {
    let quick = Fake {
        silent: Duration::from_millis(20),
        ..fake()
    };
    let mut m = machine(Registration::Confirmed);
    m.step(Input::Prepare { scheduled: t(0) }, &quick);
    assert_eq!(
        m.step(Input::Fire { scheduled: t(0) }, &quick),
        vec![launch(1, ExecutionSource::Normal, Some(t(0)), &[0, 1])],
        "answers keep coming: the markers are trusted"
    );
    let silent = Fake {
        silent: Duration::from_secs(1),
        ..fake()
    };
    let mut m = machine(Registration::Confirmed);
    m.step(Input::Prepare { scheduled: t(0) }, &silent);
    m.step(written(prepared()), &silent);
    assert_eq!(
        m.step(Input::Fire { scheduled: t(0) }, &silent),
        vec![launch(1, ExecutionSource::Normal, Some(t(0)), &[0, 1])],
        "the markers stand: whatever waits now, they are ours"
    );
}

/// No item has an owner yet: the job's first plan is not committed.
fn unsharded() -> Fake {
    Fake {
        view: view(&[&me(), &other()], Some(&me())),
        ..fake()
    }
}

fn owner_written(item: u32) -> Input {
    Input::Event {
        node: JobNode::ShardingInstance(ShardItem(item)),
        kind: NodeEventKind::Created,
    }
}

fn queued_markers() -> Command {
    Command::Write {
        ops: vec![marker(0), marker(1)],
        mode: WriteMode::Submitted,
        then: prepared(),
    }
}

#[test]
fn a_plan_committed_between_the_prepare_and_the_fire_writes_the_markers_ahead_after_all() {
    let mut m = machine(Registration::Confirmed);
    assert_eq!(
        m.step(Input::Prepare { scheduled: t(0) }, &unsharded()),
        vec![]
    );
    // The owners' events: the first prepares, the second finds every item marked.
    assert_eq!(m.step(owner_written(0), &fake()), vec![queued_markers()]);
    assert_eq!(m.step(owner_written(1), &fake()), vec![]);
    assert_eq!(
        m.step(Input::Fire { scheduled: t(0) }, &fake()),
        vec![launch(1, ExecutionSource::Normal, Some(t(0)), &[0, 1])]
    );
}

#[test]
fn a_reshard_pending_at_the_prepare_prepares_again_when_its_flags_are_deleted() {
    let mut m = machine(Registration::Confirmed);
    let pending = Fake {
        view: JobView {
            sharding_necessary: true,
            ..two_items()
        },
        ..fake()
    };
    assert_eq!(m.step(Input::Prepare { scheduled: t(0) }, &pending), vec![]);
    let deleted = Input::Event {
        node: JobNode::LeaderShardingNecessary,
        kind: NodeEventKind::Deleted,
    };
    assert_eq!(m.step(deleted, &fake()), vec![queued_markers()]);
}

#[test]
fn a_plan_committed_only_after_the_fire_or_a_reschedule_writes_nothing_ahead() {
    let cases: Vec<(&str, Input)> = vec![
        (
            "the fire came (and parked)",
            Input::Fire { scheduled: t(0) },
        ),
        ("the job is draining", Input::Drain),
        (
            "the cron changed",
            Input::Config(config(|c| c.cron("0 0 * * * ?"))),
        ),
    ];
    for (name, between) in cases {
        let mut m = machine(Registration::Confirmed);
        m.step(Input::Prepare { scheduled: t(0) }, &unsharded());
        m.step(between, &unsharded());
        let after = m.step(owner_written(0), &fake());
        assert!(
            !after.iter().any(|c| matches!(
                c,
                Command::Write {
                    then: Purpose::Prepare(_),
                    ..
                }
            )),
            "{name}: {after:?}"
        );
    }
}

#[test]
fn a_job_that_does_not_monitor_executions_owes_no_prepare() {
    let mut m = machine_with(
        Registration::Confirmed,
        config(|c| c.monitor_execution(false)),
    );
    m.step(Input::Prepare { scheduled: t(0) }, &unsharded());
    assert_eq!(m.step(owner_written(0), &fake()), vec![]);
}
