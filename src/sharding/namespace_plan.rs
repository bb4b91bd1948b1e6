//! The namespace's plan for the jobs whose strategy balances over the namespace (NAMESPACE_BALANCE).
//!
//! Such a job's plan depends on the items every instance holds in the other jobs. Computed against
//! the other jobs' plans *as committed*, it races: two leaders (in two processes) sharding at the
//! same time both see the same instance as the least loaded, and the namespace ends unbalanced
//! until some job reshards again. So the balanced jobs are planned together, as one deterministic
//! function of what every process's mirror agrees on once it has caught up: the jobs of other
//! strategies count as committed ([`Namespace::fixed`]); the balanced jobs take their items in job
//! name order, each one counting the items the jobs before it get in this same plan. Each leader
//! computes the whole plan and commits its own job's part; a leader whose committed part differs
//! from the plan (another job changed its count, an instance came, a job of another strategy moved)
//! raises its job's flag ([`Namespace::drifted`]). Two leaders never chase each other: both compute
//! the same plan.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::sharding::{ShardingInput, ShardingPlan, ShardingStrategy};
use crate::types::{InstanceId, JobName, ShardItem};

/// One job whose strategy balances over the namespace.
#[derive(Clone)]
pub struct Member {
    /// The job.
    pub job: JobName,
    /// `shardingTotalCount`.
    pub total: u32,
    /// The instances that may take its items, in sharding order.
    pub eligible: Vec<InstanceId>,
    /// Its strategy.
    pub strategy: Arc<dyn ShardingStrategy>,
    /// Its committed owners, item by item (items without an owner left out).
    pub owners: BTreeMap<ShardItem, InstanceId>,
}

impl std::fmt::Debug for Member {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Member")
            .field("job", &self.job)
            .field("total", &self.total)
            .field("eligible", &self.eligible)
            .field("owners", &self.owners)
            .finish_non_exhaustive()
    }
}

/// The namespace as the balanced jobs see it.
#[derive(Debug, Clone, Default)]
pub struct Namespace {
    /// Items each instance holds in the jobs of other strategies (and in balanced jobs with
    /// `staticSharding` that have owners: they keep them), as committed.
    pub fixed: BTreeMap<InstanceId, usize>,
    /// The balanced jobs, in any order.
    pub members: Vec<Member>,
}

impl Namespace {
    /// Every balanced job's plan, in job name order; `now_millis` is the sharding's time.
    pub fn plans(&self, now_millis: i64) -> BTreeMap<JobName, ShardingPlan> {
        let mut members: Vec<&Member> = self.members.iter().collect();
        members.sort_by(|a, b| a.job.cmp(&b.job));
        let mut held = self.fixed.clone();
        let mut plans = BTreeMap::new();
        for m in members {
            let plan = plan_member(m, &held, now_millis);
            add(&mut held, &plan);
            plans.insert(m.job.clone(), plan);
        }
        plans
    }

    /// What `job`'s strategy is to be handed as [`ShardingInput::held`]: the fixed items and those
    /// the plan gives the balanced jobs named before it.
    pub fn held_before(&self, job: &JobName, now_millis: i64) -> BTreeMap<InstanceId, usize> {
        held_before(&self.fixed, &self.plans(now_millis), job)
    }

    /// The balanced jobs whose committed owners differ from the plan.
    pub fn drifted(&self, now_millis: i64) -> Vec<JobName> {
        drifted(&self.members, &self.plans(now_millis))
    }
}

/// `m`'s plan when the instances hold `held` elsewhere (the fixed items and the plans of the jobs
/// named before it).
pub fn plan_member(
    m: &Member,
    held: &BTreeMap<InstanceId, usize>,
    now_millis: i64,
) -> ShardingPlan {
    if m.eligible.is_empty() {
        return ShardingPlan::new();
    }
    m.strategy.shard_with(&ShardingInput {
        instances: &m.eligible,
        job: &m.job,
        total: m.total,
        now_millis,
        held,
    })
}

/// Adds `plan`'s items to `held`.
pub fn add(held: &mut BTreeMap<InstanceId, usize>, plan: &ShardingPlan) {
    for (owner, items) in plan {
        if !items.is_empty() {
            *held.entry(owner.clone()).or_default() += items.len();
        }
    }
}

/// Takes `plan`'s items off `held`.
pub fn remove(held: &mut BTreeMap<InstanceId, usize>, plan: &ShardingPlan) {
    for (owner, items) in plan {
        if let Some(count) = held.get_mut(owner) {
            *count = count.saturating_sub(items.len());
        }
    }
}

/// The items `fixed` and the `plans` of the jobs named before `job` put on each instance.
pub fn held_before(
    fixed: &BTreeMap<InstanceId, usize>,
    plans: &BTreeMap<JobName, ShardingPlan>,
    job: &JobName,
) -> BTreeMap<InstanceId, usize> {
    let mut held = fixed.clone();
    for plan in plans.range(..job.clone()).map(|(_, p)| p) {
        add(&mut held, plan);
    }
    held
}

