//! The catch-up window in the machine: when an owner looks for missed instants, the one run it
//! starts, what it records, and the cron fire a catch-up answered. The config's cron fires every
//! 5 s from `t(0)`.

use super::*;
use crate::decide::catchup::{fired_data, FiredRecord};

/// Items 0 and 1 last fired at `at` (both records present), now `now`.
fn recorded(at: Option<i64>, now: i64) -> Fake {
    let mut fired = FiredRecord {
        parent: at.is_some(),
        ..FiredRecord::default()
    };
    if let Some(at) = at {
        fired.items.insert(ShardItem(0), Some(t(at)));
        fired.items.insert(ShardItem(1), Some(t(at)));
    }
    Fake {
        now: t(now),
        fired,
        ..fake()
    }
}

fn windowed(secs: u64) -> JobMachine {
    machine_with(
        Registration::Confirmed,
        config(|c| c.catchup_window(Duration::from_secs(secs))),
    )
}

/// A plan committed: one event per item, the owner's look after it.
fn plan_committed() -> Input {
    Input::Event {
        node: JobNode::ShardingInstance(ShardItem(0)),
        kind: NodeEventKind::DataChanged,
    }
}

/// Run 1 of items 0 and 1 launched for the instant `at` (from `source`), and their record set.
fn ran_and_recorded(source: ExecutionSource, at: DateTime<Utc>) -> Vec<Command> {
    vec![
        launch(1, source, Some(at), &[0, 1]),
        record_set(&[0, 1], at),
    ]
}

fn record_set(items: &[u32], at: DateTime<Utc>) -> Command {
    Command::Write {
        ops: items
            .iter()
            .map(|i| Op::Set {
                path: format!("/orders/shardcron/fired/{i}"),
                data: fired_data(at),
                version: None,
            })
            .collect(),
        mode: WriteMode::Batched,
        then: Purpose::RecordFired,
    }
}

#[test]
fn an_owner_back_within_the_window_runs_the_latest_missed_instant_once_per_item() {
    // Last fired at 0; the instants 5, 10 and 15 passed with every instance down.
    let f = recorded(Some(0), 17);
    let mut m = windowed(60);
    assert_eq!(m.step(plan_committed(), &f), vec![start(begins(&[0, 1]))]);
    assert_eq!(
        m.step(written(Purpose::Start), &f),
        ran_and_recorded(ExecutionSource::CatchUp, t(15)),
        "one run carrying the latest missed instant, recorded once it started"
    );
    // Another look (the plan's other item event, a run ending) starts nothing more.
    assert_eq!(m.step(plan_committed(), &f), vec![]);
    m.step(finished(1, &[]), &f);
    let ended = run_done(1);
    assert_eq!(m.step(ended, &f), vec![], "the instant is not run twice");
}

#[test]
fn nothing_is_caught_up_beyond_the_window_without_a_record_or_without_a_window() {
    // (case, machine, facts)
    let cases: [(&str, JobMachine, Fake); 4] = [
        (
            "instant 15 is 2 s old, the window 1 s",
            windowed(1),
            recorded(Some(0), 17),
        ),
        ("never fired: no record", windowed(60), recorded(None, 17)),
        (
            "nothing missed since the last fire",
            windowed(60),
            recorded(Some(15), 17),
        ),
        (
            "a job without a window",
            machine(Registration::Confirmed),
            recorded(Some(0), 17),
        ),
    ];
    for (case, mut m, f) in cases {
        assert_eq!(m.step(plan_committed(), &f), vec![], "{case}");
        assert_eq!(m.step(Input::Resynced, &f), vec![], "{case}");
    }
}

#[test]
fn no_look_while_a_reshard_is_pending_and_the_catch_up_follows_the_commit() {
    let mut f = recorded(Some(0), 17);
    f.view.sharding_necessary = true;
    let mut m = windowed(60);
    assert_eq!(
        m.step(plan_committed(), &f),
        vec![],
        "the plan is not settled"
    );
    f.view.sharding_necessary = false;
    let done = Input::Event {
        node: JobNode::LeaderShardingNecessary,
        kind: NodeEventKind::Deleted,
    };
    assert_eq!(m.step(done, &f), vec![start(begins(&[0, 1]))]);
}

