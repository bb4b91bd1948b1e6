//! One run of a job's items, outside the executor's mailbox: every item in its own task (a panic
//! fails that item only), listeners before and after, the error handler for each failure, metrics,
//! and `ExecutorMsg::RunFinished` back to the executor at the end.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use ractor::ActorRef;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::clock::SharedClock;
use crate::config::ValidatedConfig;
use crate::events::{EngineEvent, EventBus, RunState};
use crate::job::concurrency::ItemGate;
use crate::job::deadline::RunDeadline;
use crate::job::fencing::{FencingToken, OwnershipZxids};
use crate::job::handlers::{
    panic_message, ErrorAction, ErrorHandler, Listeners, RunInfo, RunOutcome,
};
use crate::job::output::OutputCapture;
use crate::job::{
    ExecutionSource, JobError, ReshardingFlag, ShardingContext, SharedHandler, StopGrace,
};
use crate::metrics::Outcome;
use crate::types::{InstanceId, JobName, ShardItem};

use crate::decide::lifecycle::{Command, MissReason};

use super::context::{NodeContext, SessionCtx};
use super::mail::{ExecutorMsg, RunReport};
use super::spec::JobSpec;

/// Everything a run needs, moved into its task.
#[derive(Debug)]
pub(crate) struct RunRequest {
    pub(crate) run_id: u64,
    pub(crate) job: JobName,
    pub(crate) instance: InstanceId,
    pub(crate) source: ExecutionSource,
    pub(crate) task_id: String,
    pub(crate) contexts: Vec<ShardingContext>,
    pub(crate) handler: SharedHandler,
    pub(crate) listeners: Listeners,
    pub(crate) error_handler: Arc<dyn ErrorHandler>,
    pub(crate) clock: SharedClock,
    pub(crate) events: EventBus,
    /// The job's limit on items running at once here.
    pub(crate) gate: ItemGate,
    /// For a run taking part in a distribute-once round: its items start when this fires (or
    /// its sender is dropped).
    pub(crate) go: Option<oneshot::Receiver<()>>,
    /// The cron instant this run answers, for the trigger-delay metric.
    pub(crate) scheduled: Option<DateTime<Utc>>,
    /// The run's timeout (`shardcron.timeout`); `None` for a job without one.
    pub(crate) deadline: Option<Arc<RunDeadline>>,
    /// 1 for a first run, 2 for its first retry, and so on.
    pub(crate) attempt: u32,
    /// The workflow run it is a step of (`shardcron.after`), for its events and history rows.
    pub(crate) workflow_run: Option<String>,
    /// When this instance saw the step's decision appear, for the step-wait metric.
    pub(crate) decided_at: Option<DateTime<Utc>>,
    /// Whether the error handler hears this attempt's failures (`shardcron.retry.notify`).
    pub(crate) notify: bool,
}

/// One run as the machine launched it.
#[derive(Debug)]
pub(crate) struct Launch {
    pub(crate) run_id: u64,
    pub(crate) source: ExecutionSource,
    /// The cron instant it answers.
    pub(crate) scheduled: Option<DateTime<Utc>>,
    /// 1 for a first run, 2 for its first retry, and so on.
    pub(crate) attempt: u32,
    /// A trigger's job parameter, in place of the config's.
    pub(crate) parameter: Option<Arc<str>>,
    /// The workflow run it is a step of.
    pub(crate) workflow: Option<crate::decide::workflow::run::RunId>,
    /// When this instance saw the step's `{run}@start` decision appear (a workflow step only).
    pub(crate) decided_at: Option<DateTime<Utc>>,
}

/// `{job}@-@{items}@-@{SOURCE}@-@{instance}@-@{run}` (ElasticJob's task id, with a run number).
pub(crate) fn task_id(
    job: &JobName,
    items: &[ShardItem],
    source: ExecutionSource,
    instance: &InstanceId,
    run_id: u64,
) -> String {
    let items: Vec<String> = items.iter().map(|i| i.to_string()).collect();
    format!(
        "{job}@-@{}@-@{}@-@{instance}@-@{run_id}",
        items.join(","),
        source.as_str().to_uppercase()
    )
}

