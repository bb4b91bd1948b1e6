//! The machine's workflow steps ([`crate::decide::workflow`]): a job in a workflow (it runs after
//! other jobs, or others run after it) records each item of each workflow run under
//! `shardcron/workflow/{run}@{i}`: created `running:{me}` in the item's start write (a record
//! already there means the item ran or runs elsewhere for that run: the start fails, nothing runs
//! twice), set to its end in the run's end write. A downstream job's instances watch their
//! upstreams' records; the first that sees a run ended creates `{run}@start` once (its decision:
//! run or skip), and every instance then runs its own items for the run.
//!
//! A job nobody depends on and that depends on nobody has no [`Flow`]: its fires take one branch
//! more, nothing else.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use chrono::{DateTime, Utc};

use crate::decide::execution::RunPlan;
use crate::decide::workflow::graph::Dependency;
use crate::decide::workflow::records::{parse_records, ItemRecord, RunRecords};
use crate::decide::workflow::run::{ItemEnd, RunId};
use crate::model::ExecutionSource;
use crate::model::{CreateMode, NodeEventKind, Op};
use crate::paths::JobNode;
use crate::types::{JobName, ShardItem};

use super::{Command, Facts, Input, JobMachine, Outcome, Purpose};

mod count;
mod look;

/// The most runs remembered as asked for or launched here (older ones are in the registry).
const REMEMBERED: usize = 64;

/// A job's part in workflows on this instance.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(super) struct Flow {
    /// What the job runs after (`shardcron.after`); `None` for a root.
    after: Option<Arc<Dependency>>,
    /// Some job runs after this one (a `shardcron/downstream/{job}` record was seen).
    downstream: bool,
    /// `{run}@start` creations asked for and not failed.
    requested: VecDeque<RunId>,
    /// The workflow run this instance's step fires for (one at a time here).
    current: Option<RunId>,
    /// Items launched or recorded skipped here per run, which the mirror may not show yet.
    launched: VecDeque<(RunId, Vec<ShardItem>)>,
    /// Old records' deletion is under way.
    pruning: bool,
    /// Records of dead instances' items ended here, which the mirror may not show yet.
    ended_dead: VecDeque<String>,
    /// The runs reported ended (the leader's count, `workflow/count.rs`).
    counted: count::Counted,
}

impl Flow {
    /// The flow of a config: `None` for a job that runs after no job.
    pub(super) fn for_config(config: &crate::config::ValidatedConfig) -> Option<Box<Flow>> {
        let after = config.policy().after.clone()?;
        Some(Box::new(Flow {
            after: Some(after),
            ..Flow::default()
        }))
    }

    fn launched(&self, run: &RunId, item: ShardItem) -> bool {
        self.launched
            .iter()
            .any(|(r, items)| r == run && items.contains(&item))
    }

    fn remember_launch(&mut self, run: RunId, items: Vec<ShardItem>) {
        if self.launched.len() == REMEMBERED {
            self.launched.pop_front();
        }
        self.launched.push_back((run, items));
    }
}

/// The root instant a run id names (`None` for a run started by hand).
fn instant(run: &RunId) -> Option<DateTime<Utc>> {
    run.instant()
}

/// What an input means to the workflow steps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Heard {
    /// A chance to start or run a workflow run: look.
    look: bool,
    /// The mirror was re-listed.
    relisted: bool,
    /// This instance registered (or the mirror was re-listed): a downstream's records are ensured.
    registered: bool,
    /// An old records' deletion ended.
    pruned: bool,
}

/// Whether `input` is a chance for a workflow step: the inputs after which a catch-up looks,
/// workflow records (the job's own, and its upstreams' that the session forwards), the
/// registration, and a start write a new plan refused (its mirror events may have come first).
pub(super) fn heard(input: &Input) -> bool {
    match input {
        Input::Written {
            purpose: Purpose::Start | Purpose::StartTolerant,
            outcome: Outcome::Stale,
        } => true,
        Input::Event {
            node: JobNode::WorkflowRecord(_) | JobNode::DownstreamJob(_) | JobNode::Workflow,
            ..
        } => true,
        Input::Event {
            node: JobNode::Instance(_) | JobNode::LeaderElectionInstance,
            kind: NodeEventKind::Created,
        } => true,
        Input::Written {
            purpose: Purpose::WorkflowStart | Purpose::WorkflowPrune | Purpose::WorkflowEnd,
            ..
        } => true,
        other => super::catchup::looks_after(other),
    }
}

