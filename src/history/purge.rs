//! The retention purge: deletes rows older than each job's window in small batches, records the
//! window applied, and runs periodically (see `retention.rs` for the windows themselves).

use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::retention::{JobPurge, Retention, RetentionRecord, RetentionWindow};
use super::sql::{on_pool, Store};
use super::{History, HistoryError};

impl History {
    /// Deletes, job by job, rows older than each job's window, in batches; jobs without a window
    /// are left alone. Writers go on meanwhile.
    pub async fn purge(&self, retention: &Retention) -> Result<Vec<JobPurge>, HistoryError> {
        let now = retention.clock.now();
        let mut done = Vec::new();
        for job in self.store.history_jobs().await? {
            let Some(window) = retention.window_of(&job) else {
                continue;
            };
            let purged_before = window.cutoff(now);
            let mut purge = JobPurge {
                job_name: job,
                window,
                purged_before,
                executions: 0,
                statuses: 0,
                outputs: 0,
            };
            let tables = [
                PurgedTable::Executions,
                PurgedTable::Statuses,
                PurgedTable::Outputs,
            ];
            for table in tables {
                loop {
                    let deleted = self
                        .store
                        .purge_batch(table, &purge.job_name, purged_before, retention.batch)
                        .await?;
                    match table {
                        PurgedTable::Executions => purge.executions += deleted,
                        PurgedTable::Statuses => purge.statuses += deleted,
                        PurgedTable::Outputs => purge.outputs += deleted,
                    }
                    if deleted < u64::from(retention.batch) {
                        break;
                    }
                    // Writers waiting for the database's write lock go first.
                    tokio::time::sleep(retention.pause).await;
                }
            }
            self.store.record_retention(&purge, now).await?;
            done.push(purge);
        }
        Ok(done)
    }

    /// The window the last purge applied to `job`; `None` when none has run for it.
    pub async fn retention_of(&self, job: &str) -> Result<Option<RetentionRecord>, HistoryError> {
        self.store.retention_of(job).await
    }

    /// Purges every [`Retention::every`] (first after one period) until the handle is dropped.
    /// A failed purge is logged and counted, and retried at the next period.
    pub fn purge_periodically(&self, retention: Retention) -> PurgeHandle {
        let stop = CancellationToken::new();
        let (history, token) = (self.clone(), stop.clone());
        let task = tokio::spawn(async move {
            let mut ticks = tokio::time::interval(retention.every.max(Duration::from_secs(1)));
            ticks.tick().await;
            loop {
                tokio::select! {
                    () = token.cancelled() => return,
                    _ = ticks.tick() => {}
                }
                tokio::select! {
                    () = token.cancelled() => return,
                    outcome = history.purge(&retention) => log_purge(outcome),
                }
            }
        });
        PurgeHandle {
            stop,
            task: Some(task),
        }
    }
}

fn log_purge(outcome: Result<Vec<JobPurge>, HistoryError>) {
    match outcome {
        Ok(jobs) => {
            for j in jobs
                .iter()
                .filter(|j| j.executions + j.statuses + j.outputs > 0)
            {
                tracing::info!(
                    target: "shardcron::history", job = %j.job_name, window = %j.window,
                    executions = j.executions, statuses = j.statuses, outputs = j.outputs,
                    "history purged"
                );
            }
        }
        Err(e) => {
            crate::metrics::history_write_failed();
            tracing::warn!(target: "shardcron::history", error = %super::error_chain(&e), "history purge failed");
        }
    }
}

/// The periodic purge of [`History::purge_periodically`]; dropping it stops the purge (a batch
/// under way is abandoned, which deletes nothing twice: the next purge starts over).
#[derive(Debug)]
pub struct PurgeHandle {
    stop: CancellationToken,
    task: Option<JoinHandle<()>>,
}

