//! How long a session has gone without an answer while it waits for one: a registry that stalls
//! (an ensemble paused, a connection black-holed) answers nothing, while a busy one answers its
//! calls one after another. A fire that would run items on `running` markers written ahead and
//! not yet answered asks this first ([`Facts::registry_silent_for`]): on a stalled registry the
//! plan those markers were written under may have moved unseen, so the fire waits for a session
//! check instead of running on them.
//!
//! [`Facts::registry_silent_for`]: crate::decide::lifecycle::Facts::registry_silent_for

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::time::Instant;

/// Calls in flight on a session and when the last one ended (or the first began after none was
/// in flight). Shared by the session's calls; read by any thread.
#[derive(Debug)]
pub struct Silence {
    base: Instant,
    in_flight: AtomicUsize,
    /// Microseconds since `base`.
    last_heard: AtomicU64,
}

impl Default for Silence {
    fn default() -> Self {
        Self::new()
    }
}

impl Silence {
    /// No call in flight.
    pub fn new() -> Self {
        Self {
            base: Instant::now(),
            in_flight: AtomicUsize::new(0),
            last_heard: AtomicU64::new(0),
        }
    }

    fn now_micros(&self) -> u64 {
        u64::try_from(self.base.elapsed().as_micros()).unwrap_or(u64::MAX)
    }

    /// A call begins; it counts as in flight until the returned guard drops (its answer came, or
    /// the call was given up).
    pub fn call(&self) -> InFlight<'_> {
        if self.in_flight.fetch_add(1, Ordering::AcqRel) == 0 {
            // Silence counts from here, not from the end of an idle stretch.
            self.last_heard.store(self.now_micros(), Ordering::Release);
        }
        InFlight(self)
    }

    /// How long the session has had a call in flight and no answer; zero when nothing waits.
    pub fn silent_for(&self) -> Duration {
        if self.in_flight.load(Ordering::Acquire) == 0 {
            return Duration::ZERO;
        }
        let last = self.last_heard.load(Ordering::Acquire);
        Duration::from_micros(self.now_micros().saturating_sub(last))
    }
}

/// A call in flight ([`Silence::call`]).
#[derive(Debug)]
pub struct InFlight<'a>(&'a Silence);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let s = self.0;
        s.last_heard.store(s.now_micros(), Ordering::Release);
        s.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn silence_counts_only_while_a_call_waits_and_resets_with_each_answer() {
        let s = Silence::new();
        tokio::time::advance(Duration::from_secs(5)).await;
        assert_eq!(s.silent_for(), Duration::ZERO, "nothing in flight");
        let first = s.call();
        tokio::time::advance(Duration::from_millis(30)).await;
        assert_eq!(
            s.silent_for(),
            Duration::from_millis(30),
            "not the idle 5 s"
        );
        let second = s.call();
        tokio::time::advance(Duration::from_millis(20)).await;
        assert_eq!(s.silent_for(), Duration::from_millis(50));
        drop(first);
        assert_eq!(s.silent_for(), Duration::ZERO, "an answer just came");
        tokio::time::advance(Duration::from_millis(70)).await;
        assert_eq!(s.silent_for(), Duration::from_millis(70));
        drop(second);
        assert_eq!(s.silent_for(), Duration::ZERO);
    }
}
