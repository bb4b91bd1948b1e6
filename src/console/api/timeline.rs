//! The console's answers over time: a job's history of executions, filtered as the page asks,
//! and the event stream that sends a page's state again after each change.

use std::convert::Infallible;

use axum::response::sse::{Event, KeepAlive, Sse};

use super::*;

/// Changes closer together than this are sent as one refresh of a job's page.
const COALESCE: Duration = Duration::from_millis(150);
/// The same for the overview, which reads every job: a busy namespace changes many times a second.
const COALESCE_OVERVIEW: Duration = Duration::from_secs(1);
/// A page is refreshed at least this often, so its next fire times and last outcomes move on
/// while the registry is quiet.
const REFRESH: Duration = Duration::from_secs(5);
/// Largest number of history records one request returns.
const MAX_HISTORY: u32 = 2_000;

/// The history filters, as the page's query string carries them.
#[derive(Debug, Default, Deserialize)]
pub(super) struct HistoryFilter {
    item: Option<String>,
    since: Option<String>,
    failed: Option<bool>,
    limit: Option<u32>,
    /// Only the rows of this workflow run (`workflowRun` in the query string).
    #[serde(rename = "workflowRun")]
    workflow_run: Option<String>,
}

pub(super) async fn history(
    State(state): State<ConsoleState>,
    JobParam(job): JobParam,
    Query(filter): Query<HistoryFilter>,
) -> ApiResult<Value> {
    let history = crate::console::stats::history_of(&state)?;
    let mut query = HistoryQuery::job(job.clone());
    if let Some(item) = filter.item.as_deref().filter(|i| !i.trim().is_empty()) {
        query.item = Some(crate::history::parse_item(item).map_err(ApiError::bad_input)?);
    }
    if let Some(since) = filter.since.as_deref().filter(|s| !s.trim().is_empty()) {
        query.since = Some(parse_since(since, Utc::now()).map_err(ApiError::bad_input)?);
    }
    query.failed_only = filter.failed.unwrap_or(false);
    if let Some(run) = filter
        .workflow_run
        .as_deref()
        .filter(|r| !r.trim().is_empty())
    {
        let run = crate::decide::workflow::run::RunId::parse(run.trim()).ok_or_else(|| {
            ApiError::bad_input(format!(
                "workflowRun {run:?}: expected a workflow run id (epoch milliseconds)"
            ))
        })?;
        query.workflow_run = Some(run.to_string());
    }
    query.limit = filter.limit.unwrap_or(500).clamp(1, MAX_HISTORY);
    let mut records = history.query(&query).await.map_err(|e| ApiError {
        status: StatusCode::BAD_GATEWAY,
        body: json!({ "error": chain(&e), "class": "FAILED" }),
    })?;
    for record in &mut records {
        if let Some(cause) = &mut record.failure_cause {
            *cause = crate::secret::redact_text(cause);
        }
    }
    // The chart reads delays against the job's current schedule, when the job still exists.
    let schedule = match state.live.reader().job(&job).await {
        Ok(detail) => detail
            .config
            .as_ref()
            .and_then(|c| Schedule::of(c).ok().flatten()),
        Err(_) => None,
    };
    let points = chart_points(&records, schedule.as_ref());
    // Which window the rows shown were kept for; a read failure here only loses the sentence.
    let retention = history.retention_of(job.as_str()).await.ok().flatten();
    let kept = RetentionRecord::describe(retention.as_ref());
    Ok(Json(json!({
        "jobName": job, "records": records, "points": points,
        "retention": retention, "kept": kept,
    })))
}

/// A query that may name one job (`?job=NAME`): what the event stream follows (one job's page,
/// or the overview), which workflow the workflow view shows.
#[derive(Debug, Default, Deserialize)]
pub(in crate::console) struct JobFilter {
    pub(in crate::console) job: Option<String>,
}

/// Server-sent events: the current state at once, then again after every change of the
/// namespace (changes within [`COALESCE`], or [`COALESCE_OVERVIEW`], are sent once) and at least
/// every [`REFRESH`]. Event `job` carries what `GET /jobs/{job}` answers, `overview` what
/// `GET /overview` answers, `error` a failed read; every page open at one change shares one read
/// (`shared.rs`).
pub(super) async fn events(
    State(state): State<ConsoleState>,
    Query(filter): Query<JobFilter>,
) -> Result<Sse<impl futures::Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let job = filter.job.as_deref().map(job_name).transpose()?;
    let changes = state.live.changes();
    let stream = futures::stream::unfold(
        (state, job, changes, true),
        |(state, job, mut changes, first)| async move {
            if !first {
                tokio::select! {
                    changed = changes.changed() => changed.ok()?,
                    _ = tokio::time::sleep(REFRESH) => {}
                    _ = state.live.stopped() => return None,
                }
                tokio::time::sleep(if job.is_some() {
                    COALESCE
                } else {
                    COALESCE_OVERVIEW
                })
                .await;
            }
            // Everything up to now is covered by the snapshot read below.
            changes.mark_unchanged();
            let count = state.live.change_count();
            let (name, data) = state
                .shared
                .event(job.as_ref(), count, async {
                    match &job {
                        Some(job) => snapshot_event("job", job_of(&state, job).await),
                        None => snapshot_event("overview", overview_of(&state).await),
                    }
                })
                .await;
            let event = Event::default().event(name).data(&*data);
            Some((Ok(event), (state, job, changes, false)))
        },
    );
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

/// A page's event: its name (`error` for a failed read) and JSON data.
fn snapshot_event<T: Serialize>(
    name: &'static str,
    result: Result<T, ApiError>,
) -> crate::console::shared::PageEvent {
    let (name, body) = match result {
        Ok(value) => (name, serde_json::to_string(&value)),
        Err(e) => ("error", serde_json::to_string(&e.body)),
    };
    let data = body.unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"));
    (name, data.into())
}
