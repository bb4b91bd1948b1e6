//! One run of a job's items, outside the executor's mailbox: a run of several items runs each in
//! its own task, a run of one item runs it in the run's task (a panic fails that item only, either
//! way), listeners before and after, the error handler for each failure, metrics, and
//! `ExecutorMsg::RunFinished` back to the executor at the end.
//!
//! Here what a run is given (the machine's [`Launch`], the task's [`RunRequest`], its task id) and
//! the reports the machine asks for; in `kit.rs` a job's [`RunKit`], what its runs are made with
//! and the tokens of those in flight; in `task.rs` the run's task.

mod held;
mod kit;
mod task;

pub(crate) use crate::actors::mail::{HeldRun, RunRequest};
use held::Together;
pub(crate) use held::{hand_back, start, start_held};
pub(crate) use kit::RunKit;

use std::sync::Arc;

use chrono::{DateTime, Utc};

use crate::events::{EngineEvent, EventBus};
use crate::job::{ExecutionSource, JobError};
use crate::types::{InstanceId, JobName, ShardItem};

use crate::decide::lifecycle::{Command, MissReason};

/// One run as the machine launched it.
#[derive(Debug)]
pub(crate) struct Launch {
    pub(crate) run_id: u64,
    pub(crate) source: ExecutionSource,
    /// The cron instant it answers.
    pub(crate) scheduled: Option<DateTime<Utc>>,
    /// 1 for a first run, 2 for its first retry, and so on.
    pub(crate) attempt: u32,
    /// A trigger's job parameter, in place of the config's.
    pub(crate) parameter: Option<Arc<str>>,
    /// The workflow run it is a step of.
    pub(crate) workflow: Option<crate::decide::workflow::run::RunId>,
    /// When this instance saw the step's `{run}@start` decision appear (a workflow step only).
    pub(crate) decided_at: Option<DateTime<Utc>>,
}

/// `{job}@-@{items}@-@{SOURCE}@-@{instance}@-@{run}` (ElasticJob's task id, with a run number).
pub(crate) fn task_id(
    job: &JobName,
    items: &[ShardItem],
    source: ExecutionSource,
    instance: &InstanceId,
    run_id: u64,
) -> String {
    use std::fmt::Write as _;
    // One allocation, sized for the usual id: every run of every job builds one.
    let source = source.as_str();
    let mut id = String::with_capacity(
        job.as_str().len() + instance.as_str().len() + source.len() + items.len() * 4 + 32,
    );
    let _ = write!(id, "{job}@-@");
    for (n, item) in items.iter().enumerate() {
        let comma = if n == 0 { "" } else { "," };
        let _ = write!(id, "{comma}{item}");
    }
    id.push_str("@-@");
    id.extend(source.chars().map(|c| c.to_ascii_uppercase()));
    let _ = write!(id, "@-@{instance}@-@{run_id}");
    id
}

/// Reports what a job's state machine asks to report: misfires and skipped fires as metrics and
/// events, warnings as logs, refused fires to the job's error handler.
pub(crate) fn report(
    kit: &RunKit,
    events: &EventBus,
    me: &InstanceId,
    job: &JobName,
    command: Command,
) {
    match command {
        Command::Misfired(items) => {
            crate::metrics::misfires_flagged(me, job, items.len());
            events.emit(EngineEvent::Misfired {
                job: job.clone(),
                items,
            });
        }
        Command::Skipped {
            reason,
            items,
            missed,
            warn,
        } => {
            crate::metrics::fire_skipped(me, job, reason.as_str());
            if let Some(missed) = missed {
                crate::metrics::fire_missed(me, job, missed.as_str());
            }
            let missed = missed.map_or("no (runs later)", MissReason::as_str);
            if warn {
                tracing::warn!(%job, reason = reason.as_str(), items, missed,
                    "fire skipped: the job cannot keep up or cannot start work now \
                     (further skips in a row are logged at DEBUG)");
            } else {
                tracing::debug!(%job, reason = reason.as_str(), items, missed, "fire skipped");
            }
        }
        Command::Refuse(why) => {
            let _ = kit.error_handler.handle(job, None, &JobError::Refused(why));
        }
        Command::Warn(message) => tracing::warn!(%job, "{message}"),
        Command::WorkflowRunEnded { run, outcome } => {
            crate::metrics::workflow_run_ended(me, job, outcome);
            events.emit(EngineEvent::WorkflowRunEnded {
                job: job.clone(),
                run: run.to_string(),
                outcome,
            });
        }
        // The executor hands over only the five reports above.
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_id_names_the_job_its_items_the_source_in_capitals_the_instance_and_the_run() {
        let job = JobName::new("orders").unwrap();
        let me = InstanceId::parse("192.0.2.1@-@7").unwrap();
        let items = [ShardItem(0), ShardItem(2), ShardItem(11)];
        let id = task_id(&job, &items, ExecutionSource::CatchUp, &me, 42);
        assert_eq!(id, "orders@-@0,2,11@-@CATCHUP@-@192.0.2.1@-@7@-@42");
        let one = task_id(&job, &items[..1], ExecutionSource::Normal, &me, 1);
        assert_eq!(one, "orders@-@0@-@NORMAL@-@192.0.2.1@-@7@-@1");
    }
}
