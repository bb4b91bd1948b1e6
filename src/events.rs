//! Engine events and their delivery: every subscriber gets its own bounded queue, so a slow
//! subscriber never blocks a job and never silently loses events: what does not fit is counted, and
//! the count is reported (to the subscriber with its next event, and as a metric).
//!
//! Subscribers: the execution history (ElasticJob's `JobExecutionEvent` and `JobStatusTraceEvent`),
//! host actors that embed the engine, and tests.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use serde::Serialize;
use tokio::sync::mpsc;

use crate::job::{ExecutionSource, ItemOutcome};
use crate::registry::SessionState;
use crate::types::{InstanceId, JobName, ShardItem};

/// The status of a run, as ElasticJob's `JobStatusTraceEvent` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RunState {
    /// The run was planned and its markers are being written.
    TaskStaging,
    /// The items run.
    TaskRunning,
    /// Every item succeeded.
    TaskFinished,
    /// At least one item failed.
    TaskError,
}

/// Something the engine did.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EngineEvent {
    /// One item started.
    ItemStarted {
        /// Unique id of this item execution (shared with its `ItemFinished`).
        execution_id: String,
        /// The job.
        job: JobName,
        /// The item.
        item: ShardItem,
        /// This instance.
        instance: InstanceId,
        /// Why it ran.
        source: ExecutionSource,
        /// The run's task id.
        task_id: String,
        /// When it started.
        started_at: DateTime<Utc>,
        /// The cron instant the run answers (`None` for a manual trigger): the trigger delay is
        /// `started_at` minus this.
        scheduled_at: Option<DateTime<Utc>>,
        /// 1 for a first run, 2 for its first retry (`shardcron.retry.max`), and so on.
        attempt: u32,
        /// The workflow run the run is a step of (`shardcron.after`); `None` outside workflows.
        #[serde(skip_serializing_if = "Option::is_none")]
        workflow_run: Option<String>,
    },
    /// One item ended.
    ItemFinished {
        /// Id given at start.
        execution_id: String,
        /// The job.
        job: JobName,
        /// The item.
        item: ShardItem,
        /// This instance.
        instance: InstanceId,
        /// Why it ran.
        source: ExecutionSource,
        /// The run's task id.
        task_id: String,
        /// When it started.
        started_at: DateTime<Utc>,
        /// When it ended.
        finished_at: DateTime<Utc>,
        /// The failure, if any.
        failure: Option<String>,
        /// The cron instant the run answers (`None` for a manual trigger).
        scheduled_at: Option<DateTime<Utc>>,
        /// 1 for a first run, 2 for its first retry, and so on.
        attempt: u32,
        /// The workflow run the run is a step of (`shardcron.after`); `None` outside workflows.
        #[serde(skip_serializing_if = "Option::is_none")]
        workflow_run: Option<String>,
        /// How it ended: `success`, `failed`, `timeout` or `cancelled`.
        outcome: ItemOutcome,
    },
    /// A chunk of a running item's captured output (every second while it changes), or its
    /// last one (`complete`) when the item has ended: only for a job that captures its output
    /// (`shardcron.output`, see [`crate::job::output`]). Each chunk holds the whole ring.
    ItemOutput {
        /// The execution the output belongs to (its `ItemStarted`'s id).
        execution_id: String,
        /// The job.
        job: JobName,
        /// The item.
        item: ShardItem,
        /// The lines held, each `{stream} {text}\n`.
        text: String,
        /// Bytes written since the item started (held and evicted).
        written: u64,
        /// Bytes evicted from the ring, the oldest lines.
        dropped: u64,
        /// Whether the item has ended: no chunk follows.
        complete: bool,
        /// When the chunk was taken.
        at: DateTime<Utc>,
    },
    /// A run changed status.
    RunStatus {
        /// The job.
        job: JobName,
        /// The run's task id.
        task_id: String,
        /// This instance.
        instance: InstanceId,
        /// The items of the run.
        items: Vec<ShardItem>,
        /// Why it ran.
        source: ExecutionSource,
        /// The new status.
        state: RunState,
        /// A message (the failures of an errored run).
        message: String,
        /// When.
        at: DateTime<Utc>,
    },
    /// This leader committed a new sharding of a job.
    ShardingChanged {
        /// The job.
        job: JobName,
        /// The new owners, item by item.
        assignment: Vec<(ShardItem, InstanceId)>,
    },
    /// This instance became the job's leader.
    LeadershipGained {
        /// The job.
        job: JobName,
    },
    /// This instance is no longer the job's leader.
    LeadershipLost {
        /// The job.
        job: JobName,
    },
    /// The registry session changed state.
    SessionChanged {
        /// The new state.
        state: SessionState,
    },
    /// Fires were missed because items still ran.
    Misfired {
        /// The job.
        job: JobName,
        /// The items flagged.
        items: Vec<ShardItem>,
    },
    /// This instance took over items of a crashed instance.
    FailoverClaimed {
        /// The job.
        job: JobName,
        /// The items taken over.
        items: Vec<ShardItem>,
    },
    /// A job's part in a workflow run ended: published by the job's leader, once per run.
    WorkflowRunEnded {
        /// The job.
        job: JobName,
        /// The workflow run (the root fire's instant in epoch ms).
        run: String,
        /// `completed`, `failed` or `skipped`.
        outcome: crate::decide::workflow::records::WorkflowOutcome,
    },
}

