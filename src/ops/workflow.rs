//! The workflow check of a config write: a `shardcron.after` that would close a cycle through the
//! namespace's jobs is refused with the cycle's path. Only a config that names upstreams is
//! checked (a cycle through a job needs the job to run after another): the others cost nothing.

use crate::config::JobConfig;
use crate::decide::workflow::graph::{dependency_from_props, Dependency, Graph};
use crate::paths::JobNode;
use crate::types::JobName;

use super::{Ops, OpsError};

impl Ops {
    /// Refuses `config` for `job` when its upstreams, with every other job's as stored, make a
    /// cycle (or name the job itself).
    pub(super) async fn check_workflow(
        &self,
        job: &JobName,
        config: &JobConfig,
    ) -> Result<(), OpsError> {
        let Ok(dependency) = dependency_from_props(&config.props) else {
            return Ok(()); // validation names the key
        };
        if dependency.after.is_empty() {
            return Ok(());
        }
        let names = self.root_names().await?;
        let mut jobs: Vec<(JobName, Dependency)> = Vec::with_capacity(names.len());
        for name in names {
            let Ok(other) = JobName::new(name) else {
                continue;
            };
            if &other == job {
                continue;
            }
            let path = JobNode::Config.to_path(&other);
            let data = match &self.mirror {
                Some(mirror) => mirror.data(&path).map(|d| d.to_vec()),
                None => self.registry.get(&path).await.ok().map(|(data, _)| data),
            };
            let declared = data
                .and_then(|d| String::from_utf8(d).ok())
                .and_then(|yaml| JobConfig::from_yaml(&yaml).ok())
                .and_then(|c| dependency_from_props(&c.props).ok())
                .unwrap_or_default();
            jobs.push((other, declared));
        }
        jobs.push((job.clone(), dependency));
        Graph::new(jobs)
            .map(|_| ())
            .map_err(|source| OpsError::WorkflowCycle {
                job: job.clone(),
                source,
            })
    }
}
