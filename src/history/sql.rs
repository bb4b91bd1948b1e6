//! The relational sink: ElasticJob's `JOB_EXECUTION_LOG` and `JOB_STATUS_TRACE_LOG` tables on
//! SQLite or PostgreSQL, through one sqlx pool of either kind.
//!
//! The statements are written once, with `$n` placeholders (both backends accept them), and bound
//! per backend by the macros of `rows.rs`: sqlx's `Any` driver would do the same at the cost of a runtime
//! type mapping and another feature.
//!
//! Every write is idempotent (`ON CONFLICT (id)`), so a redelivered event, or several nodes
//! writing into one database, never fails or duplicates a row.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::postgres::{PgPool, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions};
use sqlx::Row;

mod rows;

use super::record::{ExecutionRecord, HistoryQuery, HistoryWrite, StatusRecord};
use super::{HistoryError, StatusQuery};

pub(super) use rows::{
    bind_all, execution_from_row, fetch_optional, fetch_rows, from_db, item_to_db, on_pool, stored,
    to_db, Param,
};
use rows::{execution_params, status_from_row, status_params};

/// `JOB_EXECUTION_LOG` with ElasticJob's columns. Ids, task ids and causes are `TEXT`: our ids
/// (`{taskId}@-@{item}`) and task ids are longer than ElasticJob's UUIDs, and a cause is never
/// truncated.
const CREATE_EXECUTION_LOG: &str = "CREATE TABLE IF NOT EXISTS JOB_EXECUTION_LOG (
    id TEXT NOT NULL,
    job_name VARCHAR(100) NOT NULL,
    task_id TEXT NOT NULL,
    hostname VARCHAR(255) NOT NULL,
    ip VARCHAR(50) NOT NULL,
    sharding_item INT NOT NULL,
    execution_source VARCHAR(20) NOT NULL,
    failure_cause TEXT NULL,
    is_success INT NOT NULL,
    start_time TIMESTAMP NULL,
    complete_time TIMESTAMP NULL,
    PRIMARY KEY (id))";

/// The history query filters by job and orders by start time.
const CREATE_EXECUTION_INDEX: &str =
    "CREATE INDEX IF NOT EXISTS JOB_EXECUTION_LOG_JOB_START_INDEX \
     ON JOB_EXECUTION_LOG (job_name, start_time)";

/// `JOB_STATUS_TRACE_LOG` with ElasticJob's columns (the same widening as above).
const CREATE_STATUS_TRACE_LOG: &str = "CREATE TABLE IF NOT EXISTS JOB_STATUS_TRACE_LOG (
    id TEXT NOT NULL,
    job_name VARCHAR(100) NOT NULL,
    original_task_id TEXT NOT NULL,
    task_id TEXT NOT NULL,
    slave_id TEXT NOT NULL,
    source VARCHAR(50) NOT NULL,
    execution_type VARCHAR(20) NOT NULL,
    sharding_item TEXT NOT NULL,
    state VARCHAR(20) NOT NULL,
    message TEXT NULL,
    creation_time TIMESTAMP NULL,
    PRIMARY KEY (id))";

/// ElasticJob's own index on the trace table.
const CREATE_STATUS_INDEX: &str =
    "CREATE INDEX IF NOT EXISTS TASK_ID_STATE_INDEX ON JOB_STATUS_TRACE_LOG (task_id, state)";

/// The retention purge deletes a job's status rows by time.
const CREATE_STATUS_JOB_INDEX: &str =
    "CREATE INDEX IF NOT EXISTS JOB_STATUS_TRACE_LOG_JOB_TIME_INDEX \
     ON JOB_STATUS_TRACE_LOG (job_name, creation_time)";

/// The window the last purge applied to each job (`retention.rs`): shardcron's own table.
const CREATE_RETENTION: &str = "CREATE TABLE IF NOT EXISTS SHARDCRON_HISTORY_RETENTION (
    job_name VARCHAR(100) NOT NULL,
    window_seconds BIGINT NOT NULL,
    purged_before TIMESTAMP NOT NULL,
    purged_at TIMESTAMP NOT NULL,
    PRIMARY KEY (job_name))";

