//! The console's workflow view: `GET /api/workflow[?job=NAME]`, the workflow graph (every job in
//! a workflow, or the part linked to NAME) with each step's state in the workflow's newest run, as
//! [`crate::ops::Ops::workflow_graph`] reads it from the console's mirror (a read: the viewer
//! role may ask). The page (`#/workflow`) draws the steps in layers and links each one to its
//! rows in the History tab, filtered by the step's job and workflow run.

use axum::extract::{Query, State};
use axum::routing::get;
use axum::{Json, Router};

use super::api::{job_name, ApiResult, JobFilter};
use super::ConsoleState;
use crate::decide::workflow::view::WorkflowGraph;

pub(super) fn routes() -> Router<ConsoleState> {
    Router::new().route("/workflow", get(workflow))
}

async fn workflow(
    State(state): State<ConsoleState>,
    Query(filter): Query<JobFilter>,
) -> ApiResult<WorkflowGraph> {
    let job = filter
        .job
        .as_deref()
        .filter(|j| !j.trim().is_empty())
        .map(job_name)
        .transpose()?;
    let graph = state.live.reader().workflow_graph(job.as_ref()).await?;
    Ok(Json(graph))
}
