//! The console's JSON API, one handler per operation of [`crate::ops`], plus the history and the
//! event stream. Errors answer `{"error", "class", "problems"}` with a status by class: 400 bad
//! input (404 for an unknown job), 409 refused by the cluster's state, 502 the registry failed.
//! The history and the event stream are in `timeline.rs`.

mod timeline;

use std::time::Duration;

use axum::extract::{FromRequestParts, Path, Query, State};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use chrono::Utc;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

pub(super) use timeline::JobFilter;

use super::guard::Audited;
use super::schedule::{chart_points, Schedule};
use super::ConsoleState;
use crate::config::JobConfig;
use crate::history::{parse_since, ExecutionRecord, HistoryQuery, RetentionRecord};
use crate::ops::{ErrorClass, JobBrief, JobDetail, OpsError, ShutdownScope, Target};
use crate::types::{InstanceId, JobName, ShardItem};

/// Next fire times shown per job.
const NEXT_FIRES: usize = 3;

pub(super) fn routes() -> Router<ConsoleState> {
    Router::new()
        .route("/overview", get(overview))
        .route("/servers", get(servers))
        .route("/jobs/{job}", get(job))
        .route("/jobs/{job}/config", get(config_get).put(config_set))
        .route("/jobs/{job}/trigger", post(trigger))
        .route(
            "/jobs/{job}/disable",
            post(|a: Audited, j: JobParam, t: Json<SwitchTarget>| switch(Turn::Off, a, j, t)),
        )
        .route(
            "/jobs/{job}/enable",
            post(|a: Audited, j: JobParam, t: Json<SwitchTarget>| switch(Turn::On, a, j, t)),
        )
        .route("/jobs/{job}/shutdown", post(shutdown))
        .route("/jobs/{job}/history", get(timeline::history))
        .route("/events", get(timeline::events))
        .route("/login", post(super::guard::login))
        .route("/logout", post(super::guard::logout))
        .route("/session", get(super::guard::session))
        .route("/audit", get(super::audit::audit))
        .merge(super::stats::routes())
        .merge(super::create::routes())
        .merge(super::logs::routes())
        .merge(super::workflow::routes())
}

/// A JSON error answer.
pub(super) fn refusal(status: StatusCode, why: &str) -> Response {
    (status, Json(json!({ "error": why, "class": "REFUSED" }))).into_response()
}

/// An [`OpsError`] (or bad request input) as an answer.
#[derive(Debug)]
pub(super) struct ApiError {
    pub(super) status: StatusCode,
    pub(super) body: Value,
}

impl ApiError {
    /// An answer of `status` with `{"error": why, "class": class}`.
    pub(super) fn with(status: StatusCode, class: &str, why: String) -> Self {
        Self {
            status,
            body: json!({ "error": why, "class": class }),
        }
    }

    pub(super) fn bad_input(what: impl std::fmt::Display) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            body: json!({ "error": what.to_string(), "class": "BAD_INPUT" }),
        }
    }
}

impl From<OpsError> for ApiError {
    fn from(e: OpsError) -> Self {
        let (status, class) = match e.class() {
            _ if matches!(e, OpsError::UnknownJob { .. }) => (StatusCode::NOT_FOUND, "BAD_INPUT"),
            ErrorClass::BadInput => (StatusCode::BAD_REQUEST, "BAD_INPUT"),
            ErrorClass::Refused => (StatusCode::CONFLICT, "REFUSED"),
            ErrorClass::Failed => (StatusCode::BAD_GATEWAY, "FAILED"),
        };
        let problems: Vec<Value> = match &e {
            OpsError::InvalidConfig { source, .. } | OpsError::BadNewJob { source, .. } => source
                .0
                .iter()
                .map(|p| json!({ "field": p.field, "problem": p.problem }))
                .collect(),
            _ => Vec::new(),
        };
        Self {
            status,
            body: json!({ "error": chain(&e), "class": class, "problems": problems }),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(self.body)).into_response()
    }
}

pub(super) fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        let next = e.to_string();
        if !text.contains(&next) {
            text.push_str(&format!(": {next}"));
        }
        source = e.source();
    }
    text
}

