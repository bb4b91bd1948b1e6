//! Fires launched ahead of their instants: decided at the prepare, confirmed by their `Fire`,
//! withdrawn before their instant by whatever could have changed the decision (and decided at
//! the `Fire` again), and left running by an input that comes after it.

use super::*;

const SECOND: Duration = Duration::from_secs(1);

/// The facts `ms` milliseconds before the instant t(0) (after it for a negative `ms`).
fn before(ms: i64) -> Fake {
    Fake {
        now: at_ms(-ms),
        ..fake()
    }
}

/// The markers of items 0 and 1 queued ahead.
fn markers_ahead() -> Command {
    Command::Write {
        ops: vec![marker(0), marker(1)],
        mode: WriteMode::Submitted,
        then: Purpose::Prepare(vec![ShardItem(0), ShardItem(1)]),
    }
}

/// Run `run_id` of `items` for the instant t(0), launched ahead to start at it.
fn ahead(run_id: u64, items: &[u32]) -> Command {
    Command::Launch {
        run_id,
        source: ExecutionSource::Normal,
        scheduled: Some(t(0)),
        items: items.iter().map(|i| ShardItem(*i)).collect(),
        attempt: 1,
        parameter: None,
        workflow: None,
        start_at: Some(t(0)),
    }
}

/// A machine of `config` whose fire at t(0) was launched ahead at its prepare, 200 ms before.
fn launched_ahead_with(config: Arc<ValidatedConfig>) -> JobMachine {
    let mut m = machine_with(Registration::Confirmed, config);
    let prepared = m.step(Input::Prepare { scheduled: t(0) }, &before(200));
    assert_eq!(prepared, vec![markers_ahead(), ahead(1, &[0, 1])]);
    m
}

fn launched_ahead() -> JobMachine {
    launched_ahead_with(config(|c| c))
}

fn fire() -> Input {
    Input::Fire { scheduled: t(0) }
}

/// The deletion of the markers written ahead, for `then`.
fn release(items: &[u32]) -> Command {
    Command::Write {
        ops: unmark(items),
        mode: WriteMode::Tolerant,
        then: Purpose::Release,
    }
}

#[test]
fn a_fire_decided_at_its_prepare_is_launched_ahead_and_its_fire_only_confirms_it() {
    let mut m = launched_ahead();
    assert_eq!(m.step(fire(), &before(0)), vec![]);
    // Its end write waits for its markers' answer, as any run's.
    assert_eq!(m.step(finished(1, &[]), &before(-5)), vec![]);
    let answer = written(Purpose::Prepare(vec![ShardItem(0), ShardItem(1)]));
    assert_eq!(
        m.step(answer, &before(-6)),
        vec![submit_end(1, unmark(&[0, 1]))]
    );
    assert_eq!(m.step(run_done(1), &before(-7)), vec![]);
    assert!(m.is_idle());
}

#[test]
fn a_run_launched_ahead_that_ended_before_its_fire_was_handled_is_not_run_again() {
    let mut m = launched_ahead();
    let f = before(-5);
    m.step(
        written(Purpose::Prepare(vec![ShardItem(0), ShardItem(1)])),
        &f,
    );
    let ended = m.step(finished(1, &[]), &f);
    assert_eq!(ended, vec![submit_end(1, unmark(&[0, 1]))]);
    assert_eq!(m.step(run_done(1), &f), vec![]);
    assert_eq!(m.step(fire(), &before(-300)), vec![]);
}

#[test]
fn a_run_launched_ahead_counts_its_timeout_from_its_instant() {
    let mut m = machine_with(Registration::Confirmed, config(|c| c.timeout(2 * SECOND)));
    let prepared = m.step(Input::Prepare { scheduled: t(0) }, &before(200));
    let timer = Command::StartTimer {
        run_id: 1,
        timer: Timer::Timeout,
        after: Duration::from_millis(2200),
    };
    assert_eq!(prepared, vec![markers_ahead(), ahead(1, &[0, 1]), timer]);
}

