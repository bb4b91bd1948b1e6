//! Table tests of the catch-up decision: which instant, which items, what is written.

use super::*;
use chrono::TimeZone;

fn t(secs: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(1_800_000_000 + secs, 0).unwrap()
}

/// Every `period` seconds from `t(0)`.
fn every(period: i64) -> impl Fn(DateTime<Utc>) -> Option<DateTime<Utc>> {
    move |after| {
        let since = (after - t(0)).num_seconds();
        let n = if after < t(0) {
            0
        } else {
            since.div_euclid(period) + 1
        };
        Some(t(n * period))
    }
}

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

#[test]
fn the_latest_missed_instant_is_the_last_one_after_the_floor_within_the_window() {
    let cron = every(10);
    // (floor, now, window, expected)
    let cases: [(i64, i64, u64, Option<i64>); 9] = [
        // Three instants missed (10, 20, 30): the latest runs.
        (0, 35, 60, Some(30)),
        // The instant at now counts (the trigger fires it only if it was up).
        (0, 30, 60, Some(30)),
        // Nothing missed since the last fire.
        (30, 35, 60, None),
        // The latest missed instant is older than the window: nothing.
        (0, 35, 4, None),
        // Exactly as old as the window: within it.
        (0, 35, 5, Some(30)),
        // Older instants beyond the window, the latest within: the latest.
        (-1000, 35, 10, Some(30)),
        // A zero window catches up nothing older than now.
        (0, 35, 0, None),
        // A floor after now (a clock behind the record): nothing.
        (40, 35, 60, None),
        // A long outage of a dense schedule: still the latest.
        (-100_000, 35, 200_000, Some(30)),
    ];
    for (floor, now, window, expected) in cases {
        assert_eq!(
            latest_missed(&cron, t(floor), t(now), secs(window)),
            expected.map(t),
            "floor {floor}, now {now}, window {window}"
        );
    }
}

#[test]
fn a_sparse_schedule_is_found_back_across_a_long_window() {
    let daily = every(86_400);
    let now = t(86_400 * 3 + 5);
    let got = latest_missed(&daily, t(0), now, secs(86_400 * 30));
    assert_eq!(got, Some(t(86_400 * 3)));
    let ended = |_| None;
    assert_eq!(latest_missed(&ended, t(0), now, secs(60)), None);
}

fn floor(item: u32, floor: Option<i64>, owed: Option<i64>) -> ItemFloor {
    ItemFloor {
        item: ShardItem(item),
        floor: floor.map(t),
        owed: owed.map(t),
    }
}

#[test]
fn each_item_catches_up_once_grouped_by_its_missed_instant_latest_first() {
    let cron = every(10);
    let items = [
        floor(0, Some(0), None),
        floor(1, Some(0), None),
        // Fired for the latest instant already: nothing.
        floor(2, Some(30), None),
        // Never fired (no record): nothing.
        floor(3, None, None),
        // Its owner died at 10, the instants since are within the window.
        floor(4, Some(10), None),
    ];
    let runs = plan(&items, &cron, t(35), secs(60));
    assert_eq!(
        runs,
        vec![(t(30), vec![ShardItem(0), ShardItem(1), ShardItem(4)])]
    );
    // Item 1's window reaches back further than item 0's floor: both take instant 30.
    let items = [floor(0, Some(0), None), floor(1, Some(-100), None)];
    assert_eq!(
        plan(&items, &cron, t(35), secs(60)),
        vec![(t(30), vec![ShardItem(0), ShardItem(1)])]
    );
    assert_eq!(plan(&items, &cron, t(35), secs(1)), vec![]);
}

#[test]
fn an_instant_owed_before_a_later_fire_runs_when_nothing_later_was_missed() {
    let cron = every(10);
    let items = [
        // Fired 30 after an outage since 0: 20 is owed.
        floor(0, Some(30), Some(20)),
        // Owed 20, but 30 was missed too: the latest runs, once.
        floor(1, Some(20), Some(20)),
        // Owed, but older than the window by now.
        floor(2, Some(30), Some(-100)),
    ];
    let runs = plan(&items, &cron, t(35), secs(60));
    assert_eq!(
        runs,
        vec![(t(30), vec![ShardItem(1)]), (t(20), vec![ShardItem(0)])]
    );
}

#[test]
fn the_instant_missed_before_a_fire_is_the_one_just_before_it_within_the_window() {
    let cron = every(10);
    // (floor, the fire's instant, now, window, expected)
    let cases: [(i64, i64, i64, u64, Option<i64>); 4] = [
        // The fire after 0 is 10: nothing missed.
        (0, 10, 11, 60, None),
        // Down over 10 and 20: the fire of 30 owes 20.
        (0, 30, 31, 60, Some(20)),
        // 20 is older than the window at 31.
        (0, 30, 31, 5, None),
        // A resumed fire of 30 seen at 45 (a long reshard): 20 is 25 s old, within 30.
        (0, 30, 45, 30, Some(20)),
    ];
    for (fl, at, now, window, expected) in cases {
        assert_eq!(
            missed_before(&cron, t(fl), t(at), t(now), secs(window)),
            expected.map(t),
            "floor {fl}, fire {at}, now {now}, window {window}"
        );
    }
}

#[test]
fn the_record_is_created_with_its_parents_then_set_and_never_moved_back() {
    let job = JobName::new("orders").unwrap();
    let path = |i: u32| JobNode::FiredItem(ShardItem(i)).to_path(&job);
    let empty = FiredRecord::default();
    let (ops, creates) = record_ops(&job, &empty, &[ShardItem(0)], t(30));
    assert!(creates);
    assert_eq!(
        ops,
        vec![
            Op::create("/orders/shardcron", Vec::new(), CreateMode::Persistent),
            Op::create(
                "/orders/shardcron/fired",
                Vec::new(),
                CreateMode::Persistent
            ),
            Op::create(path(0), fired_data(t(30)), CreateMode::Persistent),
        ]
    );
    let mut record = FiredRecord {
        parent: true,
        ..FiredRecord::default()
    };
    record.items.insert(ShardItem(0), Some(t(20)));
    record.items.insert(ShardItem(1), Some(t(40)));
    record.items.insert(ShardItem(2), None);
    let (ops, creates) = record_ops(
        &job,
        &record,
        &[ShardItem(0), ShardItem(1), ShardItem(2)],
        t(30),
    );
    assert!(!creates, "every node is there: one batched multi-op");
    let set = |i| Op::Set {
        path: path(i),
        data: fired_data(t(30)),
        version: None,
    };
    assert_eq!(
        ops,
        vec![set(0), set(2)],
        "item 1 already records a later instant"
    );
    let (ops, _) = record_ops(&job, &record, &[ShardItem(1)], t(30));
    assert!(ops.is_empty());
}

#[test]
fn the_record_reads_back_what_it_wrote_and_ignores_anything_else() {
    assert_eq!(parse_fired(&fired_data(t(30))), Some(t(30)));
    assert_eq!(
        parse_fired(b"2026-11-26T00:00:05.250Z").map(|t| t.timestamp_subsec_millis()),
        Some(250)
    );
    for bad in [&b""[..], b"yesterday", b"\xff\xfe", b"1800000000"] {
        assert_eq!(parse_fired(bad), None, "{bad:?}");
    }
}
