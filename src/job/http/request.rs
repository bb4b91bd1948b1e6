//! One item's request of an HTTP job: sent with the item's sharding context, bounded in time and
//! in the body read, dropped when the item is cancelled; a status of 400 or more fails the item.

use std::sync::Arc;

use async_trait::async_trait;
use reqwest::header::{HeaderValue, CONTENT_TYPE};

use super::{http_props, HttpJob, BODY_EXCERPT_CHARS, MAX_BODY_BYTES, SHARDING_CONTEXT_HEADER};
use crate::job::output::Stream;
use crate::job::{ItemHandler, JobError, ShardingContext};

impl HttpJob {
    /// Sends the request and reads the response, at most [`MAX_BODY_BYTES`] of its body.
    async fn send(&self, ctx: &ShardingContext) -> Result<(), JobError> {
        let context = HeaderValue::from_bytes(ctx.to_json().as_bytes()).map_err(|e| {
            JobError::failed(format!(
                "the sharding context cannot travel in the {SHARDING_CONTEXT_HEADER} header: {e}"
            ))
        })?;
        let mut request = self
            .client
            .request(self.method.clone(), self.url.clone())
            .header(SHARDING_CONTEXT_HEADER, context);
        if let Some(content_type) = &self.content_type {
            request = request.header(CONTENT_TYPE, content_type.clone());
        }
        if let Some(body) = self.body() {
            request = request.body(body.to_owned());
        }
        let response = request
            .send()
            .await
            .map_err(|e| self.request_failed("sending", e))?;
        let status = response.status();
        let body = read_capped(response, MAX_BODY_BYTES)
            .await
            .map_err(|e| self.request_failed("reading the response of", e))?;
        if let Some(output) = &ctx.output {
            let answered = format!("{} {} answered {status}", self.method, self.shown);
            output.line(Stream::Http, &answered);
            output.line(Stream::Http, &body);
        }
        if status.as_u16() >= 400 {
            return Err(JobError::Failed(format!(
                "{} {} answered {status}: {}",
                self.method,
                self.shown,
                excerpt(&body)
            )));
        }
        tracing::debug!(
            job = %ctx.job_name, item = %ctx.sharding_item, %status, body = %excerpt(&body),
            "HTTP job answered"
        );
        Ok(())
    }

    /// A failure naming the step, the request and, for a timeout, which limit was hit.
    fn request_failed(&self, step: &str, e: reqwest::Error) -> JobError {
        // reqwest's message quotes the URL, query and all: the shown one stands instead.
        let e = e.without_url();
        let what = format!("{step} {} {}", self.method, self.shown);
        if e.is_connect() {
            if e.is_timeout() {
                return JobError::Failed(format!(
                    "{what}: no connection within the connect timeout of {} ms",
                    self.connect_timeout.as_millis()
                ));
            }
            return JobError::Failed(format!(
                "{what}: cannot connect: {}",
                crate::secret::error_chain(&e)
            ));
        }
        if e.is_timeout() {
            return JobError::Failed(format!(
                "{what}: nothing read within the read timeout of {} ms, or not done within \
                 the total timeout of {} ms",
                self.read_timeout.as_millis(),
                self.total_timeout.as_millis()
            ));
        }
        JobError::Failed(crate::secret::redact_text(&format!(
            "{what}: {}",
            crate::secret::error_chain(&e)
        )))
    }
}

#[async_trait]
impl ItemHandler for HttpJob {
    async fn run_item(&self, ctx: ShardingContext) -> Result<(), JobError> {
        let live = self.as_configured(&ctx)?;
        let this = live.as_deref().unwrap_or(self);
        if ctx.is_cancelled() {
            return Err(JobError::Cancelled(format!(
                "{} {} was cancelled before it was sent",
                self.method, self.shown
            )));
        }
        tokio::select! {
            biased;
            // Dropping the request future closes its connection: the server sees the abort.
            () = ctx.cancelled() => Err(JobError::Cancelled(format!(
                "{} {} was aborted because the item was cancelled",
                this.method, this.shown
            ))),
            result = this.send(&ctx) => result,
        }
    }
}

impl HttpJob {
    /// The job as the run's props configure it, if they carry `http.*` settings other than those
    /// it was built from; `None`: as built.
    fn as_configured(&self, ctx: &ShardingContext) -> Result<Option<Arc<HttpJob>>, JobError> {
        let wanted = http_props(&ctx.props);
        if wanted.is_empty() || wanted == self.built_from {
            return Ok(None);
        }
        let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(job) = live.as_ref().filter(|j| j.built_from == wanted) {
            return Ok(Some(job.clone()));
        }
        let job = Arc::new(HttpJob::from_props(&ctx.props).map_err(|e| {
            JobError::failed(format!("the HTTP job's props as configured now: {e}"))
        })?);
        *live = Some(job.clone());
        Ok(Some(job))
    }
}

/// The first `max` bytes of `response`'s body (invalid UTF-8 replaced); the rest is never read.
pub(crate) async fn read_capped(
    mut response: reqwest::Response,
    max: usize,
) -> reqwest::Result<String> {
    let mut body = Vec::new();
    while body.len() < max {
        let Some(chunk) = response.chunk().await? else {
            break;
        };
        let room = max - body.len();
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
    }
    Ok(String::from_utf8_lossy(&body).into_owned())
}

/// The start of a body, on one line.
fn excerpt(body: &str) -> String {
    let mut text: String = body.chars().take(BODY_EXCERPT_CHARS).collect();
    if body.chars().count() > BODY_EXCERPT_CHARS {
        text.push('…');
    }
    text.replace(['\r', '\n'], " ")
}
