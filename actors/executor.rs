//! ExecutorActor: one per job. It registers the job on the session, plans each fire from the mirror
//! (no registry read), writes the `running` markers in one multi-op, hands the items to a run task,
//! on `RunFinished` queues the removal of the markers (one multi-op, batched with every other job's
//! of the moment), and on `RunEnded` runs a misfire catch-up or a queued manual trigger, and
//! answers a pending drain. A run counts as running until `RunEnded`. Waiting for a reshard is a
//! parked fire resumed by the event that ends it.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use tokio_util::sync::CancellationToken;

use crate::config::ValidatedConfig;
use crate::decide::execution::{plan_run, FireSettings, LocalRuns};
use crate::decide::failover;
use crate::decide::prepare::{plan_prepare, release_ops};
use crate::events::EngineEvent;
use crate::job::handlers::{ErrorHandler, Listeners};
use crate::job::{ExecutionSource, JobError, ReshardingFlag, ShardingContext};
use crate::paths::JobNode;
use crate::registry::{CreateMode, NodeEventKind, Op, RegistryError, SessionState};
use crate::types::{JobName, ShardItem};
use crate::view::{JobView, ServerStatus};

use super::batch::Answer;
use super::context::{apply_each_tolerant, JobEvent, JobSpec, SessionCtx};
use super::failover::FailoverMsg;
use super::leader::LeaderMsg;
use super::register::{register, registry_config};
use super::run::{spawn_run, task_id, RunReport, RunRequest};
use super::sharding::ShardingMsg;
use super::trigger::TriggerMsg;

/// The stop reason of an executor whose job was removed (API, operator shutdown of this instance,
/// job deleted from the registry): its supervisor forgets the job instead of restarting it.
pub(crate) const JOB_REMOVED: &str = "job removed";

/// The ExecutorActor.
#[derive(Debug)]
pub(crate) struct ExecutorActor;

/// Messages of the ExecutorActor.
#[derive(Debug)]
pub(crate) enum ExecutorMsg {
    /// The cron fires soon, for `scheduled`: write the free items' `running` markers now so the
    /// fire itself needs no write.
    Prepare {
        /// The instant the cron names.
        scheduled: DateTime<Utc>,
    },
    /// The cron fired for `scheduled`.
    Fire {
        /// The instant the cron named.
        scheduled: DateTime<Utc>,
    },
    /// Run every owned item once now (API or `trigger/{instanceId}`); queued behind a running run.
    TriggerNow,
    /// A run's task ended: its items are done.
    RunFinished(Box<RunReport>),
    /// A finished run's end write (its markers removed) has its outcome; the run is over.
    RunEnded {
        /// The run.
        run_id: u64,
        /// The end write's outcome.
        outcome: Result<(), RegistryError>,
    },
    /// A node of this job changed.
    Job(JobEvent),
    /// The mirror was re-listed.
    Resynced,
    /// The session was disconnected or reconnected.
    SessionState(SessionState),
    /// Stop firing; reply once no item runs.
    Drain(RpcReplyPort<()>),
    /// The job is removed from this node: stop firing and stop.
    Remove,
    /// The FailoverActor claimed these items of a crashed instance for this one: run them now
    /// (source `Failover`), whatever runs already; the run's end removes the taker's records.
    FailoverClaimed(Vec<ShardItem>),
    /// Whether no run of this job is in progress here (the FailoverActor claims only then).
    IsIdle(RpcReplyPort<bool>),
    /// The session has been disconnected too long: cancel every running item (cooperative jobs
    /// stop before a survivor may take them over).
    CancelRunning,
}

/// Arguments of the ExecutorActor.
#[derive(Debug)]
pub(crate) struct ExecutorArgs {
    pub(crate) ctx: SessionCtx,
    pub(crate) spec: Arc<JobSpec>,
}

#[derive(Debug)]
struct ActiveRun {
    items: BTreeSet<ShardItem>,
    end_ops: Vec<Op>,
    tokens: HashMap<ShardItem, CancellationToken>,
}

