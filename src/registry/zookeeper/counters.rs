//! Registry call counters, per [`OpKind`] and outcome, for benchmarks and for tests that check how
//! many round trips a decision costs.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::registry::OpKind;

/// Live counters, shared by a connector and the sessions it opened.
#[derive(Debug, Default)]
pub(crate) struct OpCounters {
    ok: [AtomicU64; OpKind::ALL.len()],
    err: [AtomicU64; OpKind::ALL.len()],
    /// The operations inside multi-ops that succeeded, per kind.
    in_multis: [AtomicU64; OpKind::ALL.len()],
}

impl OpCounters {
    /// Counts one finished call.
    pub(crate) fn record(&self, kind: OpKind, ok: bool) {
        let table = if ok { &self.ok } else { &self.err };
        table[kind.index()].fetch_add(1, Ordering::Relaxed);
        crate::metrics::registry_operation("zookeeper", kind, ok);
    }

    /// Counts the operations of a multi-op that succeeded (the multi itself is [`Self::record`]ed).
    pub(crate) fn record_multi_ops(&self, kinds: impl IntoIterator<Item = OpKind>) {
        for kind in kinds {
            self.in_multis[kind.index()].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A copy of the counters now.
    pub(crate) fn snapshot(&self) -> OpCounts {
        let load =
            |t: &[AtomicU64; OpKind::ALL.len()]| t.each_ref().map(|a| a.load(Ordering::Relaxed));
        OpCounts {
            ok: load(&self.ok),
            err: load(&self.err),
            in_multis: load(&self.in_multis),
        }
    }
}

/// A snapshot of registry call counts.
///
/// ```
/// use shardcron::registry::{zookeeper::OpCounts, OpKind};
/// let counts = OpCounts::default();
/// assert_eq!(counts.ok(OpKind::Get) + counts.err(OpKind::Get), 0);
/// assert_eq!(counts.total(), 0);
/// assert_eq!(counts.applied(OpKind::Create), 0);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OpCounts {
    ok: [u64; OpKind::ALL.len()],
    err: [u64; OpKind::ALL.len()],
    in_multis: [u64; OpKind::ALL.len()],
}

impl OpCounts {
    /// Calls of `kind` that succeeded.
    pub fn ok(&self, kind: OpKind) -> u64 {
        self.ok[kind.index()]
    }

    /// Calls of `kind` that failed (any error, timeouts included).
    pub fn err(&self, kind: OpKind) -> u64 {
        self.err[kind.index()]
    }

    /// Operations of `kind` inside multi-ops that succeeded.
    pub fn in_multis(&self, kind: OpKind) -> u64 {
        self.in_multis[kind.index()]
    }

    /// Operations of `kind` the registry applied: the calls that succeeded and the operations of
    /// the multi-ops that succeeded (the nodes a session created, say, however it batched them).
    pub fn applied(&self, kind: OpKind) -> u64 {
        self.ok(kind) + self.in_multis(kind)
    }

    /// All calls, whatever their kind and outcome (a multi-op once).
    pub fn total(&self) -> u64 {
        self.ok.iter().chain(&self.err).sum()
    }

    /// `(kind, ok, err)` for every kind with at least one call.
    pub fn iter(&self) -> impl Iterator<Item = (OpKind, u64, u64)> + '_ {
        OpKind::ALL
            .iter()
            .enumerate()
            .map(|(i, k)| (*k, self.ok[i], self.err[i]))
            .filter(|(_, ok, err)| ok + err > 0)
    }

    /// The calls made between `earlier` and `self`.
    pub fn since(&self, earlier: &OpCounts) -> OpCounts {
        let mut out = *self;
        for i in 0..OpKind::ALL.len() {
            out.ok[i] -= earlier.ok[i].min(out.ok[i]);
            out.err[i] -= earlier.err[i].min(out.err[i]);
            out.in_multis[i] -= earlier.in_multis[i].min(out.in_multis[i]);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_split_by_kind_and_outcome() {
        let c = OpCounters::default();
        c.record(OpKind::Get, true);
        c.record(OpKind::Get, true);
        let before = c.snapshot();
        c.record(OpKind::Multi, false);
        let now = c.snapshot();
        assert_eq!((now.ok(OpKind::Get), now.err(OpKind::Multi)), (2, 1));
        assert_eq!(now.total(), 3);
        let delta = now.since(&before);
        assert_eq!(delta.iter().collect::<Vec<_>>(), [(OpKind::Multi, 0, 1)]);
    }

    #[test]
    fn the_operations_of_a_multi_op_count_as_applied_beside_the_plain_calls() {
        let c = OpCounters::default();
        c.record(OpKind::Create, true);
        c.record(OpKind::Multi, true);
        c.record_multi_ops([OpKind::Create, OpKind::Create, OpKind::Delete]);
        let before = c.snapshot();
        c.record(OpKind::Multi, true);
        c.record_multi_ops([OpKind::Delete]);
        let now = c.snapshot();
        assert_eq!(now.applied(OpKind::Create), 3);
        assert_eq!(now.in_multis(OpKind::Create), 2);
        assert_eq!(now.applied(OpKind::Delete), 2);
        assert_eq!(now.since(&before).applied(OpKind::Delete), 1);
        assert_eq!(now.total(), 3);
    }
}
