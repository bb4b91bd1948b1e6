//! The jobs that balance over the namespace: which of them run here, when the namespace has been
//! quiet long enough for a look, and the look itself, which raises the flag of each such job this
//! instance leads that drifted from the namespace's plan.

use ractor::ActorRef;

use crate::actors::context::SessionCtx;
use crate::actors::mail::ShardingMsg;
use crate::decide::resharding;
use crate::paths::JobNode;
use crate::types::JobName;
use crate::view::JobView;

use super::{ShardingState, REBALANCE_AFTER};

impl ShardingState {
    /// Raises the flag of each balanced job this instance leads that drifted from the
    /// namespace's plan, unless a commit is in flight somewhere (its end brings another look).
    pub(super) fn rebalance(&mut self) {
        let ctx = &self.ctx;
        let mirror = ctx.mirror();
        let mut ops = Vec::new();
        let now = ctx.node.clock.now().timestamp_millis();
        let drifted = self.namespace.drifted(mirror, &ctx.node.strategies, now);
        if drifted.is_empty() {
            return;
        }
        let committing = mirror.children("/").into_iter().any(|job| {
            JobName::new(job.as_str())
                .is_ok_and(|j| mirror.exists(&JobNode::LeaderShardingProcessing.to_path(&j)))
        });
        if committing {
            return;
        }
        for job in drifted {
            if ctx.config(&job).is_none() {
                continue;
            }
            let view = JobView::read(mirror, &job);
            if let Some(op) = resharding::rebalance_flag(&view, &job, ctx.me()) {
                tracing::info!(%job, "the job drifted from the namespace's balanced plan: resharding");
                ops.push((job, op));
            }
        }
        if ops.is_empty() {
            return;
        }
        let ctx = ctx.clone();
        tokio::spawn(async move {
            for (job, op) in ops {
                ctx.raise_flag(&job, op).await;
            }
        });
    }

    /// Notes a change to `job` that may move the balanced plan; a look follows once the namespace
    /// is quiet. Nothing is kept while no job here balances over the namespace: the cache is read
    /// again whole when one starts to.
    pub(super) fn note_change(&mut self, myself: &ActorRef<ShardingMsg>, job: &JobName) {
        self.classify(job);
        if !self.runs_balanced() {
            return;
        }
        self.namespace.touch(job);
        self.schedule_look(myself);
    }

    /// Asks for a look at the balanced jobs once the namespace has been quiet for a while.
    pub(super) fn schedule_look(&mut self, myself: &ActorRef<ShardingMsg>) {
        self.last_change = tokio::time::Instant::now();
        if !self.rebalance_due {
            self.rebalance_due = true;
            myself.send_after(REBALANCE_AFTER, || ShardingMsg::Rebalance);
        }
    }

    /// Whether this instance runs a job that balances over the namespace.
    pub(super) fn runs_balanced(&mut self) -> bool {
        let ctx = &self.ctx;
        !self
            .balanced_jobs
            .get_or_insert_with(|| {
                ctx.configs
                    .iter()
                    .filter(|e| balanced(ctx, e.key()))
                    .map(|e| e.key().clone())
                    .collect()
            })
            .is_empty()
    }

    /// Whether `job` balances over the namespace is looked at again (its config, or whether it runs
    /// here, may have changed). When the first balanced job appears, the namespace cache, not kept
    /// until then, is read whole.
    fn classify(&mut self, job: &JobName) {
        let Some(jobs) = self.balanced_jobs.as_mut() else {
            return;
        };
        let was = !jobs.is_empty();
        if balanced(&self.ctx, job) {
            jobs.insert(job.clone());
        } else {
            jobs.remove(job);
        }
        if !was && !jobs.is_empty() {
            self.namespace.relist();
        }
    }
}

/// Whether `job`'s strategy balances over the namespace.
pub(super) fn balanced(ctx: &SessionCtx, job: &JobName) -> bool {
    ctx.config(job).is_some_and(|config| {
        ctx.node
            .strategies
            .get(config.config().job_sharding_strategy_type.as_deref())
            .is_ok_and(|s| s.uses_namespace_load())
    })
}