/// The runs of one job in flight: usually none or one, so a short vector that gives its memory
/// back when empty (ten thousand idle jobs hold nothing here).
#[derive(Debug, Default)]
struct RunTable(Vec<(u64, ActiveRun)>);

impl RunTable {
    fn insert(&mut self, id: u64, run: ActiveRun) {
        // Room for this one run only: a first push would make room for four.
        self.0.reserve_exact(1);
        self.0.push((id, run));
    }

    fn get(&self, id: &u64) -> Option<&ActiveRun> {
        self.0.iter().find(|(i, _)| i == id).map(|(_, run)| run)
    }

    fn remove(&mut self, id: &u64) -> Option<ActiveRun> {
        let at = self.0.iter().position(|(i, _)| i == id)?;
        let (_, run) = self.0.swap_remove(at);
        if self.0.is_empty() {
            self.0 = Vec::new();
        }
        Some(run)
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn values(&self) -> impl Iterator<Item = &ActiveRun> {
        self.0.iter().map(|(_, run)| run)
    }
}

/// State of the ExecutorActor.
#[derive(Debug)]
pub(crate) struct ExecutorState {
    ctx: SessionCtx,
    spec: Arc<JobSpec>,
    job: JobName,
    config: Arc<ValidatedConfig>,
    listeners: Listeners,
    error_handler: Arc<dyn ErrorHandler>,
    runs: RunTable,
    local: LocalRuns,
    next_run: u64,
    /// A fire waiting for resharding to finish.
    parked: Option<(ExecutionSource, Option<DateTime<Utc>>)>,
    trigger_queued: bool,
    disconnected: bool,
    drains: Vec<RpcReplyPort<()>>,
    draining: bool,
    instance_node_pending: bool,
    resharding: ReshardingFlag,
}

impl ExecutorState {
    fn settings(&self) -> FireSettings {
        let c = self.config.config();
        FireSettings {
            monitor_execution: c.monitor_execution,
            failover: c.failover,
            misfire: c.misfire,
        }
    }

    fn refuse(&self, why: String) {
        let _ = self
            .error_handler
            .handle(&self.job, None, &JobError::Refused(why));
    }

    /// Plans and starts a run; `only` limits it to some items (misfire catch-up).
    async fn start(
        &mut self,
        myself: &ActorRef<ExecutorMsg>,
        source: ExecutionSource,
        scheduled: Option<DateTime<Utc>>,
        only: Option<BTreeSet<ShardItem>>,
    ) {
        if self.draining || self.disconnected {
            tracing::debug!(job = %self.job, "fire skipped: draining or disconnected");
            Box::pin(self.release_marks()).await;
            return;
        }
        let me = self.ctx.me().clone();
        let view = JobView::read(self.ctx.mirror(), &self.job);
        if view.server_status(me.ip()) == ServerStatus::Disabled {
            Box::pin(self.release_marks()).await;
            return;
        }
        // A job never sharded yet (its first leader is still being elected) waits for its
        // first plan as for a reshard.
        let unsharded = !view.items.values().any(|v| v.has_owner_node);
        if view.sharding_necessary || view.sharding_processing || unsharded {
            // The leader waits for running items to end: markers written ahead must go.
            Box::pin(self.release_marks()).await;
            self.parked = Some((source, scheduled));
            self.resharding.set(true);
            if view.leader.as_ref() == Some(&me) {
                if let Some(s) = self.ctx.sharding() {
                    let _ = s.send_message(ShardingMsg::ShardIfNecessary(self.job.clone()));
                }
            }
            return;
        }
        if let Some(limit) = self.config.max_time_diff() {
            let skew = self.ctx.node.clock_skew();
            if skew.is_some_and(|s| s > limit) {
                self.refuse(format!(
                    "local clock differs from the registry's by {skew:?}, over {limit:?}"
                ));
                Box::pin(self.release_marks()).await;
                return;
            }
        }
        let plan = plan_run(
            &view,
            &self.job,
            &me,
            self.settings(),
            &self.local,
            only.as_ref(),
        );
        drop(view);
        if let Err(e) = self.ctx.writes.apply(plan.start_ops.clone()).await {
            if e.is_node_exists() || e.is_no_node() {
                // The mirror was behind our own earlier writes: apply what still applies.
                if let Err(e) =
                    Box::pin(apply_each_tolerant(&*self.ctx.registry, &plan.start_ops)).await
                {
                    tracing::warn!(job = %self.job, error = %e, "fire skipped: writing running markers failed");
                    return;
                }
            } else {
                tracing::warn!(job = %self.job, error = %e, "fire skipped: writing running markers failed");
                return;
            }
        }
        for i in &plan.unmarked {
            self.local.marked.remove(i);
        }
        for i in &plan.run {
            self.local.ended.remove(i);
        }
        if !plan.flagged.is_empty() {
            crate::metrics::misfires_flagged(self.ctx.me(), &self.job, plan.flagged.len());
            self.ctx.node.events.emit(EngineEvent::Misfired {
                job: self.job.clone(),
                items: plan.flagged.clone(),
            });
        }
        self.local
            .misfire_flagged
            .extend(plan.flagged.iter().copied());
        for i in &plan.run {
            self.local.misfire_flagged.remove(i);
        }
        self.launch(myself, source, scheduled, plan.run, plan.end_ops);
    }

