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
use crate::decide::workflow::records::{
    parse_records, prune, starts_due, Decision, ItemRecord, RunRecords, Upstream, KEEP_RUNS,
};
use crate::decide::workflow::run::{ItemEnd, RunId};
use crate::job::ExecutionSource;
use crate::paths::JobNode;
use crate::registry::{CreateMode, NodeEventKind, Op};
use crate::types::{JobName, ShardItem};
use crate::view::ServerStatus;

use super::{Command, Facts, Input, JobMachine, Purpose, WriteMode};

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
    /// Items launched or recorded skipped here per run, which the mirror may not show yet.
    launched: VecDeque<(RunId, Vec<ShardItem>)>,
    /// Old records' deletion is under way.
    pruning: bool,
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
    run.as_str()
        .parse::<i64>()
        .ok()
        .and_then(DateTime::from_timestamp_millis)
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
/// workflow records (the job's own, and its upstreams' that the session forwards), and the
/// registration.
pub(super) fn heard(input: &Input) -> bool {
    match input {
        Input::Event {
            node: JobNode::WorkflowRecord(_) | JobNode::DownstreamJob(_) | JobNode::Workflow,
            ..
        } => true,
        Input::Event {
            node: JobNode::Instance(_),
            kind: NodeEventKind::Created,
        } => true,
        Input::Written {
            purpose: Purpose::WorkflowStart | Purpose::WorkflowPrune,
            ..
        } => true,
        other => super::catchup::looks_after(other),
    }
}

impl JobMachine {
    /// The workflow run a run of `source` at `scheduled` belongs to, if any: a cron fire of a
    /// root that has downstream jobs starts one; a workflow step runs in its upstreams'.
    pub(super) fn workflow_run(
        &self,
        source: ExecutionSource,
        scheduled: Option<DateTime<Utc>>,
    ) -> Option<RunId> {
        let flow = self.flow.as_deref()?;
        let at = scheduled?;
        let starts = match source {
            ExecutionSource::Workflow => true,
            ExecutionSource::Normal => flow.after.is_none() && flow.downstream,
            _ => false,
        };
        starts.then(|| RunId::scheduled(at.timestamp_millis()))
    }

