//! [`NamespaceCache`]: the namespace as the jobs that balance over it see it
//! ([`Namespace`](crate::sharding::namespace_plan::Namespace)), kept from the mirror job by job.
//!
//! Reading the whole namespace at every decision would read (and parse the config YAML of) every
//! job for every balanced job sharded: quadratic in the number of jobs (1,000 one-item jobs, bench
//! scenario 7). The cache re-reads only the jobs an event touched, re-parses a config only when its
//! bytes changed, and keeps the plans computed so far, in job name order, until an input of them
//! changes: a member's count, eligible instances or strategy drops the plans from that member on,
//! a change of the fixed items drops them all. A commit changes owners only. A decision computes the
//! plans only up to its own job, so 1,000 jobs registered and sharded in name order (an instance
//! joining) cost one plan each, not 1,000.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;
use std::sync::Arc;

use crate::config::JobConfig;
use crate::paths::JobNode;
use crate::sharding::namespace_plan::{self as namespace, Member};
use crate::sharding::{ShardingPlan, ShardingStrategy, StrategyRegistry};
use crate::store::Mirror;
use crate::types::{InstanceId, JobName};

use super::JobView;

/// What sharding reads of a balanced job's config.
#[derive(Clone)]
struct Settings {
    strategy: Arc<dyn ShardingStrategy>,
    total: u32,
    label: Option<String>,
    static_sharding: bool,
}

/// One job as last read.
#[derive(Clone, Default)]
struct Entry {
    /// The config node's bytes the settings were parsed from.
    config: Option<Arc<[u8]>>,
    /// `None`: not a balanced job, or its config does not read.
    settings: Option<Settings>,
    /// Set for a balanced job (without owners it keeps).
    member: Option<Member>,
    /// For any other job: the owner of each of its items.
    fixed: Vec<InstanceId>,
}

impl Entry {
    /// Whether `other` gives the namespace's plan other inputs (owners of members aside).
    fn same_plan_inputs(&self, other: &Entry) -> bool {
        let member = |e: &Entry| {
            e.member.as_ref().map(|m| {
                (
                    m.total,
                    m.eligible.clone(),
                    Arc::as_ptr(&m.strategy) as *const (),
                )
            })
        };
        member(self) == member(other)
    }
}

/// The namespace's balanced jobs and fixed items, kept from the mirror; see the module.
#[derive(Default)]
pub struct NamespaceCache {
    jobs: BTreeMap<JobName, Entry>,
    dirty: BTreeSet<JobName>,
    /// Every job is to be read again (at first, and after the mirror was re-listed).
    stale: bool,
    /// Items each instance holds in the jobs that are not members (as committed).
    fixed: BTreeMap<InstanceId, usize>,
    /// The plans of the first members, in name order, computed so far and still valid.
    plans: BTreeMap<JobName, ShardingPlan>,
    /// `fixed` plus the items of `plans`.
    running: BTreeMap<InstanceId, usize>,
}

impl std::fmt::Debug for NamespaceCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NamespaceCache")
            .field("jobs", &self.jobs.len())
            .field("dirty", &self.dirty.len())
            .field("stale", &self.stale)
            .finish_non_exhaustive()
    }
}

impl NamespaceCache {
    /// An empty cache: the first use reads every job.
    pub fn new() -> Self {
        Self {
            stale: true,
            ..Self::default()
        }
    }

    /// A node of `job` changed: read it again before the next use.
    pub fn touch(&mut self, job: &JobName) {
        self.dirty.insert(job.clone());
    }

    /// The mirror was re-listed: read every job again before the next use.
    pub fn relist(&mut self) {
        self.stale = true;
    }

    /// Whether any job balances over the namespace (as of the last use).
    pub fn has_members(&self) -> bool {
        self.jobs.values().any(|e| e.member.is_some())
    }

    /// What `job`'s strategy is handed as the items held elsewhere (see
    /// [`namespace::held_before`]).
    pub fn held_before(
        &mut self,
        mirror: &Mirror,
        strategies: &StrategyRegistry,
        job: &JobName,
        now_millis: i64,
    ) -> BTreeMap<InstanceId, usize> {
        self.refresh(mirror, strategies);
        self.extend(Some(job), now_millis);
        let mut held = self.running.clone();
        for plan in self.plans.range(job.clone()..).map(|(_, p)| p) {
            namespace::remove(&mut held, plan);
        }
        held.retain(|_, n| *n > 0);
        held
    }

