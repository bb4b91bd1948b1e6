//! Engine events as a node emits them, for tests that feed a history or a listener directly, and
//! a history recording a bus.

use std::path::Path;

use chrono::{DateTime, Utc};
use shardcron::events::{EngineEvent, EventBus};
use shardcron::history::{History, HistoryHandle};
use shardcron::job::{ExecutionSource, ItemOutcome};
use shardcron::{InstanceId, JobName, ShardItem};

/// An `ItemFinished` of item `n` of `job` on instance `10.0.0.9@-@9`, started and ended at `at`:
/// failed with `failure` when there is one, else a success.
pub fn item_finished(job: &str, n: u32, at: DateTime<Utc>, failure: Option<String>) -> EngineEvent {
    EngineEvent::ItemFinished {
        execution_id: format!("{job}@-@{n}@-@x@-@{n}"),
        job: JobName::new(job).unwrap(),
        item: ShardItem(n),
        instance: InstanceId::parse("10.0.0.9@-@9").unwrap(),
        source: ExecutionSource::Normal,
        task_id: format!("{job}@-@{n}@-@x"),
        started_at: at,
        finished_at: at,
        outcome: if failure.is_some() {
            ItemOutcome::Failed
        } else {
            ItemOutcome::Success
        },
        failure,
        scheduled_at: None,
        attempt: 1,
        workflow_run: None,
    }
}

/// A SQLite history `dir/history.db` recording a new event bus: the database's path (as the
/// console and the CLI take it), the history, the bus and the recording.
pub async fn recorded_history(dir: &Path) -> (String, History, EventBus, HistoryHandle) {
    let db = dir.join("history.db").display().to_string();
    let history = History::open(&db).await.expect("history opens");
    let bus = EventBus::new();
    let recording = history.attach(&bus);
    (db, history, bus, recording)
}
