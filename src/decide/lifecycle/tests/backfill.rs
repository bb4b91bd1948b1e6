//! Backfills in the machine: each instant in order, one run at a time, each item once, progress
//! recorded in each run's end write, picked up where another owner left it, and cancelled with the request.

use super::*;
use crate::decide::backfill::{Progress, Request};

fn request() -> Request {
    Request {
        id: "b1".into(),
        instants: vec![t(-15), t(-10), t(-5)],
    }
}

fn backfilled() -> Fake {
    Fake {
        request: Some(request().encode()),
        ..fake()
    }
}

fn requested() -> Input {
    Input::Event {
        node: JobNode::Backfill,
        kind: NodeEventKind::Created,
    }
}

/// Run `run_id`'s end write: its `running` markers deleted and its items' progress recorded in
/// one multi-op (a set of the request writer's records, a create of a missing one).
fn end_write(run_id: u64, items: &[u32], done: usize, create: bool) -> Command {
    let data = Progress {
        id: "b1".into(),
        done,
    }
    .encode();
    let path = |i: &u32| format!("/orders/shardcron/backfill/{i}");
    let deletes = items
        .iter()
        .map(|i| Op::delete(format!("/orders/sharding/{i}/running")));
    let records = items.iter().map(|i| match create {
        true => Op::create(path(i), data.clone(), CreateMode::Persistent),
        false => Op::Set {
            path: path(i),
            data: data.clone(),
            version: None,
        },
    });
    Command::SubmitEnd {
        run_id,
        ops: deletes.chain(records).collect(),
    }
}

#[test]
fn a_backfill_runs_each_instant_in_order_once_per_item_one_run_at_a_time() {
    let f = backfilled();
    let mut m = machine(Registration::Confirmed);
    assert_eq!(m.step(requested(), &f), vec![start(begins(&[0, 1]))]);
    for (run, at) in [(1, -15), (2, -10), (3, -5)] {
        assert_eq!(
            m.step(written(Purpose::Start), &f),
            vec![launch(run, ExecutionSource::Backfill, Some(t(at)), &[0, 1])]
        );
        // One run at a time: another look while it runs starts nothing.
        let look = Input::Event {
            node: JobNode::ShardingInstance(ShardItem(0)),
            kind: NodeEventKind::DataChanged,
        };
        assert_eq!(m.step(look, &f), vec![]);
        assert_eq!(
            m.step(finished(run, &[]), &f),
            vec![end_write(run, &[0, 1], run as usize, true)],
            "the progress of instant {at} is in the run's end write"
        );
        let next = match run < 3 {
            true => vec![start(begins(&[0, 1]))],
            false => vec![],
        };
        assert_eq!(m.step(run_done(run), &f), next, "after instant {at}");
    }
}

#[test]
fn an_owner_goes_on_from_the_progress_recorded_and_the_item_behind_runs_first() {
    let mut f = backfilled();
    let done = |n| {
        Progress {
            id: "b1".into(),
            done: n,
        }
        .encode()
    };
    f.progress.insert(ShardItem(0), done(1));
    f.progress.insert(ShardItem(1), done(2));
    let mut m = machine(Registration::Confirmed);
    assert_eq!(m.step(requested(), &f), vec![start(begins(&[0]))]);
    assert_eq!(
        m.step(written(Purpose::Start), &f),
        vec![launch(1, ExecutionSource::Backfill, Some(t(-10)), &[0])]
    );
    assert_eq!(
        m.step(finished(1, &[]), &f),
        vec![end_write(1, &[0], 2, false)]
    );
    assert_eq!(
        m.step(run_done(1), &f),
        vec![start(begins(&[0, 1]))],
        "both items are at the last instant now"
    );
    // Another backfill's progress counts for nothing.
    let mut f = backfilled();
    let other = Progress {
        id: "b0".into(),
        done: 3,
    };
    f.progress.insert(ShardItem(0), other.encode());
    let mut m = machine(Registration::Confirmed);
    assert_eq!(m.step(requested(), &f), vec![start(begins(&[0, 1]))]);
}

#[test]
fn a_cancelled_backfill_cancels_its_run_and_starts_no_further_instant() {
    let mut f = backfilled();
    let mut m = machine(Registration::Confirmed);
    m.step(requested(), &f);
    m.step(written(Purpose::Start), &f);
    f.request = None;
    let cancelled = Input::Event {
        node: JobNode::Backfill,
        kind: NodeEventKind::Deleted,
    };
    assert_eq!(
        m.step(cancelled, &f),
        vec![Command::Cancel(vec![ShardItem(0), ShardItem(1)])]
    );
    let end = m.step(finished(1, &[0, 1]), &f);
    assert_eq!(
        end,
        vec![submit_end(1, unmark(&[0, 1]))],
        "no progress for a cancelled backfill"
    );
    assert_eq!(m.step(run_done(1), &f), vec![], "no next instant");
}

#[test]
fn a_bad_request_is_reported_and_runs_nothing() {
    let mut f = backfilled();
    f.request = Some(b"{\"id\": 3}".to_vec());
    let mut m = machine(Registration::Confirmed);
    let out = m.step(requested(), &f);
    assert!(
        matches!(out.as_slice(), [Command::Warn(w)] if w.starts_with("/orders/shardcron/backfill: not a backfill")),
        "{out:?}"
    );
}