impl JobMachine {
    /// The workflow run a run of `source` at `scheduled` belongs to, if any: a cron fire of a
    /// root that has downstream jobs starts one, as does a trigger of the whole root that names
    /// one (`shardcron/trigger/{me}`); a workflow step runs in its upstreams'.
    pub(super) fn workflow_run(
        &self,
        source: ExecutionSource,
        scheduled: Option<DateTime<Utc>>,
    ) -> Option<RunId> {
        let flow = self.flow.as_deref()?;
        let root = flow.after.is_none() && flow.downstream;
        match source {
            ExecutionSource::Workflow => flow.current.clone(),
            ExecutionSource::Normal if root => {
                Some(RunId::scheduled(scheduled?.timestamp_millis()))
            }
            ExecutionSource::Manual if root => {
                let manual = self.manual.as_deref()?;
                manual.items.is_none().then(|| manual.workflow.clone())?
            }
            _ => None,
        }
    }

    /// Adds the workflow records to a planned run's start write: `running:{me}` for the items
    /// that run, `skipped` for those its fire flags or skips (they are not this run's) and for
    /// this instance's `disabled` items.
    pub(super) fn workflow_start_ops(
        &self,
        source: ExecutionSource,
        scheduled: Option<DateTime<Utc>>,
        plan: &mut RunPlan,
        disabled: &[ShardItem],
    ) {
        let Some(run) = self.workflow_run(source, scheduled) else {
            return;
        };
        let record =
            |i: &ShardItem| JobNode::WorkflowRecord(format!("{run}@{i}")).to_path(&self.job);
        let running = ItemRecord::running(self.me.as_str());
        for i in &plan.run {
            let op = Op::create(record(i), running.as_bytes(), CreateMode::Persistent);
            plan.start_ops.push(op);
        }
        for i in plan.flagged.iter().chain(&plan.skipped).chain(disabled) {
            let skipped = ItemEnd::Skipped.as_str();
            plan.start_ops
                .push(Op::create(record(i), skipped, CreateMode::Persistent));
        }
    }

    /// The end of a workflow run's items, for the run's end write.
    pub(super) fn workflow_end_ops(&self, run_id: u64, failed: &[ShardItem]) -> Vec<Op> {
        let Some(run) = self.run(run_id) else {
            return Vec::new();
        };
        let Some(workflow) = &run.workflow else {
            return Vec::new();
        };
        let bad = if run.timed_out {
            ItemEnd::TimedOut
        } else {
            ItemEnd::Failed
        };
        run.items
            .iter()
            .map(|i| {
                let end = if failed.contains(i) {
                    bad
                } else {
                    ItemEnd::Succeeded
                };
                Op::Set {
                    path: JobNode::WorkflowRecord(format!("{workflow}@{i}")).to_path(&self.job),
                    data: end.as_str().into(),
                    version: None,
                }
            })
            .collect()
    }

    /// The workflow run whose items a failover claim takes over, and its instant: the newest run
    /// in which every claimed item's record names an instance that is gone (`running:{dead}`).
    /// The claim is exclusive (one taker per item), so the taker's run ends the records.
    pub(super) fn workflow_taken(
        &self,
        items: &[ShardItem],
        facts: &dyn Facts,
    ) -> Option<(RunId, Option<DateTime<Utc>>)> {
        self.flow.as_ref()?;
        let view = facts.view();
        let own = records_of(facts, &self.job);
        let dead = |record: &ItemRecord| match record {
            ItemRecord::Running(who) => !view.instances.iter().any(|i| i.as_str() == who),
            ItemRecord::Ended(_) => false,
        };
        let (run, _) = own.iter().rev().find(|(_, records)| {
            items
                .iter()
                .all(|i| records.items.get(i).is_some_and(|(record, _)| dead(record)))
        })?;
        Some((run.clone(), instant(run)))
    }

