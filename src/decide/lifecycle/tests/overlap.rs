//! The overlap policies `buffer_all` and `allow_all`: a fire that finds the item's previous run
//! still running, and what follows when the runs end.

use std::num::NonZeroU32;

use super::*;
use crate::config::Overlap;

fn ended(run_id: u64) -> Input {
    Input::RunEnded {
        run_id,
        outcome: Outcome::Done,
    }
}

fn still_running(items: usize, warn: bool) -> Command {
    Command::Skipped {
        reason: SkipReason::StillRunning,
        items,
        missed: None,
        warn,
    }
}

fn flags(items: &[u32]) -> Vec<Op> {
    items
        .iter()
        .map(|i| {
            Op::create(
                format!("/orders/sharding/{i}/misfire"),
                "",
                CreateMode::Persistent,
            )
        })
        .collect()
}

/// A catch-up's start write: each item's guard and marker, then its misfire flag's removal when
/// it has one.
fn catch_up_start(items: &[u32], unflag: bool) -> Command {
    let mut ops = begins(items);
    if unflag {
        for i in items {
            let at = ops
                .iter()
                .position(|op| *op == marker(*i))
                .expect("a marker");
            ops.insert(at + 1, Op::delete(format!("/orders/sharding/{i}/misfire")));
        }
    }
    start(ops)
}

