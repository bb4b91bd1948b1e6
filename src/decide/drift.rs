//! Plan drift: a committed plan that no longer fits, seen by an instance that does not lead.
//!
//! ElasticJob's leader reads the instances, waits for running items, then commits a plan that also
//! deletes `leader/sharding/necessary`. An instance that registers in between raises the flag
//! (already up: nothing happens), and the commit then takes it down: the newcomer is left out
//! until the next membership change. A Java leader does this; so any instance, leader or not,
//! looks at the plan when a commit lands ([`after_commit`]) and raises the flag again when the plan
//! leaves an eligible instance idle while another holds two items, leaves an item without an
//! eligible owner, or keeps items past the count ([`reconcile_reason`]).
//!
//! A follower raises it once per plan it finds stale. If the leader commits the same plan again for
//! the same eligible instances, it sees them otherwise (a Java leader does not know labels, say);
//! raising the flag again would reshard forever, so the follower says so and leaves it.

use crate::decide::resharding::{flag, reconcile_reason, Rules};
use crate::model::Op;
use crate::types::{InstanceId, JobName, ShardItem};
use crate::view::JobView;

/// What a follower saw when it raised the flag: the eligible instances and each item's owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    eligible: Vec<InstanceId>,
    owners: Vec<(ShardItem, Option<InstanceId>)>,
}

impl Seen {
    /// The plan and the eligible instances of `view`.
    pub fn of(view: &JobView, rules: Rules<'_>) -> Self {
        Self {
            eligible: view.eligible_instances(rules.label),
            owners: view
                .items
                .iter()
                .map(|(i, v)| (*i, v.owner.clone()))
                .collect(),
        }
    }
}

/// What a follower does when a commit of a job lands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Drift {
    /// The plan fits, a reshard is already under way, or nobody leads to carry it out.
    Fits,
    /// Raise the flag with `op`, for `reason`; remember `seen`.
    Flag {
        /// Creates `leader/sharding/necessary`.
        op: Op,
        /// Why, for the log.
        reason: String,
        /// The plan flagged.
        seen: Seen,
    },
    /// The leader committed again the plan this follower flagged: it disagrees; leave it.
    LeaderDisagrees {
        /// Why the follower still finds it stale, for the log.
        reason: String,
    },
}

/// The follower's check of `job`'s plan after a commit; `last` is what it flagged before, if
/// anything.
pub fn after_commit(view: &JobView, job: &JobName, rules: Rules<'_>, last: Option<&Seen>) -> Drift {
    if view.leader.is_none() || view.sharding_necessary || view.sharding_processing {
        return Drift::Fits;
    }
    let Some(reason) = reconcile_reason(view, rules) else {
        return Drift::Fits;
    };
    let seen = Seen::of(view, rules);
    if last == Some(&seen) {
        return Drift::LeaderDisagrees { reason };
    }
    match flag(view, job) {
        Some(op) => Drift::Flag { op, reason, seen },
        None => Drift::Fits,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::fixtures::*;

    #[test]
    fn a_follower_flags_a_committed_plan_that_leaves_an_instance_out_once() {
        let leader = inst("10.0.0.1@-@1");
        let java = inst("10.0.0.2@-@7");
        let late = inst("10.0.0.3@-@9");
        let fits = owned(
            view(&[&leader, &java, &late], Some(&leader)),
            &[(0, &leader), (1, &java), (2, &late), (3, &late)],
        );
        let left_out = owned(
            view(&[&leader, &java, &late], Some(&leader)),
            &[(0, &leader), (1, &leader), (2, &java), (3, &java)],
        );
        let mut flagged = left_out.clone();
        flagged.sharding_necessary = true;
        let mut processing = left_out.clone();
        processing.sharding_processing = true;
        let mut leaderless = left_out.clone();
        leaderless.leader = None;
        let before = Seen::of(&left_out, Rules::items(4));
        let mut joined = left_out.clone();
        joined.instances.insert(inst("10.0.0.4@-@1"));
        joined
            .servers
            .insert("10.0.0.4".into(), crate::view::ServerStatus::Enabled);
        // (case, view, what was flagged before, expected: "fits", "flag" or "disagrees")
        let cases: Vec<(&str, &JobView, Option<&Seen>, &str)> = vec![
            ("the plan fits", &fits, None, "fits"),
            ("an instance is left out", &left_out, None, "flag"),
            ("the flag is already up", &flagged, None, "fits"),
            ("a reshard is under way", &processing, None, "fits"),
            ("nobody leads", &leaderless, None, "fits"),
            ("the same plan again", &left_out, Some(&before), "disagrees"),
            (
                "the same plan, another instance",
                &joined,
                Some(&before),
                "flag",
            ),
        ];
        for (case, v, last, want) in cases {
            let got = match after_commit(v, &job(), Rules::items(4), last) {
                Drift::Fits => "fits",
                Drift::Flag { op, .. } => {
                    assert_eq!(op.path(), "/orders/leader/sharding/necessary", "{case}");
                    "flag"
                }
                Drift::LeaderDisagrees { .. } => "disagrees",
            };
            assert_eq!(got, want, "{case}");
        }
    }
}
