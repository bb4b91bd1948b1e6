//! Fencing by time: how long a disconnected node may keep its items running, and how late a
//! fire may come before the node must check its session first.
//!
//! The server expires a session `timeout` after it last heard from the client, never sooner
//! (ZooKeeper rounds expiry up to its next tick), and only then may a survivor see the instance
//! node vanish and take its items over. The client (zookeeper-client) works in ticks of
//! `timeout / 20`: it pings after 3 idle ticks and declares the connection lost when nothing
//! arrived for 8 ticks, checked every tick. So a disconnection is noticed at most 9 ticks after
//! the last answer, and from that notice at least `timeout - 9 ticks` remain before any survivor
//! can start. The node cancels its running items `margin` before that: the margin covers the
//! cancellation reaching the items, scheduling delays and clock-rate differences.

use std::time::Duration;

/// The time budget of one session (every job's machine holds one: kept to the timeout alone).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FenceBudget {
    /// The negotiated session timeout.
    pub timeout: Duration,
}

impl FenceBudget {
    /// The budget for a negotiated session timeout.
    pub fn for_session(timeout: Duration) -> Self {
        Self { timeout }
    }

    /// The client's tick (`timeout / 20`, at least 1 ms).
    pub fn tick(&self) -> Duration {
        (self.timeout / 20).max(Duration::from_millis(1))
    }

    /// Safety margin kept before the earliest server-side expiry: a tenth of the timeout, at
    /// least 100 ms.
    pub fn margin(&self) -> Duration {
        (self.timeout / 10).max(Duration::from_millis(100))
    }

    /// The client's ping interval (3 ticks of silence).
    pub fn ping_interval(&self) -> Duration {
        self.tick() * 3
    }

    /// The longest time between the last answer and the client noticing the disconnection.
    pub fn notice_latency(&self) -> Duration {
        self.tick() * 9
    }

    /// How long after the disconnection is noticed running items are cancelled: before the
    /// server can expire the session, with the margin to spare. Zero when the timeout is too short
    /// for any budget (cancel at once).
    pub fn cancel_after_notice(&self) -> Duration {
        self.timeout
            .saturating_sub(self.notice_latency())
            .saturating_sub(self.margin())
    }

    /// A fire later than this (or a pause longer than this) may have outlived the session: the
    /// node checks its session before it starts anything. One ping interval: a node that was
    /// scheduled that recently has kept its session alive.
    pub fn late_fire_bound(&self) -> Duration {
        self.ping_interval()
    }

    /// A pause longer than this may have let a survivor take the items over: running items are
    /// cancelled at once on resume, before anything else.
    pub fn pause_cancels_after(&self) -> Duration {
        self.cancel_after_notice()
    }

    /// How long a child process of a run may outlive its node's last heartbeat before the child
    /// keeper kills it (`job::keeper`): a node frozen at `F` was last heard by the server no
    /// sooner than a ping interval before `F`, so the earliest expiry is `F - ping + timeout`, and
    /// the keeper's kill comes `2 x margin` before it (one margin covers the keeper's own poll
    /// and scheduling). Zero when the timeout leaves no budget (killed as soon as a beat is late).
    pub fn frozen_node_lease(&self) -> Duration {
        self.timeout
            .saturating_sub(self.ping_interval())
            .saturating_sub(self.margin() * 2)
    }

    /// The grace between SIGTERM and SIGKILL of a script's process group when this node cancels
    /// its items (fencing, resharding, shutdown): half the margin, so that a group fenced a margin
    /// before the earliest expiry is gone with half a margin to spare (`job::stop`).
    pub fn kill_grace(&self) -> Duration {
        (self.margin() / 2).min(crate::model::execution::DEFAULT_STOP_GRACE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_four_second_session_cancels_items_well_before_the_server_can_expire_it() {
        let cases = [
            // timeout, cancel after notice, late fire bound
            (4_000, 1_800, 600),
            (30_000, 13_500, 4_500),
            (10_000, 4_500, 1_500),
            (500, 175, 75),
        ];
        for (timeout, cancel, late) in cases {
            let b = FenceBudget::for_session(Duration::from_millis(timeout));
            assert_eq!(
                b.cancel_after_notice(),
                Duration::from_millis(cancel),
                "{timeout} ms"
            );
            assert_eq!(
                b.late_fire_bound(),
                Duration::from_millis(late),
                "{timeout} ms"
            );
            // Noticed at the latest, cancelled at: last answer + notice + cancel < expiry.
            assert!(
                b.notice_latency() + b.cancel_after_notice() + b.margin() <= b.timeout,
                "{timeout} ms leaves the margin"
            );
        }
    }

    #[test]
    fn a_frozen_nodes_children_are_killed_two_margins_before_the_earliest_expiry() {
        let cases = [
            // timeout, lease
            (4_000, 2_600),
            (6_000, 3_900),
            (30_000, 19_500),
            (500, 225),
            (100, 0),
        ];
        for (timeout, lease) in cases {
            let b = FenceBudget::for_session(Duration::from_millis(timeout));
            assert_eq!(
                b.frozen_node_lease(),
                Duration::from_millis(lease),
                "{timeout} ms"
            );
            // Frozen at F, last heard at F - ping at the earliest: the kill (F + lease, plus the
            // keeper's poll within one margin) comes before F - ping + timeout.
            if b.frozen_node_lease() > Duration::ZERO {
                assert!(
                    b.ping_interval() + b.frozen_node_lease() + b.margin() * 2 <= b.timeout,
                    "{timeout} ms leaves two margins"
                );
            }
        }
    }
}