#[test]
fn the_cron_fire_of_an_instant_already_caught_up_is_coalesced_and_later_ones_run() {
    let mut f = recorded(Some(0), 15);
    let mut m = windowed(60);
    m.step(plan_committed(), &f);
    m.step(written(Purpose::Start), &f);
    m.step(finished(1, &[]), &f);
    m.step(run_done(1), &f);
    // The trigger's own fire of 15, racing the look that caught it up.
    let again = m.step(Input::Fire { scheduled: t(15) }, &f);
    assert!(
        matches!(
            again.as_slice(),
            [Command::Skipped {
                reason: SkipReason::Coalesced,
                missed: Some(MissReason::Coalesced),
                ..
            }]
        ),
        "{again:?}"
    );
    f.now = t(20);
    assert_eq!(
        m.step(Input::Fire { scheduled: t(20) }, &f),
        vec![start(begins(&[0, 1]))]
    );
}

#[test]
fn a_cron_fire_of_a_job_with_a_window_records_its_instant_creating_the_record_once() {
    let f = recorded(None, 20);
    let mut m = windowed(60);
    let created = started(&mut m, t(20), &f);
    let create = |path: &str, data: Vec<u8>| Op::create(path, data, CreateMode::Persistent);
    assert_eq!(
        created,
        vec![
            launch(1, ExecutionSource::Normal, Some(t(20)), &[0, 1]),
            Command::Write {
                ops: vec![
                    create("/orders/shardcron", Vec::new()),
                    create("/orders/shardcron/fired", Vec::new()),
                    create("/orders/shardcron/fired/0", fired_data(t(20))),
                    create("/orders/shardcron/fired/1", fired_data(t(20))),
                ],
                mode: WriteMode::Tolerant,
                then: Purpose::RecordFired,
            },
        ]
    );
    // Once the record stands it is set, in the fire's batch.
    let f = recorded(Some(20), 25);
    let mut m = windowed(60);
    assert_eq!(
        started(&mut m, t(25), &f),
        ran_and_recorded(ExecutionSource::Normal, t(25))
    );
}

#[test]
fn items_skipped_by_their_overlap_policy_count_as_handled_and_are_not_caught_up() {
    use crate::config::Overlap;
    let f = recorded(Some(0), 5);
    let mut m = machine_with(
        Registration::Confirmed,
        config(|c| {
            c.catchup_window(Duration::from_secs(60))
                .overlap(Overlap::Skip)
        }),
    );
    started(&mut m, t(5), &f);
    // The run of 5 still runs at 10: the fire of 10 skips both items, and records them handled.
    let f = recorded(Some(5), 10);
    let mut skipped = m.step(Input::Fire { scheduled: t(10) }, &f);
    if skipped.iter().any(|c| {
        matches!(
            c,
            Command::Write {
                then: Purpose::Start,
                ..
            }
        )
    }) {
        skipped.extend(m.step(written(Purpose::Start), &f));
    }
    assert!(
        skipped.iter().any(|c| matches!(
            c,
            Command::Skipped {
                missed: Some(MissReason::OverlapSkip),
                ..
            }
        )),
        "{skipped:?}"
    );
    assert!(
        skipped.contains(&record_set(&[0, 1], t(10))),
        "the skipped instant is recorded: {skipped:?}"
    );
}

#[test]
fn a_config_that_sets_or_removes_the_window_starts_or_stops_the_looks() {
    let f = recorded(Some(0), 17);
    let mut m = machine(Registration::Confirmed);
    assert_eq!(m.step(plan_committed(), &f), vec![]);
    let with = config(|c| c.catchup_window(Duration::from_secs(60)));
    m.step(Input::Config(with), &f);
    assert_eq!(m.step(plan_committed(), &f), vec![start(begins(&[0, 1]))]);
    let mut m = windowed(60);
    m.step(Input::Config(config(|c| c)), &f);
    assert_eq!(m.step(plan_committed(), &f), vec![]);
}

#[test]
fn a_cron_fire_that_ran_before_the_look_leaves_the_instant_before_it_owed_and_caught_up() {
    // Back at 15 with the record at 0: the fire of 15 runs first (its plan was settled before any
    // look), and owes 10, which runs once the fire's run ended.
    let mut f = recorded(Some(0), 15);
    let mut m = windowed(60);
    assert_eq!(
        started(&mut m, t(15), &f),
        ran_and_recorded(ExecutionSource::Normal, t(15))
    );
    f.now = t(16);
    m.step(finished(1, &[]), &f);
    let ended = run_done(1);
    assert_eq!(m.step(ended, &f), vec![start(begins(&[0, 1]))]);
    assert_eq!(
        m.step(written(Purpose::Start), &f),
        vec![launch(2, ExecutionSource::CatchUp, Some(t(10)), &[0, 1])],
        "10 runs; the record keeps 15"
    );
    m.step(finished(2, &[]), &f);
    let ended = run_done(2);
    assert_eq!(m.step(ended, &f), vec![], "owed once");
}