/// What a job's runs are made with, and the cancellation tokens of those in flight (usually
/// none or one): the executor's equipment, kept apart from its state machine.
#[derive(Debug)]
pub(crate) struct RunKit {
    pub(crate) spec: Arc<JobSpec>,
    pub(crate) listeners: Listeners,
    pub(crate) error_handler: Arc<dyn ErrorHandler>,
    pub(crate) resharding: ReshardingFlag,
    /// The job's item concurrency limit, shared by its runs.
    pub(crate) gate: ItemGate,
    /// Fencing tokens of items just claimed for failover, from the claimer's mirror (the mark's
    /// zxid), until their run launches: the mirror may show the mark gone before the claim.
    failover_fences: Vec<(ShardItem, FencingToken)>,
    tokens: Vec<InFlight>,
    /// The deadlines of runs in flight of a job with a timeout.
    deadlines: Vec<(u64, Arc<RunDeadline>)>,
    /// The last failure of each item the error handler has not heard (a retry was to follow,
    /// `shardcron.retry.notify: final`), until it is retried or reported
    /// ([`Command::FailureStands`]): at most one per item.
    unheard: Vec<(ShardItem, JobError)>,
}

/// One run in flight: its items' cancellation tokens, the grace its processes share, and the
/// grace a cancellation by this node gives them (the session's, so that a fenced script's group
/// is gone before the session can expire).
#[derive(Debug)]
struct InFlight {
    run_id: u64,
    tokens: Vec<(ShardItem, CancellationToken)>,
    grace: StopGrace,
    cancel_grace: std::time::Duration,
}

impl RunKit {
    /// The kit for `spec` running with `config`.
    pub(crate) fn new(
        node: &NodeContext,
        spec: Arc<JobSpec>,
        config: &ValidatedConfig,
    ) -> Result<Self, ractor::ActorProcessingErr> {
        Ok(Self {
            listeners: node
                .handlers
                .listeners(&config.config().job_listener_types)?,
            error_handler: node.handlers.error_handler(Some(config.error_handler()))?,
            spec,
            resharding: ReshardingFlag::default(),
            gate: ItemGate::new(config.item_concurrency().limit()),
            failover_fences: Vec::new(),
            tokens: Vec::new(),
            deadlines: Vec::new(),
            unheard: Vec::new(),
        })
    }

    /// Listeners, error handler and item concurrency of a new configuration (a name that does
    /// not resolve keeps the current one: validation already reported it).
    pub(crate) fn reconfigure(&mut self, node: &NodeContext, config: &ValidatedConfig) {
        self.gate.set_limit(config.item_concurrency().limit());
        if let Ok(l) = node.handlers.listeners(&config.config().job_listener_types) {
            self.listeners = l;
        }
        if let Ok(h) = node.handlers.error_handler(Some(config.error_handler())) {
            self.error_handler = h;
        }
    }

    /// Items about to be handed over by a failover claim, with the tokens the claim saw.
    pub(crate) fn failover_fences(&mut self, fences: Vec<(ShardItem, FencingToken)>) {
        self.failover_fences.extend(fences);
    }

    /// The item's fencing token, from the mirror (no registry call); one lookup but for a
    /// failover run.
    fn fence(
        &mut self,
        ctx: &SessionCtx,
        job: &JobName,
        item: ShardItem,
        source: ExecutionSource,
    ) -> FencingToken {
        if source != ExecutionSource::Failover {
            return OwnershipZxids::read_owner(ctx.mirror(), job, item).token();
        }
        let mut token = OwnershipZxids::read(ctx.mirror(), job, item).token();
        if let Some(at) = self.failover_fences.iter().position(|(i, _)| *i == item) {
            token = token.max(self.failover_fences.swap_remove(at).1);
        }
        token
    }

