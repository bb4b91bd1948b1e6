//! A run's deadline (`shardcron.timeout`), as the executor carries out its machine's
//! `TimeOut` and `Abandon` commands: the first cancels the run's items (their
//! [`ShardingContext::cancellation`](super::ShardingContext::cancellation) tokens, which stop a
//! script's process and abort an HTTP request) and marks the run timed out; the second, once the
//! grace has run out, drops what of the items still runs. An item that ends with an error after
//! the timeout, or is dropped, ends as [`JobError::TimedOut`].
//!
//! A job without a timeout has no deadline: its items run as they always did.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::JobError;

/// One run's deadline, shared by the executor and the run's item tasks.
#[derive(Debug)]
pub struct RunDeadline {
    after: Duration,
    timed_out: AtomicBool,
    abandon: CancellationToken,
}

impl RunDeadline {
    /// The deadline of a run whose items may run for `after`.
    pub fn new(after: Duration) -> Self {
        Self {
            after,
            timed_out: AtomicBool::new(false),
            abandon: CancellationToken::new(),
        }
    }

    /// The run is past its timeout: its errors from now on are timeouts. (The caller cancels
    /// the items' tokens.)
    pub fn time_out(&self) {
        self.timed_out.store(true, Ordering::Release);
    }

    /// The grace ran out: items still running are dropped.
    pub fn abandon(&self) {
        self.time_out();
        self.abandon.cancel();
    }

    /// Whether the run is past its timeout.
    pub fn is_timed_out(&self) -> bool {
        self.timed_out.load(Ordering::Acquire)
    }

    /// The error an item ends with when it timed out.
    pub fn error(&self) -> JobError {
        JobError::TimedOut { after: self.after }
    }

    /// Runs one item under the deadline: dropped when the run is abandoned, and an error after
    /// the timeout reads as the timeout (a success within the grace stays a success).
    pub async fn guard(
        &self,
        item: impl Future<Output = Result<(), JobError>>,
    ) -> Result<(), JobError> {
        let result = tokio::select! {
            biased;
            result = item => result,
            () = self.abandon.cancelled() => return Err(self.error()),
        };
        match result {
            Err(_) if self.is_timed_out() => Err(self.error()),
            r => r,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn an_item_ends_as_timed_out_when_it_fails_after_the_timeout_or_is_abandoned() {
        let deadline = RunDeadline::new(Duration::from_secs(2));
        let fails = deadline
            .guard(async { Err(JobError::failed("boom")) })
            .await;
        assert_eq!(fails, Err(JobError::failed("boom")), "before the timeout");
        deadline.time_out();
        let cancelled = deadline
            .guard(async { Err(JobError::Cancelled("token".into())) })
            .await;
        assert_eq!(
            cancelled,
            Err(JobError::TimedOut {
                after: Duration::from_secs(2)
            })
        );
        assert_eq!(
            deadline.guard(async { Ok(()) }).await,
            Ok(()),
            "done in the grace"
        );
        deadline.abandon();
        let stuck = deadline.guard(std::future::pending()).await;
        assert!(matches!(stuck, Err(JobError::TimedOut { .. })), "{stuck:?}");
    }
}