    /// Writes the `running` markers of the coming fire's free items (one multi-op, off the
    /// instant). A failed write marks nothing: the fire then writes what it needs itself.
    ///
    /// Ten thousand jobs prepare the same instant and wait for one batch, so what is held across
    /// the wait is kept to the items and the batch's answer: [`ExecutorActor`]'s handler
    /// boxes this future on its own, not inside [`ExecutorState::on_message`]'s.
    async fn prepare(&mut self, scheduled: DateTime<Utc>) {
        let Some((items, answer)) = self.submit_marks() else {
            return;
        };
        match answer.outcome().await {
            Ok(()) => {
                for i in &items {
                    self.local.ended.remove(i);
                }
                self.local.marked.extend(items)
            }
            Err(e) => {
                tracing::debug!(job = %self.job, %scheduled, error = %e,
                    "markers not written ahead; the fire writes them")
            }
        }
    }

    /// Plans the markers written ahead and queues their write.
    fn submit_marks(&self) -> Option<(Vec<ShardItem>, Answer)> {
        if self.draining || self.disconnected {
            return None;
        }
        let me = self.ctx.me();
        let view = JobView::read(self.ctx.mirror(), &self.job);
        if view.server_status(me.ip()) == ServerStatus::Disabled {
            return None;
        }
        let plan = plan_prepare(&view, &self.job, me, self.settings(), &self.local);
        if plan.ops.is_empty() {
            return None;
        }
        Some((plan.items, self.ctx.writes.submit(plan.ops)))
    }

    /// Deletes the markers written ahead that no run will use.
    async fn release_marks(&mut self) {
        if self.local.marked.is_empty() {
            return;
        }
        let ops = release_ops(&self.job, self.local.marked.iter().copied());
        match apply_each_tolerant(&*self.ctx.registry, &ops).await {
            Ok(()) => self.local.marked.clear(),
            // Kept: the next fire uses them, or a new session clears this instance's markers.
            Err(e) => {
                tracing::warn!(job = %self.job, error = %e, "releasing markers written ahead failed")
            }
        }
    }

