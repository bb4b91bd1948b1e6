//! Jobs created at runtime: [`Ops::create`] writes a SCRIPT or HTTP job's root, its config
//! (ElasticJob 3.x YAML a Java 3.0.x instance loads) and its `adoptable` record in one multi-op,
//! for nodes that adopt such jobs to run; [`Ops::remove`] of such a job asks those nodes to stop it
//! (they let running items end) before it cleans the namespace.
//!
//! The `adoptable` record ([`JobNode::Adoptable`]) is shardcron's own: Java never reads it, and
//! ElasticJob's `removeJob` deletes it with the rest of the job's subtree.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

use super::audit::Entry;
use super::{Ops, OpsError};
use crate::config::{ConfigError, ConfigErrors, JobConfig};
use crate::decide::adopt::{Marker, RuntimeType};
use crate::job::http;
use crate::paths::JobNode;
use crate::registry::{CreateMode, Op};
use crate::types::{InstanceId, JobName};

/// How long a removal waits for the nodes that adopted a job to stop it: their running items get
/// a node's default shutdown timeout (30 s) to end, and a little more for the writes.
pub const ADOPTERS_STOP_WITHIN: Duration = Duration::from_secs(40);

/// How often a removal looks whether the adopting nodes have left the job.
const STOP_CHECK_EVERY: Duration = Duration::from_millis(200);

/// A job to create: its type and its config (ElasticJob's field names).
#[derive(Debug, Clone)]
pub struct NewJob {
    /// SCRIPT or HTTP.
    pub job_type: RuntimeType,
    /// The config; `jobName` names the job.
    pub config: JobConfig,
}

/// A new job as `shardcronctl create` and the console's form give it: the type, the schedule,
/// the items and what to run, with ElasticJob's optional fields. [`JobForm::to_new_job`] turns it
/// into a config; [`Ops::create`] checks and writes that.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JobForm {
    /// The job's name.
    pub job_name: String,
    /// `SCRIPT` or `HTTP` (any case).
    #[serde(rename = "type")]
    pub job_type: String,
    /// The Quartz cron expression.
    pub cron: String,
    /// `shardingTotalCount`.
    pub items: i32,
    /// A SCRIPT job's command line (`props.script.command.line`).
    #[serde(default)]
    pub command: Option<String>,
    /// An HTTP job's URI (`props.http.uri`).
    #[serde(default)]
    pub url: Option<String>,
    /// An HTTP job's method (`props.http.method`; `GET` when not given).
    #[serde(default)]
    pub method: Option<String>,
    /// An HTTP job's body, or query string for a method without one (`props.http.data`).
    #[serde(default)]
    pub data: Option<String>,
    /// An HTTP job's `Content-Type` (`props.http.content.type`).
    #[serde(default)]
    pub content_type: Option<String>,
    /// `timeZone`.
    #[serde(default)]
    pub time_zone: Option<String>,
    /// `shardingItemParameters` (`0=a,1=b`).
    #[serde(default)]
    pub item_parameters: Option<String>,
    /// `jobParameter`.
    #[serde(default)]
    pub job_parameter: Option<String>,
    /// `label`: only instances carrying it run the job.
    #[serde(default)]
    pub label: Option<String>,
    /// `description`.
    #[serde(default)]
    pub description: Option<String>,
    /// `failover`.
    #[serde(default)]
    pub failover: bool,
    /// More `props` (`shardcron.timeout`, `http.read.timeout.milliseconds`, ...).
    #[serde(default)]
    pub props: BTreeMap<String, String>,
}

