//! What an instance watches and mirrors (issue 31): the subtrees of the jobs it runs and of the
//! jobs they run after, not the namespace, so its registry events follow its own jobs. Two
//! features need every job and widen the scope to the whole namespace: a job it runs that
//! balances over the namespace (`NAMESPACE_BALANCE` counts every job's items), and adoption of
//! jobs created at runtime (any new job may be one to run).
//!
//! A node of very many jobs watches the namespace too ([`MAX_JOB_WATCHES`]): a watch per job costs
//! about 1.5 KB of the instance's memory (the client's watcher, its forwarding), so past a few
//! thousand jobs one watch on the namespace is the cheaper way to hear them, and such a node runs
//! most of its namespace anyway (bench scenario 4: 10,000 jobs, +15 MiB with one watch per job).
//!
//! Inside a job that every instance runs, each instance still hears every node of that job: the
//! leader's plan, the other instances' registrations and `running` markers (failover needs them),
//! and the markers' churn of every fire. That share is the job's, not the namespace's.

use crate::config::after::{dependency_from_props, AFTER_KEY};
use crate::config::JobConfig;
use crate::sharding::NamespaceBalance;
use crate::types::JobName;

/// The root of the whole namespace.
pub const NAMESPACE: &str = "/";

/// The most jobs an instance watches one by one; with more it watches the namespace.
pub const MAX_JOB_WATCHES: usize = 2_000;

/// The subtrees one job of this instance needs watched: the namespace when it balances over it,
/// else its own and its upstreams' (a declaration that does not parse names none: the job's
/// validation reports it).
pub fn roots_of(job: &JobName, config: &JobConfig) -> Vec<String> {
    if config.strategy_name() == NamespaceBalance::NAME {
        return vec![NAMESPACE.to_owned()];
    }
    let mut roots = vec![format!("/{job}")];
    if config.props.contains_key(AFTER_KEY) {
        if let Ok(dependency) = dependency_from_props(&config.props) {
            roots.extend(dependency.after.iter().map(|up| format!("/{up}")));
        }
    }
    roots
}

/// What a job added at runtime needs watched, on an instance that now runs `jobs_here` jobs.
pub fn roots_added(job: &JobName, config: &JobConfig, jobs_here: usize) -> Vec<String> {
    if jobs_here > MAX_JOB_WATCHES {
        return vec![NAMESPACE.to_owned()];
    }
    roots_of(job, config)
}

/// The subtrees an instance watches for its jobs: the namespace when it adopts jobs created at
/// runtime, one of its jobs needs it, or it runs more than [`MAX_JOB_WATCHES`] jobs; else every
/// job's own roots, sorted, without repeats.
pub fn roots<'a>(
    adopts: bool,
    jobs: impl IntoIterator<Item = (&'a JobName, &'a JobConfig)>,
) -> Vec<String> {
    if adopts {
        return vec![NAMESPACE.to_owned()];
    }
    let mut all: Vec<String> = Vec::new();
    for (n, (job, config)) in jobs.into_iter().enumerate() {
        if n >= MAX_JOB_WATCHES {
            return vec![NAMESPACE.to_owned()];
        }
        let roots = roots_of(job, config);
        if roots.iter().any(|r| r == NAMESPACE) {
            return roots;
        }
        all.extend(roots);
    }
    all.sort();
    all.dedup();
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(strategy: Option<&str>, after: Option<&str>) -> JobConfig {
        let mut c = JobConfig::new("j", 1);
        c.job_sharding_strategy_type = strategy.map(str::to_owned);
        if let Some(after) = after {
            c.props.insert(AFTER_KEY.to_owned(), after.to_owned());
        }
        c
    }

    fn name(n: &str) -> JobName {
        JobName::new(n).unwrap()
    }

    #[test]
    fn each_job_needs_its_own_subtree_and_its_upstreams_or_the_namespace_to_balance_over() {
        let cases: [(Option<&str>, Option<&str>, &[&str]); 5] = [
            (None, None, &["/orders"]),
            (Some("ROUND_ROBIN"), None, &["/orders"]),
            (None, Some("etl, load"), &["/orders", "/etl", "/load"]),
            (None, Some("etl,,load"), &["/orders"]),
            (Some("NAMESPACE_BALANCE"), Some("etl"), &["/"]),
        ];
        for (strategy, after, expected) in cases {
            let got = roots_of(&name("orders"), &config(strategy, after));
            assert_eq!(got, expected, "strategy {strategy:?}, after {after:?}");
        }
    }

    #[test]
    fn an_instance_watches_the_union_of_its_jobs_roots_unless_one_needs_the_namespace() {
        let (a, b, c) = (name("a"), name("b"), name("c"));
        let plain = config(None, None);
        let after_a = config(None, Some("a"));
        let balanced = config(Some("NAMESPACE_BALANCE"), None);
        assert_eq!(
            roots(false, [(&a, &plain), (&b, &after_a)]),
            ["/a", "/b"],
            "an upstream that runs here too is watched once"
        );
        assert_eq!(roots(false, [(&c, &after_a)]), ["/a", "/c"]);
        assert_eq!(roots(false, [(&a, &plain), (&b, &balanced)]), ["/"]);
        assert_eq!(
            roots(true, [(&a, &plain)]),
            ["/"],
            "adoption hears every job"
        );
        assert!(roots(false, []).is_empty(), "no job, no watch");
    }

    #[test]
    fn an_instance_of_very_many_jobs_watches_the_namespace_instead() {
        let names: Vec<JobName> = (0..=MAX_JOB_WATCHES)
            .map(|n| name(&format!("j{n}")))
            .collect();
        let plain = config(None, None);
        let at_most = roots(false, names[..MAX_JOB_WATCHES].iter().map(|j| (j, &plain)));
        assert_eq!(
            at_most.len(),
            MAX_JOB_WATCHES,
            "one root a job up to the bound"
        );
        assert_eq!(roots(false, names.iter().map(|j| (j, &plain))), ["/"]);
        let (last, bound) = (&names[MAX_JOB_WATCHES], MAX_JOB_WATCHES);
        assert_eq!(roots_added(last, &plain, bound), [format!("/{last}")]);
        assert_eq!(roots_added(last, &plain, bound + 1), ["/"]);
    }
}
