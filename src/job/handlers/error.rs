//! What happens when an item fails: the [`ErrorHandler`] trait, the [`ErrorAction`] it returns,
//! and the built-in handlers `LOG`, `IGNORE` and `THROW`.

use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::job::JobError;
use crate::types::{JobName, ShardItem};

use super::panic_message;

/// Name of the built-in handler that logs the failure and carries on (the default).
pub const LOG: &str = "LOG";
/// Name of the built-in handler that does nothing.
pub const IGNORE: &str = "IGNORE";
/// Name of the built-in handler that logs the failure and escalates it.
pub const THROW: &str = "THROW";

/// What the engine does with a failure after its handler has seen it.
///
/// ElasticJob's `THROW` rethrows into the scheduler thread. There is no such thread to throw to
/// here, so a handler returns its verdict instead, and the engine carries it into the run's
/// outcome, its events and its metrics. Neither action stops the job's schedule: the next fire
/// runs as usual.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorAction {
    /// The failure was dealt with (logged or deliberately ignored).
    Continue,
    /// The failure must be reported as an escalated failure of the run.
    Escalate,
}

/// Receives every failure of a job: an item's error, or a run-level error (`item` is `None`)
/// such as a refused run.
///
/// Called on the engine's task, once per failure: keep it short and non-blocking. A handler that
/// panics is contained by [`handle_contained`] and its failure escalated.
pub trait ErrorHandler: Send + Sync + fmt::Debug {
    /// Deals with one failure and says what the engine should do with it.
    fn handle(&self, job: &JobName, item: Option<ShardItem>, error: &JobError) -> ErrorAction;
}

/// `LOG`: logs the failure at `error` level with `job`, `item` and `error` fields, and continues.
#[derive(Debug, Clone, Copy, Default)]
pub struct LogErrorHandler;

impl ErrorHandler for LogErrorHandler {
    fn handle(&self, job: &JobName, item: Option<ShardItem>, error: &JobError) -> ErrorAction {
        log_failure(job, item, error, false);
        ErrorAction::Continue
    }
}

/// `IGNORE`: does nothing and continues; the failure still appears in the run's outcome.
#[derive(Debug, Clone, Copy, Default)]
pub struct IgnoreErrorHandler;

impl ErrorHandler for IgnoreErrorHandler {
    fn handle(&self, _job: &JobName, _item: Option<ShardItem>, _error: &JobError) -> ErrorAction {
        ErrorAction::Continue
    }
}

/// `THROW`: logs the failure at `error` level and escalates it (see [`ErrorAction`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct ThrowErrorHandler;

impl ErrorHandler for ThrowErrorHandler {
    fn handle(&self, job: &JobName, item: Option<ShardItem>, error: &JobError) -> ErrorAction {
        log_failure(job, item, error, true);
        ErrorAction::Escalate
    }
}

fn log_failure(job: &JobName, item: Option<ShardItem>, error: &JobError, escalated: bool) {
    // `timeout` or `cancelled` rather than `failed` when that is how the item ended.
    let outcome = crate::job::ItemOutcome::of_error(error).as_str();
    // A failure may quote a URL with its token or password.
    let error = crate::secret::redact_text(&error.to_string());
    match item {
        Some(item) => {
            tracing::error!(%job, %item, outcome, %error, escalated, "job item did not succeed")
        }
        None => tracing::error!(%job, outcome, %error, escalated, "job run did not succeed"),
    }
}

/// Calls `handler`, containing a panic: a handler that panics has not dealt with the failure, so
/// the panic is logged and the failure escalated.
pub fn handle_contained(
    handler: &dyn ErrorHandler,
    job: &JobName,
    item: Option<ShardItem>,
    error: &JobError,
) -> ErrorAction {
    // The handler only gets shared references and its verdict is discarded on panic, so no
    // broken invariant can leak out of the unwind.
    match catch_unwind(AssertUnwindSafe(|| handler.handle(job, item, error))) {
        Ok(action) => action,
        Err(payload) => {
            tracing::error!(
                %job,
                item = item.map(|i| i.get()),
                error = %crate::secret::redact_text(&error.to_string()),
                handler = ?handler,
                panic = %panic_message(payload.as_ref()),
                "error handler panicked; escalating the failure"
            );
            ErrorAction::Escalate
        }
    }
}