const MIGRATION: [(&str, &str); 10] = [
    ("JOB_EXECUTION_LOG", CREATE_EXECUTION_LOG),
    ("JOB_EXECUTION_LOG", CREATE_EXECUTION_INDEX),
    ("JOB_STATUS_TRACE_LOG", CREATE_STATUS_TRACE_LOG),
    ("JOB_STATUS_TRACE_LOG", CREATE_STATUS_INDEX),
    ("JOB_STATUS_TRACE_LOG", CREATE_STATUS_JOB_INDEX),
    ("SHARDCRON_HISTORY_RETENTION", CREATE_RETENTION),
    ("SHARDCRON_AUDIT_LOG", super::audit::CREATE_AUDIT_LOG),
    ("SHARDCRON_AUDIT_LOG", super::audit::CREATE_AUDIT_INDEX),
    ("SHARDCRON_EXECUTION_OUTPUT", super::output::CREATE_OUTPUT),
    (
        "SHARDCRON_EXECUTION_OUTPUT",
        super::output::CREATE_OUTPUT_INDEX,
    ),
];

/// Columns shardcron adds to ElasticJob's tables (nullable, so Java's inserts still work), added
/// to a table created before them: (table, column, type). A row without them (ElasticJob's, or
/// older) reads as `None`.
const ADDED_COLUMNS: [(&str, &str, &str); 4] = [
    ("JOB_EXECUTION_LOG", "scheduled_time", "TIMESTAMP NULL"),
    ("JOB_EXECUTION_LOG", "attempt", "INT NULL"),
    ("JOB_EXECUTION_LOG", "outcome", "VARCHAR(20) NULL"),
    ("JOB_EXECUTION_LOG", "workflow_run", "VARCHAR(40) NULL"),
];

/// Serialises concurrent migrations of several nodes on one PostgreSQL database:
/// `CREATE TABLE IF NOT EXISTS` races there (a unique violation on the catalog).
const PG_MIGRATION_LOCK: i64 = 0x7368_6172_6463_726f; // "shardcro"

pub(super) const EXECUTION_COLUMNS: &str = "id, job_name, task_id, hostname, ip, sharding_item, \
     execution_source, failure_cause, is_success, start_time, complete_time, scheduled_time, \
     attempt, outcome, workflow_run";

const INSERT_EXECUTION: &str = "INSERT INTO JOB_EXECUTION_LOG (id, job_name, task_id, hostname, \
     ip, sharding_item, execution_source, failure_cause, is_success, start_time, complete_time, \
     scheduled_time, attempt, outcome, workflow_run) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)";

const STATUS_COLUMNS: &str = "id, job_name, original_task_id, task_id, slave_id, source, \
     execution_type, sharding_item, state, message, creation_time";

const INSERT_STATUS: &str = "INSERT INTO JOB_STATUS_TRACE_LOG (id, job_name, original_task_id, \
     task_id, slave_id, source, execution_type, sharding_item, state, message, creation_time) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT (id) DO NOTHING";

