//! Execution history: ElasticJob's RDB event tracing.
//!
//! Every item execution becomes an [`ExecutionRecord`] (ElasticJob's `JobExecutionEvent`, a row of
//! `JOB_EXECUTION_LOG`) and every status change of a run a [`StatusRecord`]
//! (`JobStatusTraceEvent`, a row of `JOB_STATUS_TRACE_LOG`: `TASK_STAGING`, `TASK_RUNNING`,
//! `TASK_FINISHED`, `TASK_ERROR`).
//!
//! ```text
//! executor run task ──emit──▶ EventBus ──bounded queue──▶ history task ──▶ tracing log
//!                     (never waits)      (overflow counted)             └─▶ SQLite | PostgreSQL
//! ```
//!
//! The records come from the [`EventBus`]: [`History::attach`] subscribes with a bounded queue and
//! starts a task that writes them, so a slow or unreachable database never delays a job. What
//! does not fit the queue is dropped and counted, by the bus (`shardcron_events_dropped_total`)
//! and by the [`HistoryHandle::dropped`] count; a write that fails is logged, counted
//! (`shardcron_history_write_errors_total`, [`HistoryProgress::write_errors`]) and the next event
//! is written as usual.
//!
//! A job that captures its output (`shardcron.output`) has it written beside its executions, one
//! row per execution in `SHARDCRON_EXECUTION_OUTPUT` ([`OutputRecord`], [`History::output`]),
//! rewritten while the item runs so that a reader can follow it (`output.rs`).
//!
//! The same database holds the audit log of operations (`SHARDCRON_AUDIT_LOG`, see
//! [`AuditRecord`]): [`History::audit`] writes a row, [`History::audits`] reads them.
//!
//! Sinks: a `tracing` line per event always (target `shardcron::history`), and the relational
//! sink: a SQLite file ([`History::sqlite`], the default: [`DEFAULT_SQLITE_FILE`]) or PostgreSQL
//! ([`History::postgres`]; plain TCP or a Unix socket, without TLS). Both tables are created when
//! missing, with ElasticJob's column names; the id, task id and message columns are `TEXT`
//! because our ids are longer than ElasticJob's UUIDs.
//!
//! Rows are kept for ever unless a [`Retention`] window is set: [`History::purge_periodically`]
//! then deletes older rows in small batches beside the writes (`retention.rs`, `purge.rs`).
//!
//! ```no_run
//! use shardcron::events::EventBus;
//! use shardcron::history::{History, HistoryQuery};
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let bus = EventBus::new();
//! let history = History::sqlite("shardcron-history.db").await?;
//! let _recording = history.attach(&bus); // pass `bus` to NodeBuilder::event_bus
//! let mut query = HistoryQuery::job("orders".parse()?);
//! query.failed_only = true;
//! for record in history.query(&query).await? {
//!     println!("{} item {}: {:?}", record.start_time, record.sharding_item, record.failure_cause);
//! }
//! # Ok(()) }
//! ```

mod audit;
mod cli;
mod output;
mod purge;
mod record;
mod retention;
mod sql;
mod stats;

use std::path::{Path, PathBuf};

use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::events::{Delivered, EngineEvent, EventBus, Subscription};
use crate::types::JobName;

pub(crate) use audit::audit_id;
pub use audit::{render_audits, AuditQuery, AuditRecord};
pub use cli::{
    history_flag, parse_item, parse_since, render_executions, HistoryLookupError, HistoryTarget,
    HISTORY_ENV,
};
pub use record::{
    source_name, state_name, to_write, ExecutionRecord, HistoryQuery, HistoryWrite, StatusRecord,
    LITE_EXECUTOR,
};

pub use output::{OutputQuery, OutputRecord};
pub use purge::PurgeHandle;
pub use retention::{
    windows_in, JobPurge, JobRetention, Retention, RetentionError, RetentionRecord,
    RetentionWindow, DEFAULT_PURGE_BATCH, DEFAULT_PURGE_EVERY, RETENTION_PROP,
};

pub use stats::{bucket, percentile, render_stats, Bucket, Granularity, JobStats, MAX_STATS_ROWS};

use sql::Store;

/// The SQLite file a history uses when none is named.
pub const DEFAULT_SQLITE_FILE: &str = "shardcron-history.db";

/// Events the history's queue holds before it drops (and counts) them.
pub const DEFAULT_CAPACITY: usize = 4096;

