//! The console's statistics: `GET /api/jobs/{job}/stats?by=hour|day&since=T`, per-job runs,
//! failures, timeouts and p50/p99 duration and trigger delay from the history
//! ([`crate::history::History::stats`]), with the retention window the rows were kept for.

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use chrono::Utc;
use serde::Deserialize;
use serde_json::{json, Value};

use super::api::{chain, ApiError, ApiResult, JobParam};
use super::ConsoleState;
use crate::history::{parse_since, Granularity, History, RetentionRecord};

pub(super) fn routes() -> Router<ConsoleState> {
    Router::new().route("/jobs/{job}/stats", get(stats))
}

/// The statistics filters, as the page's query string carries them.
#[derive(Debug, Default, Deserialize)]
struct StatsFilter {
    by: Option<String>,
    since: Option<String>,
}

/// The console's history, or the answer saying there is none.
pub(super) fn history_of(state: &ConsoleState) -> Result<&History, ApiError> {
    state
        .history
        .as_ref()
        .ok_or_else(|| ApiError::not_found("no history: start the console with --history DB"))
}

/// A failed history read as an answer.
pub(super) fn history_failed(e: &crate::history::HistoryError) -> ApiError {
    ApiError::failed(chain(e))
}

async fn stats(
    State(state): State<ConsoleState>,
    JobParam(job): JobParam,
    Query(filter): Query<StatsFilter>,
) -> ApiResult<Value> {
    let history = history_of(&state)?;
    let by = match filter.by.as_deref().filter(|b| !b.trim().is_empty()) {
        Some(by) => Granularity::parse(by).map_err(ApiError::bad_input)?,
        None => Granularity::Hour,
    };
    let now = Utc::now();
    let since = match filter.since.as_deref().filter(|s| !s.trim().is_empty()) {
        Some(since) => parse_since(since, now).map_err(ApiError::bad_input)?,
        None => match by {
            Granularity::Hour => now - chrono::Duration::hours(24),
            Granularity::Day => now - chrono::Duration::days(30),
        },
    };
    let stats = history
        .stats(&job, since, by)
        .await
        .map_err(|e| history_failed(&e))?;
    let retention = history.retention_of(job.as_str()).await.ok().flatten();
    Ok(Json(json!({
        "stats": stats,
        "kept": RetentionRecord::describe(retention.as_ref()),
    })))
}

impl ApiError {
    /// 404 with `why`.
    pub(super) fn not_found(why: &str) -> Self {
        Self::with(StatusCode::NOT_FOUND, "BAD_INPUT", why.to_owned())
    }

    /// 502: the history (or another backend) failed.
    pub(super) fn failed(why: String) -> Self {
        Self::with(StatusCode::BAD_GATEWAY, "FAILED", why)
    }
}