    /// Starts `run` of `items` in its task, which reports to `executor`.
    pub(crate) fn launch(
        &mut self,
        ctx: &SessionCtx,
        config: &ValidatedConfig,
        executor: &ActorRef<ExecutorMsg>,
        run: Launch,
        items: &[ShardItem],
        go: Option<oneshot::Receiver<()>>,
    ) {
        let Launch {
            run_id,
            source,
            scheduled,
            attempt,
            parameter,
            workflow,
            decided_at,
        } = run;
        let me = ctx.me().clone();
        let job = config.job_name().clone();
        let task_id = task_id(&job, items, source, &me, run_id);
        let c = config.config();
        let mut tokens = Vec::with_capacity(items.len());
        if source != ExecutionSource::Failover {
            self.failover_fences.clear();
        }
        let fences: Vec<FencingToken> = items
            .iter()
            .map(|i| self.fence(ctx, &job, *i, source))
            .collect();
        let props = Arc::new(c.props.clone());
        // `None` unless the job asks for its output: nothing is allocated per item then.
        let output = config.output_limit();
        let budget =
            crate::decide::lifecycle::FenceBudget::for_session(ctx.registry.session_info().timeout);
        let lease = budget.frozen_node_lease();
        // A job with a timeout gives its processes its grace after any cancel (a shorter one asked
        // for by fencing still wins).
        let grace = config
            .policy()
            .timeout
            .map_or_else(StopGrace::default, |t| StopGrace::new(t.grace));
        let contexts = items
            .iter()
            .zip(fences)
            .map(|(item, fencing_token)| {
                let token = CancellationToken::new();
                tokens.push((*item, token.clone()));
                ShardingContext {
                    job_name: job.clone(),
                    task_id: task_id.clone(),
                    sharding_total_count: config.sharding_total_count(),
                    job_parameter: match &parameter {
                        Some(p) => p.to_string(),
                        None => c.job_parameter.clone().unwrap_or_default(),
                    },
                    sharding_item: *item,
                    sharding_parameter: config.item_parameter(*item).unwrap_or_default().to_owned(),
                    scheduled_at: scheduled,
                    workflow_run: workflow.as_ref().map(|w| w.to_string()),
                    fencing_token,
                    source,
                    instance_id: me.clone(),
                    cancellation: token,
                    resharding: self.resharding.clone(),
                    props: props.clone(),
                    child_lease: Some(lease),
                    stop_grace: grace.clone(),
                    output: output.map(|limit| Arc::new(OutputCapture::new(limit))),
                }
            })
            .collect();
        self.tokens.push(InFlight {
            run_id,
            tokens,
            grace,
            cancel_grace: budget.kill_grace(),
        });
        let deadline = config.policy().timeout.map(|t| {
            let deadline = Arc::new(RunDeadline::new(t.after));
            self.deadlines.push((run_id, deadline.clone()));
            deadline
        });
        let req = RunRequest {
            run_id,
            job,
            instance: me,
            source,
            task_id,
            contexts,
            handler: self.spec.handler.clone(),
            listeners: self.listeners.clone(),
            error_handler: self.error_handler.clone(),
            clock: ctx.node.clock.clone(),
            events: ctx.node.events.clone(),
            gate: self.gate.clone(),
            go,
            scheduled,
            deadline,
            attempt,
            workflow_run: workflow.map(|w| w.to_string()),
            decided_at,
            notify: config.policy().notifies(attempt),
        };
        spawn_run(req, executor.clone());
    }

    /// Cancels the running items `which` selects.
    pub(crate) fn cancel(&self, which: impl Fn(ShardItem) -> bool) {
        for run in &self.tokens {
            for (item, token) in &run.tokens {
                if which(*item) {
                    run.grace.cancel_within(token, run.cancel_grace);
                }
            }
        }
    }