    /// Hands `run` to a run task; `end_ops` are applied when its items are done. Shared by fires
    /// and failover runs.
    fn launch(
        &mut self,
        myself: &ActorRef<ExecutorMsg>,
        source: ExecutionSource,
        scheduled: Option<DateTime<Utc>>,
        run: Vec<ShardItem>,
        end_ops: Vec<Op>,
    ) {
        if run.is_empty() {
            return;
        }
        let me = self.ctx.me().clone();
        self.next_run += 1;
        let run_id = self.next_run;
        let task_id = task_id(&self.job, &run, source, &me, run_id);
        let c = self.config.config();
        let mut tokens = HashMap::new();
        let contexts = run
            .iter()
            .map(|item| {
                let token = CancellationToken::new();
                tokens.insert(*item, token.clone());
                ShardingContext {
                    job_name: self.job.clone(),
                    task_id: task_id.clone(),
                    sharding_total_count: self.config.sharding_total_count(),
                    job_parameter: c.job_parameter.clone().unwrap_or_default(),
                    sharding_item: *item,
                    sharding_parameter: self
                        .config
                        .item_parameter(*item)
                        .unwrap_or_default()
                        .to_owned(),
                    source,
                    instance_id: me.clone(),
                    cancellation: token,
                    resharding: self.resharding.clone(),
                }
            })
            .collect();
        self.local.running.extend(run.iter().copied());
        let mut end_ops = end_ops;
        // Kept until the run ends: its exact size, not the planner's growth.
        end_ops.shrink_to_fit();
        self.runs.insert(
            run_id,
            ActiveRun {
                items: run.iter().copied().collect(),
                end_ops,
                tokens,
            },
        );
        let req = RunRequest {
            run_id,
            job: self.job.clone(),
            instance: me,
            source,
            task_id,
            contexts,
            handler: self.spec.handler.clone(),
            listeners: self.listeners.clone(),
            error_handler: self.error_handler.clone(),
            clock: self.ctx.node.clock.clone(),
            events: self.ctx.node.events.clone(),
            scheduled,
        };
        spawn_run(req, myself.clone());
    }

    /// A run's items are done: queue its end write, whose outcome comes back as `RunEnded`.
    /// Nothing waits here: at a shared instant every job's run ends within milliseconds, and all
    /// their end writes go out in a few multi-ops. Returns the run when it has nothing to write
    /// (monitorExecution off): it ends now.
    fn run_finished(&mut self, myself: &ActorRef<ExecutorMsg>, report: RunReport) -> Option<u64> {
        if report.escalated {
            tracing::error!(job = %self.job, failures = report.outcome.failures().count(),
                "run failed and its error handler escalates (THROW)");
        }
        let run = self.runs.get(&report.run_id)?;
        if run.end_ops.is_empty() {
            return Some(report.run_id);
        }
        let (me, run_id) = (myself.clone(), report.run_id);
        self.ctx
            .writes
            .submit_then(run.end_ops.clone(), move |outcome| {
                // The executor may be gone (job removed, node stopping): nobody is left to tell.
                let _ = me.send_message(ExecutorMsg::RunEnded { run_id, outcome });
            });
        None
    }

    /// A run is over once its end write has its outcome (a failed one is retried op by op).
    async fn finished(
        &mut self,
        myself: &ActorRef<ExecutorMsg>,
        run_id: u64,
        outcome: Result<(), RegistryError>,
    ) {
        let Some(run) = self.runs.remove(&run_id) else {
            return;
        };
        for i in &run.items {
            self.local.running.remove(i);
        }
        let removed = match outcome {
            Ok(()) => true,
            Err(e) => {
                tracing::debug!(job = %self.job, error = %e, "removing running markers one by one");
                let tolerant = apply_each_tolerant(&*self.ctx.registry, &run.end_ops).await;
                if let Err(e) = &tolerant {
                    tracing::warn!(job = %self.job, error = %e, "removing running markers failed");
                }
                tolerant.is_ok()
            }
        };
        if removed {
            // Until the mirror shows the deletions, those markers are this instance's, not a run
            // elsewhere. One the mirror already shows gone needs no note: its event came first.
            for op in &run.end_ops {
                if let Ok((_, JobNode::ShardingRunning(item))) = JobNode::parse(op.path()) {
                    if self.ctx.mirror().exists(op.path()) {
                        self.local.ended.insert(item);
                    }
                }
            }
        }
        let catch_up: BTreeSet<ShardItem> = self
            .local
            .misfire_flagged
            .iter()
            .filter(|i| !self.local.running.contains(i))
            .copied()
            .collect();
        if !catch_up.is_empty() && self.config.config().misfire {
            self.start(myself, ExecutionSource::Misfire, None, Some(catch_up))
                .await;
        }
        if self.trigger_queued && self.runs.is_empty() {
            self.trigger_queued = false;
            self.start(myself, ExecutionSource::Manual, None, None)
                .await;
        }
        if self.runs.is_empty() {
            for reply in self.drains.drain(..) {
                let _ = reply.send(());
            }
            // A busy instance claims marked items when its run ends (ElasticJob does the same).
            if let Some(f) = self.ctx.failover() {
                let _ = f.send_message(FailoverMsg::RunEnded(self.job.clone()));
            }
        }
    }

