//! Decisions: pure functions from a [`JobView`](crate::view::JobView) (and the caller's own facts)
//! to the registry operations that carry them out. Actors only apply what these return, in one
//! multi-op where the list has more than one write.
//!
//! | module | decides |
//! | --- | --- |
//! | [`election`] | whether to stand for leadership or abdicate |
//! | [`resharding`] | whether a job needs resharding, and the plan's commit |
//! | [`drift`] | whether a follower raises the flag again after a commit that left an instance out |
//! | [`execution`] | which items a fire runs, and the writes around the run |
//! | [`prepare`] | which `running` markers are written just ahead of a fire's instant |
//! | [`reconcile`] | which records of dead owners the leader clears |
//! | [`membership`] | whether instances came or went unseen (a re-list, a change while the flag was up) |
//! | [`failover`] | which crashed runs are marked, the atomic claim of marked items, its end |
//! | [`guarantee`] | distribute-once listeners: registration, the claim of a round, its clearing |
//! | [`namespace`] | the plan of the jobs that balance over the namespace, and which drifted from it |
//! | [`lifecycle`] | a job's whole life on one instance: state + input -> commands |

pub mod drift;
pub mod election;
pub mod execution;
pub mod failover;
pub mod guarantee;
pub mod lifecycle;
pub mod membership;
pub mod namespace;
pub mod prepare;
pub mod reconcile;
pub mod resharding;

#[cfg(test)]
pub(crate) mod fixtures;