    /// Run `run_id` is past its timeout: its items are cancelled, their processes given `grace`
    /// (SIGTERM now, SIGKILL after it), and their errors are timeouts.
    pub(crate) fn time_out(&self, run_id: u64, grace: std::time::Duration) {
        if let Some((_, d)) = self.deadlines.iter().find(|(id, _)| *id == run_id) {
            d.time_out();
        }
        for run in self.tokens.iter().filter(|r| r.run_id == run_id) {
            for (_, token) in &run.tokens {
                run.grace.cancel_within(token, grace);
            }
        }
    }

    /// Run `run_id`'s grace after its timeout ran out: what of it still runs is dropped.
    pub(crate) fn abandon(&self, run_id: u64) {
        if let Some((_, d)) = self.deadlines.iter().find(|(id, _)| *id == run_id) {
            d.abandon();
        }
    }

    /// A run of `job` ended: an escalation is logged, its tokens go (the memory too, once none
    /// is left).
    pub(crate) fn finished(&mut self, job: &JobName, report: &RunReport) {
        if report.escalated {
            tracing::error!(%job, failures = report.outcome.failures().count(),
                "run failed and its error handler escalates (THROW)");
        }
        self.tokens.retain(|run| run.run_id != report.run_id);
        if self.tokens.is_empty() {
            self.tokens = Vec::new();
        }
        if !self.deadlines.is_empty() {
            self.deadlines.retain(|(id, _)| *id != report.run_id);
        }
        if !report.notified || !self.unheard.is_empty() {
            let results = &report.outcome.results;
            self.unheard
                .retain(|(item, _)| !results.iter().any(|(i, _)| i == item));
            if !report.notified {
                let failures = report.outcome.failures();
                self.unheard.extend(failures.map(|(i, e)| (i, e.clone())));
            }
        }
    }

    /// The retries of `items` will not run: the error handler hears their last failures now.
    pub(crate) fn failure_stands(&mut self, job: &JobName, items: &[ShardItem]) {
        for item in items {
            let Some(at) = self.unheard.iter().position(|(i, _)| i == item) else {
                continue;
            };
            let (item, error) = self.unheard.swap_remove(at);
            if self.error_handler.handle(job, Some(item), &error) == ErrorAction::Escalate {
                tracing::error!(%job, item = item.0,
                    "failure whose retry did not run: its error handler escalates (THROW)");
            }
        }
    }
}

/// Starts the run's task.
fn spawn_run(req: RunRequest, executor: ActorRef<ExecutorMsg>) -> JoinHandle<()> {
    // Boxed: an async fn keeps its argument's place beside the local it moves into, so the
    // request inline would be held twice (208 bytes each) by every run in flight; a fire of ten
    // thousand jobs has them all in flight at once.
    let req = Box::new(req);
    tokio::spawn(async move {
        let report = run(req).await;
        // The executor may be gone (job removed, node stopping): nobody is left to tell.
        let _ = executor.send_message(ExecutorMsg::RunFinished(Box::new(report)));
    })
}