    async fn config_changed(&mut self) {
        let path = JobNode::Config.to_path(&self.job);
        let Some(data) = self.ctx.mirror().data(&path) else {
            return;
        };
        match registry_config(&self.ctx, &path, &data, &self.spec.job_type) {
            Ok(new) if new.config() == self.config.config() => {
                // Unchanged (a resync, or a write of the same text): keep the shared copy.
                self.config_seen();
            }
            Ok(new) => {
                let new = Arc::new(new);
                let reschedule = new.config().cron != self.config.config().cron
                    || new.config().time_zone != self.config.config().time_zone;
                if reschedule || !new.config().monitor_execution {
                    self.release_marks().await;
                }
                self.config = new.clone();
                self.ctx.dir.configs.insert(self.job.clone(), new.clone());
                if let Ok(l) = self
                    .ctx
                    .node
                    .handlers
                    .listeners(&new.config().job_listener_types)
                {
                    self.listeners = l;
                }
                if let Ok(h) = self
                    .ctx
                    .node
                    .handlers
                    .error_handler(Some(new.error_handler()))
                {
                    self.error_handler = h;
                }
                if reschedule {
                    if let Some(t) = self.ctx.trigger() {
                        let _ = t.send_message(TriggerMsg::Schedule(self.job.clone(), new));
                    }
                }
                self.config_seen();
            }
            Err(e) => tracing::error!(job = %self.job, error = %e,
                "invalid config in the registry; keeping the last valid one"),
        }
    }

    /// The leader and failover actors look at the job again after its config was (re)read.
    fn config_seen(&self) {
        if let Some(l) = self.ctx.leader() {
            let _ = l.send_message(LeaderMsg::Evaluate(self.job.clone()));
        }
        if let Some(f) = self.ctx.failover() {
            let _ = f.send_message(FailoverMsg::ConfigChanged(self.job.clone()));
        }
    }