#[test]
fn a_fire_handled_past_the_late_bound_has_the_session_of_its_running_run_checked() {
    let mut m = launched_ahead();
    let bound = FenceBudget::for_session(Duration::from_secs(4)).late_fire_bound();
    let late = Fake {
        now: t(0) + TimeDelta::from_std(bound).unwrap() + TimeDelta::milliseconds(1),
        ..fake()
    };
    assert_eq!(m.step(fire(), &late), vec![Command::CheckSession]);
    let lost = Input::SessionChecked { alive: false };
    assert_eq!(m.step(lost, &late), vec![Command::CancelAll]);
}

/// A table row: what happens 100 ms before the instant, the facts it and the fire see, what it
/// answers, and what the fire at the instant answers then (`None`: no fire comes).
type Case = (
    &'static str,
    Input,
    Fake,
    Vec<Command>,
    Option<Vec<Command>>,
);

#[test]
fn whatever_could_change_the_fires_decision_withdraws_the_run_launched_ahead() {
    let withdraw = Command::Withdraw(1);
    let params = config(|c| c.item_parameters("0=a,1=b"));
    let cron = config(|c| c.cron("0/7 * * * * ?"));
    let moved = Fake {
        view: committed(owned(
            view(&[&me(), &other()], Some(&me())),
            &[(0, &me()), (1, &other())],
        )),
        ..before(100)
    };
    let item_off = Fake {
        view: with_item(two_items(), 0, |i| i.disabled = true),
        ..before(100)
    };
    let server_off = Fake {
        view: disabled(two_items(), "10.0.0.1"),
        ..before(100)
    };
    let mut resharding = two_items();
    resharding.sharding_necessary = true;
    let resharding = Fake {
        view: resharding,
        ..before(100)
    };
    let event = |node: JobNode, kind: NodeEventKind| Input::Event { node, kind };
    let leave = |mut ops: Vec<Op>| {
        ops.extend([
            Op::delete(format!("/orders/instances/{}", me())),
            Op::delete("/orders/leader/election/instance"),
        ]);
        vec![
            withdraw.clone(),
            Command::Unschedule,
            Command::Write {
                ops,
                mode: WriteMode::Tolerant,
                then: Purpose::Leave,
            },
            Command::Stop,
        ]
    };
    let lost = || {
        Some(vec![skip(
            SkipReason::Disconnected,
            0,
            Some(MissReason::CannotStart),
            true,
        )])
    };
    let cases: Vec<Case> = vec![
        (
            "a config change: the fire runs the marked items under the new config",
            Input::Config(params.clone()),
            before(100),
            vec![
                withdraw.clone(),
                Command::ConfigApplied(params),
                Command::Evaluate,
            ],
            Some(vec![launch(
                2,
                ExecutionSource::Normal,
                Some(t(0)),
                &[0, 1],
            )]),
        ),
        (
            "a new cron: the markers go and the job is scheduled again",
            Input::Config(cron.clone()),
            before(100),
            vec![
                withdraw.clone(),
                release(&[0, 1]),
                Command::ConfigApplied(cron),
                Command::Schedule,
                Command::Evaluate,
            ],
            None,
        ),
        (
            "a new plan moving an item away: the fire runs the other and deletes its marker",
            event(
                JobNode::ShardingInstance(ShardItem(1)),
                NodeEventKind::DataChanged,
            ),
            moved,
            vec![withdraw.clone()],
            Some(vec![start(unmark(&[1]))]),
        ),
        (
            "an item disabled: the fire runs the other and deletes its marker",
            event(
                JobNode::ShardingDisabled(ShardItem(0)),
                NodeEventKind::Created,
            ),
            item_off,
            vec![withdraw.clone()],
            Some(vec![start(unmark(&[0]))]),
        ),
        (
            "this server disabled: the fire releases the markers",
            event(
                JobNode::Server("10.0.0.1".into()),
                NodeEventKind::DataChanged,
            ),
            server_off,
            vec![withdraw.clone()],
            Some(vec![release(&[0, 1])]),
        ),
        (
            "a reshard asked for: the fire parks behind it",
            event(JobNode::LeaderShardingNecessary, NodeEventKind::Created),
            resharding,
            vec![withdraw.clone(), Command::SetResharding(true)],
            Some(vec![
                release(&[0, 1]),
                Command::SetResharding(true),
                Command::AskReshard,
            ]),
        ),
        (
            "a drain: the markers go and the drain is done at once",
            Input::Drain,
            before(100),
            vec![
                withdraw.clone(),
                release(&[0, 1]),
                Command::Unschedule,
                Command::DrainDone,
            ],
            None,
        ),
        (
            "the job removed here: it leaves with the markers",
            Input::Remove,
            before(100),
            leave(unmark(&[0, 1])),
            None,
        ),
        (
            "the job removed from the registry: it leaves with the markers",
            event(JobNode::Root, NodeEventKind::Deleted),
            before(100),
            {
                let mut c = leave(unmark(&[0, 1]));
                c.insert(
                    1,
                    Command::Warn("job removed from the registry: stopping it here".into()),
                );
                c
            },
            None,
        ),
        (
            "the link lost: the fire is skipped",
            Input::Session(SessionState::Disconnected),
            before(100),
            vec![withdraw.clone()],
            lost(),
        ),
        (
            "the session expired: the fire is skipped",
            Input::Session(SessionState::Expired),
            before(100),
            vec![withdraw.clone()],
            lost(),
        ),
        (
            "a pause past the late bound: the fire waits for the session check",
            Input::Paused(10 * SECOND),
            before(100),
            vec![withdraw.clone(), Command::CheckSession],
            Some(vec![Command::CheckSession]),
        ),
        (
            "a session check unanswered: the fire waits for the next check",
            Input::SessionChecked { alive: false },
            before(100),
            vec![withdraw.clone()],
            Some(vec![Command::CheckSession]),
        ),
        (
            "a manual trigger: it runs the items now and the fire finds them running",
            Input::Trigger,
            before(100),
            vec![
                withdraw.clone(),
                launch(2, ExecutionSource::Manual, None, &[0, 1]),
            ],
            Some(vec![
                skip(SkipReason::StillRunning, 2, None, true),
                start(vec![
                    Op::create("/orders/sharding/0/misfire", "", CreateMode::Persistent),
                    Op::create("/orders/sharding/1/misfire", "", CreateMode::Persistent),
                ]),
            ]),
        ),
        (
            "a re-list: the fire decides on what it shows",
            Input::Resynced,
            before(100),
            vec![withdraw.clone()],
            Some(vec![launch(
                2,
                ExecutionSource::Normal,
                Some(t(0)),
                &[0, 1],
            )]),
        ),
        (
            "refused markers: the fire writes them again, guarded",
            answered(
                Purpose::Prepare(vec![ShardItem(0), ShardItem(1)]),
                Outcome::Conflict,
            ),
            before(100),
            vec![withdraw.clone()],
            Some(vec![start(begins(&[0, 1]))]),
        ),
    ];
    for (name, input, f, expected, then) in cases {
        let mut m = launched_ahead();
        assert_eq!(m.step(input, &f), expected, "{name}");
        if let Some(then) = then {
            let at = Fake { now: t(0), ..f };
            assert_eq!(m.step(fire(), &at), then, "{name}: the fire");
        }
    }
}