    /// A start write was refused by a new plan: if it was a workflow step's, nothing of it was
    /// written (one multi-op), so its items are no longer launched here and the look that
    /// follows launches them again under the plan the mirror shows, on the owners it names
    /// (while the mirror still shows the old plan, the write is refused again). Each item runs
    /// once: its record is created in its start write, and a second creation fails. Returns
    /// whether the start was a workflow step's (owed, so not a missed fire).
    pub(super) fn workflow_start_lost(&mut self, source: ExecutionSource, plan: &RunPlan) -> bool {
        let Some(flow) = self.flow.as_deref_mut() else {
            return false;
        };
        if source != ExecutionSource::Workflow {
            return false;
        }
        let Some(run) = flow.current.take() else {
            return false;
        };
        let lost = |i: &ShardItem| {
            [&plan.run, &plan.flagged, &plan.skipped]
                .iter()
                .any(|l| l.contains(i))
        };
        for (_, items) in flow.launched.iter_mut().filter(|(r, _)| *r == run) {
            items.retain(|i| !lost(i));
        }
        true
    }

    /// A `shardcron/downstream/{job}` record appeared: this job's runs are workflow runs now.
    pub(super) fn downstream_seen(&mut self) {
        self.flow.get_or_insert_with(Box::default).downstream = true;
    }

    /// What `input` means to the workflow steps (nothing, for a job outside any workflow).
    pub(super) fn workflow_heard(&self, input: &Input) -> Heard {
        let relisted = matches!(input, Input::Resynced);
        // A config read may set `shardcron.after`: register under the upstreams it names.
        let config = matches!(input, Input::Config(_));
        if self.flow.is_none() && !relisted && !config {
            return Heard::default();
        }
        let registered = match input {
            Input::Event {
                node: JobNode::Instance(id),
                kind: NodeEventKind::Created,
            } => *id == self.me,
            // An upstream's config appeared (the session tells the jobs that run after it).
            Input::Event {
                node: JobNode::Workflow,
                kind: NodeEventKind::Created,
            } => true,
            _ => relisted || config,
        };
        Heard {
            look: config || heard(input),
            relisted,
            registered,
            pruned: matches!(
                input,
                Input::Written {
                    purpose: Purpose::WorkflowPrune,
                    ..
                }
            ),
        }
    }

    /// Acts on what the workflow steps heard.
    pub(super) fn workflow_after(
        &mut self,
        heard: Heard,
        facts: &dyn Facts,
        out: &mut Vec<Command>,
    ) {
        if heard.relisted {
            if facts.has_downstream() {
                self.downstream_seen();
            }
            if let Some(flow) = self.flow.as_deref_mut() {
                // The mirror is whole again: what it shows is what was done.
                flow.requested.clear();
                flow.launched.clear();
                flow.ended_dead.clear();
                flow.pruning = false;
            }
        }
        if heard.pruned {
            if let Some(flow) = self.flow.as_deref_mut() {
                flow.pruning = false;
            }
        }
        if self.flow.is_none() || !heard.look {
            return;
        }
        if heard.registered {
            self.workflow_ensure(facts, out);
        }
        self.workflow_look(facts, out);
        self.workflow_count(facts, out);
    }

    /// The config changed: `shardcron.after` may have.
    pub(super) fn workflow_reconfigured(&mut self) {
        match self.config.policy().after.clone() {
            Some(after) => self.flow_mut().after = Some(after),
            None => {
                if let Some(flow) = self.flow.as_deref_mut() {
                    flow.after = None;
                    if !flow.downstream {
                        self.flow = None;
                    }
                }
            }
        }
    }
}

/// A job's workflow records as the mirror holds them.
fn records_of(facts: &dyn Facts, job: &JobName) -> BTreeMap<RunId, RunRecords> {
    let children = facts.workflow_records(job);
    parse_records(
        children
            .iter()
            .map(|(name, data, czxid)| (name.as_str(), data.as_slice(), *czxid)),
    )
}