#[test]
fn buffer_all_owes_one_run_per_fire_up_to_its_bound_and_runs_them_one_after_another() {
    let mut f = fake();
    let buffer = Overlap::BufferAll(NonZeroU32::new(2).unwrap());
    let mut m = machine_with(Registration::Confirmed, config(|c| c.overlap(buffer)));
    started(&mut m, t(0), &f);
    type Case = (&'static str, Vec<Input>, Vec<Command>);
    let fire = |s| Input::Fire { scheduled: t(s) };
    let cases: Vec<Case> = vec![
        (
            "the first fire over the run is owed and flags the items misfire",
            vec![fire(1)],
            vec![still_running(2, true), start(flags(&[0, 1]))],
        ),
        (
            "its flags written",
            vec![written(Purpose::Start)],
            vec![Command::Misfired(vec![ShardItem(0), ShardItem(1)])],
        ),
        (
            "the second is owed too, with nothing more to write",
            vec![fire(2)],
            vec![still_running(2, false)],
        ),
        (
            "the third finds the buffer full: missed, counted with its own reason",
            vec![fire(3)],
            vec![skip(
                SkipReason::BufferFull,
                2,
                Some(MissReason::OverlapBufferFull),
                false,
            )],
        ),
        (
            "the run ends: the first catch-up starts, removing the flags",
            vec![finished(1, &[]), ended(1)],
            vec![catch_up_start(&[0, 1], true)],
        ),
        (
            "it runs",
            vec![written(Purpose::Start)],
            vec![launch(2, ExecutionSource::Misfire, None, &[0, 1])],
        ),
        (
            "it ends: the second catch-up starts",
            vec![finished(2, &[]), ended(2)],
            vec![catch_up_start(&[0, 1], false)],
        ),
        (
            "it runs",
            vec![written(Purpose::Start)],
            vec![launch(3, ExecutionSource::Misfire, None, &[0, 1])],
        ),
        (
            "it ends: nothing is owed any more",
            vec![finished(3, &[]), ended(3)],
            vec![],
        ),
    ];
    for (what, inputs, want) in cases {
        let mut last = Vec::new();
        for input in inputs {
            if let Input::Fire { scheduled } = input {
                f.now = scheduled;
            }
            last = m.step(input, &f);
        }
        assert_eq!(last, want, "{what}");
    }
    assert_eq!(m.fires_owed(ShardItem(0)), 0);
    assert!(m.is_idle());
}

#[test]
fn buffer_all_forgets_what_an_item_moved_away_owed_and_a_policy_change_drops_the_rest() {
    let mut f = fake();
    let buffer = Overlap::BufferAll(NonZeroU32::new(5).unwrap());
    let mut m = machine_with(Registration::Confirmed, config(|c| c.overlap(buffer)));
    started(&mut m, t(0), &f);
    for s in 1..4 {
        f.now = t(s);
        started(&mut m, t(s), &f);
    }
    assert_eq!(
        (m.fires_owed(ShardItem(0)), m.fires_owed(ShardItem(1))),
        (3, 3)
    );

    tracing::info!("--- item 1 moved to the other instance: only item 0 catches up");
    f.view = committed(owned(
        view(&[&me(), &other()], Some(&me())),
        &[(0, &me()), (1, &other())],
    ));
    m.step(finished(1, &[]), &f);
    let out = m.step(ended(1), &f);
    assert_eq!(out, vec![catch_up_start(&[0], true)]);
    assert_eq!(m.fires_owed(ShardItem(1)), 0);

    tracing::info!("--- a bound lowered keeps what fits; another policy owes nothing");
    let lower = config(|c| c.overlap(Overlap::BufferAll(NonZeroU32::MIN)));
    m.step(Input::Config(lower), &f);
    assert_eq!(m.fires_owed(ShardItem(0)), 1);
    m.step(Input::Config(config(|c| c.overlap(Overlap::Skip))), &f);
    assert_eq!(m.fires_owed(ShardItem(0)), 0);
}

/// A job under `allow_all` (which needs `monitorExecution: false`).
fn allowing() -> JobMachine {
    let config = config(|c| c.monitor_execution(false).overlap(Overlap::AllowAll));
    machine_with(Registration::Confirmed, config)
}

#[test]
fn allow_all_starts_a_run_beside_the_previous_and_the_item_runs_until_its_last_run_ends() {
    let mut f = fake();
    let mut m = allowing();
    type Case = (&'static str, Input, Vec<Command>);
    let cases: Vec<Case> = vec![
        (
            "a fire runs the items, writing nothing",
            Input::Fire { scheduled: t(0) },
            vec![launch(1, ExecutionSource::Normal, Some(t(0)), &[0, 1])],
        ),
        (
            "the next fire runs them again beside it: no skip, no misfire flag",
            Input::Fire { scheduled: t(1) },
            vec![launch(2, ExecutionSource::Normal, Some(t(1)), &[0, 1])],
        ),
        (
            "a trigger runs them at once too",
            Input::Trigger,
            vec![launch(3, ExecutionSource::Manual, None, &[0, 1])],
        ),
        (
            "the first run ends: nothing follows",
            finished(1, &[]),
            vec![],
        ),
    ];
    for (what, input, want) in cases {
        if let Input::Fire { scheduled } = input {
            f.now = scheduled;
        }
        assert_eq!(m.step(input, &f), want, "{what}");
    }
    let both: crate::decide::item_set::ItemSet = [ShardItem(0), ShardItem(1)].into();
    assert_eq!(m.running(), &both, "two runs of each item still go");
    m.step(finished(3, &[]), &f);
    assert_eq!(m.running(), &both);
    m.step(finished(2, &[]), &f);
    assert!(m.running().is_empty() && m.is_idle());
}

#[test]
fn allow_all_cancels_every_run_of_an_item_that_moves_away_with_one_command() {
    let mut f = fake();
    let mut m = allowing();
    m.step(Input::Fire { scheduled: t(0) }, &f);
    f.now = t(1);
    m.step(Input::Fire { scheduled: t(1) }, &f);
    f.view = committed(owned(
        view(&[&me(), &other()], Some(&me())),
        &[(0, &me()), (1, &other())],
    ));
    let moved = Input::Event {
        node: JobNode::ShardingInstance(ShardItem(1)),
        kind: NodeEventKind::DataChanged,
    };
    assert_eq!(m.step(moved, &f), vec![Command::Cancel(vec![ShardItem(1)])]);
}

#[test]
fn without_allow_all_a_trigger_waits_for_the_run_in_progress() {
    let f = fake();
    let mut m = machine_with(
        Registration::Confirmed,
        config(|c| c.monitor_execution(false)),
    );
    m.step(Input::Fire { scheduled: t(0) }, &f);
    assert_eq!(m.step(Input::Trigger, &f), vec![]);
    let out = m.step(finished(1, &[]), &f);
    assert_eq!(out, vec![launch(2, ExecutionSource::Manual, None, &[0, 1])]);
}
