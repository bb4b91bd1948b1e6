//! A run's output in the console: `GET /api/jobs/{job}/output/{execution}?from=N`, the captured
//! output of one execution (`shardcron.output`) from the history ([`History::output`]), and
//! what the History tab's output viewer draws and tails.
//!
//! The answer carries the lines written after the first `from` bytes of the item's output, each
//! with its stream (`out`, `err`, `log`, `http`), the offset to ask from next (`next`), the bytes
//! the reader lost because the ring evicted them before it asked (`lost`), and whether the item
//! still runs. The viewer of a running item asks again every second with the `next` it got: a
//! live tail bounded like the capture (one row of at most the job's bound per request), and
//! one a slow viewer cannot hold back, since it only reads the row the node keeps rewriting.
//!
//! Output may hold whatever the job printed, secrets included (URLs are redacted when captured):
//! it passes the console's filter chain like every read, so only an authenticated viewer or
//! operator sees it (anyone, on a loopback console without tokens).

use axum::extract::{Path, Query, State};
use axum::routing::get;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};

use super::api::{job_name, ApiError, ApiResult};
use super::stats::{history_failed, history_of};
use super::ConsoleState;
use crate::history::History;
use crate::job::output::split_lines;

/// The longest execution id the endpoint looks up (ours are a task id and an item).
const MAX_ID_BYTES: usize = 1024;

pub(super) fn routes() -> Router<ConsoleState> {
    Router::new().route("/jobs/{job}/output/{execution}", get(output))
}

/// Where the viewer is in the output.
#[derive(Debug, Default, Deserialize)]
struct OutputFrom {
    from: Option<u64>,
}

async fn output(
    State(state): State<ConsoleState>,
    Path((name, id)): Path<(String, String)>,
    Query(at): Query<OutputFrom>,
) -> ApiResult<Value> {
    let job = job_name(&name)?;
    if id.len() > MAX_ID_BYTES {
        return Err(ApiError::bad_input(format!(
            "execution id: longer than {MAX_ID_BYTES} bytes"
        )));
    }
    let history = history_of(&state)?;
    answer(history, job.as_str(), &id, at.from.unwrap_or(0))
        .await
        .map(Json)
}

/// The answer for execution `id` of `job` from byte `from` on.
async fn answer(history: &History, job: &str, id: &str, from: u64) -> Result<Value, ApiError> {
    let mut execution = history
        .execution(id)
        .await
        .map_err(|e| history_failed(&e))?
        .filter(|e| e.job_name == job)
        .ok_or_else(|| ApiError::not_found(&format!("no execution {id:?} of {job}")))?;
    if let Some(cause) = &mut execution.failure_cause {
        *cause = crate::secret::redact_text(cause);
    }
    let ended = execution.complete_time.is_some();
    let Some(row) = history.output(id).await.map_err(|e| history_failed(&e))? else {
        return Ok(json!({
            "execution": execution, "captured": false, "running": !ended,
            "lines": [], "next": from, "lost": 0, "dropped": 0,
        }));
    };
    let snapshot = row.snapshot();
    let new = snapshot.since(from);
    let lines: Vec<Value> = split_lines(new.text)
        .map(|(stream, text)| json!({ "stream": stream.tag(), "text": text }))
        .collect();
    Ok(json!({
        "execution": execution, "captured": true, "running": !ended && !row.complete,
        "lines": lines, "next": new.next, "lost": new.lost, "dropped": row.dropped_bytes,
    }))
}
