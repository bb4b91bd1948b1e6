//! FailoverActor: keeps the failover nodes consistent with each job's `failover` setting. When a
//! job's configuration turns failover off, the leader removes the `failover` and `failovering`
//! records and the `leader/failover/items` marks, as ElasticJob's FailoverSettingsChangedJobListener
//! does. Taking over the items of crashed instances is planned here as well (resilience issue).

use ractor::{Actor, ActorProcessingErr, ActorRef};

use crate::paths::JobNode;
use crate::registry::Op;
use crate::types::JobName;
use crate::view::JobView;

use super::context::{apply_each_tolerant, JobEvent, SessionCtx};

/// The FailoverActor.
#[derive(Debug)]
pub(crate) struct FailoverActor;

/// Messages of the FailoverActor.
#[derive(Debug)]
pub(crate) enum FailoverMsg {
    /// A node of a job changed.
    Job(JobEvent),
    /// The mirror was re-listed.
    Resynced,
    /// A job's configuration changed.
    ConfigChanged(JobName),
}

/// State of the FailoverActor.
#[derive(Debug)]
pub(crate) struct FailoverState {
    ctx: SessionCtx,
}

/// The removals that turning failover off asks for.
pub(crate) fn clear_failover_ops(view: &JobView, job: &JobName) -> Vec<Op> {
    let mut ops = Vec::new();
    for (item, v) in &view.items {
        if v.failover.is_some() {
            ops.push(Op::delete(JobNode::ShardingFailover(*item).to_path(job)));
        }
        if v.failovering.is_some() {
            ops.push(Op::delete(JobNode::ShardingFailovering(*item).to_path(job)));
        }
    }
    for item in &view.failover_marks {
        ops.push(Op::delete(JobNode::LeaderFailoverItem(*item).to_path(job)));
    }
    ops
}

impl FailoverState {
    async fn check(&mut self, job: &JobName) {
        let Some(config) = self.ctx.config(job) else {
            return;
        };
        if config.config().failover {
            return;
        }
        let view = JobView::read(self.ctx.mirror(), job);
        if view.leader.as_ref() != Some(self.ctx.me()) {
            return;
        }
        let ops = clear_failover_ops(&view, job);
        if !ops.is_empty() {
            tracing::info!(%job, count = ops.len(), "failover turned off: clearing failover records");
            if let Err(e) = apply_each_tolerant(&*self.ctx.registry, &ops).await {
                tracing::warn!(%job, error = %e, "clearing failover records failed");
            }
        }
    }
}

impl Actor for FailoverActor {
    type Msg = FailoverMsg;
    type State = FailoverState;
    type Arguments = SessionCtx;

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        ctx: SessionCtx,
    ) -> Result<Self::State, ActorProcessingErr> {
        Ok(FailoverState { ctx })
    }

    async fn handle(
        &self,
        _myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            FailoverMsg::ConfigChanged(job) => state.check(&job).await,
            FailoverMsg::Job(ev) => {
                if matches!(ev.node, JobNode::LeaderElectionInstance) {
                    state.check(&ev.job).await;
                }
            }
            FailoverMsg::Resynced => {
                let jobs: Vec<JobName> = state
                    .ctx
                    .dir
                    .configs
                    .iter()
                    .map(|e| e.key().clone())
                    .collect();
                for job in jobs {
                    state.check(&job).await;
                }
            }
        }
        Ok(())
    }
}
