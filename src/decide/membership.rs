//! Membership changes the leader did not see as events: whether a job's available instances differ
//! from those its plan accounts for.
//!
//! The leader reshards when instances come or go, on the mirror's events. Two cases give it no
//! event for a change, and the plan then stays one made for an older membership (with more
//! instances than items no reconcile reason shows it: every item has a live owner):
//!
//! - the change happened while this instance was disconnected: the mirror's re-list swaps the new
//!   tree in and says `Resynced`, not which instances came or went;
//! - the change happened while the resharding flag was already up: raising it again is a no-op,
//!   and the plan may have been computed, and be on its way, before the change.
//!
//! [`MembershipMemo`] remembers, per job, the available instances the plan accounts for, as this
//! instance last saw them; an evaluation whose view differs counts as a membership change. It is
//! kept while following too, so that a follower elected leader knows what it saw.

use std::collections::BTreeSet;

use crate::types::InstanceId;
use crate::view::JobView;

/// What one evaluation of a job saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Look {
    /// This instance leads the job (after the evaluation's election step).
    pub leading: bool,
    /// The evaluation was asked for by an event of an instance or server coming, going or changing.
    pub event: bool,
    /// `leader/sharding/necessary` was up in the view the evaluation read.
    pub flag_up: bool,
    /// The available instances in that view.
    pub available: BTreeSet<InstanceId>,
}

impl Look {
    /// The look of `view`.
    pub fn of(view: &JobView, leading: bool, event: bool) -> Self {
        Self {
            leading,
            event,
            flag_up: view.sharding_necessary,
            available: view.available_instances().into_iter().collect(),
        }
    }
}

/// The available instances a job's plan accounts for, as this instance knows them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MembershipMemo {
    /// Sorted. A boxed slice, not a set: one is kept per job (10,000 on a node), and a set's
    /// smallest node takes about 200 bytes where one instance id takes 16.
    accounted: Option<Box<[InstanceId]>>,
}

impl MembershipMemo {
    /// Whether the evaluation `look` describes must treat membership as changed: an event says so,
    /// or the available instances differ from those accounted for. Updates the memo: a follower
    /// accounts for what it sees (its leader acts on it); a leader accounts for it unless the flag
    /// was already up when a change came, since the plan on its way may predate the change (the
    /// evaluation after the commit then sees the difference and flags once more).
    pub fn changed(&mut self, look: &Look) -> bool {
        let differs = self
            .accounted
            .as_ref()
            .is_some_and(|a| !a.iter().eq(look.available.iter()));
        let changed = look.event || differs;
        let keep_old = look.leading && look.flag_up && changed && self.accounted.is_some();
        if !keep_old {
            self.accounted = Some(look.available.iter().cloned().collect());
        }
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::fixtures::inst;

    fn set(ids: &[&InstanceId]) -> BTreeSet<InstanceId> {
        ids.iter().map(|i| (*i).clone()).collect()
    }

    fn look(leading: bool, event: bool, flag_up: bool, available: &[&InstanceId]) -> Look {
        Look {
            leading,
            event,
            flag_up,
            available: set(available),
        }
    }

    #[test]
    fn membership_changes_are_found_from_events_and_from_the_memo() {
        let a = inst("10.0.0.1@-@1");
        let b = inst("10.0.0.2@-@1");
        let c = inst("10.0.0.3@-@1");
        // (case, memo before, look, changed, memo after)
        type Case<'a> = (
            &'a str,
            Option<Vec<&'a InstanceId>>,
            Look,
            bool,
            Option<Vec<&'a InstanceId>>,
        );
        let cases: Vec<Case<'_>> = vec![
            (
                "first look, no event: nothing known to compare with",
                None,
                look(true, false, false, &[&a, &b]),
                false,
                Some(vec![&a, &b]),
            ),
            (
                "an event is a change",
                Some(vec![&a, &b]),
                look(true, true, false, &[&a, &b, &c]),
                true,
                Some(vec![&a, &b, &c]),
            ),
            (
                "same instances, no event: no change",
                Some(vec![&a, &b]),
                look(true, false, false, &[&a, &b]),
                false,
                Some(vec![&a, &b]),
            ),
            (
                "re-listed after a disconnection: c joined meanwhile",
                Some(vec![&a, &b]),
                look(true, false, false, &[&a, &b, &c]),
                true,
                Some(vec![&a, &b, &c]),
            ),
            (
                "re-listed: b left meanwhile",
                Some(vec![&a, &b]),
                look(true, false, false, &[&a]),
                true,
                Some(vec![&a]),
            ),
            (
                "a change while the flag is up: the plan on its way may predate it, kept",
                Some(vec![&a, &b]),
                look(true, true, true, &[&a, &b, &c]),
                true,
                Some(vec![&a, &b]),
            ),
            (
                "the commit landed: the difference is still seen",
                Some(vec![&a, &b]),
                look(true, false, false, &[&a, &b, &c]),
                true,
                Some(vec![&a, &b, &c]),
            ),
            (
                "flag up with no change: accounted",
                Some(vec![&a, &b]),
                look(true, false, true, &[&a, &b]),
                false,
                Some(vec![&a, &b]),
            ),
            (
                "a follower accounts for what it sees, flag up or not",
                Some(vec![&a, &b]),
                look(false, true, true, &[&a, &b, &c]),
                true,
                Some(vec![&a, &b, &c]),
            ),
        ];
        for (name, before, look, want, after) in cases {
            let mut memo = MembershipMemo {
                accounted: before.map(|v| set(&v).into_iter().collect()),
            };
            assert_eq!(memo.changed(&look), want, "{name}");
            assert_eq!(
                memo.accounted,
                after.map(|v| set(&v).into_iter().collect()),
                "{name}: memo after"
            );
        }
    }
}
