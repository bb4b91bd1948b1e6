//! The machine's backfills ([`crate::decide::backfill`]): the request read when it appears (or
//! when the machine starts or re-lists), one backfill run of the owned items at a time, each
//! item's progress recorded in its run's end write, and the runs cancelled with the request.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::decide::backfill::{next_run, Progress, Request};
use crate::model::ExecutionSource;
use crate::model::{CreateMode, NodeEventKind, Op};
use crate::paths::JobNode;
use crate::types::ShardItem;

use super::{Command, Facts, Input, JobMachine};

/// A backfill this instance takes part in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Backfilling {
    request: Arc<Request>,
    /// Instants done per item here, which the mirror may not show yet.
    done: BTreeMap<ShardItem, usize>,
}

/// What an input means to the backfill.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Heard {
    /// Nothing.
    Nothing,
    /// The request may have appeared, changed or gone: read it again, then look.
    Read,
    /// A chance to start the next run: look.
    Look,
}

impl JobMachine {
    /// What `input` means to the backfill: its node's events and a re-list or registration read
    /// the request; while one is under way, the inputs after which a catch-up looks, look.
    pub(super) fn backfill_heard(&self, input: &Input) -> Heard {
        match input {
            Input::Resynced => Heard::Read,
            Input::Event {
                node: JobNode::Backfill,
                ..
            } => Heard::Read,
            Input::Event {
                node: JobNode::Instance(id),
                kind: NodeEventKind::Created,
            } if *id == self.me => Heard::Read,
            _ if self.backfill.is_some() && super::catchup::looks_after(input) => Heard::Look,
            _ => Heard::Nothing,
        }
    }

    /// Acts on what the backfill heard.
    pub(super) fn backfill_after(
        &mut self,
        heard: Heard,
        facts: &dyn Facts,
        out: &mut Vec<Command>,
    ) {
        match heard {
            Heard::Nothing => return,
            Heard::Read => self.backfill_read(facts, out),
            Heard::Look => {}
        }
        self.backfill_next(facts, out);
    }

    fn backfill_read(&mut self, facts: &dyn Facts, out: &mut Vec<Command>) {
        let request = match facts.backfill_request().map(|d| Request::parse(&d)) {
            None => None,
            Some(Ok(r)) => Some(r),
            Some(Err(e)) => {
                let path = JobNode::Backfill.to_path(&self.job);
                out.push(Command::Warn(format!("{path}: {e}; no backfill runs")));
                None
            }
        };
        let same = |b: &Backfilling| request.as_ref().is_some_and(|r| r.id == b.request.id);
        if self.backfill.as_deref().is_some_and(same) {
            return;
        }
        // Gone or replaced: what runs of the old one stops.
        let running: Vec<ShardItem> = self
            .runs
            .iter()
            .filter(|(_, r)| r.source == ExecutionSource::Backfill)
            .flat_map(|(_, r)| r.items.iter().copied())
            .collect();
        if !running.is_empty() {
            out.push(Command::Cancel(running));
        }
        self.backfill = request.map(|r| {
            Box::new(Backfilling {
                request: Arc::new(r),
                done: BTreeMap::new(),
            })
        });
    }

    /// Starts the next backfill run of the owned items, when work may start, the plan is
    /// settled, and no backfill run is under way here.
    fn backfill_next(&mut self, facts: &dyn Facts, out: &mut Vec<Command>) {
        let Some(b) = self.backfill.as_deref() else {
            return;
        };
        let busy = (self.runs.iter()).any(|(_, r)| r.source == ExecutionSource::Backfill);
        if busy {
            return;
        }
        let Some(view) = self.settled_view(facts) else {
            return;
        };
        let progress = facts.backfill_progress();
        let items: BTreeMap<ShardItem, usize> = self
            .idle_owned(&view)
            .map(|(i, _)| {
                let mirrored = progress
                    .get(i)
                    .map_or(0, |d| Progress::done_of(d, &b.request));
                (*i, mirrored.max(b.done.get(i).copied().unwrap_or(0)))
            })
            .collect();
        drop(view);
        let Some((index, items)) = next_run(&b.request, &items) else {
            return;
        };
        let at = b.request.instants[index];
        self.fire_only(
            ExecutionSource::Backfill,
            Some(at),
            Some(items.into_iter().collect()),
            facts,
            out,
        );
    }

    /// The writes recording a backfill run's progress, for its end write (a failed item counts
    /// as run, as a failed cron fire does). They go in the same multi-op as the deletion of the
    /// run's `running` markers: an owner that sees the markers gone sees the progress too, so an
    /// item moved to it meanwhile does not run the instant again. The request's writer created
    /// every item's record ([`crate::ops::Ops::backfill`]); an item added since is created here.
    pub(super) fn backfill_ops(&mut self, run_id: u64, facts: &dyn Facts) -> Vec<Op> {
        let Some((_, run)) = self.runs.iter().find(|(i, _)| *i == run_id) else {
            return Vec::new();
        };
        if run.source != ExecutionSource::Backfill {
            return Vec::new();
        }
        let (Some(b), Some(at)) = (self.backfill.as_deref_mut(), run.scheduled) else {
            return Vec::new();
        };
        let Ok(index) = b.request.instants.binary_search(&at) else {
            return Vec::new();
        };
        let progress = facts.backfill_progress();
        let data = Progress {
            id: b.request.id.clone(),
            done: index + 1,
        }
        .encode();
        let mut ops = Vec::with_capacity(run.items.len());
        for item in &run.items {
            let done = b.done.entry(*item).or_default();
            *done = (*done).max(index + 1);
            let path = JobNode::BackfillItem(*item).to_path(&self.job);
            if progress.contains_key(item) {
                ops.push(Op::Set {
                    path,
                    data: data.clone(),
                    version: None,
                });
            } else {
                ops.push(Op::create(path, data.clone(), CreateMode::Persistent));
            }
        }
        ops
    }
}