async fn run(mut req: Box<RunRequest>) -> RunReport {
    if let Some(go) = req.go.take() {
        // The distribute-once "before" round: wait for it (bounded by its timeout, a message to
        // the executor), unless every item is taken away meanwhile.
        let all_cancelled =
            futures::future::join_all(req.contexts.iter().map(|c| c.cancellation.cancelled()));
        tokio::select! {
            _ = go => {}
            _ = all_cancelled => {}
        }
    }
    let info = RunInfo {
        job_name: req.job.clone(),
        task_id: req.task_id.clone(),
        items: req.contexts.iter().map(|c| c.sharding_item).collect(),
        source: req.source,
        instance_id: req.instance.clone(),
    };
    for p in req.listeners.before_run(&info) {
        tracing::error!(job = %req.job, listener = %p.listener, message = %p.message, "listener panicked");
    }
    let started_at = req.clock.now();
    if let Some(at) = req.scheduled {
        let delay = (started_at - at).to_std().unwrap_or_default();
        crate::metrics::trigger_delay(&req.instance, &req.job, delay);
    }
    if let Some(at) = req.decided_at {
        let wait = (started_at - at).to_std().unwrap_or_default();
        crate::metrics::workflow_step_wait(&req.instance, &req.job, wait);
    }
    let status = |state: RunState, message: String| {
        if req.events.has_subscribers() {
            req.events.emit(EngineEvent::RunStatus {
                job: req.job.clone(),
                task_id: req.task_id.clone(),
                instance: req.instance.clone(),
                items: info.items.clone(),
                source: req.source,
                state,
                message,
                at: req.clock.now(),
            });
        }
    };
    // Staging covers the run's planning and its markers, which the executor wrote just before.
    status(RunState::TaskStaging, String::new());
    status(RunState::TaskRunning, String::new());
    let execution_id = |item: ShardItem| format!("{}@-@{item}", req.task_id);
    let tasks: Vec<(ShardItem, JoinHandle<Result<(), JobError>>)> = req
        .contexts
        .into_iter()
        .map(|ctx| {
            let item = ctx.sharding_item;
            let handler = req.handler.clone();
            let deadline = req.deadline.clone();
            // Entered in item order, before any task runs: beyond the job's item concurrency
            // items wait their turn in that order.
            let entry = req.gate.enter();
            if req.events.has_subscribers() {
                req.events.emit(EngineEvent::ItemStarted {
                    execution_id: execution_id(item),
                    job: req.job.clone(),
                    item,
                    instance: req.instance.clone(),
                    source: req.source,
                    task_id: req.task_id.clone(),
                    started_at,
                    scheduled_at: req.scheduled,
                    attempt: req.attempt,
                    workflow_run: req.workflow_run.clone(),
                });
            }
            // Only for a job that captures its output: its chunks go to the history.
            let chunks = ctx.output.clone().map(|capture| OutputChunks {
                capture,
                execution_id: execution_id(item),
                job: req.job.clone(),
                item,
                events: req.events.clone(),
                clock: req.clock.clone(),
            });
            (
                item,
                tokio::spawn(async move {
                    // Losing the item while it waits its turn ends the wait without running it.
                    let cancel = ctx.cancellation.clone();
                    let _permit = tokio::select! {
                        permit = entry.admitted() => permit,
                        () = cancel.cancelled() => {
                            return Err(JobError::Cancelled("item lost while waiting its turn".into()))
                        }
                    };
                    let run = async move {
                        match deadline {
                            Some(d) => d.guard(handler.run_item(ctx)).await,
                            None => handler.run_item(ctx).await,
                        }
                    };
                    match chunks {
                        Some(chunks) => chunks.follow(run).await,
                        None => run.await,
                    }
                }),
            )
        })
        .collect();
    let mut results = Vec::with_capacity(tasks.len());
    for (item, task) in tasks {
        let result = match task.await {
            Ok(r) => r,
            Err(e) if e.is_panic() => Err(JobError::Panicked(panic_message(&*e.into_panic()))),
            Err(e) => Err(JobError::Cancelled(e.to_string())),
        };
        results.push((item, result));
    }
    let finished_at = req.clock.now();
    let mut escalated = false;
    for (item, result) in &results {
        if req.events.has_subscribers() {
            req.events.emit(EngineEvent::ItemFinished {
                execution_id: execution_id(*item),
                job: req.job.clone(),
                item: *item,
                instance: req.instance.clone(),
                source: req.source,
                task_id: req.task_id.clone(),
                started_at,
                finished_at,
                failure: result.as_ref().err().map(|e| e.to_string()),
                scheduled_at: req.scheduled,
                attempt: req.attempt,
                workflow_run: req.workflow_run.clone(),
                outcome: crate::job::ItemOutcome::of(result),
            });
        }
        let outcome = match result {
            Ok(()) => Outcome::Success,
            Err(JobError::TimedOut { .. }) => Outcome::Timeout,
            Err(_) => Outcome::Failure,
        };
        crate::metrics::execution_ended(&req.instance, &req.job, *item, outcome, req.source);
        match result {
            Err(e) if req.notify => {
                if req.error_handler.handle(&req.job, Some(*item), e) == ErrorAction::Escalate {
                    escalated = true;
                }
            }
            Err(e) => tracing::warn!(job = %req.job, item = item.0, attempt = req.attempt,
                "item failed, a retry follows: {e}"),
            Ok(()) => {}
        }
    }
    let took = (finished_at - started_at).to_std().unwrap_or_default();
    crate::metrics::run_duration(&req.instance, &req.job, took);
    let failures: Vec<String> = results
        .iter()
        .filter_map(|(i, r)| r.as_ref().err().map(|e| format!("item {i}: {e}")))
        .collect();
    if failures.is_empty() {
        status(RunState::TaskFinished, String::new());
    } else {
        status(RunState::TaskError, failures.join("; "));
    }
    let outcome = RunOutcome {
        results,
        started_at,
        finished_at,
    };
    for p in req.listeners.after_run(&info, &outcome) {
        tracing::error!(job = %req.job, listener = %p.listener, message = %p.message, "listener panicked");
    }
    RunReport {
        run_id: req.run_id,
        outcome,
        escalated,
        notified: req.notify,
    }
}