impl PurgeHandle {
    /// Stops the purge and waits for its task to end.
    pub async fn close(mut self) {
        self.stop.cancel();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for PurgeHandle {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// The tables a purge deletes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PurgedTable {
    /// `JOB_EXECUTION_LOG`, by `start_time`.
    Executions,
    /// `JOB_STATUS_TRACE_LOG`, by `creation_time`.
    Statuses,
    /// `SHARDCRON_EXECUTION_OUTPUT`, by `update_time`.
    Outputs,
}

impl PurgedTable {
    /// The table and its time column.
    pub(super) fn table_and_time(self) -> (&'static str, &'static str) {
        match self {
            Self::Executions => ("JOB_EXECUTION_LOG", "start_time"),
            Self::Statuses => ("JOB_STATUS_TRACE_LOG", "creation_time"),
            Self::Outputs => ("SHARDCRON_EXECUTION_OUTPUT", "update_time"),
        }
    }
}

/// The `Store` side: kept here, beside the purge, rather than in `sql.rs`.
impl Store {
    /// The jobs with rows in either table.
    async fn history_jobs(&self) -> Result<Vec<String>, HistoryError> {
        const SQL: &str = "SELECT job_name FROM JOB_EXECUTION_LOG GROUP BY job_name \
             UNION SELECT job_name FROM JOB_STATUS_TRACE_LOG GROUP BY job_name";
        let fail = |source| HistoryError::Query {
            table: "JOB_EXECUTION_LOG",
            source,
        };
        on_pool!(self, pool => sqlx::query_scalar(SQL).fetch_all(pool).await.map_err(fail))
    }

    /// Deletes at most `batch` rows of `job` older than `before`; returns how many.
    async fn purge_batch(
        &self,
        table: PurgedTable,
        job: &str,
        before: DateTime<Utc>,
        batch: u32,
    ) -> Result<u64, HistoryError> {
        let (name, time) = table.table_and_time();
        let sql = format!(
            "DELETE FROM {name} WHERE id IN \
             (SELECT id FROM {name} WHERE job_name = $1 AND {time} < $2 LIMIT $3)"
        );
        let before = super::sql::to_db(before);
        let fail = |source| HistoryError::Purge {
            table: name,
            source,
        };
        let limit = i64::from(batch.max(1));
        let done = on_pool!(self, pool => sqlx::query(&sql)
                .bind(job)
                .bind(before)
                .bind(limit)
                .execute(pool)
                .await
                .map(|r| r.rows_affected()));
        done.map_err(fail)
    }

    async fn record_retention(&self, p: &JobPurge, now: DateTime<Utc>) -> Result<(), HistoryError> {
        const SQL: &str = "INSERT INTO SHARDCRON_HISTORY_RETENTION \
             (job_name, window_seconds, purged_before, purged_at) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (job_name) DO UPDATE SET window_seconds = excluded.window_seconds, \
             purged_before = excluded.purged_before, purged_at = excluded.purged_at";
        let (before, at) = (super::sql::to_db(p.purged_before), super::sql::to_db(now));
        let fail = |source| HistoryError::Write {
            table: "SHARDCRON_HISTORY_RETENTION",
            id: p.job_name.clone(),
            source,
        };
        let window = p.window.seconds();
        on_pool!(self, pool => sqlx::query(SQL)
                .bind(&p.job_name)
                .bind(window)
                .bind(before)
                .bind(at)
                .execute(pool)
                .await
                .map(drop))
        .map_err(fail)
    }

    async fn retention_of(&self, job: &str) -> Result<Option<RetentionRecord>, HistoryError> {
        const SQL: &str = "SELECT window_seconds, purged_before, purged_at \
             FROM SHARDCRON_HISTORY_RETENTION WHERE job_name = $1";
        type Row = (i64, chrono::NaiveDateTime, chrono::NaiveDateTime);
        let fail = |source| HistoryError::Query {
            table: "SHARDCRON_HISTORY_RETENTION",
            source,
        };
        let row: Option<Row> =
            on_pool!(self, pool => sqlx::query_as(SQL).bind(job).fetch_optional(pool).await)
                .map_err(fail)?;
        Ok(row.map(|(window, before, at)| RetentionRecord {
            window: RetentionWindow::from_seconds(window),
            purged_before: before.and_utc(),
            purged_at: at.and_utc(),
        }))
    }
}
