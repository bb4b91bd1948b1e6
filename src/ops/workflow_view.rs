//! [`Ops::workflow_graph`] and [`Ops::workflow_runs`]: the namespace's workflow graph (or the
//! connected part holding a job) with each step's newest run, and a workflow's runs newest
//! first. This file reads the configs and the `shardcron/workflow` records (from the mirror when
//! the caller feeds one, else from the registry); [`crate::decide::workflow::view`] decides what
//! they show.
//!
//! Reads are bounded: at most [`MAX_RECORDS`] records of a job, each record's data cut to
//! [`MAX_RECORD_BYTES`] (ours are a few dozen bytes; longer data is another writer's and reads
//! as unreadable, never as an outcome).

use std::collections::{BTreeMap, BTreeSet};

use crate::config::JobConfig;
use crate::decide::workflow::graph::{dependency_from_props, Dependency, AFTER_KEY};
use crate::decide::workflow::records::parse_records;
use crate::decide::workflow::view::{self, JobFacts, WorkflowGraph, WorkflowRun};
use crate::paths::JobNode;
use crate::registry::RegistryError;
use crate::types::JobName;

use super::{Ops, OpsError};

/// The most workflow records read of one job: [`crate::decide::workflow::records::KEEP_RUNS`]
/// runs of 400 items, with room to spare.
pub const MAX_RECORDS: usize = 20_000;
/// The most bytes of a record's data read.
pub const MAX_RECORD_BYTES: usize = 256;
/// The most runs [`Ops::workflow_runs`] lists.
pub const MAX_RUNS: usize = 1_000;

/// `(name, data, czxid)` of a job's records.
type Records = Vec<(String, Vec<u8>, i64)>;

impl Ops {
    /// The workflow graph holding `job` (the jobs linked to it by `shardcron.after`, either way),
    /// or every job in a workflow; each step with its newest workflow run.
    pub async fn workflow_graph(&self, job: Option<&JobName>) -> Result<WorkflowGraph, OpsError> {
        let (jobs, members) = self.workflow_facts(job).await?;
        Ok(view::graph(&jobs, &members))
    }

    /// The newest `limit` (at most [`MAX_RUNS`]) workflow runs of the workflow `job` belongs to,
    /// each with every step's outcome.
    pub async fn workflow_runs(
        &self,
        job: &JobName,
        limit: usize,
    ) -> Result<Vec<WorkflowRun>, OpsError> {
        let (jobs, members) = self.workflow_facts(Some(job)).await?;
        Ok(view::runs(&jobs, &members, limit.min(MAX_RUNS)))
    }

    /// Every job's declaration, and the records of the members shown.
    async fn workflow_facts(
        &self,
        of: Option<&JobName>,
    ) -> Result<(BTreeMap<JobName, JobFacts>, BTreeSet<JobName>), OpsError> {
        let names = self.root_names().await?;
        let names: Vec<JobName> = names
            .into_iter()
            .filter_map(|n| JobName::new(n).ok())
            .collect();
        let mut jobs = BTreeMap::new();
        let mut configs = BTreeMap::new();
        for (job, yaml) in names.iter().zip(self.configs(&names).await?) {
            let Some(yaml) = yaml else {
                continue; // no config node: not a job
            };
            // Only a config naming upstreams is parsed here (the console reads the graph every
            // two seconds); the others run after nothing, and their item count is read below
            // when they are shown.
            let yaml = String::from_utf8_lossy(&yaml).into_owned();
            let dependency = if yaml.contains(AFTER_KEY) {
                JobConfig::from_yaml(&yaml)
                    .map_err(|e| e.to_string())
                    .and_then(|c| dependency_from_props(&c.props).map_err(|e| e.to_string()))
            } else {
                Ok(Dependency::default())
            };
            let facts = JobFacts {
                dependency,
                ..JobFacts::default()
            };
            jobs.insert(job.clone(), facts);
            configs.insert(job.clone(), yaml);
        }
        if let Some(job) = of {
            if !jobs.contains_key(job) {
                return Err(OpsError::UnknownJob { job: job.clone() });
            }
        }
        let members = view::members(&jobs, of);
        for job in &members {
            let Some(facts) = jobs.get_mut(job) else {
                continue;
            };
            facts.total = configs
                .get(job)
                .and_then(|yaml| JobConfig::from_yaml(yaml).ok())
                .map_or(0, |c| u32::try_from(c.sharding_total_count).unwrap_or(0));
            let records = self.workflow_records(job).await?;
            facts.runs = parse_records(
                records
                    .iter()
                    .map(|(name, data, czxid)| (name.as_str(), data.as_slice(), *czxid)),
            );
        }
        Ok((jobs, members))
    }

    /// The config node's data of each job, `None` where there is none.
    async fn configs(&self, jobs: &[JobName]) -> Result<Vec<Option<Vec<u8>>>, OpsError> {
        let paths: Vec<String> = jobs.iter().map(|j| JobNode::Config.to_path(j)).collect();
        if let Some(mirror) = &self.mirror {
            return Ok(paths
                .iter()
                .map(|p| mirror.data(p).map(|d| d.to_vec()))
                .collect());
        }
        let read = self
            .registry
            .get_many(&paths)
            .await
            .map_err(|source| OpsError::ListJobs { source })?;
        read.into_iter()
            .zip(jobs)
            .map(|(one, job)| match one {
                Ok((data, _)) => Ok(Some(data)),
                Err(e) if e.is_no_node() => Ok(None),
                Err(source) => Err(OpsError::ReadJob {
                    job: job.clone(),
                    source,
                }),
            })
            .collect()
    }

    /// The first [`MAX_RECORDS`] records of `job` (by name), their data cut to
    /// [`MAX_RECORD_BYTES`].
    async fn workflow_records(&self, job: &JobName) -> Result<Records, OpsError> {
        let base = JobNode::Workflow.to_path(job);
        let cut = |data: &[u8]| data[..data.len().min(MAX_RECORD_BYTES)].to_vec();
        if let Some(mirror) = &self.mirror {
            return Ok(mirror.read_under(&base, |under| {
                under
                    .children("")
                    .filter_map(|(name, node)| {
                        let node = node.get("")?;
                        Some((name.to_owned(), cut(&node.data), node.stat.czxid))
                    })
                    .take(MAX_RECORDS)
                    .collect()
            }));
        }
        let failed = |source: RegistryError| OpsError::ReadWorkflow {
            job: job.clone(),
            path: base.clone(),
            source,
        };
        let mut names = match self.registry.children(&base).await {
            Ok(names) => names,
            Err(e) if e.is_no_node() => return Ok(Vec::new()),
            Err(e) => return Err(failed(e)),
        };
        names.sort();
        names.truncate(MAX_RECORDS);
        let paths: Vec<String> = names.iter().map(|n| format!("{base}/{n}")).collect();
        let read = self.registry.get_many(&paths).await.map_err(failed)?;
        let mut records = Vec::with_capacity(names.len());
        for (name, one) in names.into_iter().zip(read) {
            match one {
                Ok((data, stat)) => records.push((name, cut(&data), stat.czxid)),
                Err(e) if e.is_no_node() => {} // pruned meanwhile
                Err(e) => return Err(failed(e)),
            }
        }
        Ok(records)
    }
}
