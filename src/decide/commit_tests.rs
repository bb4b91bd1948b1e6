//! Table tests of the sharding commit: every answer of every phase, on the returned steps.

use super::*;
use crate::model::CreateMode;

const PROCESSING: &str = "/orders/leader/sharding/processing";

fn processing() -> Op {
    Op::create(PROCESSING, "", CreateMode::Ephemeral)
}

fn undo() -> Op {
    Op::delete(PROCESSING)
}

/// A plan of `n` item owners, then the flags' removal.
fn plan(n: usize) -> Vec<Op> {
    let mut ops: Vec<Op> = (0..n)
        .map(|i| Op::set(format!("/orders/sharding/{i}/instance"), "10.0.0.1@-@1"))
        .collect();
    ops.push(Op::delete("/orders/leader/sharding/necessary"));
    ops.push(undo());
    ops
}

fn failed() -> Answer {
    Answer::Failed("connection lost".to_owned())
}

fn committed(n: u32) -> CommitStep {
    let owner = InstanceId::parse("10.0.0.1@-@1").unwrap();
    let mut owners: Vec<_> = (0..n).map(|i| (ShardItem(i), owner.clone())).collect();
    owners.sort();
    CommitStep::Ended(CommitEnd::Committed(owners))
}

/// Runs a commit of a `n`-item plan through `answers`, collecting every step.
fn run(n: usize, answers: Vec<Answer>) -> Vec<CommitStep> {
    let (mut commit, first) = Commit::start(processing(), plan(n));
    let mut steps = vec![first];
    for answer in answers {
        steps.push(commit.written(answer));
    }
    steps
}

fn one_write(n: usize) -> CommitStep {
    let mut ops = vec![processing()];
    ops.extend(plan(n));
    CommitStep::Write(ops)
}

#[test]
fn a_plan_that_fits_one_multi_op_is_committed_with_processing_in_one_write() {
    assert_eq!(run(2, vec![Answer::Done]), vec![one_write(2), committed(2)]);
}

#[test]
fn every_answer_to_the_one_write_commit_picks_its_branch() {
    let mark = CommitStep::Write(vec![processing()]);
    let cases: Vec<(&str, Answer, CommitStep)> = vec![
        (
            "processing stands (plain call)",
            Answer::Exists { at: None },
            mark.clone(),
        ),
        (
            "processing stands (first op of the multi)",
            Answer::Exists { at: Some(0) },
            mark,
        ),
        (
            "a later node exists: the mirror was behind",
            Answer::Exists { at: Some(2) },
            CommitStep::Ended(CommitEnd::Failed(Answer::Exists { at: Some(2) }.describe())),
        ),
        (
            "a flag already gone",
            Answer::Missing { at: Some(3) },
            CommitStep::Ended(CommitEnd::Failed(
                Answer::Missing { at: Some(3) }.describe(),
            )),
        ),
        (
            "a version moved",
            Answer::BadVersion { at: Some(1) },
            CommitStep::Ended(CommitEnd::Failed(
                Answer::BadVersion { at: Some(1) }.describe(),
            )),
        ),
        (
            "the registry failed",
            failed(),
            CommitStep::Ended(CommitEnd::Failed("connection lost".to_owned())),
        ),
    ];
    for (what, answer, want) in cases {
        assert_eq!(run(2, vec![answer]), vec![one_write(2), want], "{what}");
    }
}

#[test]
fn after_a_java_leader_held_processing_the_plan_follows_the_marking() {
    let all = plan(2);
    let steps = run(
        2,
        vec![
            Answer::Exists { at: Some(0) },
            Answer::Exists { at: None },
            Answer::Done,
        ],
    );
    assert_eq!(
        steps,
        vec![
            one_write(2),
            CommitStep::Write(vec![processing()]),
            CommitStep::Write(all),
            committed(2),
        ]
    );
}

#[test]
fn a_plan_past_one_multi_op_is_marked_then_committed_in_chunks() {
    let n = MAX_OPS_PER_MULTI + 10;
    let all = plan(n);
    let steps = run(n, vec![Answer::Done, Answer::Done, Answer::Done]);
    assert_eq!(
        steps,
        vec![
            CommitStep::Write(vec![processing()]),
            CommitStep::Write(all[..MAX_OPS_PER_MULTI].to_vec()),
            CommitStep::Write(all[MAX_OPS_PER_MULTI..].to_vec()),
            committed(n as u32),
        ]
    );
}