/// Why the history could not be opened, written or read.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// Creating the directory of the SQLite file.
    #[error("creating the history directory {path:?}")]
    CreateDirectory {
        /// The directory.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// Connecting to the database (the target is shown without its password).
    #[error("connecting to the history database {target}")]
    Connect {
        /// The file or URL.
        target: String,
        /// The driver's error.
        #[source]
        source: sqlx::Error,
    },
    /// Creating a table or index.
    #[error("creating table {table} of the history")]
    Migrate {
        /// The table.
        table: &'static str,
        /// The driver's error.
        #[source]
        source: sqlx::Error,
    },
    /// Writing a row.
    #[error("writing row {id:?} of {table}")]
    Write {
        /// The table.
        table: &'static str,
        /// The row's id.
        id: String,
        /// The driver's error.
        #[source]
        source: sqlx::Error,
    },
    /// Reading rows.
    #[error("querying {table}")]
    Query {
        /// The table.
        table: &'static str,
        /// The driver's error.
        #[source]
        source: sqlx::Error,
    },
    /// Parsing a `--since` value.
    #[error("--since {value:?}: expected an RFC 3339 instant (2026-03-02T10:00:00Z), a date (2026-03-02) or an age (90s, 15m, 2h, 7d)")]
    InvalidSince {
        /// The value given.
        value: String,
    },
    /// Deleting rows older than the retention window.
    #[error("purging old rows of {table}")]
    Purge {
        /// The table.
        table: &'static str,
        /// The driver's error.
        #[source]
        source: sqlx::Error,
    },
    /// Parsing a `--by` value.
    #[error("--by {value:?}: expected hour or day")]
    InvalidGranularity {
        /// The value given.
        value: String,
    },
    /// Parsing an `--item` value.
    #[error("--item {value:?}: expected an item number (0, 1, ...)")]
    InvalidItem {
        /// The value given.
        value: String,
    },
}

/// What the history is asked for: one job's status changes, newest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusQuery {
    /// The job.
    pub job: JobName,
    /// Only this run.
    pub task_id: Option<String>,
    /// At most this many records.
    pub limit: u32,
}

/// An open execution history: a database connection pool (cheap to clone) and this host's name.
#[derive(Debug, Clone)]
pub struct History {
    store: Store,
    hostname: String,
}

impl History {
    /// Opens the SQLite file at `path` (created, with its directory, when missing) and creates the
    /// tables when missing.
    pub async fn sqlite(path: impl AsRef<Path>) -> Result<Self, HistoryError> {
        Self::ready(Store::sqlite(path.as_ref()).await?).await
    }

    /// Connects to PostgreSQL (`postgres://user:password@host:port/db`, or
    /// `postgres:///db?host=/run/postgresql` for a socket) and creates the tables when missing.
    pub async fn postgres(url: &str) -> Result<Self, HistoryError> {
        Self::ready(Store::postgres(url).await?).await
    }

    /// Opens what `target` names: see [`HistoryTarget::parse`].
    pub async fn open(target: &str) -> Result<Self, HistoryError> {
        match HistoryTarget::parse(target) {
            HistoryTarget::Sqlite(path) => Self::sqlite(path).await,
            HistoryTarget::Postgres(url) => Self::postgres(&url).await,
        }
    }

    async fn ready(store: Store) -> Result<Self, HistoryError> {
        store.migrate().await?;
        Ok(Self {
            store,
            hostname: local_hostname(),
        })
    }

    /// Records `hostname` as this host's name (default: the kernel's host name).
    pub fn with_hostname(mut self, hostname: impl Into<String>) -> Self {
        self.hostname = hostname.into();
        self
    }

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

    /// Writes one record (what the attached task does for each event).
    pub async fn write(&self, write: &HistoryWrite) -> Result<(), HistoryError> {
        self.store.write(write).await
    }

    /// One job's executions matching `query`, newest first.
    pub async fn query(&self, query: &HistoryQuery) -> Result<Vec<ExecutionRecord>, HistoryError> {
        self.store.executions(query).await
    }

    /// One job's status changes matching `query`, newest first.
    pub async fn statuses(&self, query: &StatusQuery) -> Result<Vec<StatusRecord>, HistoryError> {
        self.store.statuses(query).await
    }

    /// Writes one row of the audit log (see [`AuditRecord`]).
    pub async fn audit(&self, record: &AuditRecord) -> Result<(), HistoryError> {
        self.store.write_audit(record).await
    }

    /// The audit log's rows matching `query`, newest first.
    pub async fn audits(&self, query: &AuditQuery) -> Result<Vec<AuditRecord>, HistoryError> {
        self.store.audits(query).await
    }

    /// Closes the connection pool (after [`HistoryHandle::close`], so nothing is left to write).
    pub async fn close(&self) {
        self.store.close().await
    }

    /// `at` as the database stores it (rounded to the microsecond), to compare records with.
    pub fn stored_instant(at: chrono::DateTime<chrono::Utc>) -> chrono::DateTime<chrono::Utc> {
        sql::stored(at)
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

/// `error: cause: cause`, so a log line says why, not only which step.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text += &format!(": {cause}");
        source = cause.source();
    }
    text
}

/// This host's name, as ElasticJob records it; the kernel's, else `$HOSTNAME`, else `unknown`.
fn local_hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "unknown".to_owned())
}
