//! Wall-clock time, injected. The engine never calls `Utc::now()` directly: it asks a [`Clock`], so
//! tests on paused tokio time see a wall clock that advances with `tokio::time::advance`.

use std::fmt;
use std::sync::Arc;

use chrono::{DateTime, Utc};

/// A source of wall-clock time.
pub trait Clock: Send + Sync + fmt::Debug + 'static {
    /// Now.
    fn now(&self) -> DateTime<Utc>;

    /// Whether this clock is the operating system's real time, so that a timer may wait on an OS
    /// thread (sub-millisecond wake-ups) instead of tokio's millisecond timer wheel. False for
    /// clocks driven by tokio's (possibly paused) time, whose timers must be tokio's.
    fn is_real_time(&self) -> bool {
        false
    }
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }

    fn is_real_time(&self) -> bool {
        true
    }
}

/// A wall clock that moves with tokio's clock from a fixed origin: under paused time it advances
/// exactly as `tokio::time::advance` says, so cron instants line up with timers.
#[derive(Debug, Clone, Copy)]
pub struct TokioClock {
    origin_wall: DateTime<Utc>,
    origin: tokio::time::Instant,
}

impl TokioClock {
    /// A clock reading `origin_wall` now.
    pub fn starting_at(origin_wall: DateTime<Utc>) -> Self {
        Self {
            origin_wall,
            origin: tokio::time::Instant::now(),
        }
    }
}

impl Clock for TokioClock {
    fn now(&self) -> DateTime<Utc> {
        let elapsed = tokio::time::Instant::now().saturating_duration_since(self.origin);
        self.origin_wall + chrono::Duration::from_std(elapsed).unwrap_or(chrono::Duration::zero())
    }
}

/// A shareable clock.
pub type SharedClock = Arc<dyn Clock>;

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn tokio_clock_advances_with_paused_time() {
        let origin = DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z")
            .unwrap()
            .to_utc();
        let clock = TokioClock::starting_at(origin);
        tokio::time::advance(std::time::Duration::from_millis(1500)).await;
        assert_eq!(clock.now(), origin + chrono::Duration::milliseconds(1500));
    }
}