/// The `members` whose committed owners differ from their part of `plans`.
pub fn drifted<'a>(
    members: impl IntoIterator<Item = &'a Member>,
    plans: &BTreeMap<JobName, ShardingPlan>,
) -> Vec<JobName> {
    members
        .into_iter()
        .filter(|m| {
            let planned: BTreeMap<ShardItem, &InstanceId> = plans
                .get(&m.job)
                .into_iter()
                .flatten()
                .flat_map(|(owner, items)| items.iter().map(move |i| (*i, owner)))
                .collect();
            let committed: BTreeMap<ShardItem, &InstanceId> =
                m.owners.iter().map(|(i, o)| (*i, o)).collect();
            planned != committed
        })
        .map(|m| m.job.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sharding::StrategyRegistry;

    fn id(s: &str) -> InstanceId {
        InstanceId::parse(format!("10.0.0.{s}@-@1")).unwrap()
    }

    fn member(job: &str, total: u32, eligible: &[&str], owners: &[(u32, &str)]) -> Member {
        Member {
            job: JobName::new(job).unwrap(),
            total,
            eligible: eligible.iter().map(|s| id(s)).collect(),
            strategy: StrategyRegistry::new()
                .get(Some("NAMESPACE_BALANCE"))
                .unwrap(),
            owners: owners.iter().map(|(i, o)| (ShardItem(*i), id(o))).collect(),
        }
    }

    fn totals(ns: &Namespace) -> BTreeMap<InstanceId, usize> {
        let mut held = ns.fixed.clone();
        for plan in ns.plans(0).into_values() {
            for (owner, items) in plan {
                *held.entry(owner).or_default() += items.len();
            }
        }
        held
    }

    #[test]
    fn balanced_jobs_even_out_the_namespace_whatever_order_they_are_listed_in() {
        let fixed: BTreeMap<InstanceId, usize> = [(id("1"), 4), (id("2"), 1), (id("3"), 1)].into();
        let reports = |reverse: bool| {
            let mut members: Vec<Member> = (0..8)
                .map(|n| member(&format!("report-{n}"), 1, &["1", "2", "3"], &[]))
                .collect();
            if reverse {
                members.reverse();
            }
            Namespace {
                fixed: fixed.clone(),
                members,
            }
        };
        let (forward, backward) = (reports(false), reports(true));
        assert_eq!(forward.plans(0), backward.plans(0));
        // 14 items over 3 instances, 4 of them fixed on the first.
        let totals = totals(&forward);
        let (min, max) = (totals.values().min(), totals.values().max());
        assert_eq!((min, max), (Some(&4), Some(&5)), "{totals:?}");
    }

    #[test]
    fn a_job_is_handed_the_fixed_items_and_those_of_the_jobs_named_before_it() {
        let ns = Namespace {
            fixed: [(id("1"), 2)].into(),
            members: vec![
                member("b", 1, &["1", "2"], &[]),
                member("a", 2, &["1", "2"], &[]),
            ],
        };
        let a = JobName::new("a").unwrap();
        let b = JobName::new("b").unwrap();
        assert_eq!(ns.held_before(&a, 0), [(id("1"), 2)].into());
        // "a" put both its items on 2 (1 held two already): "b" sees 2 and 2.
        assert_eq!(ns.held_before(&b, 0), [(id("1"), 2), (id("2"), 2)].into());
    }

    #[test]
    fn drifted_names_the_jobs_whose_committed_owners_are_not_the_plan() {
        // (case, members, expected drifted)
        let cases: Vec<(&str, Vec<Member>, Vec<&str>)> = vec![
            // "a" (hash 97) starts on the second instance of two, "b" (98) on the first.
            (
                "both on plan",
                vec![
                    member("a", 1, &["1", "2"], &[(0, "2")]),
                    member("b", 1, &["1", "2"], &[(0, "1")]),
                ],
                vec![],
            ),
            (
                "both raced onto the idle instance",
                vec![
                    member("a", 1, &["1", "2"], &[(0, "2")]),
                    member("b", 1, &["1", "2"], &[(0, "2")]),
                ],
                vec!["b"],
            ),
            (
                "never sharded",
                vec![member("a", 1, &["1", "2"], &[])],
                vec!["a"],
            ),
            (
                "no eligible instance, no owners",
                vec![member("a", 1, &[], &[])],
                vec![],
            ),
        ];
        for (case, members, want) in cases {
            let ns = Namespace {
                fixed: BTreeMap::new(),
                members,
            };
            let got = ns.drifted(0);
            let want: Vec<JobName> = want.iter().map(|j| JobName::new(*j).unwrap()).collect();
            assert_eq!(got, want, "{case}");
        }
    }
}