impl JobForm {
    /// The job the form describes, or every field that makes no job, named: an unknown type, a
    /// command for an HTTP job or a URL for a SCRIPT one. The config's own fields are checked by
    /// [`Ops::create`].
    pub fn to_new_job(&self) -> Result<NewJob, OpsError> {
        let mut problems = Vec::new();
        let mut problem =
            |field: &'static str, problem: String| problems.push(ConfigError { field, problem });
        let job_type = self.job_type.parse::<RuntimeType>();
        if let Err(e) = &job_type {
            problem("type", e.to_string());
        }
        let mut config = JobConfig::new(&self.job_name, self.items).cron(self.cron.trim());
        for (key, value) in &self.props {
            config = config.prop(key, value);
        }
        match &job_type {
            Ok(RuntimeType::Script) => {
                for (field, value) in [("url", &self.url), ("method", &self.method)] {
                    if optional(value).is_some() {
                        problem(
                            field,
                            "is for HTTP jobs; a SCRIPT job runs --command".into(),
                        );
                    }
                }
                if let Some(command) = &self.command {
                    config = config.script_command_line(command.trim());
                }
            }
            Ok(RuntimeType::Http) => {
                if optional(&self.command).is_some() {
                    problem(
                        "command",
                        "is for SCRIPT jobs; an HTTP job sends --url".into(),
                    );
                }
                let method = optional(&self.method).unwrap_or("GET");
                config = config.prop(http::METHOD_PROP, method);
                let fields = [
                    (http::URI_PROP, &self.url),
                    (http::DATA_PROP, &self.data),
                    (http::CONTENT_TYPE_PROP, &self.content_type),
                ];
                for (key, value) in fields {
                    if let Some(v) = optional(value) {
                        config = config.prop(key, v);
                    }
                }
            }
            Err(_) => {}
        }
        if let Some(zone) = optional(&self.time_zone) {
            config = config.time_zone(zone);
        }
        if let Some(p) = optional(&self.item_parameters) {
            config = config.item_parameters(p);
        }
        if let Some(p) = optional(&self.job_parameter) {
            config = config.job_parameter(p);
        }
        if let Some(l) = optional(&self.label) {
            config = config.label(l);
        }
        if let Some(d) = optional(&self.description) {
            config = config.description(d);
        }
        if self.failover {
            config = config.failover(true);
        }
        match job_type {
            Ok(job_type) if problems.is_empty() => Ok(NewJob { job_type, config }),
            _ => Err(OpsError::BadNewJob {
                name: self.job_name.clone(),
                source: ConfigErrors(problems),
            }),
        }
    }
}

/// A form field's value, trimmed; `None` when absent or blank.
fn optional(value: &Option<String>) -> Option<&str> {
    value.as_deref().map(str::trim).filter(|v| !v.is_empty())
}

impl Ops {
    /// Creates a job for adopting nodes to run: refuses an existing job name
    /// ([`OpsError::JobExists`]) and a config the engine or a Java instance would refuse, naming
    /// every bad field ([`OpsError::InvalidConfig`]). A fixed zone is written as Java spells it
    /// (`UTC` as `GMT`). Returns the config as written.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// use shardcron::config::JobConfig;
    /// use shardcron::decide::adopt::RuntimeType;
    /// use shardcron::ops::{NewJob, Ops, OpsError};
    /// use shardcron::registry::embedded::EmbeddedServer;
    /// let ops = Ops::new(Arc::new(EmbeddedServer::new().connector("ops").open()));
    /// let config = JobConfig::new("nightly", 2).cron("0 0 3 * * ?").script_command_line("/bin/true");
    /// let new = NewJob { job_type: RuntimeType::Script, config };
    /// ops.create(new.clone()).await.unwrap();
    /// assert!(matches!(ops.create(new).await, Err(OpsError::JobExists { .. })));
    /// # });
    /// ```
    pub async fn create(&self, new: NewJob) -> Result<JobConfig, OpsError> {
        let NewJob {
            job_type,
            mut config,
        } = new;
        let job = JobName::new(config.job_name.clone()).map_err(|e| OpsError::BadNewJob {
            name: config.job_name.clone(),
            source: ConfigErrors(vec![ConfigError {
                field: "jobName",
                problem: e.to_string(),
            }]),
        })?;
        let mut entry = Entry::new("create", &job).on(Some(format!("type {job_type}")));
        config.spell_time_zone_for_java();
        entry.after = config.redacted().to_yaml().ok();
        let result = self.write_new_job(&job, job_type, config).await;
        self.recorded(entry, result).await
    }

