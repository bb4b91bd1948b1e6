//! The sharding commit protocol as a step machine: what the leader writes to commit a plan
//! ([`ShardingStep::Commit`](super::resharding::ShardingStep)), one write at a time, each
//! write's [`Answer`] deciding the next.
//!
//! ```text
//!  plan fits one multi-op ──▶ OneWrite [processing, plan..] ──Done──▶ Committed
//!         │ no                   │ processing stands (a Java leader mid-way) ──▶ Marking
//!         │                      └ anything else: nothing was written ──▶ Failed
//!         ▼
//!  Marking [processing] ──Done or Exists──▶ Chunk 1..n ──all Done──▶ Committed
//!         └ else ──▶ NotMarked (nothing written)   └ a chunk fails ──▶ Undo [delete processing]
//!  Undo ──Done or Missing──▶ Failed
//!       └ else ──▶ the undo again after a pause, [`UNDO_TRIES`] in all ──▶ UndoFailed (reported)
//! ```
//!
//! The plan of a huge `shardingTotalCount` goes in chunks of [`MAX_OPS_PER_MULTI`]: ZooKeeper
//! refuses a request past `jute.maxbuffer` and drops the connection. Followers see no partial plan:
//! `processing` stays up until the last chunk, which also removes `necessary`; a leader that dies
//! mid-way leaves `necessary` up for the next. An undo that fails is never dropped: `processing`
//! left standing parks every fire of the job, so it is tried again and, failing that, reported
//! (the job is sharded again, and a commit takes `processing` down with the plan).

use std::time::Duration;

use crate::model::Op;
use crate::paths::JobNode;
use crate::types::{InstanceId, ShardItem};

use super::answer::Answer;

/// The most operations one multi-op carries.
pub const MAX_OPS_PER_MULTI: usize = 1000;

/// How many times the undo of `processing` is tried before it is reported.
pub const UNDO_TRIES: u32 = 4;

/// The pause before the first retry of a failed undo; doubled for each further one.
pub const UNDO_RETRY: Duration = Duration::from_millis(100);

/// What the interpreter does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommitStep {
    /// Apply these operations (one call, or one multi-op) and hand back the [`Answer`].
    Write(Vec<Op>),
    /// Wait, then apply these operations and hand back the [`Answer`].
    WriteAfter(Duration, Vec<Op>),
    /// The commit is over.
    Ended(CommitEnd),
}

