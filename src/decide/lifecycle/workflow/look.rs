//! The workflow steps of a job on this instance that run on a look: a downstream's registration
//! under its upstreams, the starts due (`{run}@start`, created once), this instance's items of
//! the runs started (run, or recorded skipped), and the leader's deletion of old runs' records.

use std::collections::BTreeMap;

use crate::decide::workflow::records::{
    prune, starts_due, Decision, ItemRecord, RunRecords, Upstream, KEEP_RUNS,
};
use crate::decide::workflow::run::{ItemEnd, RunId};
use crate::model::ExecutionSource;
use crate::model::{CreateMode, Op};
use crate::paths::JobNode;
use crate::types::{JobName, ShardItem};
use crate::view::ServerStatus;

use super::super::{Command, Facts, JobMachine, Purpose, WriteMode};
use super::{instant, records_of, Flow, REMEMBERED};

impl JobMachine {
    /// The records a downstream job needs: its own `shardcron/workflow` and, under each
    /// upstream, `shardcron/workflow` and `shardcron/downstream/{job}`. A missing upstream is
    /// reported.
    pub(super) fn workflow_ensure(&mut self, facts: &dyn Facts, out: &mut Vec<Command>) {
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
    pub(super) fn workflow_look(&mut self, facts: &dyn Facts, out: &mut Vec<Command>) {
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
        self.workflow_end_dead(&own, facts, out);
    }

    /// The leader of a job without failover ends `failed` the records of items whose instance
    /// died mid-item (`running:{gone}`): nobody runs them again (the job asked for no
    /// failover), and the run ends, so its downstreams go on as their policy says. Each set is
    /// guarded by the record's version (0 while it runs): an end its owner wrote first stands.
    /// With failover, the claim of the item takes the record over instead.
    fn workflow_end_dead(
        &mut self,
        own: &BTreeMap<RunId, RunRecords>,
        facts: &dyn Facts,
        out: &mut Vec<Command>,
    ) {
        if self.config.config().failover {
            return;
        }
        let Some(flow) = self.flow.as_deref_mut() else {
            return;
        };
        let view = facts.view();
        if view.leader.as_ref() != Some(&self.me) {
            return;
        }
        let mut ops = Vec::new();
        for (run, records) in own {
            for (item, (record, _)) in &records.items {
                let ItemRecord::Running(who) = record else {
                    continue;
                };
                let name = format!("{run}@{item}");
                if view.instances.iter().any(|i| i.as_str() == who)
                    || flow.ended_dead.contains(&name)
                {
                    continue;
                }
                if flow.ended_dead.len() == REMEMBERED {
                    flow.ended_dead.pop_front();
                }
                flow.ended_dead.push_back(name.clone());
                ops.push(Op::Set {
                    path: JobNode::WorkflowRecord(name).to_path(&self.job),
                    data: ItemEnd::Failed.as_str().into(),
                    version: Some(0),
                });
            }
        }
        drop(view);
        if ops.is_empty() {
            return;
        }
        out.push(Command::Write {
            ops,
            mode: WriteMode::Tolerant,
            then: Purpose::WorkflowEnd,
        });
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
            if !settled
                && records.items.len() as u64 >= u64::from(self.config.sharding_total_count())
            {
                continue; // every item of it has a record: nothing waits on a plan
            }
            if !settled {
                // Not sharded (a job without a cron is sharded when its leader asks, as a fire
                // does): the leader asks once; the committed plan's events bring the next look.
                // Asked for every reshard the run needs, not once per run: a node lost while a
                // run waits needs another.
                let leads = view.leader.as_ref() == Some(&self.me);
                drop(view);
                if leads && !self.resharding {
                    self.resharding = true;
                    out.push(Command::SetResharding(true));
                    out.push(Command::AskReshard);
                }
                return;
            }
            let unrecorded =
                |i: &ShardItem| !records.items.contains_key(i) && !flow.launched(run, *i);
            let mine: Vec<ShardItem> = view
                .items
                .iter()
                .filter(|(i, v)| {
                    v.owner.as_ref() == Some(&self.me)
                        && !v.disabled
                        && unrecorded(i)
                        && !super::super::catchup::busy(&self.local, **i, v, &self.me)
                })
                .map(|(i, _)| *i)
                .collect();
            // Items disabled by an operator do not run: recorded skipped, so the run ends.
            let off: Vec<ShardItem> = (view.items.iter())
                .filter(|(i, v)| v.owner.as_ref() == Some(&self.me) && v.disabled && unrecorded(i))
                .map(|(i, _)| *i)
                .collect();
            if mine.is_empty() && off.is_empty() {
                continue;
            }
            drop(view);
            let (decision, run) = (decision.clone(), run.clone());
            self.flow_mut()
                .remember_launch(run.clone(), [&mine[..], &off[..]].concat());
            let mut skipped = off;
            match decision {
                Decision::Run if !mine.is_empty() => {
                    self.flow_mut().current = Some(run.clone());
                    let only = Some(mine.into_iter().collect());
                    self.fire_only(ExecutionSource::Workflow, instant(&run), only, facts, out);
                }
                Decision::Run => {}
                Decision::Skip { .. } => skipped.extend(mine),
            }
            if !skipped.is_empty() {
                out.push(skip_records(&self.job, &run, &skipped));
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

    pub(super) fn flow_mut(&mut self) -> &mut Flow {
        self.flow.get_or_insert_with(Box::default)
    }
}

/// The creation of `items`' records of `run` as skipped (op by op: one already there stands).
fn skip_records(job: &JobName, run: &RunId, items: &[ShardItem]) -> Command {
    let ops = items
        .iter()
        .map(|i| {
            let path = JobNode::WorkflowRecord(format!("{run}@{i}")).to_path(job);
            Op::create(path, ItemEnd::Skipped.as_str(), CreateMode::Persistent)
        })
        .collect();
    Command::Write {
        ops,
        mode: WriteMode::Tolerant,
        then: Purpose::WorkflowSkip,
    }
}