    /// The balanced jobs whose committed owners differ from the namespace's plan.
    pub fn drifted(
        &mut self,
        mirror: &Mirror,
        strategies: &StrategyRegistry,
        now_millis: i64,
    ) -> Vec<JobName> {
        self.refresh(mirror, strategies);
        self.extend(None, now_millis);
        namespace::drifted(
            self.jobs.values().filter_map(|e| e.member.as_ref()),
            &self.plans,
        )
    }

    /// Computes the plans of the members named before `end` (all of them without one).
    fn extend(&mut self, end: Option<&JobName>, now_millis: i64) {
        let start = match self.plans.keys().next_back() {
            Some(last) => Bound::Excluded(last.clone()),
            None => Bound::Unbounded,
        };
        let end = end.map_or(Bound::Unbounded, |j| Bound::Excluded(j.clone()));
        if matches!((&start, &end), (Bound::Excluded(s), Bound::Excluded(e)) if s >= e) {
            return;
        }
        for member in self
            .jobs
            .range((start, end))
            .filter_map(|(_, e)| e.member.as_ref())
        {
            let plan = namespace::plan_member(member, &self.running, now_millis);
            namespace::add(&mut self.running, &plan);
            self.plans.insert(member.job.clone(), plan);
        }
    }

    /// Drops the plans from `job` on.
    fn truncate(&mut self, job: &JobName) {
        for plan in self.plans.split_off(job).values() {
            namespace::remove(&mut self.running, plan);
        }
    }

    /// Reads again the jobs touched since the last use.
    fn refresh(&mut self, mirror: &Mirror, strategies: &StrategyRegistry) {
        if std::mem::take(&mut self.stale) {
            self.dirty.extend(self.jobs.keys().cloned());
            self.dirty.extend(
                mirror
                    .children("/")
                    .into_iter()
                    .filter_map(|j| JobName::new(j.as_str()).ok()),
            );
        }
        let mut fixed_changed = false;
        for job in std::mem::take(&mut self.dirty) {
            let old = self.jobs.remove(&job).unwrap_or_default();
            let new = read(mirror, strategies, &job, &old);
            if !old.same_plan_inputs(&new) {
                self.truncate(&job);
            }
            if old.fixed != new.fixed {
                fixed_changed = true;
                for owner in &old.fixed {
                    if let Some(n) = self.fixed.get_mut(owner) {
                        *n = n.saturating_sub(1);
                    }
                }
                for owner in &new.fixed {
                    *self.fixed.entry(owner.clone()).or_default() += 1;
                }
            }
            if new.config.is_some() || !new.fixed.is_empty() || new.member.is_some() {
                self.jobs.insert(job, new);
            }
        }
        if fixed_changed {
            self.fixed.retain(|_, n| *n > 0);
            self.plans.clear();
            self.running = self.fixed.clone();
        }
    }
}

/// Reads `job` from the mirror; `old` lends its parsed settings when the config did not change.
fn read(mirror: &Mirror, strategies: &StrategyRegistry, job: &JobName, old: &Entry) -> Entry {
    let config = mirror.data(&JobNode::Config.to_path(job));
    let settings = match (&config, &old.config) {
        (Some(new), Some(was)) if new == was => old.settings.clone(),
        (Some(new), _) => settings_of(new, strategies, job),
        (None, _) => None,
    };
    let view = JobView::read(mirror, job);
    let owners = view
        .items
        .iter()
        .filter_map(|(i, v)| v.owner.clone().map(|o| (*i, o)));
    let member = settings.as_ref().and_then(|s| {
        let keeps_owners = s.static_sharding && view.items.values().any(|v| v.has_owner_node);
        (!keeps_owners).then(|| Member {
            job: job.clone(),
            total: s.total,
            eligible: view.eligible_instances(s.label.as_deref()),
            strategy: s.strategy.clone(),
            owners: BTreeMap::new(),
        })
    });
    match member {
        Some(mut m) => {
            m.owners = owners.collect();
            Entry {
                config,
                settings,
                member: Some(m),
                fixed: Vec::new(),
            }
        }
        None => Entry {
            config,
            settings,
            member: None,
            fixed: owners.map(|(_, o)| o).collect(),
        },
    }
}

