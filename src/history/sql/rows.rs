//! Values to and from rows on either backend: the parameters bound to `$n` placeholders, the
//! macros that bind them and read records back (one text, expanded for each backend's types),
//! and the conversions of times and items.

use chrono::{DateTime, NaiveDateTime, Utc};

use crate::history::record::{ExecutionRecord, StatusRecord};

/// A value bound to a `$n` placeholder.
#[derive(Debug, Clone)]
pub(in crate::history) enum Param {
    Text(String),
    OptText(Option<String>),
    Int(i32),
    OptInt(Option<i32>),
    BigInt(i64),
    Time(NaiveDateTime),
    OptTime(Option<NaiveDateTime>),
}

/// Binds `params` in order; expands for each backend's query type.
macro_rules! bind_all {
    ($query:expr, $params:expr) => {{
        let mut query = $query;
        for param in $params {
            query = match param {
                Param::Text(v) => query.bind(v),
                Param::OptText(v) => query.bind(v),
                Param::Int(v) => query.bind(v),
                Param::OptInt(v) => query.bind(v),
                Param::BigInt(v) => query.bind(v),
                Param::Time(v) => query.bind(v),
                Param::OptTime(v) => query.bind(v),
            };
        }
        query
    }};
}
pub(in crate::history) use bind_all;

/// `$body` with `$pool` bound to the pool `$store` holds: one text, typed for each backend.
macro_rules! on_pool {
    ($store:expr, $pool:ident => $body:expr) => {
        match $store {
            Store::Sqlite($pool) => $body,
            Store::Postgres($pool) => $body,
        }
    };
}
pub(in crate::history) use on_pool;

/// Every row `$sql` with `$params` answers on `$store`, each read with `$from_row!`; a failure
/// names `$table`.
macro_rules! fetch_rows {
    ($store:expr, $sql:expr, $params:expr, $table:literal, $from_row:ident) => {{
        let fail = |source| HistoryError::Query {
            table: $table,
            source,
        };
        on_pool!($store, pool => {
            let rows = bind_all!(sqlx::query($sql), $params)
                .fetch_all(pool)
                .await
                .map_err(fail)?;
            rows.iter()
                .map(|row| $from_row!(row))
                .collect::<Result<_, _>>()
                .map_err(fail)
        })
    }};
}
pub(in crate::history) use fetch_rows;

/// The row `$sql` with `$params` answers on `$store`, if any, read with `$from_row!`; a failure
/// names `$table`.
macro_rules! fetch_optional {
    ($store:expr, $sql:expr, $params:expr, $table:literal, $from_row:ident) => {{
        let fail = |source| HistoryError::Query {
            table: $table,
            source,
        };
        on_pool!($store, pool => bind_all!(sqlx::query($sql), $params)
            .fetch_optional(pool)
            .await
            .map_err(fail)?
            .map(|row| $from_row!(&row))
            .transpose()
            .map_err(fail))
    }};
}
pub(in crate::history) use fetch_optional;

/// Reads an [`ExecutionRecord`] from a row of either backend.
macro_rules! execution_from_row {
    ($row:expr) => {{
        let row = $row;
        Ok::<_, sqlx::Error>(ExecutionRecord {
            id: row.try_get("id")?,
            job_name: row.try_get("job_name")?,
            task_id: row.try_get("task_id")?,
            hostname: row.try_get("hostname")?,
            ip: row.try_get("ip")?,
            sharding_item: u32::try_from(row.try_get::<i32, _>("sharding_item")?).unwrap_or(0),
            execution_source: row.try_get("execution_source")?,
            failure_cause: row.try_get("failure_cause")?,
            is_success: row.try_get::<i32, _>("is_success")? != 0,
            start_time: from_db(row.try_get::<Option<chrono::NaiveDateTime>, _>("start_time")?)
                .unwrap_or_default(),
            complete_time: from_db(
                row.try_get::<Option<chrono::NaiveDateTime>, _>("complete_time")?,
            ),
            scheduled_time: from_db(
                row.try_get::<Option<chrono::NaiveDateTime>, _>("scheduled_time")?,
            ),
            attempt: (row.try_get::<Option<i32>, _>("attempt")?)
                .and_then(|a| u32::try_from(a).ok()),
            outcome: row.try_get("outcome")?,
            workflow_run: row.try_get("workflow_run")?,
        })
    }};
}
pub(in crate::history) use execution_from_row;

