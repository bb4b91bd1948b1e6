//! `GET /api/audit?job=NAME&limit=N`: the audit log's newest rows (who did what, when, and the
//! config before and after, redacted when written), for the page's Audit tab.

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

use super::api::{chain, ApiError};
use super::ConsoleState;
use crate::history::AuditQuery;
use crate::types::JobName;

/// Largest number of rows one request returns.
const MAX_ROWS: u32 = 1_000;

/// The filters of the Audit tab.
#[derive(Debug, Default, Deserialize)]
pub(super) struct AuditFilter {
    job: Option<String>,
    limit: Option<u32>,
}

pub(super) async fn audit(
    State(state): State<ConsoleState>,
    Query(filter): Query<AuditFilter>,
) -> Result<Json<Value>, ApiError> {
    let history = (state.history.as_ref())
        .ok_or_else(|| ApiError::not_found("no audit log: start the console with --history DB"))?;
    let job = match filter
        .job
        .as_deref()
        .map(str::trim)
        .filter(|j| !j.is_empty())
    {
        Some(name) => Some(JobName::new(name).map_err(|e| ApiError {
            status: StatusCode::BAD_REQUEST,
            body: json!({ "error": format!("job name {name:?}: {e}"), "class": "BAD_INPUT" }),
        })?),
        None => None,
    };
    let query = AuditQuery {
        job,
        limit: filter.limit.unwrap_or(200).clamp(1, MAX_ROWS),
    };
    let records = history.audits(&query).await.map_err(|e| ApiError {
        status: StatusCode::BAD_GATEWAY,
        body: json!({ "error": chain(&e), "class": "FAILED" }),
    })?;
    Ok(Json(json!({ "records": records })))
}
