//! The operations API: what ElasticJob's `JobStatisticsAPI`, `ShardingStatisticsAPI`,
//! `JobOperateAPI` and `JobConfigurationAPI` do, over one registry session.
//!
//! | file | what it holds |
//! | --- | --- |
//! | `mod.rs` | [`Ops`] and the statistics calls: [`Ops::jobs`], [`Ops::job`], [`Ops::servers`] |
//! | `report.rs` | the reports and the pure status rules ([`JobStatus`], [`ItemStatus`]) |
//! | `snapshot.rs` | one job's subtree read in one listing |
//! | `configure.rs` | [`Ops::config_get`], [`Ops::config_set`]: validated, version-checked writes |
//! | `trigger.rs` | [`Ops::trigger`], [`Ops::trigger_with`]: a run now, with a job parameter and items ([`TriggerParams`]) |
//! | `backfill.rs` | [`Ops::backfill`], [`Ops::cancel_backfill`]: every cron instant of a past range, in order |
//! | `operate.rs` | [`Ops::disable`], [`Ops::enable`], [`Ops::shutdown`], [`Ops::remove`] |
//! | `operate.rs` | [`Ops::trigger`], [`Ops::disable`], [`Ops::enable`], [`Ops::shutdown`], [`Ops::remove`] |
//! | `runtime.rs` | [`Ops::create`]: jobs created at runtime for adopting nodes, and how their removal stops those nodes first |
//! | `workflow_view.rs` | [`Ops::workflow_graph`], [`Ops::workflow_runs`]: a workflow's graph and runs, read bounded |
//! | `workflow_text.rs` | [`render_graph`], [`render_runs`]: those views as text |
//! | `audit.rs` | [`Ops::audited`]: every state-changing call recorded in the audit log as done by an [`Actor`] |
//! | `error.rs` | [`OpsError`] and its [`ErrorClass`] |
//!
//! Operations act on the cluster only by writing the nodes the engine watches (the layout
//! contract's "operations API" rows), so they work the same on shardcron and Java instances. Reads
//! list the registry directly (this is an operator's path, never an execution's), or read a mirror
//! the caller already feeds ([`Ops::reading`], the console).
//!
//! ```
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! use std::sync::Arc;
//! use shardcron::ops::{JobStatus, Ops};
//! use shardcron::registry::{embedded::EmbeddedServer, CreateMode, Registry};
//! let session = Arc::new(EmbeddedServer::new().connector("ops").open());
//! session.create("/orders", b"SCRIPT", CreateMode::Persistent).await.unwrap();
//! let yaml = b"jobName: orders\nshardingTotalCount: 2\ncron: 0/5 * * * * ?\n";
//! session.create("/orders/config", yaml, CreateMode::Persistent).await.unwrap();
//! let jobs = Ops::new(session).jobs().await.unwrap();
//! assert_eq!(jobs[0].status, JobStatus::Crashed); // no instance runs it
//! # });
//! ```

mod audit;
mod backfill;
mod configure;
mod error;
mod operate;
mod report;
mod runtime;
mod snapshot;
mod trigger;
mod workflow;
mod workflow_text;
mod workflow_view;

use std::sync::Arc;

use crate::registry::mirror::Mirror;
use crate::registry::Registry;
use crate::types::JobName;

pub use crate::decide::trigger_params::TriggerParams;
pub use audit::Actor;
pub use backfill::{BackfillPlan, BackfillStatus, ItemProgress};
pub use configure::{parse_config_version, StoredConfig, MAX_CONFIG_BYTES};
pub use error::{ErrorClass, OpsError};
pub use operate::{RemoveMode, ShutdownScope, Target};
pub use report::{
    quote_name, ItemLine, ItemStatus, JobBrief, JobDetail, JobStatus, NotAJob, ServerBrief,
    ServerLine, ServerState,
};
pub use runtime::{JobForm, NewJob, ADOPTERS_STOP_WITHIN};
use snapshot::JobSnapshot;
pub use workflow_text::{render_graph, render_runs};
pub use workflow_view::{MAX_RECORDS, MAX_RECORD_BYTES, MAX_RUNS};

/// The operations API over one registry session (rooted at the namespace).
#[derive(Debug, Clone)]
pub struct Ops {
    registry: Arc<dyn Registry>,
    audit: Option<Arc<audit::Audit>>,
    mirror: Option<Mirror>,
}

impl Ops {
    /// Operates on the namespace `registry` is rooted at.
    pub fn new(registry: Arc<dyn Registry>) -> Self {
        Self {
            registry,
            audit: None,
            mirror: None,
        }
    }

