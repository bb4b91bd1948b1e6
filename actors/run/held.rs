//! Runs held for their instant. A fire decided ahead of its instant (`decide/lifecycle/ahead.rs`)
//! launches its run for that instant: the executor hands it to the trigger (`TriggerMsg::Hold`),
//! whose ring at the instant starts the runs due ([`start_held`]) before it sends any other job
//! its `Fire`.
//!
//! On a registry silent at the instant the trigger hands them back instead ([`hand_back`]): each
//! executor starts its run behind a gate its machine opens (`decide/lifecycle/gated.rs`).
//!
//! The runs an instant starts go in tasks of [`STARTED_TOGETHER`] (spread over the workers), and
//! a run that ends goes on with its end (metrics, listeners, its report to its executor) only once
//! every run of the instant has started ([`Together`]): the reports wake executors, whose steps,
//! end writes and the registry's answers would otherwise take the CPU the other starts need.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::actors::mail::{ExecutorMsg, HeldRun};

use super::task::spawn_run;

/// Hands each run back to its executor, which starts it behind a gate its machine opens (the
/// registry was silent at the instant: `decide/lifecycle/gated.rs`); a run whose executor is gone
/// starts at once (its items were cancelled as the executor stopped).
pub(crate) fn hand_back(runs: Vec<HeldRun>, silent: std::time::Duration) {
    tracing::warn!(
        runs = runs.len(),
        ?silent,
        "the registry has answered nothing for a while at an \
        instant: its runs decided ahead wait for their markers' answer and a session check"
    );
    for run in runs {
        let executor = run.executor.clone();
        if let Err(ractor::MessagingErr::SendErr(ExecutorMsg::HeldBack(run))) =
            executor.send_message(ExecutorMsg::HeldBack(run))
        {
            start(run);
        }
    }
}

/// Starts a run's task now (not one of an instant's held runs).
pub(crate) fn start(run: HeldRun) {
    spawn_run(run.req, run.executor, None);
}

/// How many of an instant's held runs one task starts: a busy instant's starts are spread over
/// every worker instead of queued behind one.
const STARTED_TOGETHER: usize = 500;

/// The runs an instant starts together: how many have not started yet.
#[derive(Debug)]
pub(super) struct Together {
    left: AtomicUsize,
    all_started: tokio::sync::Notify,
}

impl Together {
    /// One run started.
    pub(super) fn started(&self) {
        if self.left.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.all_started.notify_waiters();
        }
    }

    /// Waits until every run has started.
    pub(super) async fn all_started(&self) {
        let notified = self.all_started.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if self.left.load(Ordering::Acquire) == 0 {
            return;
        }
        notified.await;
    }
}

/// Starts the runs held for an instant, in tasks of [`STARTED_TOGETHER`] runs each (the first
/// here); each run goes on with its end only once every one of them has started.
pub(crate) fn start_held(mut runs: Vec<HeldRun>) {
    if runs.is_empty() {
        return;
    }
    let together = Arc::new(Together {
        left: AtomicUsize::new(runs.len()),
        all_started: tokio::sync::Notify::new(),
    });
    let start = |runs: Vec<HeldRun>, together: Arc<Together>| {
        for r in runs {
            spawn_run(r.req, r.executor, Some(together.clone()));
        }
    };
    while runs.len() > STARTED_TOGETHER {
        let rest = runs.split_off(runs.len() - STARTED_TOGETHER);
        let together = together.clone();
        tokio::spawn(async move { start(rest, together) });
    }
    start(runs, together);
}
