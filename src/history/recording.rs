//! Recording: a history attached to the event bus, the task that writes each event in the order
//! the engine emitted it (and logs it), and the handle that reports its progress and stops it.

use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::events::{Delivered, EngineEvent, EventBus, Subscription};

use super::*;

impl History {
    /// Starts recording the events of `bus` with a queue of [`DEFAULT_CAPACITY`] events.
    pub fn attach(&self, bus: &EventBus) -> HistoryHandle {
        self.attach_with_capacity(bus, DEFAULT_CAPACITY)
    }

    /// Starts recording the events of `bus` with a queue of `capacity` events.
    pub fn attach_with_capacity(&self, bus: &EventBus, capacity: usize) -> HistoryHandle {
        self.attach_subscription(bus.subscribe("history", capacity))
    }

    /// Starts recording the events of a subscription (e.g. `NodeHandle::subscribe`).
    pub fn attach_subscription(&self, mut subscription: Subscription) -> HistoryHandle {
        // The task reads the queue; the handle keeps the subscription for its overflow count.
        let (_, closed) = mpsc::channel(1);
        let events = std::mem::replace(&mut subscription.events, closed);
        let (progress, watcher) = watch::channel(HistoryProgress::default());
        let stop = CancellationToken::new();
        let task = tokio::spawn(record_events(self.clone(), events, progress, stop.clone()));
        HistoryHandle {
            subscription,
            progress: watcher,
            stop,
            task: Some(task),
        }
    }
}

/// What the recording task has done so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HistoryProgress {
    /// Events received from the bus.
    pub received: u64,
    /// Rows written (or completed).
    pub written: u64,
    /// Writes that failed (logged, then skipped).
    pub write_errors: u64,
    /// The last write error, for a health check.
    pub last_error: Option<String>,
}

/// The recording task of an attached history. Dropping it stops the task after it has written
/// what was already queued.
#[derive(Debug)]
pub struct HistoryHandle {
    subscription: Subscription,
    progress: watch::Receiver<HistoryProgress>,
    stop: CancellationToken,
    task: Option<JoinHandle<()>>,
}

impl HistoryHandle {
    /// Events dropped because the history's queue was full (also counted by the bus in
    /// `shardcron_events_dropped_total{subscriber="history"}`).
    pub fn dropped(&self) -> u64 {
        self.subscription.missed()
    }

    /// What the task has done so far.
    pub fn progress(&self) -> HistoryProgress {
        self.progress.borrow().clone()
    }

    /// A receiver that changes after every event the task handles: wait on it rather than
    /// polling the database.
    pub fn watch(&self) -> watch::Receiver<HistoryProgress> {
        self.progress.clone()
    }

    /// Writes what is already queued, then stops the task.
    pub async fn close(mut self) -> HistoryProgress {
        self.stop.cancel();
        if let Some(task) = self.task.take() {
            if let Err(e) = task.await {
                tracing::error!(target: "shardcron::history", error = %e, "the history task failed");
            }
        }
        self.progress()
    }
}

impl Drop for HistoryHandle {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// The recording task: one event at a time, in the order the engine emitted them.
async fn record_events(
    history: History,
    mut events: mpsc::Receiver<Delivered>,
    progress: watch::Sender<HistoryProgress>,
    stop: CancellationToken,
) {
    loop {
        let delivered = tokio::select! {
            biased;
            delivered = events.recv() => delivered,
            () = stop.cancelled() => break,
        };
        match delivered {
            Some(delivered) => record(&history, delivered, &progress).await,
            None => return,
        }
    }
    // Stopping: what the engine already handed over is still written.
    while let Ok(delivered) = events.try_recv() {
        record(&history, delivered, &progress).await;
    }
}

async fn record(
    history: &History,
    delivered: Delivered,
    progress: &watch::Sender<HistoryProgress>,
) {
    if delivered.missed_before > 0 {
        tracing::warn!(
            target: "shardcron::history",
            missed = delivered.missed_before,
            "the history queue was full: events were dropped and are missing from the history"
        );
    }
    log_event(&delivered.event);
    let outcome = match to_write(&delivered.event, &history.hostname) {
        Some(write) => Some(history.write(&write).await),
        None => None,
    };
    progress.send_modify(|p| {
        p.received += 1;
        match outcome {
            Some(Ok(())) => p.written += 1,
            Some(Err(e)) => {
                crate::metrics::history_write_failed();
                let message = error_chain(&e);
                tracing::warn!(target: "shardcron::history", error = %message, "history write failed");
                p.write_errors += 1;
                p.last_error = Some(message);
            }
            None => {}
        }
    });
}

/// The tracing sink: one line per execution and status change.
fn log_event(event: &EngineEvent) {
    match event {
        EngineEvent::ItemStarted {
            job, item, source, ..
        } => {
            tracing::debug!(target: "shardcron::history", %job, %item, source = source.as_str(), "item started")
        }
        EngineEvent::ItemFinished {
            job,
            item,
            source,
            failure: None,
            started_at,
            finished_at,
            ..
        } => tracing::info!(
            target: "shardcron::history", %job, %item, source = source.as_str(),
            ms = (*finished_at - *started_at).num_milliseconds(), "item succeeded"
        ),
        EngineEvent::ItemFinished {
            job,
            item,
            source,
            failure: Some(cause),
            attempt,
            outcome,
            ..
        } => tracing::warn!(
            target: "shardcron::history", %job, %item, source = source.as_str(), attempt,
            outcome = outcome.as_str(), cause = %crate::secret::redact_text(cause), "item failed"
        ),
        EngineEvent::RunStatus {
            job,
            task_id,
            state,
            message,
            ..
        } => tracing::debug!(
            target: "shardcron::history", %job, %task_id, state = state_name(*state),
            message = %crate::secret::redact_text(message), "run status"
        ),
        _ => {}
    }
}
