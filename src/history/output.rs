//! Item run output in the history: one row per execution of a job that captures its output
//! (`shardcron.output`, see [`crate::job::output`]), in `SHARDCRON_EXECUTION_OUTPUT`, keyed by
//! the execution's id, so the execution table and its queries stay light.
//!
//! A running item's row is rewritten with every chunk (at most once a second while its output
//! changes, at most the job's bound in size) and marked complete by the last one, so a reader
//! follows a running item by reading its row again ([`History::output`]) and taking what is new
//! ([`OutputRecord::snapshot`], [`crate::job::output::OutputSnapshot::since`]). A chunk never
//! replaces a newer one (`written_bytes` only grows). ElasticJob has no such table; Java never
//! looks at it. The retention purge deletes its rows with the executions (by `update_time`).

use chrono::{DateTime, NaiveDateTime, Utc};
use serde::Serialize;
use sqlx::Row;

use super::record::ExecutionRecord;
use super::sql::EXECUTION_COLUMNS;
use super::sql::{
    bind_all, execution_from_row, fetch_optional, from_db, item_to_db, on_pool, to_db, Param, Store,
};
use super::{History, HistoryError};
use crate::job::output::OutputSnapshot;
use crate::types::{JobName, ShardItem};

/// The output table.
pub(super) const CREATE_OUTPUT: &str = "CREATE TABLE IF NOT EXISTS SHARDCRON_EXECUTION_OUTPUT (
    id TEXT NOT NULL,
    job_name VARCHAR(100) NOT NULL,
    sharding_item INT NOT NULL,
    output TEXT NOT NULL,
    written_bytes BIGINT NOT NULL,
    dropped_bytes BIGINT NOT NULL,
    complete INT NOT NULL,
    update_time TIMESTAMP NOT NULL,
    PRIMARY KEY (id))";

/// The retention purge deletes a job's rows by time.
pub(super) const CREATE_OUTPUT_INDEX: &str = "CREATE INDEX IF NOT EXISTS \
     SHARDCRON_EXECUTION_OUTPUT_JOB_TIME_INDEX ON SHARDCRON_EXECUTION_OUTPUT (job_name, update_time)";

const OUTPUT_COLUMNS: &str =
    "id, job_name, sharding_item, output, written_bytes, dropped_bytes, complete, update_time";

/// Inserts or moves a row forward; an older chunk arriving late, or one after the last, is
/// ignored.
const UPSERT_OUTPUT: &str = "INSERT INTO SHARDCRON_EXECUTION_OUTPUT (id, job_name, \
     sharding_item, output, written_bytes, dropped_bytes, complete, update_time) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (id) DO UPDATE SET \
     output = excluded.output, written_bytes = excluded.written_bytes, \
     dropped_bytes = excluded.dropped_bytes, complete = excluded.complete, \
     update_time = excluded.update_time \
     WHERE SHARDCRON_EXECUTION_OUTPUT.complete = 0 \
     AND SHARDCRON_EXECUTION_OUTPUT.written_bytes <= excluded.written_bytes";

/// One execution's captured output (a row of `SHARDCRON_EXECUTION_OUTPUT`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OutputRecord {
    /// The execution's id (`JOB_EXECUTION_LOG.id`).
    pub id: String,
    /// The job.
    pub job_name: String,
    /// The item.
    pub sharding_item: u32,
    /// The lines held, each `{stream} {text}\n` (`out`, `err`, `log`, `http`).
    pub output: String,
    /// Bytes written since the item started (held and evicted).
    pub written_bytes: u64,
    /// Bytes evicted from the ring (the oldest lines).
    pub dropped_bytes: u64,
    /// Whether the item had ended when the row was written.
    pub complete: bool,
    /// When the row was last written.
    pub update_time: DateTime<Utc>,
}

impl OutputRecord {
    /// The row as the capture's snapshot, to read what is new with
    /// [`OutputSnapshot::since`].
    pub fn snapshot(&self) -> OutputSnapshot {
        OutputSnapshot {
            text: self.output.clone(),
            written: self.written_bytes,
            dropped: self.dropped_bytes,
        }
    }
}

/// Which execution's output is asked for: the newest of the job's that matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputQuery {
    /// The job.
    pub job: JobName,
    /// Only this item.
    pub item: Option<ShardItem>,
    /// Only this run: an execution id (`{taskId}@-@{item}`), a task id, or the run number that
    /// ends a task id (`...@-@42`).
    pub run: Option<String>,
}

