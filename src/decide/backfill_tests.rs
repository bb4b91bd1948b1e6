//! Table tests of the backfill decisions: the instants of a range, the records, the next run.

use super::*;
use chrono::TimeZone;

fn t(secs: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(1_800_000_000 + secs, 0).unwrap()
}

/// Every 10 s from `t(0)`.
fn every_10s(after: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let since = (after - t(0)).num_seconds();
    let n = if after < t(0) {
        0
    } else {
        since.div_euclid(10) + 1
    };
    Some(t(n * 10))
}

#[test]
fn a_range_lists_its_instants_bounds_included_and_refuses_reversed_empty_or_huge_ranges() {
    let list = |from, to| instants(&every_10s, t(from), t(to));
    assert_eq!(list(0, 40), Ok(vec![t(0), t(10), t(20), t(30), t(40)]));
    assert_eq!(list(1, 39), Ok(vec![t(10), t(20), t(30)]));
    assert_eq!(list(10, 10), Ok(vec![t(10)]));
    assert!(matches!(list(40, 0), Err(BackfillError::Reversed { .. })));
    assert!(matches!(list(1, 9), Err(BackfillError::Empty { .. })));
    let huge = list(0, 10 * MAX_INSTANTS as i64);
    assert!(
        matches!(huge, Err(BackfillError::TooMany { .. })),
        "{huge:?}"
    );
    assert!(huge.unwrap_err().to_string().contains("narrow the range"));
    let exactly = list(0, 10 * (MAX_INSTANTS as i64 - 1));
    assert_eq!(exactly.map(|i| i.len()), Ok(MAX_INSTANTS));
}

#[test]
fn requests_round_trip_and_bad_ones_are_refused() {
    let r = Request {
        id: "b1".into(),
        instants: vec![t(0), t(10)],
    };
    assert_eq!(Request::parse(&r.encode()), Ok(r.clone()));
    let descending = Request {
        id: "b1".into(),
        instants: vec![t(10), t(0)],
    };
    assert!(Request::parse(&descending.encode())
        .unwrap_err()
        .contains("ascend"));
    assert!(Request::parse(b"[]")
        .unwrap_err()
        .contains("not a backfill"));
    assert!(Request::parse(&vec![b' '; MAX_REQUEST_BYTES + 1])
        .unwrap_err()
        .contains("bytes"));
}

#[test]
fn progress_counts_only_for_its_own_backfill() {
    let r = Request {
        id: "b2".into(),
        instants: vec![t(0), t(10), t(20)],
    };
    let mine = Progress {
        id: "b2".into(),
        done: 2,
    };
    let older = Progress {
        id: "b1".into(),
        done: 3,
    };
    let past_the_end = Progress {
        id: "b2".into(),
        done: 9,
    };
    assert_eq!(Progress::done_of(&mine.encode(), &r), 2);
    assert_eq!(Progress::done_of(&older.encode(), &r), 0);
    assert_eq!(Progress::done_of(&past_the_end.encode(), &r), 3);
    assert_eq!(Progress::done_of(b"junk", &r), 0);
}

#[test]
fn the_next_run_takes_the_earliest_instant_any_item_has_not_run_with_the_items_there() {
    let r = Request {
        id: "b".into(),
        instants: vec![t(0), t(10), t(20)],
    };
    let items = |done: &[(u32, usize)]| -> BTreeMap<ShardItem, usize> {
        done.iter().map(|(i, d)| (ShardItem(*i), *d)).collect()
    };
    // (progress per item, expected: the instant's index and its items)
    type Case<'a> = (&'a [(u32, usize)], Option<(usize, Vec<u32>)>);
    let cases: [Case; 4] = [
        (&[(0, 0), (1, 0)], Some((0, vec![0, 1]))),
        // Item 1 came from an owner that had gone further: item 0 catches up first.
        (&[(0, 1), (1, 2)], Some((1, vec![0]))),
        (&[(0, 3), (1, 2)], Some((2, vec![1]))),
        (&[(0, 3), (1, 3)], None),
    ];
    for (done, expected) in cases {
        let expected = expected.map(|(at, is)| (at, is.into_iter().map(ShardItem).collect()));
        assert_eq!(next_run(&r, &items(done)), expected, "{done:?}");
    }
}