    async fn event(
        &mut self,
        myself: &ActorRef<ExecutorMsg>,
        ev: JobEvent,
    ) -> Result<(), ActorProcessingErr> {
        let me = self.ctx.me().clone();
        match (&ev.node, ev.kind) {
            (JobNode::Config, NodeEventKind::Created | NodeEventKind::DataChanged) => {
                self.config_changed().await
            }
            (JobNode::LeaderShardingNecessary, NodeEventKind::Created) => self.resharding.set(true),
            (JobNode::ShardingRunning(item), NodeEventKind::Deleted) => {
                self.local.ended.remove(item);
            }
            (
                JobNode::LeaderShardingNecessary | JobNode::LeaderShardingProcessing,
                NodeEventKind::Deleted,
            ) => self.resume_parked(myself).await,
            (JobNode::ShardingInstance(item), _) => {
                // One event per item when a plan is committed: read that item's owner only.
                let owner = self.ctx.mirror().data(&ev.node.to_path(&self.job));
                if owner.as_deref() != Some(me.as_str().as_bytes()) {
                    for run in self.runs.values() {
                        if let Some(t) = run.tokens.get(item) {
                            t.cancel();
                        }
                    }
                }
            }
            (JobNode::TriggerInstance(id), NodeEventKind::Created) if *id == me => {
                let path = ev.node.to_path(&self.job);
                if let Err(e) = self.ctx.registry.delete(&path, None).await {
                    if !e.is_no_node() {
                        tracing::warn!(job = %self.job, error = %e, "cannot take the trigger node");
                    }
                }
                myself.send_message(ExecutorMsg::TriggerNow)?;
            }
            (JobNode::Instance(id), NodeEventKind::Deleted) if *id == me => {
                // The event may be stale: a re-list after a new session reports the old session's
                // node as deleted after this executor registered its own. Ask the registry (a rare
                // path, never a run's) whether this session's node stands.
                let path = ev.node.to_path(&self.job);
                let session = self.ctx.registry.session_info().id;
                if let Ok(Some(stat)) = self.ctx.registry.exists(&path).await {
                    if stat.ephemeral_owner == session {
                        return Ok(());
                    }
                }
                if self.instance_node_pending {
                    self.instance_node_pending = false;
                    let data = format!("jobInstanceId: {me}\nserverIp: {}\n", me.ip());
                    let op = Op::create(path, data, CreateMode::Ephemeral);
                    self.ctx.apply(&[op]).await?;
                } else if !self.draining {
                    tracing::info!(job = %self.job, "instance node removed by an operator: shutting the job down here");
                    myself.send_message(ExecutorMsg::Remove)?;
                }
            }
            (JobNode::Root, NodeEventKind::Deleted) => {
                tracing::info!(job = %self.job, "job removed from the registry");
                myself.send_message(ExecutorMsg::Remove)?;
            }
            _ => {}
        }
        Ok(())
    }