#[test]
fn a_catch_up_run_cancelled_by_a_reshard_takes_its_record_back_and_the_new_owner_catches_up() {
    let mut f = recorded(Some(0), 17);
    let mut m = windowed(60);
    m.step(plan_committed(), &f);
    assert_eq!(
        m.step(written(Purpose::Start), &f),
        ran_and_recorded(ExecutionSource::CatchUp, t(15))
    );
    // A second instance joins: the new plan gives item 0 to it, whose run here is cancelled.
    f.view.items.get_mut(&ShardItem(0)).unwrap().owner = Some(other());
    assert_eq!(
        m.step(plan_committed(), &f),
        vec![Command::Cancel(vec![ShardItem(0)])]
    );
    // Item 0 ends failed (cancelled), item 1 ends on its own: only item 0's record goes back,
    // in the run's end write before the markers' deletion.
    assert_eq!(
        m.step(finished(1, &[0]), &f),
        vec![Command::SubmitEnd {
            run_id: 1,
            ops: vec![
                Op::Set {
                    path: "/orders/shardcron/fired/0".into(),
                    data: fired_data(t(0)),
                    version: None,
                },
                Op::delete("/orders/sharding/0/running"),
                Op::delete("/orders/sharding/1/running"),
            ],
        }]
    );
    // The new owner, seeing the record at 0 for item 0, runs 15 for it.
    let mut theirs = recorded(Some(0), 18);
    theirs.fired.items.insert(ShardItem(1), Some(t(15)));
    theirs.view.items.get_mut(&ShardItem(1)).unwrap().owner = Some(other());
    let mut new_owner = windowed(60);
    assert_eq!(
        new_owner.step(plan_committed(), &theirs),
        vec![start(begins(&[0]))]
    );
    assert_eq!(
        new_owner.step(written(Purpose::Start), &theirs)[0],
        launch(1, ExecutionSource::CatchUp, Some(t(15)), &[0])
    );
}

#[test]
fn a_run_that_failed_on_an_item_still_owned_keeps_its_record() {
    // (case, the items that failed, the item moved away before the end)
    let cases: [(&str, &[u32], Option<u32>); 3] = [
        ("every item succeeded", &[], None),
        ("item 0 failed here, still owned", &[0], None),
        ("item 0 moved but ended on its own", &[], Some(0)),
    ];
    for (case, failed, moved) in cases {
        let mut f = recorded(Some(0), 17);
        let mut m = windowed(60);
        m.step(plan_committed(), &f);
        m.step(written(Purpose::Start), &f);
        if let Some(i) = moved {
            f.view.items.get_mut(&ShardItem(i)).unwrap().owner = Some(other());
        }
        assert_eq!(
            m.step(finished(1, failed), &f),
            vec![submit_end(1, unmark(&[0, 1]))],
            "{case}"
        );
    }
}

#[test]
fn without_markers_the_new_owner_hears_the_record_taken_back_and_catches_up() {
    let unmonitored = || {
        machine_with(
            Registration::Confirmed,
            config(|c| {
                c.catchup_window(Duration::from_secs(60))
                    .monitor_execution(false)
            }),
        )
    };
    let record_changed = |i: u32| Input::Event {
        node: JobNode::FiredItem(ShardItem(i)),
        kind: NodeEventKind::DataChanged,
    };
    // The new owner of item 0, before and after its old owner took the record back.
    let mut f = recorded(Some(15), 18);
    f.view.items.get_mut(&ShardItem(1)).unwrap().owner = Some(other());
    let mut m = unmonitored();
    assert_eq!(
        m.step(record_changed(0), &f),
        vec![],
        "a record at the latest instant leaves nothing to catch up"
    );
    f.fired.items.insert(ShardItem(0), Some(t(0)));
    let caught = m.step(record_changed(0), &f);
    assert!(
        caught.contains(&launch(1, ExecutionSource::CatchUp, Some(t(15)), &[0])),
        "{caught:?}"
    );
    assert_eq!(
        m.step(record_changed(1), &f),
        vec![],
        "item 1 is another instance's"
    );
}