    /// Adds the workflow records to a planned run's start write: `running:{me}` for the items
    /// that run, `skipped` for those its fire flags or skips (they are not this run's).
    pub(super) fn workflow_start_ops(
        &self,
        source: ExecutionSource,
        scheduled: Option<DateTime<Utc>>,
        plan: &mut RunPlan,
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
        for i in plan.flagged.iter().chain(&plan.skipped) {
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

    /// The records a downstream job needs: its own `shardcron/workflow` and, under each
    /// upstream, `shardcron/workflow` and `shardcron/downstream/{job}`. A missing upstream is
    /// reported.
    fn workflow_ensure(&mut self, facts: &dyn Facts, out: &mut Vec<Command>) {
        let Some(after) = self.flow.as_deref().and_then(|f| f.after.clone()) else {
            return;
        };
        let create = |node: JobNode, job: &JobName| {
            Op::create(node.to_path(job), Vec::new(), CreateMode::Persistent)
        };
        let mut ops = Vec::new();
        for up in &after.after {
            if !facts.job_exists(up) {
                out.push(Command::Warn(format!(
                    "shardcron.after names job {up}, which does not exist: this job waits for it"
                )));
                continue;
            }
            if facts.downstream_since(up, &self.job).is_none() {
                ops.push(create(JobNode::Extensions, up));
                ops.push(create(JobNode::Workflow, up));
                ops.push(create(JobNode::Downstream, up));
                ops.push(create(JobNode::DownstreamJob(self.job.clone()), up));
            }
        }
        if !ops.is_empty() {
            ops.push(create(JobNode::Extensions, &self.job));
            ops.push(create(JobNode::Workflow, &self.job));
            out.push(Command::Write {
                ops,
                mode: WriteMode::Tolerant,
                then: Purpose::WorkflowEnsure,
            });
        }
    }

    /// Starts or skips the workflow runs due, runs this instance's items of the runs started,
    /// and (the leader) deletes old runs' records.
    fn workflow_look(&mut self, facts: &dyn Facts, out: &mut Vec<Command>) {
        if !self.may_start() {
            return;
        }
        let own = records_of(facts, &self.job);
        let Some(flow) = self.flow.as_deref_mut() else {
            return;
        };
        if let Some(dependency) = flow.after.clone() {
            let upstreams: BTreeMap<JobName, Upstream> = dependency
                .after
                .iter()
                .map(|up| {
                    let upstream = Upstream {
                        total: facts.item_total(up),
                        since: facts.downstream_since(up, &self.job),
                        runs: records_of(facts, up),
                    };
                    (up.clone(), upstream)
                })
                .collect();
            for (run, decision) in starts_due(&dependency, &upstreams, &own) {
                if flow.requested.contains(&run) {
                    continue;
                }
                if flow.requested.len() == REMEMBERED {
                    flow.requested.pop_front();
                }
                flow.requested.push_back(run.clone());
                let path = JobNode::WorkflowRecord(format!("{run}@start")).to_path(&self.job);
                out.push(Command::Write {
                    ops: vec![Op::create(path, decision.encode(), CreateMode::Persistent)],
                    mode: WriteMode::Direct,
                    then: Purpose::WorkflowStart,
                });
            }
            self.workflow_launch(&own, facts, out);
        }
        self.workflow_prune(&own, facts, out);
    }

    /// Runs (or records skipped) this instance's items of the first started run that has some
    /// without a record: one workflow run at a time here, as a backfill's.
    fn workflow_launch(
        &mut self,
        own: &BTreeMap<RunId, RunRecords>,
        facts: &dyn Facts,
        out: &mut Vec<Command>,
    ) {
        let busy = (self.runs.iter()).any(|(_, r)| r.source == ExecutionSource::Workflow);
        if busy || self.starting.is_some() || self.parked.is_some() || self.held.is_some() {
            return;
        }
        let view = facts.view();
        if view.server_status(self.me.ip()) == ServerStatus::Disabled {
            return;
        }
        let unsharded = !view.items.values().any(|v| v.has_owner_node);
        let settled = !(view.sharding_necessary || view.sharding_processing || unsharded);
        let Some(flow) = self.flow.as_deref() else {
            return;
        };
        for (run, records) in own {
            let Some(Some(decision)) = &records.start else {
                continue;
            };
            if !settled {
                // Not sharded yet (a job without a cron is sharded at its first fire): the fire
                // parks until the plan is committed, then runs the items this instance owns.
                if flow.launched.iter().any(|(r, _)| r == run) {
                    return;
                }
                drop(view);
                self.flow_mut().remember_launch(run.clone(), Vec::new());
                self.fire_only(ExecutionSource::Workflow, instant(run), None, facts, out);
                return;
            }
            let mine: Vec<ShardItem> = view
                .items
                .iter()
                .filter(|(i, v)| {
                    v.owner.as_ref() == Some(&self.me)
                        && !v.disabled
                        && !records.items.contains_key(i)
                        && !flow.launched(run, **i)
                        && !super::catchup::busy(&self.local, **i, v, &self.me)
                })
                .map(|(i, _)| *i)
                .collect();
            if mine.is_empty() {
                continue;
            }
            drop(view);
            self.flow_mut().remember_launch(run.clone(), mine.clone());
            match decision {
                Decision::Run => {
                    let only = Some(mine.into_iter().collect());
                    self.fire_only(ExecutionSource::Workflow, instant(run), only, facts, out);
                }
                Decision::Skip { .. } => {
                    let ops = mine
                        .iter()
                        .map(|i| {
                            let path = JobNode::WorkflowRecord(format!("{run}@{i}"));
                            let skipped = ItemEnd::Skipped.as_str();
                            Op::create(path.to_path(&self.job), skipped, CreateMode::Persistent)
                        })
                        .collect();
                    out.push(Command::Write {
                        ops,
                        mode: WriteMode::Tolerant,
                        then: Purpose::WorkflowSkip,
                    });
                }
            }
            return;
        }
    }

    /// The leader deletes the records of the runs older than the newest [`KEEP_RUNS`].
    fn workflow_prune(
        &mut self,
        own: &BTreeMap<RunId, RunRecords>,
        facts: &dyn Facts,
        out: &mut Vec<Command>,
    ) {
        if own.len() <= KEEP_RUNS || self.flow.as_deref().is_none_or(|f| f.pruning) {
            return;
        }
        if facts.view().leader.as_ref() != Some(&self.me) {
            return;
        }
        let ops: Vec<Op> = prune(own, KEEP_RUNS)
            .into_iter()
            .map(|name| Op::delete(JobNode::WorkflowRecord(name).to_path(&self.job)))
            .collect();
        self.flow_mut().pruning = true;
        out.push(Command::Write {
            ops,
            mode: WriteMode::Tolerant,
            then: Purpose::WorkflowPrune,
        });
    }

    fn flow_mut(&mut self) -> &mut Flow {
        self.flow.get_or_insert_with(Box::default)
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
