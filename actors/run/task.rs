//! One run's task, outside the executor's mailbox: a run of several items runs each in its own
//! task, a run of one item runs it here (a panic fails that item only, either way), listeners
//! before and after, the error handler for each failure, metrics and events, and
//! `ExecutorMsg::RunFinished` back to the executor at the end.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;

use futures::FutureExt;

use ractor::ActorRef;
use tokio::task::JoinHandle;

use crate::clock::SharedClock;
use crate::events::{EngineEvent, EventBus, RunState};
use crate::job::concurrency::Entry;
use crate::job::deadline::RunDeadline;
use crate::job::handlers::{panic_message, ErrorAction, RunInfo, RunOutcome};
use crate::job::output::OutputCapture;
use crate::job::{JobError, ShardingContext, SharedHandler};
use crate::metrics::Outcome;
use crate::types::{JobName, ShardItem};

use crate::actors::mail::{ExecutorMsg, RunReport};

use super::{RunRequest, Together};

/// Starts the run's task.
///
/// The request is boxed: an async fn keeps its argument's place beside the local it moves into,
/// so the request inline would be held twice (208 bytes each) by every run in flight; a fire of
/// ten thousand jobs has them all in flight at once.
///
/// `together`: the runs an instant starts together (fires decided ahead), this one among them:
/// the run goes on with its end (metrics, listeners, its report to the executor) only once every
/// one of them has started.
pub(super) fn spawn_run(
    req: Box<RunRequest>,
    executor: ActorRef<ExecutorMsg>,
    together: Option<Arc<Together>>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let report = Box::new(run(req, together.as_deref()).await);
        // The executor may be gone (job removed, node stopping): nobody is left to tell.
        let _ = executor.send_message(ExecutorMsg::RunFinished(report));
    })
}

async fn run(mut req: Box<RunRequest>, together: Option<&Together>) -> RunReport {
    if let Some(t) = together {
        t.started();
    }
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
    // A run of one item (most jobs have one) runs it in this task: no second task to allocate
    // and schedule at every fire. Several items run in tasks of their own, side by side.
    let alone = req.contexts.len() == 1;
    let tasks: Vec<(ShardItem, ItemRun)> = req
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
            let args = ItemArgs {
                ctx,
                handler,
                entry,
                deadline,
                chunks,
            };
            let run = run_item(Box::new(args));
            let run = if alone {
                ItemRun::Here(Box::pin(run))
            } else {
                ItemRun::Spawned(tokio::spawn(run))
            };
            (item, run)
        })
        .collect();
    let mut results = Vec::with_capacity(tasks.len());
    for (item, task) in tasks {
        results.push((item, task.result().await));
    }
    if let Some(t) = together {
        t.all_started().await;
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

/// One item's run: in a task of its own, or in the run's task (a run of one item).
enum ItemRun {
    Spawned(JoinHandle<Result<(), JobError>>),
    Here(Pin<Box<dyn Future<Output = Result<(), JobError>> + Send>>),
}

impl ItemRun {
    /// The item's result; a panic fails the item only, wherever it ran.
    async fn result(self) -> Result<(), JobError> {
        match self {
            Self::Spawned(task) => match task.await {
                Ok(r) => r,
                Err(e) if e.is_panic() => Err(JobError::Panicked(panic_message(&*e.into_panic()))),
                Err(e) => Err(JobError::Cancelled(e.to_string())),
            },
            Self::Here(run) => match AssertUnwindSafe(run).catch_unwind().await {
                Ok(r) => r,
                Err(panic) => Err(JobError::Panicked(panic_message(&*panic))),
            },
        }
    }
}

/// One item's task: its turn under the job's item concurrency, then its handler. Losing the
/// item while it waits its turn ends the wait without running it. A job with a timeout or
/// with its output captured runs the item inside a boxed guard: the common item's task stays a
/// few hundred bytes (its cell is allocated at every fire of every job; with the guards inline
/// it took two kilobytes, a size the allocator serves by sorting its free lists each time).
async fn run_item(item: Box<ItemArgs>) -> Result<(), JobError> {
    // One box for the arguments: an async fn holds its arguments and the locals they move into
    // side by side, and this future is the cell of every item's task.
    let _permit = match item.entry {
        Entry::Admitted(permit) => permit,
        waiting => {
            let cancel = item.ctx.cancellation.clone();
            let turn = Box::pin(async move {
                tokio::select! {
                    permit = waiting.admitted() => Some(permit),
                    () = cancel.cancelled() => None,
                }
            });
            let Some(permit) = turn.await else {
                return Err(JobError::Cancelled(
                    "item lost while waiting its turn".into(),
                ));
            };
            permit
        }
    };
    let ItemArgs {
        ctx,
        handler,
        deadline,
        chunks,
        ..
    } = *item;
    if ctx.cancellation.is_cancelled() {
        // Cancelled before its start (a run held for its instant, whose job stopped meanwhile).
        return Err(JobError::Cancelled(
            "item cancelled before it started".into(),
        ));
    }
    if deadline.is_none() && chunks.is_none() {
        return handler.run_item(ctx).await;
    }
    Box::pin(guarded(ctx, handler, deadline, chunks)).await
}

/// What an item's task is given.
struct ItemArgs {
    ctx: ShardingContext,
    handler: SharedHandler,
    /// Its place at the job's gate.
    entry: Entry,
    deadline: Option<Arc<RunDeadline>>,
    chunks: Option<OutputChunks>,
}

/// An item of a job with a timeout or captured output.
async fn guarded(
    ctx: ShardingContext,
    handler: SharedHandler,
    deadline: Option<Arc<RunDeadline>>,
    chunks: Option<OutputChunks>,
) -> Result<(), JobError> {
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