/// Reads a [`StatusRecord`] from a row of either backend.
macro_rules! status_from_row {
    ($row:expr) => {{
        let row = $row;
        Ok::<_, sqlx::Error>(StatusRecord {
            id: row.try_get("id")?,
            job_name: row.try_get("job_name")?,
            original_task_id: row.try_get("original_task_id")?,
            task_id: row.try_get("task_id")?,
            slave_id: row.try_get("slave_id")?,
            source: row.try_get("source")?,
            execution_type: row.try_get("execution_type")?,
            sharding_item: row.try_get("sharding_item")?,
            state: row.try_get("state")?,
            message: row
                .try_get::<Option<String>, _>("message")?
                .unwrap_or_default(),
            creation_time: from_db(
                row.try_get::<Option<chrono::NaiveDateTime>, _>("creation_time")?,
            )
            .unwrap_or_default(),
        })
    }};
}
pub(super) use status_from_row;

pub(super) fn execution_params(r: &ExecutionRecord) -> Vec<Param> {
    vec![
        Param::Text(r.id.clone()),
        Param::Text(r.job_name.clone()),
        Param::Text(r.task_id.clone()),
        Param::Text(r.hostname.clone()),
        Param::Text(r.ip.clone()),
        Param::Int(item_to_db(r.sharding_item)),
        Param::Text(r.execution_source.clone()),
        Param::OptText(r.failure_cause.clone()),
        Param::Int(i32::from(r.is_success)),
        Param::Time(to_db(r.start_time)),
        Param::OptTime(r.complete_time.map(to_db)),
        Param::OptTime(r.scheduled_time.map(to_db)),
        Param::OptInt(r.attempt.map(|a| i32::try_from(a).unwrap_or(i32::MAX))),
        Param::OptText(r.outcome.clone()),
        Param::OptText(r.workflow_run.clone()),
    ]
}

pub(super) fn status_params(r: &StatusRecord) -> Vec<Param> {
    vec![
        Param::Text(r.id.clone()),
        Param::Text(r.job_name.clone()),
        Param::Text(r.original_task_id.clone()),
        Param::Text(r.task_id.clone()),
        Param::Text(r.slave_id.clone()),
        Param::Text(r.source.clone()),
        Param::Text(r.execution_type.clone()),
        Param::Text(r.sharding_item.clone()),
        Param::Text(r.state.clone()),
        Param::Text(r.message.clone()),
        Param::Time(to_db(r.creation_time)),
    ]
}

/// Items are `0..shardingTotalCount` with a count that is an `i32` in the config.
pub(in crate::history) fn item_to_db(item: u32) -> i32 {
    i32::try_from(item).unwrap_or(i32::MAX)
}

/// `TIMESTAMP` columns hold UTC without a zone, to the microsecond (PostgreSQL's precision; the
/// same on SQLite so both backends return what was written).
pub(in crate::history) fn to_db(at: DateTime<Utc>) -> NaiveDateTime {
    let micros = at.timestamp_micros();
    DateTime::from_timestamp_micros(micros)
        .unwrap_or(at)
        .naive_utc()
}

/// Rounds `at` as the database stores it (microseconds).
pub(in crate::history) fn stored(at: DateTime<Utc>) -> DateTime<Utc> {
    to_db(at).and_utc()
}

pub(in crate::history) fn from_db(at: Option<NaiveDateTime>) -> Option<DateTime<Utc>> {
    at.map(|t| t.and_utc())
}
