//! Fencing tokens for the business code: a number handed to every item run
//! ([`ShardingContext::fencing_token`](super::ShardingContext::fencing_token)) that grows whenever
//! the item changes owner, so that a store can refuse the late writes of an owner that lost the
//! item while it was paused (GC, SIGSTOP, a partition) and did not notice.
//!
//! The token is a ZooKeeper zxid, which the registry makes totally ordered: the largest of
//!
//! - the `mzxid` of `sharding/{i}/instance` (the sharding commit that named the owner),
//! - the `czxid` of `sharding/{i}/failover` and `sharding/{i}/failovering` (a failover claim), and
//! - the `czxid` of `leader/failover/items/{i}` (the mark a claim consumes: its creation follows
//!   the old owner's departure).
//!
//! Every change of owner is a registry write after everything the old owner saw, so its zxid is
//! larger than any token the old owner was given. A store keeps the largest token it accepted and
//! refuses a write with a smaller one:
//!
//! ```sql
//! UPDATE balances SET amount = $1, fence = $token WHERE id = $2 AND fence <= $token
//! ```
//!
//! Runs of the same owner get the same token (or a larger one after a reshard), so its own
//! successive writes pass (`<=`, not `<`). The token is read from the local mirror, never from the
//! registry: the run's path makes no registry call for it.

use serde::Serialize;

use crate::paths::JobNode;
use crate::registry::mirror::Mirror;
use crate::types::{JobName, ShardItem};

/// A fencing token: compare, never interpret. 0 when the registry gave nothing to derive it from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct FencingToken(pub u64);

impl std::fmt::Display for FencingToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// The zxids an item's ownership was decided by, as the mirror holds them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OwnershipZxids {
    /// `mzxid` of `sharding/{i}/instance`.
    pub owner_set: Option<i64>,
    /// `czxid` of `sharding/{i}/failover`.
    pub failover: Option<i64>,
    /// `czxid` of `sharding/{i}/failovering`.
    pub failovering: Option<i64>,
    /// `czxid` of `leader/failover/items/{i}`.
    pub mark: Option<i64>,
}

impl OwnershipZxids {
    /// Only the owner's `mzxid`: enough for a fire's run, as a failover's nodes are gone (and a
    /// reshard, with a larger zxid, followed the crash) before the item's owner fires it again.
    pub fn read_owner(mirror: &Mirror, job: &JobName, item: ShardItem) -> Self {
        let node = mirror.get(&JobNode::ShardingInstance(item).to_path(job));
        Self {
            owner_set: node.filter(|n| !n.pending).map(|n| n.stat.mzxid),
            ..Self::default()
        }
    }

    /// Reads them all from the mirror (pending nodes, whose stat is unread, count as absent).
    pub fn read(mirror: &Mirror, job: &JobName, item: ShardItem) -> Self {
        let stat = |node: JobNode| {
            mirror
                .get(&node.to_path(job))
                .filter(|n| !n.pending)
                .map(|n| n.stat)
        };
        Self {
            owner_set: stat(JobNode::ShardingInstance(item)).map(|s| s.mzxid),
            failover: stat(JobNode::ShardingFailover(item)).map(|s| s.czxid),
            failovering: stat(JobNode::ShardingFailovering(item)).map(|s| s.czxid),
            mark: stat(JobNode::LeaderFailoverItem(item)).map(|s| s.czxid),
        }
    }

    /// The token: the largest of them.
    pub fn token(&self) -> FencingToken {
        let max = [self.owner_set, self.failover, self.failovering, self.mark]
            .into_iter()
            .flatten()
            .max()
            .unwrap_or(0);
        FencingToken(u64::try_from(max).unwrap_or(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_grows_with_every_change_of_owner() {
        let z = |owner_set, failover, failovering, mark| OwnershipZxids {
            owner_set,
            failover,
            failovering,
            mark,
        };
        // The life of one item: (what happened, its zxids, the token).
        let life = [
            ("never sharded", z(None, None, None, None), 0),
            (
                "A named owner at zxid 10",
                z(Some(10), None, None, None),
                10,
            ),
            (
                "A crashed: marked at 14",
                z(Some(10), None, None, Some(14)),
                14,
            ),
            (
                "B claimed it at 15",
                z(Some(10), Some(15), Some(15), None),
                15,
            ),
            ("resharded to C at 20", z(Some(20), None, None, None), 20),
        ];
        let mut last = 0;
        for (what, zxids, token) in life {
            assert_eq!(zxids.token(), FencingToken(token), "{what}");
            assert!(token >= last, "{what}: the token never shrinks");
            last = token;
        }
    }
}
