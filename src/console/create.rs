//! The console's "new job" form: `POST /api/jobs` with a [`JobForm`] creates a SCRIPT or HTTP job
//! for adopting nodes, through the same [`crate::ops::Ops::create`] as `shardcronctl create`
//! (operator role only, audited: the guard's [`Audited`]).

use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};

use super::api::ApiResult;
use super::guard::Audited;
use super::ConsoleState;
use crate::ops::JobForm;

pub(super) fn routes() -> Router<ConsoleState> {
    Router::new().route("/jobs", post(create))
}

async fn create(Audited(ops): Audited, Json(form): Json<JobForm>) -> ApiResult<Value> {
    let new = form.to_new_job()?;
    let job_type = new.job_type;
    let config = ops.create(new).await?;
    Ok(Json(json!({
        "jobName": config.job_name,
        "type": job_type.root_data(),
        "created": true,
    })))
}
