//! Runs the trigger hands back at their instant on a silent registry (`gated.rs`): their items
//! wait at a gate until the markers they were decided on have answered and the session is known
//! to live.

use super::*;
use crate::decide::lifecycle::UNANSWERED_BOUND;

/// The prepare and the arm of `t(0)`: run 1 is launched for the instant on unanswered markers.
fn taken_ahead() -> Vec<Input> {
    vec![
        Input::Prepare { scheduled: t(0) },
        Input::Arm {
            scheduled: t(0),
            early: true,
        },
    ]
}

fn handed_back() -> Input {
    Input::HeldBack { run_id: 1 }
}

/// `taken_ahead` and then `more`.
fn then(more: Vec<Input>) -> Vec<Input> {
    taken_ahead().into_iter().chain(more).collect()
}

#[test]
fn a_run_handed_back_on_a_silent_registry_starts_only_once_its_markers_and_the_session_answer() {
    let refused = Command::Warn(
        "the running markers of items [ShardItem(0), ShardItem(1)] written ahead were refused \
         (another instance's marker is there): their run here is cancelled"
            .into(),
    );
    let both = vec![ShardItem(0), ShardItem(1)];
    let cases: Vec<(&str, Vec<Input>, Vec<Command>)> = vec![
        (
            "the fire taken ahead launched its run for the instant on unanswered markers",
            taken_ahead(),
            vec![launch(1, ExecutionSource::Normal, Some(t(0)), &[0, 1])],
        ),
        (
            "handed back while its markers wait on a silent registry: the session is checked",
            then(vec![handed_back()]),
            vec![Command::CheckSession],
        ),
        (
            "its markers answer before the check does: the gate stays shut",
            then(vec![handed_back(), written(prepared())]),
            vec![],
        ),
        (
            "the check answers after them: the gate opens",
            then(vec![
                handed_back(),
                written(prepared()),
                Input::SessionChecked { alive: true },
            ]),
            vec![Command::Go(1)],
        ),
        (
            "the check answers first: the gate waits for the markers' answer",
            then(vec![handed_back(), Input::SessionChecked { alive: true }]),
            vec![],
        ),
        (
            "then the markers answer: the gate opens",
            then(vec![
                handed_back(),
                Input::SessionChecked { alive: true },
                written(prepared()),
            ]),
            vec![Command::Go(1)],
        ),
        (
            "refused markers (the plan moved unseen) cancel the items before the gate opens",
            then(vec![handed_back(), answered(prepared(), Outcome::Stale)]),
            vec![refused, Command::Cancel(both.clone())],
        ),
        (
            "a failed check cancels every run and lets the gated one end",
            then(vec![handed_back(), Input::SessionChecked { alive: false }]),
            vec![
                Command::CancelAll,
                Command::Cancel(both.clone()),
                Command::Go(1),
            ],
        ),
        (
            "a disconnection cancels the gated run's items: nothing starts while disconnected",
            then(vec![
                handed_back(),
                Input::Session(crate::model::SessionState::Disconnected),
            ]),
            vec![Command::Cancel(both.clone()), Command::Go(1)],
        ),
        (
            "markers answered before the hand-back: it goes at once",
            then(vec![written(prepared()), handed_back()]),
            vec![Command::Go(1)],
        ),
        (
            "a run no longer under way (it ended meanwhile) is let go",
            then(vec![Input::HeldBack { run_id: 9 }]),
            vec![Command::Go(9)],
        ),
    ];
    let silent = Fake {
        now: at_ms(-150),
        silent: UNANSWERED_BOUND,
        ..fake()
    };
    for (name, inputs, expected) in cases {
        let mut m = machine(Registration::Confirmed);
        assert_eq!(last_step(&mut m, inputs, &silent), expected, "{name}");
    }
}

#[test]
fn a_run_handed_back_goes_at_once_when_the_registry_answers_again_by_then() {
    let mut m = machine(Registration::Confirmed);
    let early = Fake {
        now: at_ms(-150),
        ..fake()
    };
    for input in taken_ahead() {
        m.step(input, &early);
    }
    // The trigger saw the silence; by the time the executor hears of it, answers flow again.
    assert_eq!(m.step(handed_back(), &fake()), vec![Command::Go(1)]);
}
