//! Listeners around a run: the [`JobListener`] trait, the plain data it receives ([`RunInfo`],
//! [`RunOutcome`]), and [`Listeners`], which calls a job's listeners and contains their panics.

use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use chrono::{DateTime, Utc};

use crate::job::{ExecutionSource, JobError};
use crate::types::{InstanceId, JobName, ShardItem};

use super::panic_message;

/// What a run is about to do: the items of one fire on this instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunInfo {
    /// The job.
    pub job_name: JobName,
    /// The run's task id (see [`crate::job::ShardingContext::task_id`]).
    pub task_id: String,
    /// The items this instance runs.
    pub items: Vec<ShardItem>,
    /// Why the run happens.
    pub source: ExecutionSource,
    /// The instance running it.
    pub instance_id: InstanceId,
}

/// How a run ended: one result per item, and when it started and finished.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOutcome {
    /// Each item with its result, in item order.
    pub results: Vec<(ShardItem, Result<(), JobError>)>,
    /// When the first item started.
    pub started_at: DateTime<Utc>,
    /// When the last item finished.
    pub finished_at: DateTime<Utc>,
}

impl RunOutcome {
    /// Whether every item succeeded.
    pub fn is_success(&self) -> bool {
        self.results.iter().all(|(_, r)| r.is_ok())
    }

    /// The items that failed, with their errors.
    pub fn failures(&self) -> impl Iterator<Item = (ShardItem, &JobError)> {
        self.results
            .iter()
            .filter_map(|(item, r)| r.as_ref().err().map(|e| (*item, e)))
    }
}

/// Called before and after every run of a job that names it in `jobListenerTypes`.
///
/// Called on the engine's task: keep it short and non-blocking (send to a channel for slow work).
/// A listener that panics does not take the run down: [`Listeners`] logs the panic and reports it.
pub trait JobListener: Send + Sync + fmt::Debug {
    /// Before the run's items start.
    fn before_run(&self, info: &RunInfo);
    /// After every item of the run has ended.
    fn after_run(&self, info: &RunInfo, outcome: &RunOutcome);
}

/// Which hook of a listener was being called.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Hook {
    /// [`JobListener::before_run`].
    BeforeRun,
    /// [`JobListener::after_run`].
    AfterRun,
}

/// A listener that panicked; the run went on without it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenerPanic {
    /// The listener's registered name.
    pub listener: String,
    /// The hook that panicked.
    pub hook: Hook,
    /// The panic's message, when it had one.
    pub message: String,
}

/// The listeners of one job, in the order the job names them. Shared: every run of the job
/// holds them, and a job without any holds nothing.
#[derive(Debug, Clone, Default)]
pub struct Listeners {
    entries: Option<Arc<[Named]>>,
}

/// A listener and the name the job knows it by.
type Named = (String, Arc<dyn JobListener>);

impl Listeners {
    fn entries(&self) -> &[Named] {
        self.entries.as_deref().unwrap_or_default()
    }

    /// Listeners called in the given order, each known by its name in logs and reports.
    pub fn new(entries: Vec<(String, Arc<dyn JobListener>)>) -> Self {
        let entries = (!entries.is_empty()).then(|| entries.into());
        Self { entries }
    }

    /// The listeners' names, in call order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries().iter().map(|(name, _)| name.as_str())
    }

    /// Whether there is no listener to call.
    pub fn is_empty(&self) -> bool {
        self.entries().is_empty()
    }

    /// Calls every listener's `before_run`; returns the panics, which were logged and contained.
    pub fn before_run(&self, info: &RunInfo) -> Vec<ListenerPanic> {
        self.call_each(info, Hook::BeforeRun, |l| l.before_run(info))
    }

    /// Calls every listener's `after_run`; returns the panics, which were logged and contained.
    pub fn after_run(&self, info: &RunInfo, outcome: &RunOutcome) -> Vec<ListenerPanic> {
        self.call_each(info, Hook::AfterRun, |l| l.after_run(info, outcome))
    }

    fn call_each(
        &self,
        info: &RunInfo,
        hook: Hook,
        call: impl Fn(&dyn JobListener),
    ) -> Vec<ListenerPanic> {
        let mut panics = Vec::new();
        for (name, listener) in self.entries() {
            // Listeners only see shared, plain data that is not used after a panic, so nothing
            // half-updated can be observed once the unwind is caught.
            if let Err(payload) = catch_unwind(AssertUnwindSafe(|| call(listener.as_ref()))) {
                let message = panic_message(payload.as_ref());
                tracing::error!(
                    job = %info.job_name,
                    task_id = %info.task_id,
                    listener = %name,
                    ?hook,
                    panic = %message,
                    "job listener panicked; the run goes on"
                );
                panics.push(ListenerPanic {
                    listener: name.clone(),
                    hook,
                    message,
                });
            }
        }
        panics
    }
}
