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
mod recording;
mod retention;
mod sql;
mod stats;

use std::path::{Path, PathBuf};

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
pub use recording::{HistoryHandle, HistoryProgress};
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