impl History {
    /// The newest execution matching `query`; `None` when there is none.
    pub async fn find_execution(
        &self,
        query: &OutputQuery,
    ) -> Result<Option<ExecutionRecord>, HistoryError> {
        let mut params = vec![Param::Text(query.job.to_string())];
        let mut sql =
            format!("SELECT {EXECUTION_COLUMNS} FROM JOB_EXECUTION_LOG WHERE job_name = $1");
        if let Some(item) = query.item {
            params.push(Param::Int(item_to_db(item.0)));
            sql += &format!(" AND sharding_item = ${}", params.len());
        }
        if let Some(run) = &query.run {
            params.push(Param::Text(run.clone()));
            let at = params.len();
            sql += &format!(" AND (id = ${at} OR task_id = ${at}");
            // A run number: digits only, so nothing in it means anything to LIKE.
            if !run.is_empty() && run.bytes().all(|b| b.is_ascii_digit()) {
                params.push(Param::Text(format!("%@-@{run}")));
                sql += &format!(" OR task_id LIKE ${}", params.len());
            }
            sql += ")";
        }
        sql += " ORDER BY start_time DESC, id DESC LIMIT 1";
        self.store.one_execution(&sql, params).await
    }

    /// Execution `id`, to see whether it has ended; `None` when the history has no such row.
    pub async fn execution(&self, id: &str) -> Result<Option<ExecutionRecord>, HistoryError> {
        let sql = format!("SELECT {EXECUTION_COLUMNS} FROM JOB_EXECUTION_LOG WHERE id = $1");
        self.store
            .one_execution(&sql, vec![Param::Text(id.to_owned())])
            .await
    }

    /// The captured output of execution `id`; `None` when the job captured none (or no chunk
    /// has reached the history yet).
    pub async fn output(&self, id: &str) -> Result<Option<OutputRecord>, HistoryError> {
        self.store.output(id).await
    }
}

/// Reads an [`OutputRecord`] from a row of either backend.
macro_rules! output_from_row {
    ($row:expr) => {{
        let row = $row;
        Ok::<_, sqlx::Error>(OutputRecord {
            id: row.try_get("id")?,
            job_name: row.try_get("job_name")?,
            sharding_item: u32::try_from(row.try_get::<i32, _>("sharding_item")?).unwrap_or(0),
            output: row.try_get("output")?,
            written_bytes: u64::try_from(row.try_get::<i64, _>("written_bytes")?).unwrap_or(0),
            dropped_bytes: u64::try_from(row.try_get::<i64, _>("dropped_bytes")?).unwrap_or(0),
            complete: row.try_get::<i32, _>("complete")? != 0,
            update_time: from_db(row.try_get::<Option<NaiveDateTime>, _>("update_time")?)
                .unwrap_or_default(),
        })
    }};
}

impl Store {
    /// Writes (or moves forward) one execution's output row.
    pub(super) async fn write_output(&self, r: &OutputRecord) -> Result<(), HistoryError> {
        let params = vec![
            Param::Text(r.id.clone()),
            Param::Text(r.job_name.clone()),
            Param::Int(i32::try_from(r.sharding_item).unwrap_or(i32::MAX)),
            Param::Text(r.output.clone()),
            Param::BigInt(i64::try_from(r.written_bytes).unwrap_or(i64::MAX)),
            Param::BigInt(i64::try_from(r.dropped_bytes).unwrap_or(i64::MAX)),
            Param::Int(i32::from(r.complete)),
            Param::Time(to_db(r.update_time)),
        ];
        (self.execute("SHARDCRON_EXECUTION_OUTPUT", &r.id, UPSERT_OUTPUT, params)).await
    }

    async fn one_execution(
        &self,
        sql: &str,
        params: Vec<Param>,
    ) -> Result<Option<ExecutionRecord>, HistoryError> {
        fetch_optional!(self, sql, params, "JOB_EXECUTION_LOG", execution_from_row)
    }

    async fn output(&self, id: &str) -> Result<Option<OutputRecord>, HistoryError> {
        let sql = format!("SELECT {OUTPUT_COLUMNS} FROM SHARDCRON_EXECUTION_OUTPUT WHERE id = $1");
        let params = vec![Param::Text(id.to_owned())];
        fetch_optional!(
            self,
            &sql,
            params,
            "SHARDCRON_EXECUTION_OUTPUT",
            output_from_row
        )
    }
}