/// Where a capturing item's output chunks go: to the bus, as [`EngineEvent::ItemOutput`].
struct OutputChunks {
    capture: Arc<OutputCapture>,
    execution_id: String,
    job: JobName,
    item: ShardItem,
    events: EventBus,
    clock: SharedClock,
}

impl OutputChunks {
    /// Runs the item, emitting its output while it changes and once more at the end.
    async fn follow<T>(self, run: impl std::future::Future<Output = T>) -> T {
        let capture = Arc::clone(&self.capture);
        crate::job::output::chunked(run, &capture, |snap, complete| {
            if self.events.has_subscribers() {
                self.events.emit(EngineEvent::ItemOutput {
                    execution_id: self.execution_id.clone(),
                    job: self.job.clone(),
                    item: self.item,
                    text: snap.text,
                    written: snap.written,
                    dropped: snap.dropped,
                    complete,
                    at: self.clock.now(),
                });
            }
        })
        .await
    }
}

/// Reports what a job's state machine asks to report: misfires and skipped fires as metrics and
/// events, warnings as logs, refused fires to the job's error handler.
pub(crate) fn report(
    kit: &RunKit,
    events: &EventBus,
    me: &InstanceId,
    job: &JobName,
    command: Command,
) {
    match command {
        Command::Misfired(items) => {
            crate::metrics::misfires_flagged(me, job, items.len());
            events.emit(EngineEvent::Misfired {
                job: job.clone(),
                items,
            });
        }
        Command::Skipped {
            reason,
            items,
            missed,
            warn,
        } => {
            crate::metrics::fire_skipped(me, job, reason.as_str());
            if let Some(missed) = missed {
                crate::metrics::fire_missed(me, job, missed.as_str());
            }
            let missed = missed.map_or("no (runs later)", MissReason::as_str);
            if warn {
                tracing::warn!(%job, reason = reason.as_str(), items, missed,
                    "fire skipped: the job cannot keep up or cannot start work now \
                     (further skips in a row are logged at DEBUG)");
            } else {
                tracing::debug!(%job, reason = reason.as_str(), items, missed, "fire skipped");
            }
        }
        Command::Refuse(why) => {
            let _ = kit.error_handler.handle(job, None, &JobError::Refused(why));
        }
        Command::Warn(message) => tracing::warn!(%job, "{message}"),
        Command::WorkflowRunEnded { run, outcome } => {
            crate::metrics::workflow_run_ended(me, job, outcome);
            events.emit(EngineEvent::WorkflowRunEnded {
                job: job.clone(),
                run: run.to_string(),
                outcome,
            });
        }
        // The executor hands over only the five reports above.
        _ => {}
    }
}
