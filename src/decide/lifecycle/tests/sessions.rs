//! Fault cases of issue 17 about the registry session and the timing of fires: fires queued
//! behind a registry freeze, late fires and the session check, a resumed or disconnected node,
//! and a job that cannot keep up.

use super::*;

#[test]
fn fires_queued_behind_a_registry_freeze_collapse_and_a_missed_fire_is_made_up_once() {
    let mut m = machine(Registration::Confirmed);
    let mut f = fake();
    assert_eq!(
        m.step(Input::Fire { scheduled: t(0) }, &f),
        vec![start(begins(&[0, 1]))]
    );
    // The registry froze for 3 s: the start write answers late, fires queued meanwhile.
    f.now = at_ms(3_050);
    m.step(written(Purpose::Start), &f);
    let coalesced = |warn| skip(SkipReason::Coalesced, 0, Some(MissReason::Coalesced), warn);
    f.now = at_ms(3_060);
    assert_eq!(
        m.step(Input::Fire { scheduled: t(1) }, &f),
        vec![coalesced(true)]
    );
    assert_eq!(
        m.step(Input::Fire { scheduled: t(2) }, &f),
        vec![coalesced(false)]
    );
    assert_eq!(
        m.step(Input::Fire { scheduled: t(3) }, &f),
        vec![coalesced(false)]
    );
    // A fire on time while the items still run: flagged misfire once.
    f.now = at_ms(4_001);
    let misfires = vec![
        Op::create("/orders/sharding/0/misfire", "", CreateMode::Persistent),
        Op::create("/orders/sharding/1/misfire", "", CreateMode::Persistent),
    ];
    let out = m.step(Input::Fire { scheduled: t(4) }, &f);
    assert_eq!(out[1], start(misfires));
    let items = vec![ShardItem(0), ShardItem(1)];
    assert_eq!(
        m.step(written(Purpose::Start), &f),
        vec![Command::Misfired(items)]
    );
    // The run ends: exactly one catch-up.
    m.step(
        Input::RunFinished {
            run_id: 1,
            failed: vec![],
        },
        &f,
    );
    let ended = run_done(1);
    let out = m.step(ended, &f);
    assert!(
        matches!(
            &out[..],
            [Command::Write {
                then: Purpose::Start,
                ..
            }]
        ),
        "{out:?}"
    );
    assert_eq!(
        m.step(written(Purpose::Start), &f),
        vec![launch(2, ExecutionSource::Misfire, None, &[0, 1])]
    );
}

#[test]
fn a_late_fire_waits_for_a_session_check_and_runs_only_if_the_session_lives() {
    let cases = [
        (true, "the session lives: the fire runs"),
        (false, "the session is gone: the fire is skipped"),
    ];
    for (alive, name) in cases {
        let mut m = machine(Registration::Confirmed);
        let f = Fake {
            now: at_ms(2_000),
            ..fake()
        };
        assert_eq!(
            m.step(Input::Fire { scheduled: t(0) }, &f),
            vec![Command::CheckSession],
            "{name}"
        );
        assert_eq!(m.link(), Link::Suspect);
        let out = m.step(Input::SessionChecked { alive }, &f);
        let expected = if alive {
            vec![start(begins(&[0, 1]))]
        } else {
            vec![skip(
                SkipReason::SessionLost,
                0,
                Some(MissReason::CannotStart),
                true,
            )]
        };
        assert_eq!(out, expected, "{name}");
    }
}

#[test]
fn a_session_check_whose_answer_never_comes_is_asked_again_by_a_later_fire() {
    let mut m = machine(Registration::Confirmed);
    let now = |ms| Fake {
        now: at_ms(ms),
        ..fake()
    };
    let held = |out: &[Command]| {
        out.iter()
            .filter(|c| {
                matches!(
                    c,
                    Command::Skipped {
                        reason: SkipReason::AlreadyHeld,
                        ..
                    }
                )
            })
            .count()
    };
    // A late fire is held and asks; its answer is lost.
    let out = m.step(Input::Fire { scheduled: t(0) }, &now(2_000));
    assert_eq!(out, vec![Command::CheckSession]);
    // Fires while the check may still answer join the held one: no second check.
    let out = m.step(Input::Fire { scheduled: t(10) }, &now(10_000));
    assert_eq!((held(&out), out.len()), (1, 1), "{out:?}");
    // Past the bound the latest fire takes the held one's place and asks again.
    let lost = 2_000 + SESSION_CHECK_LOST_AFTER.as_millis() as i64;
    let out = m.step(
        Input::Fire {
            scheduled: at_ms(lost),
        },
        &now(lost),
    );
    assert_eq!(held(&out), 1, "{out:?}");
    assert!(out.iter().any(|c| matches!(c, Command::Warn(_))), "{out:?}");
    assert_eq!(out.last(), Some(&Command::CheckSession), "{out:?}");
    // Its answer runs that fire.
    let out = m.step(Input::SessionChecked { alive: true }, &now(lost + 100));
    assert_eq!(out, vec![start(begins(&[0, 1]))]);
    assert_eq!(m.link(), Link::Connected);
}

#[test]
fn a_resumed_node_cancels_what_it_may_have_lost_before_anything_else() {
    // Budget for a 4 s session: cancel after 1.8 s, check after 0.6 s.
    let cases: [(u64, Vec<Command>); 3] = [
        (100, vec![]),
        (700, vec![Command::CheckSession]),
        (3_000, vec![Command::CancelAll, Command::CheckSession]),
    ];
    for (pause_ms, expected) in cases {
        let (mut m, f) = (machine(Registration::Confirmed), fake());
        started(&mut m, t(0), &f);
        let out = m.step(Input::Paused(Duration::from_millis(pause_ms)), &f);
        assert_eq!(out, expected, "paused {pause_ms} ms");
    }
}

#[test]
fn a_disconnected_node_starts_nothing_and_cancels_its_items_at_the_fencing_deadline() {
    let (mut m, f) = (machine(Registration::Confirmed), fake());
    started(&mut m, t(0), &f);
    assert_eq!(
        m.step(Input::Session(SessionState::Disconnected), &f),
        vec![]
    );
    let f = Fake {
        now: t(1),
        ..fake()
    };
    assert_eq!(
        m.step(Input::Fire { scheduled: t(1) }, &f),
        vec![skip(
            SkipReason::Disconnected,
            0,
            Some(MissReason::CannotStart),
            true
        )]
    );
    assert_eq!(m.step(Input::Prepare { scheduled: t(2) }, &f), vec![]);
    assert_eq!(m.step(Input::Fenced, &f), vec![Command::CancelAll]);
    assert!(!m.is_idle());
    m.step(Input::Session(SessionState::Connected), &f);
    assert_eq!(m.link(), Link::Connected);
}

#[test]
fn a_job_that_cannot_keep_up_warns_once_per_streak_and_counts_every_skip() {
    let (mut m, mut f) = (machine(Registration::Confirmed), fake());
    started(&mut m, t(0), &f);
    let mut warns = Vec::new();
    for s in 1..4 {
        f.now = t(s);
        let out = m.step(Input::Fire { scheduled: t(s) }, &f);
        for c in out {
            if let Command::Skipped {
                reason,
                items,
                missed,
                warn,
            } = c
            {
                assert_eq!((reason, items, missed), (SkipReason::StillRunning, 2, None));
                warns.push(warn);
            }
        }
    }
    assert_eq!(warns, vec![true, false, false]);
}
