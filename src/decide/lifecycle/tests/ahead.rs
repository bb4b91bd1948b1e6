//! Fires launched ahead of their instants: decided at the prepare, confirmed by their `Fire`,
//! left running by an input that comes after the instant, decided at the `Fire` when they cannot
//! be decided at the prepare (their withdrawal in `withdrawn.rs`).

use super::*;

const SECOND: Duration = Duration::from_secs(1);

/// The facts `ms` milliseconds before the instant t(0) (after it for a negative `ms`).
pub(super) fn before(ms: i64) -> Fake {
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

/// A machine whose fire at t(0) was launched ahead at its prepare, 200 ms before.
pub(super) fn launched_ahead() -> JobMachine {
    let mut m = machine(Registration::Confirmed);
    let prepared = m.step(Input::Prepare { scheduled: t(0) }, &before(200));
    assert_eq!(prepared, vec![markers_ahead(), ahead(1, &[0, 1])]);
    m
}

pub(super) fn fire() -> Input {
    Input::Fire { scheduled: t(0) }
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
