//! How a cancelled item ends: its [`StopGrace`] says how long the item's processes have between
//! the polite request (SIGTERM to a script's whole process group) and the end (SIGKILL).
//!
//! The grace travels with the run ([`ShardingContext::stop_grace`](super::ShardingContext)), one
//! value shared by the items of a run, and whoever cancels says how long it can wait:
//! [`ShardingContext::cancel_within`](super::ShardingContext::cancel_within) or
//! [`StopGrace::cancel_within`]. The shortest grace asked for wins, also after the item's processes
//! were already asked to stop: a run cancelled for a timeout with a long grace and then fenced
//! (the session is about to expire) is killed within the fence's short grace. Dropping the run's
//! future ends its processes at once (SIGKILL), whatever the grace.
//!
//! A grace costs nothing to a run that is never cancelled: one shared counter per run, read only
//! when a cancellation arrives.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

pub use crate::model::execution::DEFAULT_STOP_GRACE;

/// How long a cancelled item's processes have between SIGTERM and SIGKILL; shared by clones.
#[derive(Debug, Clone)]
pub struct StopGrace(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    /// The grace in milliseconds: only ever shortened.
    millis: AtomicU64,
    /// Woken when the grace is shortened, so a stop in progress takes the new deadline.
    shortened: Notify,
}

impl Default for StopGrace {
    fn default() -> Self {
        Self::new(DEFAULT_STOP_GRACE)
    }
}

impl StopGrace {
    /// A grace of `grace`, until someone shortens it.
    pub fn new(grace: Duration) -> Self {
        Self(Arc::new(Inner {
            millis: AtomicU64::new(millis(grace)),
            shortened: Notify::new(),
        }))
    }

    /// The grace now.
    pub fn get(&self) -> Duration {
        Duration::from_millis(self.0.millis.load(Ordering::Acquire))
    }

    /// Makes the grace at most `grace` (a longer one is ignored: whoever needs the processes
    /// gone sooner wins).
    pub fn shorten(&self, grace: Duration) {
        let before = self.0.millis.fetch_min(millis(grace), Ordering::AcqRel);
        if millis(grace) < before {
            self.0.shortened.notify_waiters();
        }
    }

    /// Shortens the grace to `grace`, then fires `token`: the item's processes get SIGTERM now
    /// and SIGKILL once `grace` has passed (or sooner, if a shorter grace follows).
    pub fn cancel_within(&self, token: &CancellationToken, grace: Duration) {
        self.shorten(grace);
        token.cancel();
    }

    /// Completes when the grace is next shortened (for a stop in progress to take the new
    /// deadline). Only shortenings after the future is polled or
    /// [`enable`](tokio::sync::futures::Notified::enable)d count: take it before reading
    /// [`get`](Self::get).
    pub fn shortened(&self) -> tokio::sync::futures::Notified<'_> {
        self.0.shortened.notified()
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shortest_grace_asked_for_wins() {
        let grace = StopGrace::new(Duration::from_secs(30));
        let token = CancellationToken::new();
        grace.cancel_within(&token, Duration::from_secs(10));
        assert!(token.is_cancelled());
        assert_eq!(grace.get(), Duration::from_secs(10));
        grace.shorten(Duration::from_secs(20));
        assert_eq!(
            grace.get(),
            Duration::from_secs(10),
            "a longer grace is ignored"
        );
        grace.clone().shorten(Duration::from_millis(50));
        assert_eq!(
            grace.get(),
            Duration::from_millis(50),
            "clones share the grace"
        );
    }

    #[tokio::test]
    async fn a_shorter_grace_wakes_a_stop_in_progress() {
        let grace = StopGrace::new(Duration::from_secs(30));
        let waiting = grace.shortened();
        tokio::pin!(waiting);
        // Registered before the shortening: `notify_waiters` wakes only registered waiters.
        waiting.as_mut().enable();
        grace.shorten(Duration::from_secs(1));
        waiting.await;
        assert_eq!(grace.get(), Duration::from_secs(1));
    }
}
