//! The records of workflow runs read back, the runs a downstream starts, and the old runs pruned.

use std::collections::BTreeMap;

use super::graph::{Dependency, RunWhen};
use super::records::*;
use super::run::{ItemEnd, RunId};
use crate::types::{JobName, ShardItem};

fn job(name: &str) -> JobName {
    JobName::new(name).unwrap()
}

fn runs(records: &[(&str, &str, i64)]) -> BTreeMap<RunId, RunRecords> {
    parse_records(records.iter().map(|(n, d, z)| (*n, d.as_bytes(), *z)))
}

#[test]
fn records_read_back_as_running_ended_unreadable_or_a_decision() {
    let read = runs(&[
        ("100@0", "running:10.0.0.1@-@1", 5),
        ("100@1", "success", 6),
        ("100@2", "garbage", 7),
        ("100@start", "skip:up:timeout", 8),
        ("m3@start", "run", 9),
        ("not-a-record", "success", 1),
    ]);
    let run = &read[&RunId::scheduled(100)];
    assert_eq!(
        run.items[&ShardItem(0)],
        (ItemRecord::Running("10.0.0.1@-@1".into()), 5)
    );
    assert_eq!(
        run.items[&ShardItem(1)],
        (ItemRecord::Ended(Some(ItemEnd::Succeeded)), 6)
    );
    assert_eq!(run.items[&ShardItem(2)], (ItemRecord::Ended(None), 7));
    assert_eq!(
        run.start,
        Some(Some(Decision::Skip {
            upstream: job("up"),
            end: ItemEnd::TimedOut
        }))
    );
    // An unreadable item counts as a failure; a running one keeps the run open.
    assert_eq!(run.end(3), None);
    assert_eq!(read[&RunId::manual(3)].start, Some(Some(Decision::Run)));
    assert_eq!(read.len(), 2);
    let ended = runs(&[("100@0", "success", 5), ("100@1", "xx", 6)]);
    assert_eq!(ended[&RunId::scheduled(100)].end(2), Some(ItemEnd::Failed));
}

#[test]
fn decisions_encode_and_parse_back() {
    for d in [
        Decision::Run,
        Decision::Skip {
            upstream: job("up"),
            end: ItemEnd::Skipped,
        },
    ] {
        assert_eq!(Decision::parse(d.encode().as_bytes()), Some(d));
    }
    assert_eq!(Decision::parse(b"skip:up"), None);
    assert_eq!(Decision::parse(b"go"), None);
}

fn upstream(records: &[(&str, &str, i64)]) -> Upstream {
    Upstream {
        total: 2,
        since: Some(1),
        runs: runs(records),
    }
}

#[test]
fn the_runs_due_are_the_ended_ones_without_a_start_in_run_order() {
    let dependency = Dependency {
        after: vec![job("a"), job("b")],
        on: RunWhen::Success,
    };
    let a = upstream(&[
        ("200@0", "success", 5),
        ("200@1", "success", 5),
        ("100@0", "success", 2),
        ("100@1", "failed", 2),
        ("300@0", "success", 9),
        ("300@1", "success", 9),
    ]);
    let b = upstream(&[
        ("100@0", "success", 3),
        ("100@1", "success", 3),
        ("200@0", "success", 6),
        ("200@1", "success", 6),
        ("300@0", "running:x@-@1", 9),
    ]);
    let upstreams: BTreeMap<JobName, Upstream> = [(job("a"), a), (job("b"), b)].into();
    let own = runs(&[]);
    assert_eq!(
        starts_due(&dependency, &upstreams, &own),
        vec![
            (
                RunId::scheduled(100),
                Decision::Skip {
                    upstream: job("a"),
                    end: ItemEnd::Failed
                }
            ),
            (RunId::scheduled(200), Decision::Run),
        ]
    );
    // Created once: a run with a start is never due again.
    let own = runs(&[("100@start", "run", 4)]);
    assert_eq!(
        starts_due(&dependency, &upstreams, &own),
        vec![(RunId::scheduled(200), Decision::Run)]
    );
}

#[test]
fn pruning_keeps_the_newest_runs_and_names_every_record_of_the_older() {
    let read = runs(&[
        ("100@start", "run", 1),
        ("100@0", "success", 1),
        ("200@0", "success", 1),
        ("300@0", "success", 1),
    ]);
    assert_eq!(prune(&read, 2), vec!["100@start", "100@0"]);
    assert!(prune(&read, 3).is_empty());
}