/// What a subscriber receives: the event, and how many events it missed (queue full) since the last
/// delivery.
#[derive(Debug, Clone, PartialEq)]
pub struct Delivered {
    /// The event.
    pub event: EngineEvent,
    /// Events dropped for this subscriber since the previous delivery.
    pub missed_before: u64,
}

#[derive(Debug)]
struct Subscriber {
    name: String,
    tx: mpsc::Sender<Delivered>,
    pending_missed: AtomicU64,
    total_missed: AtomicU64,
}

/// The fan-out of engine events to subscribers with bounded queues. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct EventBus {
    subscribers: Arc<Mutex<Vec<Arc<Subscriber>>>>,
}

/// A subscription: its receiver and its overflow count.
#[derive(Debug)]
pub struct Subscription {
    /// Events, in the order the engine emitted them.
    pub events: mpsc::Receiver<Delivered>,
    sub: Arc<Subscriber>,
}

impl Subscription {
    /// Events dropped because this subscriber's queue was full, since it subscribed.
    pub fn missed(&self) -> u64 {
        self.sub.total_missed.load(Ordering::Relaxed)
    }
}

impl EventBus {
    /// A bus with no subscriber.
    pub fn new() -> Self {
        Self::default()
    }

    /// Subscribes with a queue of `capacity` events, named for the overflow metric.
    pub fn subscribe(&self, name: &str, capacity: usize) -> Subscription {
        let (tx, events) = mpsc::channel(capacity.max(1));
        let sub = Arc::new(Subscriber {
            name: name.to_owned(),
            tx,
            pending_missed: AtomicU64::new(0),
            total_missed: AtomicU64::new(0),
        });
        self.lock().push(sub.clone());
        Subscription { events, sub }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Arc<Subscriber>>> {
        self.subscribers.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether anyone listens (lets emitters skip building events).
    pub fn has_subscribers(&self) -> bool {
        !self.lock().is_empty()
    }

    /// Delivers `event` to every subscriber without waiting: a full queue counts the event as
    /// missed for that subscriber; a closed one is dropped.
    pub fn emit(&self, event: EngineEvent) {
        let mut subs = self.lock();
        subs.retain(|s| !s.tx.is_closed());
        for s in subs.iter() {
            let missed_before = s.pending_missed.swap(0, Ordering::Relaxed);
            let delivered = Delivered {
                event: event.clone(),
                missed_before,
            };
            if s.tx.try_send(delivered).is_err() {
                s.pending_missed
                    .fetch_add(missed_before + 1, Ordering::Relaxed);
                s.total_missed.fetch_add(1, Ordering::Relaxed);
                crate::metrics::event_dropped(&s.name);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(n: u32) -> EngineEvent {
        EngineEvent::Misfired {
            job: JobName::new("j").unwrap(),
            items: vec![ShardItem(n)],
        }
    }

    #[tokio::test]
    async fn a_full_queue_counts_what_it_drops_and_reports_it_with_the_next_delivery() {
        let bus = EventBus::new();
        let mut sub = bus.subscribe("test", 2);
        for n in 0..5 {
            bus.emit(ev(n));
        }
        assert_eq!(sub.missed(), 3);
        assert_eq!(
            sub.events.recv().await.unwrap(),
            Delivered {
                event: ev(0),
                missed_before: 0
            }
        );
        assert_eq!(
            sub.events.recv().await.unwrap(),
            Delivered {
                event: ev(1),
                missed_before: 0
            }
        );
        bus.emit(ev(9));
        assert_eq!(
            sub.events.recv().await.unwrap(),
            Delivered {
                event: ev(9),
                missed_before: 3
            }
        );
    }

    #[test]
    fn a_timed_out_item_says_timeout_and_its_attempt_in_the_event_stream() {
        let at = DateTime::from_timestamp(1_770_000_000, 0).unwrap();
        let event = EngineEvent::ItemFinished {
            execution_id: "t@-@0".into(),
            job: JobName::new("j").unwrap(),
            item: ShardItem(0),
            instance: InstanceId::parse("10.0.0.1@-@1").unwrap(),
            source: ExecutionSource::Normal,
            task_id: "t".into(),
            started_at: at,
            finished_at: at,
            failure: Some("timed out after 2s".into()),
            scheduled_at: None,
            attempt: 2,
            workflow_run: None,
            outcome: ItemOutcome::Timeout,
        };
        let json = serde_json::to_value(&event).unwrap();
        assert_eq!(json["type"], "item_finished");
        assert_eq!(json["outcome"], "timeout");
        assert_eq!(json["attempt"], 2);
    }

    #[tokio::test]
    async fn closed_subscribers_are_dropped() {
        let bus = EventBus::new();
        let sub = bus.subscribe("gone", 1);
        drop(sub);
        bus.emit(ev(0));
        assert!(!bus.has_subscribers());
    }
}
