//! The workflow graph of a namespace: which job runs after which, read from every job's
//! `shardcron.after` key, with the checks a config write must pass (no cycle, no self-dependency)
//! and the dependencies on jobs that do not exist, reported rather than left silently idle.

use std::collections::{BTreeMap, BTreeSet};

pub use crate::config::after::{
    dependency_from_props, Dependency, DependencyError, RunWhen, AFTER_KEY, AFTER_ON_KEY,
    MAX_UPSTREAMS,
};
use crate::types::JobName;

/// Why a graph cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GraphError {
    /// A job depends on itself.
    #[error("job {job} lists itself in shardcron.after")]
    SelfDependency {
        /// The job.
        job: JobName,
    },
    /// Following `shardcron.after` from a job leads back to it: the path, first job repeated last.
    #[error("shardcron.after makes a cycle: {}", render_path(.path))]
    Cycle {
        /// The jobs on the cycle, in dependency order (each runs after the one before it), the
        /// first repeated at the end.
        path: Vec<JobName>,
    },
}

fn render_path(path: &[JobName]) -> String {
    path.iter()
        .map(JobName::as_str)
        .collect::<Vec<_>>()
        .join(" -> ")
}

/// The dependency graph of a namespace's jobs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Graph {
    /// Each job that declares upstreams, with its declaration.
    downstream: BTreeMap<JobName, Dependency>,
    /// Every job that exists in the namespace (declaring upstreams or not).
    jobs: BTreeSet<JobName>,
}

impl Graph {
    /// The graph of `jobs` (every job of the namespace, each with its declaration, an empty one
    /// for a job that runs after nothing). Refuses a self-dependency or a cycle, naming it; a
    /// dependency on a job that does not exist is kept, see [`Graph::missing`].
    pub fn new(jobs: impl IntoIterator<Item = (JobName, Dependency)>) -> Result<Self, GraphError> {
        let mut graph = Graph::default();
        for (job, dependency) in jobs {
            graph.jobs.insert(job.clone());
            if dependency.after.contains(&job) {
                return Err(GraphError::SelfDependency { job });
            }
            if !dependency.after.is_empty() {
                graph.downstream.insert(job, dependency);
            }
        }
        if let Some(path) = graph.find_cycle() {
            return Err(GraphError::Cycle { path });
        }
        Ok(graph)
    }

    /// Whether `job` declares upstreams.
    pub fn dependency(&self, job: &JobName) -> Option<&Dependency> {
        self.downstream.get(job)
    }

    /// The jobs that run after `upstream`, in name order.
    pub fn downstream_of<'a>(&'a self, upstream: &'a JobName) -> impl Iterator<Item = &'a JobName> {
        self.downstream
            .iter()
            .filter(move |(_, dependency)| dependency.after.contains(upstream))
            .map(|(job, _)| job)
    }

    /// Every dependency on a job that does not exist: (the downstream job, the missing upstream).
    pub fn missing(&self) -> Vec<(JobName, JobName)> {
        let mut missing = Vec::new();
        for (job, dependency) in &self.downstream {
            for upstream in &dependency.after {
                if !self.jobs.contains(upstream) {
                    missing.push((job.clone(), upstream.clone()));
                }
            }
        }
        missing
    }

    /// The roots of the graph that `job` belongs to: the jobs it depends on, directly or not,
    /// that run after nothing (itself when it runs after nothing).
    pub fn roots_of(&self, job: &JobName) -> BTreeSet<JobName> {
        let mut roots = BTreeSet::new();
        let mut seen = BTreeSet::new();
        let mut todo = vec![job.clone()];
        while let Some(next) = todo.pop() {
            if !seen.insert(next.clone()) {
                continue;
            }
            match self.downstream.get(&next) {
                Some(dependency) => todo.extend(dependency.after.iter().cloned()),
                None => {
                    roots.insert(next);
                }
            }
        }
        roots
    }

    /// The graph with `job`'s declaration replaced (a config write), checked as [`Graph::new`]
    /// checks: the error names the cycle the write would make.
    pub fn with(&self, job: JobName, dependency: Dependency) -> Result<Graph, GraphError> {
        let mut jobs: BTreeMap<JobName, Dependency> = self
            .jobs
            .iter()
            .map(|name| {
                let declared = self.downstream.get(name).cloned().unwrap_or_default();
                (name.clone(), declared)
            })
            .collect();
        jobs.insert(job, dependency);
        Graph::new(jobs)
    }

    /// A cycle, if any: depth-first over "runs after" edges, iteratively (a namespace's graph
    /// may be deep; no recursion), colouring each job white, grey (on the path) or black.
    fn find_cycle(&self) -> Option<Vec<JobName>> {
        #[derive(Clone, Copy, PartialEq)]
        enum Colour {
            Grey,
            Black,
        }
        let mut colour: BTreeMap<&JobName, Colour> = BTreeMap::new();
        for start in self.downstream.keys() {
            if colour.contains_key(start) {
                continue;
            }
            // The path from `start`, each job with the index of its next upstream to visit.
            let mut path: Vec<(&JobName, usize)> = vec![(start, 0)];
            colour.insert(start, Colour::Grey);
            while let Some((job, next)) = path.last_mut() {
                let upstreams = self
                    .downstream
                    .get(*job)
                    .map(|d| d.after.as_slice())
                    .unwrap_or(&[]);
                let Some(upstream) = upstreams.get(*next) else {
                    colour.insert(job, Colour::Black);
                    path.pop();
                    continue;
                };
                *next += 1;
                match colour.get(upstream) {
                    Some(Colour::Black) => {}
                    Some(Colour::Grey) => {
                        let from = path.iter().position(|(j, _)| *j == upstream)?;
                        // `path` runs downstream -> upstream; a cycle reads in run order.
                        let mut cycle: Vec<JobName> =
                            path[from..].iter().map(|(j, _)| (*j).clone()).collect();
                        cycle.push(upstream.clone());
                        cycle.reverse();
                        return Some(cycle);
                    }
                    None => {
                        colour.insert(upstream, Colour::Grey);
                        path.push((upstream, 0));
                    }
                }
            }
        }
        None
    }
}