    async fn resume_parked(&mut self, myself: &ActorRef<ExecutorMsg>) {
        let view = JobView::read(self.ctx.mirror(), &self.job);
        if view.sharding_necessary || view.sharding_processing {
            return;
        }
        self.resharding.set(false);
        if let Some((source, scheduled)) = self.parked.take() {
            self.start(myself, source, scheduled, None).await;
        }
    }
}

impl Actor for ExecutorActor {
    type Msg = ExecutorMsg;
    type State = ExecutorState;
    type Arguments = ExecutorArgs;

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        args: ExecutorArgs,
    ) -> Result<Self::State, ActorProcessingErr> {
        let ExecutorArgs { ctx, spec } = args;
        let registered = register(&ctx, &spec).await?;
        let config = registered.config;
        let job = config.job_name().clone();
        let listeners = ctx
            .node
            .handlers
            .listeners(&config.config().job_listener_types)?;
        let error_handler = ctx
            .node
            .handlers
            .error_handler(Some(config.error_handler()))?;
        ctx.dir.configs.insert(job.clone(), config.clone());
        if let Some(t) = ctx.trigger() {
            t.send_message(TriggerMsg::Schedule(job.clone(), config.clone()))?;
        }
        if let Some(l) = ctx.leader() {
            l.send_message(LeaderMsg::Evaluate(job.clone()))?;
        }
        tracing::info!(%job, instance = %ctx.me(), "job registered");
        Ok(ExecutorState {
            ctx,
            spec,
            job,
            config,
            listeners,
            error_handler,
            runs: RunTable::default(),
            local: LocalRuns::default(),
            next_run: 0,
            parked: None,
            trigger_queued: false,
            disconnected: false,
            drains: Vec::new(),
            draining: false,
            instance_node_pending: registered.instance_node_pending,
            resharding: ReshardingFlag::default(),
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        // Boxed: ractor keeps the handler's future inside every actor's boxed loop, so an unboxed
        // one would cost its whole size (kilobytes) per job for as long as the job lives. The
        // prepare waits on a batch shared by every job of the instant: its small future alone.
        match msg {
            ExecutorMsg::Prepare { scheduled } => Box::pin(state.prepare(scheduled)).await,
            msg => Box::pin(state.on_message(&myself, msg)).await?,
        }
        state.local.release_empty();
        Ok(())
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<Self::Msg>,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        if let Some(t) = state.ctx.trigger() {
            let _ = t.send_message(TriggerMsg::Unschedule(state.job.clone()));
        }
        for run in state.runs.values() {
            for t in run.tokens.values() {
                t.cancel();
            }
        }
        Ok(())
    }
}

impl ExecutorState {
    /// One message, as [`ExecutorActor::handle`] gets it.
    async fn on_message(
        &mut self,
        myself: &ActorRef<ExecutorMsg>,
        msg: ExecutorMsg,
    ) -> Result<(), ActorProcessingErr> {
        // Only the fire runs unboxed: at a shared instant ten thousand jobs hold this future at
        // once, so it is kept to the fire's size; the rest box their own. The prepare never gets
        // here: `handle` runs it in a future of its own, smaller still.
        let state = self;
        match msg {
            ExecutorMsg::Prepare { .. } => unreachable!("handle() runs a prepare on its own"),
            ExecutorMsg::Fire { scheduled } => {
                state
                    .start(myself, ExecutionSource::Normal, Some(scheduled), None)
                    .await
            }
            ExecutorMsg::TriggerNow => {
                if state.runs.is_empty() {
                    Box::pin(state.start(myself, ExecutionSource::Manual, None, None)).await;
                } else {
                    state.trigger_queued = true;
                }
            }
            ExecutorMsg::RunFinished(report) => {
                if let Some(run_id) = state.run_finished(myself, *report) {
                    Box::pin(state.finished(myself, run_id, Ok(()))).await
                }
            }
            ExecutorMsg::RunEnded { run_id, outcome } => {
                Box::pin(state.finished(myself, run_id, outcome)).await
            }
            ExecutorMsg::Job(ev) => Box::pin(state.event(myself, ev)).await?,
            ExecutorMsg::Resynced => {
                Box::pin(state.config_changed()).await;
                Box::pin(state.resume_parked(myself)).await;
            }
            ExecutorMsg::SessionState(s) => state.disconnected = s == SessionState::Disconnected,
            ExecutorMsg::Drain(reply) => {
                state.draining = true;
                Box::pin(state.release_marks()).await;
                if let Some(t) = state.ctx.trigger() {
                    let _ = t.send_message(TriggerMsg::Unschedule(state.job.clone()));
                }
                if state.runs.is_empty() {
                    let _ = reply.send(());
                } else {
                    state.drains.push(reply);
                }
            }
            ExecutorMsg::Remove => {
                // Leave the job's coordination at once: the others reshard without this instance,
                // and one of them leads if this one did.
                let view = JobView::read(state.ctx.mirror(), &state.job);
                let me = state.ctx.me().clone();
                let mut ops = release_ops(&state.job, std::mem::take(&mut state.local.marked));
                ops.push(Op::delete(
                    JobNode::Instance(me.clone()).to_path(&state.job),
                ));
                if view.leader.as_ref() == Some(&me) {
                    ops.push(Op::delete(
                        JobNode::LeaderElectionInstance.to_path(&state.job),
                    ));
                }
                if let Err(e) = Box::pin(apply_each_tolerant(&*state.ctx.registry, &ops)).await {
                    tracing::warn!(job = %state.job, error = %e, "leaving the job's coordination failed");
                }
                myself.stop(Some(JOB_REMOVED.into()));
            }
            ExecutorMsg::CancelRunning => {
                for run in state.runs.values() {
                    for t in run.tokens.values() {
                        t.cancel();
                    }
                }
            }
            ExecutorMsg::FailoverClaimed(items) if state.draining => {
                // Not run: `failovering` names this instance, so its departure fails them over again.
                tracing::info!(job = %state.job, ?items, "failover claim not run: draining");
            }
            ExecutorMsg::FailoverClaimed(items) => {
                tracing::info!(job = %state.job, ?items, "running items taken over from a crashed instance");
                let end_ops = failover::finish_ops(&state.job, &items);
                state.launch(myself, ExecutionSource::Failover, None, items, end_ops);
            }
            ExecutorMsg::IsIdle(reply) => {
                let idle = state.runs.is_empty() && !state.draining && !state.disconnected;
                let _ = reply.send(idle);
            }
        }
        Ok(())
    }
}