/// The settings of a config whose strategy balances over the namespace; `None` for any other
/// strategy, or a config that does not read (its job's items then count as fixed).
fn settings_of(data: &[u8], strategies: &StrategyRegistry, job: &JobName) -> Option<Settings> {
    let config = match JobConfig::from_yaml(&String::from_utf8_lossy(data)) {
        Ok(config) => config,
        Err(e @ crate::config::ConfigYamlError::Refused { .. }) => {
            // Parsed once per change of the node's bytes: logged once per change too.
            tracing::warn!(path = %JobNode::Config.to_path(job), error = %e,
                "a job's config is refused; its items count as fixed in the namespace's balance");
            return None;
        }
        Err(_) => return None,
    };
    let strategy = strategies
        .get(config.job_sharding_strategy_type.as_deref())
        .ok()
        .filter(|s| s.uses_namespace_load())?;
    Some(Settings {
        strategy,
        total: u32::try_from(config.sharding_total_count).ok()?,
        label: config.label.filter(|l| !l.is_empty()),
        static_sharding: config.static_sharding,
    })
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicI64, Ordering};

    use super::*;
    use crate::model::Stat;

    fn id(n: u32) -> InstanceId {
        InstanceId::parse(format!("10.0.0.{n}@-@1")).unwrap()
    }

    /// Mirrors `path` with `data`, and its missing parents as a registry listing shows them, each
    /// write at a newer zxid.
    fn put(mirror: &Mirror, path: &str, data: &[u8]) {
        static ZXID: AtomicI64 = AtomicI64::new(1);
        let mut at = String::new();
        let mut parents = vec!["/".to_owned()];
        for segment in path[1..].split('/') {
            at.push('/');
            at.push_str(segment);
            parents.push(at.clone());
        }
        parents.pop();
        for parent in parents.iter().filter(|p| !mirror.exists(p)) {
            let zxid = ZXID.fetch_add(1, Ordering::Relaxed);
            mirror.upsert(
                parent,
                Vec::new(),
                Stat {
                    czxid: zxid,
                    mzxid: zxid,
                    ..Stat::default()
                },
            );
        }
        let zxid = ZXID.fetch_add(1, Ordering::Relaxed);
        let czxid = mirror.get(path).map_or(zxid, |n| n.stat.czxid);
        mirror.upsert(
            path,
            data.to_vec(),
            Stat {
                czxid,
                mzxid: zxid,
                ..Stat::default()
            },
        );
    }

    fn report(mirror: &Mirror, job: &str, owner: u32) {
        let config = format!(
            "jobName: {job}\nshardingTotalCount: 1\njobShardingStrategyType: NAMESPACE_BALANCE\n"
        );
        put(mirror, &format!("/{job}/config"), config.as_bytes());
        for n in 1..=2 {
            put(mirror, &format!("/{job}/instances/{}", id(n)), b"");
        }
        let owner = id(owner);
        put(
            mirror,
            &format!("/{job}/sharding/0/instance"),
            owner.as_str().as_bytes(),
        );
    }

    #[test]
    fn the_cache_follows_touched_jobs_and_counts_other_strategies_as_fixed() {
        let mirror = Mirror::new();
        let strategies = StrategyRegistry::new();
        // Both on instance 2: one of them is off the plan.
        report(&mirror, "a", 2);
        report(&mirror, "b", 2);
        let mut cache = NamespaceCache::new();
        let drifted = cache.drifted(&mirror, &strategies, 0);
        assert_eq!(drifted.len(), 1, "{drifted:?}");
        let moved = drifted[0].clone();
        let path = format!("/{moved}/sharding/0/instance");
        put(&mirror, &path, id(1).as_str().as_bytes());
        let before = cache.drifted(&mirror, &strategies, 0);
        assert_eq!(before, std::slice::from_ref(&moved), "not touched yet");
        cache.touch(&moved);
        assert!(cache.drifted(&mirror, &strategies, 0).is_empty());
        // A job of another strategy puts three items on instance 1: both reports belong on 2.
        put(
            &mirror,
            "/big/config",
            b"jobName: big\nshardingTotalCount: 3\n",
        );
        for i in 0..3 {
            let path = format!("/big/sharding/{i}/instance");
            put(&mirror, &path, id(1).as_str().as_bytes());
        }
        cache.touch(&JobName::new("big").unwrap());
        assert_eq!(cache.drifted(&mirror, &strategies, 0), [moved]);
        let b = JobName::new("b").unwrap();
        assert_eq!(
            cache.held_before(&mirror, &strategies, &b, 0),
            [(id(1), 3), (id(2), 1)].into(),
            "b is handed big's items and a's"
        );
        assert!(cache.has_members());
    }
}