    /// The same operations, whose reports ([`Ops::jobs`], [`Ops::job`], [`Ops::servers`],
    /// [`Ops::config_get`]) read `mirror`, a mirror of the whole namespace fed on this session,
    /// instead of listing the registry. Writes still read what they check from the registry.
    pub fn reading(mut self, mirror: Mirror) -> Self {
        self.mirror = Some(mirror);
        self
    }

    /// The session.
    pub fn registry(&self) -> &Arc<dyn Registry> {
        &self.registry
    }

    /// Every job (a child of the namespace root with a `config` node), by name.
    pub async fn jobs(&self) -> Result<Vec<JobBrief>, OpsError> {
        Ok(self
            .snapshots()
            .await?
            .iter()
            .map(|(job, snap)| report::job_brief(job, snap))
            .collect())
    }

    /// Every child of the namespace root: the jobs, and the roots that are not jobs with the
    /// reason (a name ZooKeeper or ElasticJob cannot use as a job, or no `config` node), so that
    /// an operator sees every root rather than a silently shorter list.
    pub async fn job_roots(&self) -> Result<(Vec<JobBrief>, Vec<NotAJob>), OpsError> {
        let (jobs, not_jobs) = self.roots().await?;
        let briefs = jobs
            .iter()
            .map(|(job, snap)| report::job_brief(job, snap))
            .collect();
        Ok((briefs, not_jobs))
    }

    /// One job: config, instances, servers, leader and every item's owner and status.
    pub async fn job(&self, job: &JobName) -> Result<JobDetail, OpsError> {
        let snap = self.snapshot(job).await?;
        Ok(report::job_detail(job, &snap))
    }

    /// Every server IP of every job, with its instances, its jobs and how many disable it.
    pub async fn servers(&self) -> Result<Vec<ServerBrief>, OpsError> {
        let snaps = self.snapshots().await?;
        Ok(report::server_briefs(snaps.iter().map(|(j, s)| (j, s))))
    }

    /// Reads one job; a job without a root or a `config` node is unknown.
    async fn snapshot(&self, job: &JobName) -> Result<JobSnapshot, OpsError> {
        let read = match &self.mirror {
            Some(mirror) => JobSnapshot::from_mirror(mirror, job),
            None => return self.listed_snapshot(job).await,
        };
        match read {
            Some(snap) if snap.config_yaml.is_some() => Ok(snap),
            _ => Err(OpsError::UnknownJob { job: job.clone() }),
        }
    }

    /// Reads one job from the registry, whatever [`Ops::reading`] said: what a write checks.
    async fn listed_snapshot(&self, job: &JobName) -> Result<JobSnapshot, OpsError> {
        let read = JobSnapshot::read(self.registry.as_ref(), job)
            .await
            .map_err(|source| OpsError::ReadJob {
                job: job.clone(),
                source,
            })?;
        match read {
            Some(snap) if snap.config_yaml.is_some() => Ok(snap),
            _ => Err(OpsError::UnknownJob { job: job.clone() }),
        }
    }

    /// Reads every job, skipping children of the root that are not jobs or vanish meanwhile.
    async fn snapshots(&self) -> Result<Vec<(JobName, JobSnapshot)>, OpsError> {
        Ok(self.roots().await?.0)
    }

    /// The names of the root's children (the mirror's, when reading one).
    async fn root_names(&self) -> Result<Vec<String>, OpsError> {
        match &self.mirror {
            Some(mirror) => Ok(mirror.children("/")),
            None => {
                (self.registry.children("/").await).map_err(|source| OpsError::ListJobs { source })
            }
        }
    }

    /// Reads every child of the root: the jobs, and why the others are not.
    async fn roots(&self) -> Result<(Vec<(JobName, JobSnapshot)>, Vec<NotAJob>), OpsError> {
        let names = self.root_names().await?;
        let mut jobs = Vec::new();
        let mut not_jobs = Vec::new();
        for name in names {
            let job = match JobName::new(name.clone()) {
                Ok(job) => job,
                Err(e) => {
                    not_jobs.push(NotAJob {
                        root: name,
                        reason: e.to_string(),
                    });
                    continue;
                }
            };
            match self.snapshot(&job).await {
                Ok(snap) => jobs.push((job, snap)),
                Err(OpsError::UnknownJob { .. }) => not_jobs.push(NotAJob {
                    root: name,
                    reason: "no config node (not a job, or one being created or removed)".into(),
                }),
                Err(e) => return Err(e),
            }
        }
        Ok((jobs, not_jobs))
    }
}

#[cfg(test)]
mod run_ops_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod workflow_view_tests;
