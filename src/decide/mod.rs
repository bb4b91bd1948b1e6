//! Decisions: pure functions from a [`JobView`](crate::view::JobView) (and the caller's own facts)
//! to the registry operations that carry them out. Actors only apply what these return, in one
//! multi-op where the list has more than one write.
//!
//! | module | decides |
//! | --- | --- |
//! | [`election`] | whether to stand for leadership or abdicate |
//! | [`resharding`] | whether a job needs resharding, and the plan's commit |
//! | [`commit`] | the commit protocol of a plan: one write, the processing-first detour, chunks, undo |
//! | [`answer`] | what a registry write came to, as the step machines branch on it |
//! | [`drift`] | whether a follower raises the flag again after a commit that left an instance out |
//! | [`execution`] | which items a fire runs, and the writes around the run |
//! | [`prepare`] | which `running` markers are written just ahead of a fire's instant |
//! | [`reconcile`] | which records of dead owners the leader clears |
//! | [`membership`] | whether instances came or went unseen (a re-list, a change while the flag was up) |
//! | [`failover`] | which crashed runs are marked, the atomic claim of marked items, its end |
//! | [`failover_claim`] | who may claim marks and how many, what a mark's or claim's answer means, clearing, the owner check |
//! | [`guarantee`] | distribute-once listeners: registration, the claim of a round, its clearing |
//! | [`namespace`] | the plan of the jobs that balance over the namespace, and which drifted from it |
//! | [`register`] | a job's registration on a session, with the take-over of an older session's node |
//! | [`lifecycle`] | a job's whole life on one instance: state + input -> commands |
//! | [`catchup`] | the catch-up window: the latest instant missed while no instance ran an item, and its record |
//! | [`backfill`] | a backfill's instants, in order, and each item's progress through them |
//! | [`trigger_params`] | a trigger's one-off parameters, beside the plain trigger Java sees |
//! | [`workflow`] | jobs that run after other jobs: the dependency graph, when an upstream run ended, whether a downstream starts |
//! | [`adopt`] | which jobs created at runtime a node that opted in runs, and when it drops them |
//! | [`scope`] | which subtrees an instance watches and mirrors: its jobs and their upstreams, or the namespace |

pub mod adopt;
pub mod answer;
pub mod backfill;
pub mod catchup;
pub mod commit;
pub mod drift;
pub mod election;
pub mod execution;
pub mod failover;
pub mod failover_claim;
pub mod guarantee;
pub mod item_set;
pub mod lifecycle;
pub mod membership;
/// The namespace's plan for NAMESPACE_BALANCE jobs: a sharding concern, kept in
/// [`sharding::namespace_plan`](crate::sharding::namespace_plan) (the view's cache reads it).
pub use crate::sharding::namespace_plan as namespace;
pub mod prepare;
pub mod reconcile;
pub mod register;
pub mod resharding;
pub mod scope;
pub mod trigger_params;
pub mod workflow;

#[cfg(test)]
pub(crate) mod fixtures;