pub(super) type ApiResult<T> = Result<Json<T>, ApiError>;

pub(super) fn job_name(name: &str) -> Result<JobName, ApiError> {
    JobName::new(name).map_err(|e| ApiError::bad_input(format!("job name {name:?}: {e}")))
}

/// The job a route's `{job}` names, checked: a bad name is a 400 naming it.
pub(super) struct JobParam(pub(super) JobName);

impl<S: Send + Sync> FromRequestParts<S> for JobParam {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let Path(name) = Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(|e| ApiError::bad_input(e.body_text()))?;
        job_name(&name).map(Self)
    }
}

/// The last execution of a job, from the history.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Outcome {
    at: chrono::DateTime<Utc>,
    item: u32,
    success: Option<bool>,
    /// How it ended (`success`, `failed`, `timeout`, `cancelled`); `None` while it runs.
    outcome: Option<String>,
    source: String,
    cause: Option<String>,
}

impl From<&ExecutionRecord> for Outcome {
    fn from(r: &ExecutionRecord) -> Self {
        Self {
            at: r.start_time,
            item: r.sharding_item,
            success: r.complete_time.map(|_| r.is_success),
            outcome: r.complete_time.map(|_| r.status().to_owned()),
            source: r.execution_source.clone(),
            cause: r.failure_cause.as_deref().map(crate::secret::redact_text),
        }
    }
}

