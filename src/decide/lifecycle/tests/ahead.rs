//! Fires decided ahead of their instant (`ahead.rs`): an idle job fires at its arm, its run
//! launched for the instant; anything under way leaves the fire to the instant.

use super::*;

/// The facts 150 ms before `t(0)`.
fn early() -> Fake {
    Fake {
        now: at_ms(-150),
        ..fake()
    }
}

fn arm() -> Input {
    Input::Arm {
        scheduled: t(0),
        early: true,
    }
}

fn fire() -> Input {
    Input::Fire { scheduled: t(0) }
}

fn unmonitored() -> JobMachine {
    machine_with(
        Registration::Confirmed,
        config(|c| c.monitor_execution(false)),
    )
}

#[test]
fn an_armed_idle_job_fires_at_once_for_its_instant_and_the_instants_fire_changes_nothing() {
    type Case = (&'static str, JobMachine, Vec<Input>, Vec<Command>);
    let cases: Vec<Case> = vec![
        (
            "a job without markers launches the instant's run at its arm",
            unmonitored(),
            vec![arm()],
            vec![launch(1, ExecutionSource::Normal, Some(t(0)), &[0, 1])],
        ),
        (
            "a monitored job writes its markers at its arm (the launch follows their answer)",
            machine(Registration::Confirmed),
            vec![arm()],
            vec![start(begins(&[0, 1])), Command::FiredAhead(t(0))],
        ),
        (
            "the markers' answer launches the run for the instant",
            machine(Registration::Confirmed),
            vec![arm(), written(Purpose::Start)],
            vec![launch(1, ExecutionSource::Normal, Some(t(0)), &[0, 1])],
        ),
        (
            "the instant's own fire is then ignored",
            unmonitored(),
            vec![arm(), fire()],
            vec![],
        ),
        (
            "a fire of a later instant is not",
            unmonitored(),
            vec![arm(), finished(1, &[]), Input::Fire { scheduled: t(10) }],
            vec![launch(2, ExecutionSource::Normal, Some(t(10)), &[0, 1])],
        ),
    ];
    for (name, mut m, inputs, expected) in cases {
        assert_eq!(last_step(&mut m, inputs, &early()), expected, "{name}");
    }
}

#[test]
fn a_job_with_anything_under_way_or_an_arm_too_late_leaves_its_fire_to_the_instant() {
    let mut m = unmonitored();
    let f = early();
    let disconnected = Input::Session(crate::model::SessionState::Disconnected);
    assert_eq!(m.step(disconnected, &f), vec![]);
    assert_eq!(m.step(arm(), &f), vec![], "a disconnected job is not armed");
    let late = Fake {
        now: at_ms(1),
        ..fake()
    };
    let mut m = unmonitored();
    assert_eq!(m.step(arm(), &late), vec![], "an arm past its instant");
    assert_eq!(
        m.step(fire(), &late),
        vec![launch(1, ExecutionSource::Normal, Some(t(0)), &[0, 1])],
        "the instant fires it"
    );
}

#[test]
fn a_run_that_ends_before_the_instant_lets_the_wanted_fire_go_ahead() {
    let mut m = unmonitored();
    let f = early();
    let running = m.step(
        Input::Fire {
            scheduled: at_ms(-200),
        },
        &f,
    );
    assert_eq!(running.len(), 1, "{running:?}");
    assert_eq!(m.step(arm(), &f), vec![], "a run is under way");
    assert_eq!(
        m.step(finished(1, &[]), &f),
        vec![launch(2, ExecutionSource::Normal, Some(t(0)), &[0, 1])],
        "its end arms the fire"
    );
    assert_eq!(m.step(fire(), &f), vec![]);
    // Had it ended after the instant, the instant's fire would have fired it.
    let mut m = unmonitored();
    m.step(
        Input::Fire {
            scheduled: at_ms(-200),
        },
        &f,
    );
    m.step(arm(), &f);
    let after = Fake {
        now: at_ms(5),
        ..fake()
    };
    assert_eq!(m.step(finished(1, &[]), &after), vec![]);
    assert_eq!(
        m.step(fire(), &after),
        vec![launch(2, ExecutionSource::Normal, Some(t(0)), &[0, 1])]
    );
}

#[test]
fn a_timeout_decided_ahead_counts_from_the_instant() {
    let second = Duration::from_secs(1);
    let config = config(|c| c.monitor_execution(false).timeout(2 * second));
    let mut m = machine_with(Registration::Confirmed, config);
    assert_eq!(
        m.step(arm(), &early()),
        vec![
            launch(1, ExecutionSource::Normal, Some(t(0)), &[0, 1]),
            Command::StartTimer {
                run_id: 1,
                timer: Timer::Timeout,
                after: 2 * second + Duration::from_millis(150),
            },
        ]
    );
}

#[test]
fn a_job_without_a_plan_parks_at_its_instant_not_at_its_arm() {
    let mut m = unmonitored();
    let mut unplanned = early();
    for v in unplanned.view.items.values_mut() {
        v.has_owner_node = false;
    }
    assert_eq!(m.step(arm(), &unplanned), vec![], "no plan: not armed");
    assert_eq!(
        m.step(arm(), &early()),
        vec![launch(1, ExecutionSource::Normal, Some(t(0)), &[0, 1])],
        "armed again once the plan is there"
    );
}

#[test]
fn a_job_that_may_not_fire_early_fires_at_its_instant() {
    let mut m = unmonitored();
    let not_early = Input::Arm {
        scheduled: t(0),
        early: false,
    };
    assert_eq!(m.step(not_early, &early()), vec![], "not armed");
    assert_eq!(
        m.step(fire(), &fake()),
        vec![launch(1, ExecutionSource::Normal, Some(t(0)), &[0, 1])],
        "the instant's fire fires it"
    );
}

#[test]
fn a_fire_taken_ahead_runs_on_its_markers_whatever_the_sessions_silence() {
    // The check at the arm was measured and not kept: the instant checks (`tests/gated.rs`).
    let quiet = Fake {
        silent: UNANSWERED_BOUND * 10,
        ..early()
    };
    let mut m = machine(Registration::Confirmed);
    m.step(Input::Prepare { scheduled: t(0) }, &quiet);
    assert_eq!(
        m.step(arm(), &quiet),
        vec![launch(1, ExecutionSource::Normal, Some(t(0)), &[0, 1])]
    );
}