#[test]
fn an_input_after_the_instant_finds_the_run_launched_ahead_running() {
    let params = config(|c| c.item_parameters("0=a,1=b"));
    let cases: Vec<(&str, Input, Vec<Command>)> = vec![
        (
            "a config change",
            Input::Config(params.clone()),
            vec![Command::ConfigApplied(params), Command::Evaluate],
        ),
        (
            "the link lost",
            Input::Session(SessionState::Disconnected),
            vec![],
        ),
        ("a drain", Input::Drain, vec![Command::Unschedule]),
    ];
    for (name, input, expected) in cases {
        let mut m = launched_ahead();
        assert_eq!(m.step(input, &before(-1)), expected, "{name}");
        assert_eq!(m.step(fire(), &before(-2)), vec![], "{name}: the fire");
    }
}

#[test]
fn inputs_that_change_nothing_leave_the_run_launched_ahead_alone() {
    let ours = Input::Event {
        node: JobNode::ShardingRunning(ShardItem(0)),
        kind: NodeEventKind::Created,
    };
    let cases: Vec<(&str, Input, Vec<Command>)> = vec![
        ("its own marker seen", ours, vec![]),
        (
            "the same config read again",
            Input::Config(config(|c| c)),
            vec![Command::Evaluate],
        ),
        (
            "its markers written",
            written(Purpose::Prepare(vec![ShardItem(0), ShardItem(1)])),
            vec![],
        ),
        (
            "a short pause",
            Input::Paused(Duration::from_millis(50)),
            vec![],
        ),
    ];
    for (name, input, expected) in cases {
        let mut m = launched_ahead();
        assert_eq!(m.step(input, &before(100)), expected, "{name}");
        assert_eq!(m.step(fire(), &before(0)), vec![], "{name}: the fire");
    }
}