/// A pool on one of the two backends.
#[derive(Debug, Clone)]
pub(super) enum Store {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

impl Store {
    /// Opens (creating it when missing) the SQLite file at `path`.
    pub(super) async fn sqlite(path: &Path) -> Result<Self, HistoryError> {
        let target = path.display().to_string();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| HistoryError::CreateDirectory {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            // Readers (the CLI) never block the writer, and the writer waits for a lock rather
            // than failing while another process writes.
            .journal_mode(SqliteJournalMode::Wal)
            .busy_timeout(Duration::from_secs(5));
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(options)
            .await
            .map_err(|source| HistoryError::Connect { target, source })?;
        Ok(Self::Sqlite(pool))
    }

    /// Connects to PostgreSQL at `url`.
    pub(super) async fn postgres(url: &str) -> Result<Self, HistoryError> {
        let options = sqlx::postgres::PgConnectOptions::from_str(url).map_err(|source| {
            HistoryError::Connect {
                target: redact(url),
                source,
            }
        })?;
        let pool = PgPoolOptions::new()
            .max_connections(4)
            .acquire_timeout(Duration::from_secs(10))
            .connect_with(options)
            .await
            .map_err(|source| HistoryError::Connect {
                target: redact(url),
                source,
            })?;
        Ok(Self::Postgres(pool))
    }

    /// Creates the tables and their indexes when missing.
    pub(super) async fn migrate(&self) -> Result<(), HistoryError> {
        let fail = |table: &'static str| move |source| HistoryError::Migrate { table, source };
        match self {
            Self::Sqlite(pool) => {
                for (table, ddl) in MIGRATION {
                    sqlx::query(ddl).execute(pool).await.map_err(fail(table))?;
                }
                for (table, column, kind) in ADDED_COLUMNS {
                    if sqlite_has_column(pool, table, column)
                        .await
                        .map_err(fail(table))?
                    {
                        continue;
                    }
                    let added =
                        sqlx::query(&format!("ALTER TABLE {table} ADD COLUMN {column} {kind}"))
                            .execute(pool)
                            .await;
                    // Two processes opening one new file both find the column missing; the
                    // second's ALTER fails, and the column is there all the same.
                    if let Err(source) = added {
                        if !sqlite_has_column(pool, table, column)
                            .await
                            .map_err(fail(table))?
                        {
                            return Err(fail(table)(source));
                        }
                    }
                }
            }
            Self::Postgres(pool) => {
                let mut tx = pool.begin().await.map_err(fail("JOB_EXECUTION_LOG"))?;
                sqlx::query("SELECT pg_advisory_xact_lock($1)")
                    .bind(PG_MIGRATION_LOCK)
                    .execute(&mut *tx)
                    .await
                    .map_err(fail("JOB_EXECUTION_LOG"))?;
                for (table, ddl) in MIGRATION {
                    sqlx::query(ddl)
                        .execute(&mut *tx)
                        .await
                        .map_err(fail(table))?;
                }
                for (table, column, kind) in ADDED_COLUMNS {
                    let ddl =
                        format!("ALTER TABLE {table} ADD COLUMN IF NOT EXISTS {column} {kind}");
                    sqlx::query(&ddl)
                        .execute(&mut *tx)
                        .await
                        .map_err(fail(table))?;
                }
                tx.commit().await.map_err(fail("JOB_STATUS_TRACE_LOG"))?;
            }
        }
        Ok(())
    }

    /// Writes one row (or completes one).
    pub(super) async fn write(&self, write: &HistoryWrite) -> Result<(), HistoryError> {
        let (table, id, sql, params) = match write {
            HistoryWrite::ExecutionStarted(r) => (
                "JOB_EXECUTION_LOG",
                &r.id,
                format!("{INSERT_EXECUTION} ON CONFLICT (id) DO NOTHING"),
                execution_params(r),
            ),
            // The start may have been dropped (a full queue): insert the whole row then.
            HistoryWrite::ExecutionFinished(r) => (
                "JOB_EXECUTION_LOG",
                &r.id,
                format!(
                    "{INSERT_EXECUTION} ON CONFLICT (id) DO UPDATE SET \
                     failure_cause = excluded.failure_cause, is_success = excluded.is_success, \
                     complete_time = excluded.complete_time, outcome = excluded.outcome"
                ),
                execution_params(r),
            ),
            HistoryWrite::Output(r) => return self.write_output(r).await,
            HistoryWrite::Status(r) => (
                "JOB_STATUS_TRACE_LOG",
                &r.id,
                INSERT_STATUS.to_owned(),
                status_params(r),
            ),
        };
        self.execute(table, id, &sql, params).await
    }

    /// Runs one writing statement; a failure names `table` and the row's `id`.
    pub(super) async fn execute(
        &self,
        table: &'static str,
        id: &str,
        sql: &str,
        params: Vec<Param>,
    ) -> Result<(), HistoryError> {
        let result = on_pool!(self, pool => bind_all!(sqlx::query(sql), params)
            .execute(pool)
            .await
            .map(drop));
        result.map_err(|source| HistoryError::Write {
            table,
            id: id.to_owned(),
            source,
        })
    }

    /// One job's executions, newest first.
    pub(super) async fn executions(
        &self,
        q: &HistoryQuery,
    ) -> Result<Vec<ExecutionRecord>, HistoryError> {
        let mut params = vec![Param::Text(q.job.to_string())];
        let mut sql =
            format!("SELECT {EXECUTION_COLUMNS} FROM JOB_EXECUTION_LOG WHERE job_name = $1");
        if let Some(item) = q.item {
            params.push(Param::Int(item_to_db(item.0)));
            sql += &format!(" AND sharding_item = ${}", params.len());
        }
        if let Some(since) = q.since {
            params.push(Param::Time(to_db(since)));
            sql += &format!(" AND start_time >= ${}", params.len());
        }
        if let Some(run) = &q.workflow_run {
            params.push(Param::Text(run.clone()));
            sql += &format!(" AND workflow_run = ${}", params.len());
        }
        if q.failed_only {
            // An unfinished execution has not failed (yet).
            sql += " AND is_success = 0 AND complete_time IS NOT NULL";
        }
        params.push(Param::BigInt(i64::from(q.limit)));
        sql += &format!(" ORDER BY start_time DESC, id DESC LIMIT ${}", params.len());
        fetch_rows!(self, &sql, params, "JOB_EXECUTION_LOG", execution_from_row)
    }

    /// One job's status changes, newest first.
    pub(super) async fn statuses(
        &self,
        q: &StatusQuery,
    ) -> Result<Vec<StatusRecord>, HistoryError> {
        let mut params = vec![Param::Text(q.job.to_string())];
        let mut sql =
            format!("SELECT {STATUS_COLUMNS} FROM JOB_STATUS_TRACE_LOG WHERE job_name = $1");
        if let Some(task_id) = &q.task_id {
            params.push(Param::Text(task_id.clone()));
            sql += &format!(" AND task_id = ${}", params.len());
        }
        params.push(Param::BigInt(i64::from(q.limit)));
        sql += &format!(
            " ORDER BY creation_time DESC, id DESC LIMIT ${}",
            params.len()
        );
        fetch_rows!(self, &sql, params, "JOB_STATUS_TRACE_LOG", status_from_row)
    }

    /// Closes the pool, waiting for its connections to finish.
    pub(super) async fn close(&self) {
        on_pool!(self, pool => pool.close().await)
    }
}

/// The URL without its password, for error messages and logs.
pub(super) fn redact(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut parsed) => {
            if parsed.password().is_some() {
                // Only fails for URLs that cannot have credentials, which this one has.
                let _ = parsed.set_password(Some("***"));
            }
            parsed.to_string()
        }
        // Not a URL (a key=value string): say only what kind of target it was.
        Err(_) => "<postgres connection string>".to_owned(),
    }
}

/// Whether SQLite table `table` has the column `column`.
async fn sqlite_has_column(
    pool: &sqlx::SqlitePool,
    table: &str,
    column: &str,
) -> Result<bool, sqlx::Error> {
    let present: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM pragma_table_info($1) WHERE name = $2")
            .bind(table)
            .bind(column)
            .fetch_one(pool)
            .await?;
    Ok(present > 0)
}

#[cfg(test)]
mod tests {
    use chrono::DateTime;

    use super::*;

    #[test]
    fn a_password_never_reaches_an_error_message() {
        assert_eq!(
            redact("postgres://app:s3cret@db:5432/jobs"),
            "postgres://app:***@db:5432/jobs"
        );
        assert_eq!(redact("postgres://db/jobs"), "postgres://db/jobs");
    }

    #[test]
    fn timestamps_are_stored_to_the_microsecond() {
        let at = DateTime::from_timestamp(1_770_000_000, 123_456_789).unwrap();
        assert_eq!(stored(at).timestamp_subsec_nanos(), 123_456_000);
    }
}
