//! The SessionActor's routing: each mirror event goes to the actors that react to it (the
//! leader's, sharding's and failover's own `reaction`, the executor's `heeded`), to the jobs that
//! run after its job, and a broadcast reaches them all.

use crate::actors::context::{lock_jobs, JobEvent};
use crate::actors::failover::Reaction as FailoverReaction;
use crate::actors::leader::Reaction as LeaderReaction;
use crate::actors::mail::{ExecutorMsg, FailoverMsg, LeaderMsg, ShardingMsg};
use crate::decide::lifecycle::heed::heeded;
use crate::paths::JobNode;
use crate::registry::NodeEventKind;
use crate::types::JobName;

use super::SessionActorState;

impl SessionActorState {
    /// Notes the upstream jobs `job` runs after, from its spec (nothing for most jobs).
    pub(super) fn note_upstreams(&mut self, job: &JobName) {
        let key = crate::decide::workflow::graph::AFTER_KEY;
        let after = lock_jobs(&self.ctx.node)
            .get(job)
            .and_then(|spec| spec.config.props.get(key).cloned());
        if let Some(after) = after {
            self.note_after(job, &after);
        }
    }

    /// Notes the upstreams a config of `job` written at runtime names (its executor reads and
    /// validates the config itself; a config that does not parse names none here).
    fn note_upstreams_written(&mut self, job: &JobName) {
        if !self.executors.contains_key(job) {
            return;
        }
        let key = crate::decide::workflow::graph::AFTER_KEY;
        let path = JobNode::Config.to_path(job);
        let after = (self.ctx.mirror().data(&path))
            .and_then(|data| String::from_utf8(data.to_vec()).ok())
            .filter(|yaml| yaml.contains(key))
            .and_then(|yaml| crate::config::JobConfig::from_yaml(&yaml).ok())
            .and_then(|config| config.props.get(key).cloned());
        if let Some(after) = after {
            self.note_after(job, &after);
        }
    }

    fn note_after(&mut self, job: &JobName, after: &str) {
        for up in after.split(',').filter_map(|n| JobName::new(n.trim()).ok()) {
            let downs = self.downstream.entry(up).or_default();
            if !downs.contains(job) {
                downs.push(job.clone());
            }
        }
    }

    /// Hands a mirror event to the actors that react to it.
    pub(super) fn route(&mut self, ev: JobEvent) {
        // Each actor gets the events it reacts to (its own `reaction`, the executor's
        // `heeded`): most of a registration's or a fire's events concern one of them.
        let leads = crate::actors::leader::reaction(&ev.node, ev.kind);
        if let (Some(r), false) = (&self.leader, leads == LeaderReaction::Nothing) {
            let _ = r.send_message(LeaderMsg::Job(ev.clone()));
        }
        let shards = crate::actors::sharding::reaction(&ev.node, ev.kind).any();
        if let (Some(r), true) = (&self.sharding, shards) {
            let _ = r.send_message(ShardingMsg::Job(ev.clone()));
        }
        let fails_over = crate::actors::failover::reaction(&ev, self.ctx.me());
        if let (Some(r), false) = (&self.failover, fails_over == FailoverReaction::Nothing) {
            let _ = r.send_message(FailoverMsg::Job(ev.clone()));
        }
        if let (JobNode::Config, NodeEventKind::Created | NodeEventKind::DataChanged) =
            (&ev.node, ev.kind)
        {
            // A config written at runtime may name upstreams that do not exist yet.
            self.note_upstreams_written(&ev.job);
        }
        if let (JobNode::Config, NodeEventKind::Created) = (&ev.node, ev.kind) {
            // An upstream job appeared: the jobs here that run after it register under it.
            for down in self.downstream.get(&ev.job).cloned().unwrap_or_default() {
                if let Some(r) = self.executors.get(&down) {
                    let _ = r.send_message(ExecutorMsg::Job(JobEvent {
                        job: down,
                        node: JobNode::Workflow,
                        kind: NodeEventKind::Created,
                    }));
                }
            }
        }
        if let JobNode::WorkflowRecord(_) = &ev.node {
            // The jobs that run after this one watch its workflow records.
            let under = JobNode::Downstream.to_path(&ev.job);
            for down in self.ctx.mirror().children(&under) {
                let Ok(down) = JobName::new(down.as_str()) else {
                    continue;
                };
                if let Some(r) = self.executors.get(&down) {
                    let _ = r.send_message(ExecutorMsg::Job(JobEvent {
                        job: down,
                        node: ev.node.clone(),
                        kind: ev.kind,
                    }));
                }
            }
        }
        let heeded = heeded(&ev.node, ev.kind, self.ctx.me());
        if let (Some(r), true) = (self.executors.get(&ev.job), heeded) {
            let _ = r.send_message(ExecutorMsg::Job(ev));
        }
    }

    pub(super) fn to_executors(&self, make: impl Fn() -> ExecutorMsg) {
        for e in self.executors.values() {
            let _ = e.send_message(make());
        }
    }

    pub(super) fn broadcast(
        &self,
        make: impl Fn() -> (LeaderMsg, ShardingMsg, FailoverMsg, ExecutorMsg),
    ) {
        let (l, s, f, _) = make();
        if let Some(r) = &self.leader {
            let _ = r.send_message(l);
        }
        if let Some(r) = &self.sharding {
            let _ = r.send_message(s);
        }
        if let Some(r) = &self.failover {
            let _ = r.send_message(f);
        }
        self.to_executors(|| make().3);
    }
}