#[test]
fn a_withdrawn_runs_report_is_ignored() {
    let mut m = launched_ahead();
    m.step(
        Input::Config(config(|c| c.item_parameters("0=a"))),
        &before(100),
    );
    assert_eq!(m.step(finished(1, &[0, 1]), &before(99)), vec![]);
    assert_eq!(
        m.step(fire(), &before(0)),
        vec![launch(2, ExecutionSource::Normal, Some(t(0)), &[0, 1])]
    );
}

#[test]
fn a_fire_that_cannot_be_decided_at_its_prepare_is_decided_at_its_instant() {
    let flagged = Fake {
        view: with_item(two_items(), 1, |i| i.misfire = true),
        ..before(200)
    };
    let marked_0 = Command::Write {
        ops: vec![marker(0)],
        mode: WriteMode::Submitted,
        then: Purpose::Prepare(vec![ShardItem(0)]),
    };
    let window = config(|c| c.catchup_window(Duration::from_secs(60)));
    type Row = (&'static str, JobMachine, Fake, Vec<Command>);
    let mut once = machine(Registration::Confirmed);
    once.set_launch_ahead(false);
    let mut suspect = machine(Registration::Confirmed);
    suspect.step(Input::Paused(10 * SECOND), &before(300));
    let mut running = machine(Registration::Confirmed);
    started(&mut running, t(-1), &before(1200));
    let rows: Vec<Row> = vec![
        (
            "the prepare handled at the instant",
            machine(Registration::Confirmed),
            before(0),
            vec![markers_ahead()],
        ),
        (
            "a job whose runs take part in distribute-once rounds",
            once,
            before(200),
            vec![markers_ahead()],
        ),
        (
            "an item whose misfire flag the fire deletes",
            machine(Registration::Confirmed),
            flagged,
            vec![marked_0],
        ),
        (
            "a job with a catch-up window",
            machine_with(Registration::Confirmed, window),
            before(200),
            vec![markers_ahead()],
        ),
        (
            "a link waiting for its session check",
            suspect,
            before(200),
            vec![],
        ),
        (
            "the previous run still running",
            running,
            before(200),
            vec![],
        ),
    ];
    for (name, mut m, f, expected) in rows {
        let prepared = m.step(Input::Prepare { scheduled: t(0) }, &f);
        assert_eq!(prepared, expected, "{name}");
        assert!(
            !m.step(fire(), &before(0)).is_empty(),
            "{name}: the fire decides"
        );
    }
}