    async fn write_new_job(
        &self,
        job: &JobName,
        job_type: RuntimeType,
        config: JobConfig,
    ) -> Result<JobConfig, OpsError> {
        crate::job::runtime::check(job_type, &config).map_err(|source| {
            OpsError::InvalidConfig {
                job: job.clone(),
                source,
            }
        })?;
        self.check_workflow(job, &config).await?;
        let yaml = super::configure::stored_yaml(job, &config)?;
        let ops = [
            Op::create(
                JobNode::Root.to_path(job),
                job_type.root_data(),
                CreateMode::Persistent,
            ),
            Op::create(
                JobNode::Config.to_path(job),
                yaml.into_bytes(),
                CreateMode::Persistent,
            ),
            Op::create(
                JobNode::Adoptable.to_path(job),
                Marker::Created.as_data(),
                CreateMode::Persistent,
            ),
        ];
        match self.registry.multi(&ops).await {
            Ok(_) => Ok(config),
            Err(e) if e.is_node_exists() => Err(OpsError::JobExists { job: job.clone() }),
            Err(source) => Err(OpsError::CreateJob {
                job: job.clone(),
                source,
            }),
        }
    }

    /// For a job created at runtime (it has its `adoptable` record): marks it `removing`, so
    /// the nodes that adopted it let their running items end and leave it, and waits for every
    /// live instance to leave (at most [`ADOPTERS_STOP_WITHIN`]). Returns the instances that
    /// left, or `None` for a job not created at runtime. Instances still there after the wait do
    /// not adopt it (a service running a job of that name): unless `force`, the record is set
    /// back and the removal refused as for any job ([`OpsError::StillRunning`]).
    pub(super) async fn stop_adopters(
        &self,
        job: &JobName,
        live: &[InstanceId],
        force: bool,
    ) -> Result<Option<Vec<InstanceId>>, OpsError> {
        let marker = JobNode::Adoptable.to_path(job);
        let failed = |source| OpsError::MarkRemoval {
            job: job.clone(),
            source,
        };
        match self.registry.exists(&marker).await.map_err(failed)? {
            None => return Ok(None),
            Some(_) if live.is_empty() => return Ok(Some(Vec::new())),
            Some(_) => {}
        }
        self.registry
            .set(&marker, Marker::Removing.as_data(), None)
            .await
            .map_err(failed)?;
        let instances = JobNode::Instances.to_path(job);
        let deadline = tokio::time::Instant::now() + ADOPTERS_STOP_WITHIN;
        let remaining = loop {
            let now = self
                .registry
                .children(&instances)
                .await
                .or_else(|e| {
                    if e.is_no_node() {
                        Ok(Vec::new())
                    } else {
                        Err(e)
                    }
                })
                .map_err(|source| OpsError::ReadJob {
                    job: job.clone(),
                    source,
                })?;
            if now.is_empty() || tokio::time::Instant::now() >= deadline {
                break now;
            }
            tokio::time::sleep(STOP_CHECK_EVERY).await;
        };
        let remaining: Vec<InstanceId> = remaining
            .iter()
            .filter_map(|id| InstanceId::parse(id).ok())
            .collect();
        let left = live
            .iter()
            .filter(|id| !remaining.contains(id))
            .cloned()
            .collect();
        if remaining.is_empty() || force {
            return Ok(Some(left));
        }
        self.registry
            .set(&marker, Marker::Created.as_data(), None)
            .await
            .map_err(failed)?;
        Err(OpsError::StillRunning {
            job: job.clone(),
            instances: remaining,
        })
    }
}

#[cfg(test)]
#[path = "runtime_tests.rs"]
mod tests;