/// How a commit ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommitEnd {
    /// The plan is committed: the owners it wrote, item by item.
    Committed(Vec<(ShardItem, InstanceId)>),
    /// `processing` could not be marked; nothing was written. Worth a WARN.
    NotMarked(String),
    /// The commit failed and nothing of it stands (the mirror was behind the registry): retried.
    Failed(String),
    /// A chunk failed and `processing` could not be taken down: it may stand, parking the job's
    /// fires until a commit (the retry) removes it. Worth a WARN.
    UndoFailed {
        /// Why the commit failed.
        commit: String,
        /// Why the last undo failed.
        undo: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Phase {
    OneWrite,
    Marking,
    /// The chunk starting at this index of `ops` is in flight.
    Chunk(usize),
    /// The undo is in flight: its try (from 1) and why the commit failed.
    Undoing(u32, String),
    Ended,
}

/// One commit of one job's plan.
#[derive(Debug, Clone)]
pub struct Commit {
    /// `processing`'s creation, then the plan.
    ops: Vec<Op>,
    undo: Op,
    phase: Phase,
}

impl Commit {
    /// Starts a commit: `processing` creates `leader/sharding/processing` (its path is the undo's),
    /// `plan` is the rest. Returns the machine and its first step.
    pub fn start(processing: Op, plan: Vec<Op>) -> (Self, CommitStep) {
        let undo = Op::delete(processing.path());
        let mut ops = Vec::with_capacity(plan.len() + 1);
        ops.push(processing);
        ops.extend(plan);
        let (phase, first) = if ops.len() <= MAX_OPS_PER_MULTI {
            // A plan that fits one multi-op goes in one write with `processing` (up and down
            // again in it, so a Java leader mid-way makes it fail): a round trip less, and no
            // follower sees a partial plan either way.
            (Phase::OneWrite, ops.clone())
        } else {
            (Phase::Marking, ops[..1].to_vec())
        };
        let commit = Self { ops, undo, phase };
        (commit, CommitStep::Write(first))
    }

    /// The answer to the write last asked for; the next step.
    pub fn written(&mut self, answer: Answer) -> CommitStep {
        match (std::mem::replace(&mut self.phase, Phase::Ended), answer) {
            (Phase::OneWrite, Answer::Done) => {
                CommitStep::Ended(CommitEnd::Committed(assignment_of(&self.ops[1..])))
            }
            // Failed on `processing` itself: a Java leader is mid-way through its own commit,
            // and this one goes the older way, after it. A failure on a later operation (an item
            // node that exists, a flag already gone) is the mirror being behind the registry.
            (Phase::OneWrite, Answer::Exists { at: None | Some(0) }) => self.mark(),
            // Nothing was written (a multi-op is atomic).
            (Phase::OneWrite, other) => CommitStep::Ended(CommitEnd::Failed(other.describe())),
            // Already marked is fine: an earlier try of this leader, or the one-write commit
            // failed on `processing` itself.
            (Phase::Marking, Answer::Done | Answer::Exists { .. }) => self.chunk(1),
            (Phase::Marking, other) => CommitStep::Ended(CommitEnd::NotMarked(other.describe())),
            (Phase::Chunk(from), Answer::Done) => self.chunk(self.chunk_end(from)),
            (Phase::Chunk(_), other) => self.undo(1, other.describe()),
            (Phase::Undoing(_, cause), Answer::Done | Answer::Missing { .. }) => {
                CommitStep::Ended(CommitEnd::Failed(cause))
            }
            (Phase::Undoing(tries, cause), other) if tries >= UNDO_TRIES => {
                CommitStep::Ended(CommitEnd::UndoFailed {
                    commit: cause,
                    undo: other.describe(),
                })
            }
            (Phase::Undoing(tries, cause), _) => self.undo(tries + 1, cause),
            (Phase::Ended, _) => CommitStep::Ended(CommitEnd::Failed(
                "an answer came after the commit ended".to_owned(),
            )),
        }
    }

    fn mark(&mut self) -> CommitStep {
        self.phase = Phase::Marking;
        CommitStep::Write(self.ops[..1].to_vec())
    }

    fn chunk(&mut self, from: usize) -> CommitStep {
        if from >= self.ops.len() {
            self.phase = Phase::Ended;
            return CommitStep::Ended(CommitEnd::Committed(assignment_of(&self.ops[1..])));
        }
        let to = self.chunk_end(from);
        self.phase = Phase::Chunk(from);
        CommitStep::Write(self.ops[from..to].to_vec())
    }

    /// Where the chunk starting at `from` ends: [`MAX_OPS_PER_MULTI`] operations on, one less
    /// when that would split an item's guard ([`not_running`](super::resharding::not_running):
    /// its marker created in one chunk and deleted in the next would stand after a failed chunk).
    fn chunk_end(&self, from: usize) -> usize {
        let to = (from + MAX_OPS_PER_MULTI).min(self.ops.len());
        let splits_guard = to < self.ops.len()
            && matches!(&self.ops[to - 1], Op::Create { path, .. }
                if matches!(JobNode::parse(path), Ok((_, JobNode::ShardingRunning(_)))));
        to - usize::from(splits_guard)
    }

    fn undo(&mut self, try_: u32, cause: String) -> CommitStep {
        self.phase = Phase::Undoing(try_, cause);
        let ops = vec![self.undo.clone()];
        if try_ == 1 {
            CommitStep::Write(ops)
        } else {
            CommitStep::WriteAfter(UNDO_RETRY * 2u32.pow(try_ - 2), ops)
        }
    }
}

/// The owners a plan writes, item by item.
pub fn assignment_of(plan: &[Op]) -> Vec<(ShardItem, InstanceId)> {
    let mut out: Vec<(ShardItem, InstanceId)> = plan
        .iter()
        .filter_map(|op| {
            let (path, data) = match op {
                Op::Create { path, data, .. } | Op::Set { path, data, .. } => (path, data),
                _ => return None,
            };
            match JobNode::parse(path) {
                Ok((_, JobNode::ShardingInstance(item))) => {
                    InstanceId::parse(String::from_utf8_lossy(data))
                        .ok()
                        .map(|i| (item, i))
                }
                _ => None,
            }
        })
        .collect();
    out.sort();
    out
}

#[cfg(test)]
#[path = "commit_tests.rs"]
mod tests;