#[test]
fn a_chunk_never_splits_an_items_guard_on_its_running_marker() {
    // Owner operations up to one before the boundary, then a moved item's owner and guard: the
    // guard's create would end the first chunk, so the chunk ends before it.
    let mut plan: Vec<Op> = (0..MAX_OPS_PER_MULTI - 2)
        .map(|i| Op::set(format!("/orders/sharding/{i}/instance"), "10.0.0.1@-@1"))
        .collect();
    plan.push(Op::set("/orders/sharding/7000/instance", "10.0.0.1@-@1"));
    plan.extend(crate::decide::resharding::not_running(
        &crate::types::JobName::new("orders").unwrap(),
        ShardItem(7000),
    ));
    plan.push(Op::delete("/orders/leader/sharding/necessary"));
    plan.push(undo());
    let mut ops = vec![processing()];
    ops.extend(plan.clone());
    let (mut commit, first) = Commit::start(processing(), plan);
    assert_eq!(first, CommitStep::Write(vec![processing()]));
    // Chunk 1 holds ops[1..1000]: 998 owners and item 7000's owner; its guard goes next.
    assert_eq!(
        commit.written(Answer::Done),
        CommitStep::Write(ops[1..MAX_OPS_PER_MULTI].to_vec())
    );
    assert_eq!(
        commit.written(Answer::Done),
        CommitStep::Write(ops[MAX_OPS_PER_MULTI..].to_vec())
    );
    assert!(
        matches!(&ops[MAX_OPS_PER_MULTI], Op::Create { path, .. } if path == "/orders/sharding/7000/running")
    );
    assert!(matches!(
        commit.written(Answer::Done),
        CommitStep::Ended(CommitEnd::Committed(_))
    ));
}

#[test]
fn a_marking_that_fails_ends_the_commit_with_nothing_written() {
    let n = MAX_OPS_PER_MULTI + 10;
    let cases = [failed(), Answer::Missing { at: None }];
    for answer in cases {
        let want = CommitStep::Ended(CommitEnd::NotMarked(answer.describe()));
        assert_eq!(run(n, vec![answer.clone()])[1], want, "{answer:?}");
    }
}

#[test]
fn a_failed_chunk_takes_processing_down_again() {
    let n = MAX_OPS_PER_MULTI + 10;
    let cases = [
        ("undone", Answer::Done),
        ("already gone", Answer::Missing { at: None }),
    ];
    for (what, undone) in cases {
        let steps = run(n, vec![Answer::Done, Answer::Done, failed(), undone]);
        assert_eq!(steps[3], CommitStep::Write(vec![undo()]), "{what}");
        assert_eq!(
            steps[4],
            CommitStep::Ended(CommitEnd::Failed("connection lost".to_owned())),
            "{what}"
        );
    }
}

#[test]
fn an_undo_that_fails_is_tried_again_with_growing_pauses_then_reported() {
    let n = MAX_OPS_PER_MULTI + 10;
    let mut answers = vec![Answer::Done, failed()];
    answers.extend((0..UNDO_TRIES).map(|_| Answer::Failed("timed out".to_owned())));
    let steps = run(n, answers);
    assert_eq!(steps[2], CommitStep::Write(vec![undo()]));
    assert_eq!(steps[3], CommitStep::WriteAfter(UNDO_RETRY, vec![undo()]));
    assert_eq!(
        steps[4],
        CommitStep::WriteAfter(UNDO_RETRY * 2, vec![undo()])
    );
    assert_eq!(
        steps[5],
        CommitStep::WriteAfter(UNDO_RETRY * 4, vec![undo()])
    );
    assert_eq!(
        steps[6],
        CommitStep::Ended(CommitEnd::UndoFailed {
            commit: "connection lost".to_owned(),
            undo: "timed out".to_owned(),
        })
    );
    assert_eq!(steps.len(), 2 + UNDO_TRIES as usize + 1);
}

#[test]
fn an_undo_that_succeeds_on_a_retry_ends_the_commit_as_failed_and_clean() {
    let n = MAX_OPS_PER_MULTI + 10;
    let steps = run(n, vec![Answer::Done, failed(), failed(), Answer::Done]);
    assert_eq!(
        steps[4],
        CommitStep::Ended(CommitEnd::Failed("connection lost".to_owned()))
    );
}

#[test]
fn an_answer_after_the_end_changes_nothing() {
    let (mut commit, _) = Commit::start(processing(), plan(1));
    assert_eq!(commit.written(Answer::Done), committed(1));
    assert!(matches!(
        commit.written(Answer::Done),
        CommitStep::Ended(CommitEnd::Failed(_))
    ));
}