/// The next fires of a config, or why there are none.
fn next_fires(config: Option<&JobConfig>) -> (Vec<chrono::DateTime<Utc>>, Option<String>) {
    match config.map(Schedule::of) {
        Some(Ok(Some(s))) => (s.next_fires(Utc::now(), NEXT_FIRES), None),
        Some(Ok(None)) | None => (Vec::new(), None),
        Some(Err(e)) => (Vec::new(), Some(e)),
    }
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct JobLine {
    #[serde(flatten)]
    brief: JobBrief,
    next_fires: Vec<chrono::DateTime<Utc>>,
    schedule_error: Option<String>,
    last_outcome: Option<Outcome>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Overview {
    namespace: String,
    history: bool,
    jobs: Vec<JobLine>,
}

async fn overview_of(state: &ConsoleState) -> Result<Overview, ApiError> {
    let ops = state.live.reader();
    let briefs = ops.jobs().await?;
    let mut jobs = Vec::with_capacity(briefs.len());
    for brief in briefs {
        let config = match (&brief.cron, brief.sharding_total_count) {
            (Some(cron), Some(_)) => {
                // The brief carries the cron but not the zone: read the config for both.
                let stored = ops.config_get(&brief.job_name).await.ok();
                stored
                    .and_then(|s| JobConfig::from_yaml(&s.yaml).ok())
                    .or_else(|| Some(JobConfig::new(brief.job_name.as_str(), 1).cron(cron)))
            }
            _ => None,
        };
        let (next, schedule_error) = next_fires(config.as_ref());
        let last_outcome = match &state.history {
            Some(history) => {
                let mut query = HistoryQuery::job(brief.job_name.clone());
                query.limit = 1;
                match history.query(&query).await {
                    Ok(records) => records.first().map(Outcome::from),
                    Err(e) => {
                        tracing::warn!(error = %e, "the console cannot read the history");
                        None
                    }
                }
            }
            None => None,
        };
        jobs.push(JobLine {
            brief,
            next_fires: next,
            schedule_error,
            last_outcome,
        });
    }
    Ok(Overview {
        namespace: state.namespace.to_string(),
        history: state.history.is_some(),
        jobs,
    })
}

async fn overview(State(state): State<ConsoleState>) -> ApiResult<Overview> {
    Ok(Json(overview_of(&state).await?))
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct JobPage {
    #[serde(flatten)]
    detail: JobDetail,
    next_fires: Vec<chrono::DateTime<Utc>>,
    schedule_error: Option<String>,
}

/// One job as the page shows it: its config's secrets redacted.
async fn job_of(state: &ConsoleState, job: &JobName) -> Result<JobPage, ApiError> {
    let mut detail = state.live.reader().job(job).await?;
    detail.config = detail.config.map(|c| c.redacted());
    let (next_fires, schedule_error) = next_fires(detail.config.as_ref());
    Ok(JobPage {
        detail,
        next_fires,
        schedule_error,
    })
}

async fn job(State(state): State<ConsoleState>, JobParam(job): JobParam) -> ApiResult<JobPage> {
    Ok(Json(job_of(&state, &job).await?))
}

async fn servers(State(state): State<ConsoleState>) -> ApiResult<Vec<crate::ops::ServerBrief>> {
    Ok(Json(state.live.reader().servers().await?))
}

/// The config editor's text: read from the registry (not the mirror), so that the version shown
/// right after a save is the saved one.
async fn config_get(
    State(state): State<ConsoleState>,
    JobParam(job): JobParam,
) -> ApiResult<crate::ops::StoredConfig> {
    Ok(Json(state.live.ops().config_get(&job).await?.redacted()))
}

#[derive(Debug, Deserialize)]
struct ConfigWrite {
    yaml: String,
    version: i32,
}

/// Saves the edited (redacted) text: secrets still shown as `***` keep their stored values.
async fn config_set(
    Audited(ops): Audited,
    JobParam(job): JobParam,
    Json(write): Json<ConfigWrite>,
) -> ApiResult<Value> {
    let version = ops.config_set_at(&job, &write.yaml, write.version).await?;
    Ok(Json(json!({ "jobName": job, "version": version })))
}

/// `{}` for a plain trigger; `{"jobParameter": "...", "items": [0, 2]}` for one with parameters.
async fn trigger(
    Audited(ops): Audited,
    JobParam(job): JobParam,
    Json(params): Json<crate::ops::TriggerParams>,
) -> ApiResult<Value> {
    let asked = ops.trigger_with(&job, &params).await?;
    Ok(Json(json!({ "jobName": job, "triggered": asked })))
}

/// What `disable` / `enable` act on: nothing named is every server of the job.
#[derive(Debug, Default, Deserialize)]
struct SwitchTarget {
    server: Option<String>,
    item: Option<u32>,
}

impl SwitchTarget {
    fn target(self) -> Result<Target, ApiError> {
        match (self.server, self.item) {
            (Some(_), Some(_)) => Err(ApiError::bad_input("server and item exclude each other")),
            (Some(ip), None) if ip.is_empty() || ip.contains('/') => Err(ApiError::bad_input(
                format!("server {ip:?}: expected an IP address"),
            )),
            (Some(ip), None) => Ok(Target::Server(ip)),
            (None, Some(item)) => Ok(Target::Item(ShardItem(item))),
            (None, None) => Ok(Target::AllServers),
        }
    }
}

/// Which way [`switch`] turns what a request names.
#[derive(Debug, Clone, Copy)]
enum Turn {
    Off,
    On,
}

/// `POST /jobs/{job}/disable` (`Turn::Off`) and `/enable` (`Turn::On`).
async fn switch(
    turn: Turn,
    Audited(ops): Audited,
    JobParam(job): JobParam,
    Json(target): Json<SwitchTarget>,
) -> ApiResult<Value> {
    let target = target.target()?;
    Ok(Json(match turn {
        Turn::Off => json!({ "jobName": job, "disabled": ops.disable(&job, target).await? }),
        Turn::On => json!({ "jobName": job, "enabled": ops.enable(&job, target).await? }),
    }))
}

#[derive(Debug, Default, Deserialize)]
struct ShutdownTarget {
    instance: Option<String>,
}

async fn shutdown(
    Audited(ops): Audited,
    JobParam(job): JobParam,
    Json(target): Json<ShutdownTarget>,
) -> ApiResult<Value> {
    let scope = match target.instance {
        None => ShutdownScope::AllInstances,
        Some(id) => ShutdownScope::Instance(
            InstanceId::parse(id.clone())
                .map_err(|e| ApiError::bad_input(format!("instance {id:?}: {e}")))?,
        ),
    };
    let stopped = ops.shutdown(&job, scope).await?;
    Ok(Json(json!({ "jobName": job, "shutdown": stopped })))
}
