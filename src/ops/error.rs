//! [`OpsError`]: why an operations call failed, sorted by what the caller should do about it
//! ([`OpsError::class`]): fix the input, accept the refusal, or retry once the registry answers.

use crate::config::{ConfigErrors, ConfigYamlError};
use crate::registry::RegistryError;
use crate::types::{InstanceId, JobName, ShardItem};

/// What kind of failure an [`OpsError`] is; the CLI maps it to its exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// The request names something that does not exist or carries an invalid config.
    BadInput,
    /// The request is valid but the cluster's state forbids it now.
    Refused,
    /// The registry failed.
    Failed,
}

/// Why an operations call failed. Each registry variant names the step that failed.
#[derive(Debug, thiserror::Error)]
pub enum OpsError {
    /// No `/{job}` node, or no `config` under it.
    #[error("unknown job {job}")]
    UnknownJob {
        /// The job asked for.
        job: JobName,
    },
    /// The job has no `servers/{ip}` node for this IP.
    #[error("job {job} has no server {ip}")]
    UnknownServer {
        /// The job.
        job: JobName,
        /// The IP asked for.
        ip: String,
    },
    /// The job has no live instance with this id.
    #[error("job {job} has no live instance {instance}")]
    UnknownInstance {
        /// The job.
        job: JobName,
        /// The instance asked for.
        instance: InstanceId,
    },
    /// A backfill cannot be planned (no cron, a range in the future, too many instants).
    #[error("backfill of job {job}: {problem}")]
    Backfill {
        /// The job.
        job: JobName,
        /// What is wrong.
        problem: String,
    },
    /// The job's current backfill has instants left.
    #[error(
        "job {job} has a backfill under way ({left} item runs left): wait for it, or cancel it \
         with `shardcronctl backfill {job} --cancel`"
    )]
    BackfillUnderWay {
        /// The job.
        job: JobName,
        /// Item runs left.
        left: usize,
    },
    /// Reading or writing the backfill's records failed.
    #[error("backfill records of job {job}: {source}")]
    WriteBackfill {
        /// The job.
        job: JobName,
        /// The registry's error.
        #[source]
        source: RegistryError,
    },
    /// A trigger's parameters are refused (too long, no item).
    #[error("trigger parameters for job {job}: {problem}")]
    TriggerParams {
        /// The job.
        job: JobName,
        /// What is wrong.
        problem: String,
    },
    /// The item is past the job's `shardingTotalCount`.
    #[error("job {job} has no item {item} (shardingTotalCount is {total})")]
    UnknownItem {
        /// The job.
        job: JobName,
        /// The item asked for.
        item: ShardItem,
        /// The job's item count.
        total: i32,
    },
    /// The new config is not YAML or has a field of the wrong type (the message names it).
    #[error("new config for job {job}: {source}")]
    ConfigYaml {
        /// The job.
        job: JobName,
        /// The parser's error.
        #[source]
        source: ConfigYamlError,
    },
    /// The new config is larger than a ZooKeeper node holds by default; nothing was written.
    #[error(
        "new config for job {job} is {bytes} bytes; a config node holds at most {max} bytes \
         (ZooKeeper's default 1 MiB jute.maxbuffer, less the request's own size); nothing was written",
        max = super::MAX_CONFIG_BYTES
    )]
    ConfigTooLarge {
        /// The job.
        job: JobName,
        /// The config's size.
        bytes: usize,
    },
    /// The new config failed validation; every problem names its field.
    #[error("new config for job {job} refused: {source}")]
    InvalidConfig {
        /// The job.
        job: JobName,
        /// Every problem.
        #[source]
        source: ConfigErrors,
    },
    /// The new config's `shardcron.after` would close a cycle of workflow dependencies.
    #[error("new config for job {job} refused: {source}")]
    WorkflowCycle {
        /// The job.
        job: JobName,
        /// The cycle, named.
        #[source]
        source: crate::decide::workflow::graph::GraphError,
    },
    /// The config changed between the read of `version` and the write.
    #[error("config of job {job} changed meanwhile (it is no longer at version {version}); read it again")]
    ConfigChanged {
        /// The job.
        job: JobName,
        /// The version the write expected.
        version: i32,
    },
    /// The job still has live instances, and removal was not forced.
    #[error("job {job} is still run by {} instance(s) ({}); shut them down or force the removal", .instances.len(), list(.instances))]
    StillRunning {
        /// The job.
        job: JobName,
        /// Its live instances.
        instances: Vec<InstanceId>,
    },
    /// A trigger needs a live instance to take it.
    #[error("job {job} has no live instance to trigger")]
    NoLiveInstance {
        /// The job.
        job: JobName,
    },
    /// Listing the namespace's jobs failed.
    #[error("listing jobs: {source}")]
    ListJobs {
        /// The registry's error.
        #[source]
        source: RegistryError,
    },
    /// Reading a job's nodes failed.
    #[error("reading job {job}: {source}")]
    ReadJob {
        /// The job.
        job: JobName,
        /// The registry's error.
        #[source]
        source: RegistryError,
    },
    /// Reading a job's workflow records failed.
    #[error("reading the workflow records of job {job} ({path}): {source}")]
    ReadWorkflow {
        /// The job.
        job: JobName,
        /// The records' parent node.
        path: String,
        /// The registry's error.
        #[source]
        source: RegistryError,
    },
    /// Writing the config node failed.
    #[error("writing the config of job {job}: {source}")]
    WriteConfig {
        /// The job.
        job: JobName,
        /// The registry's error.
        #[source]
        source: RegistryError,
    },
    /// Creating a trigger node failed.
    #[error("triggering job {job} on {instance}: {source}")]
    Trigger {
        /// The job.
        job: JobName,
        /// The instance whose trigger node failed.
        instance: InstanceId,
        /// The registry's error.
        #[source]
        source: RegistryError,
    },
    /// Writing `servers/{ip}` failed.
    #[error("setting server {ip} of job {job}: {source}")]
    SetServer {
        /// The job.
        job: JobName,
        /// The server.
        ip: String,
        /// The registry's error.
        #[source]
        source: RegistryError,
    },
    /// Creating or deleting `sharding/{i}/disabled` failed.
    #[error("setting item {item} of job {job}: {source}")]
    SetItem {
        /// The job.
        job: JobName,
        /// The item.
        item: ShardItem,
        /// The registry's error.
        #[source]
        source: RegistryError,
    },
    /// Deleting `instances/{id}` failed.
    #[error("shutting down job {job} on {instance}: {source}")]
    Shutdown {
        /// The job.
        job: JobName,
        /// The instance.
        instance: InstanceId,
        /// The registry's error.
        #[source]
        source: RegistryError,
    },
    /// `create` names a job that exists (its root node is there).
    #[error("job {job} exists already; remove it first or choose another name")]
    JobExists {
        /// The job.
        job: JobName,
    },
    /// `create` got a `jobName` ZooKeeper or ElasticJob cannot use, or a form whose fields do
    /// not make a job (an unknown type, a command for an HTTP job).
    #[error("new job {name:?} refused: {source}")]
    BadNewJob {
        /// The name as given.
        name: String,
        /// Every problem, naming its field.
        #[source]
        source: ConfigErrors,
    },
    /// Writing a new job's root, config and `adoptable` record failed; nothing was written.
    #[error("creating job {job}: {source}")]
    CreateJob {
        /// The job.
        job: JobName,
        /// The registry's error.
        #[source]
        source: RegistryError,
    },
    /// Reading or writing the `adoptable` record of a job created at runtime failed.
    #[error("asking the nodes that adopted job {job} to stop it: {source}")]
    MarkRemoval {
        /// The job.
        job: JobName,
        /// The registry's error.
        #[source]
        source: RegistryError,
    },
    /// Deleting the job's subtree failed.
    #[error("removing job {job}: {source}")]
    Remove {
        /// The job.
        job: JobName,
        /// The registry's error.
        #[source]
        source: RegistryError,
    },
}

fn list(ids: &[InstanceId]) -> String {
    ids.iter()
        .map(InstanceId::as_str)
        .collect::<Vec<_>>()
        .join(", ")
}

impl OpsError {
    /// What kind of failure this is.
    pub fn class(&self) -> ErrorClass {
        use OpsError::*;
        match self {
            UnknownJob { .. }
            | UnknownServer { .. }
            | UnknownInstance { .. }
            | UnknownItem { .. }
            | TriggerParams { .. }
            | Backfill { .. }
            | ConfigYaml { .. }
            | ConfigTooLarge { .. }
            | InvalidConfig { .. }
            | WorkflowCycle { .. }
            | BadNewJob { .. } => ErrorClass::BadInput,
            ConfigChanged { .. }
            | StillRunning { .. }
            | NoLiveInstance { .. }
            | BackfillUnderWay { .. }
            | JobExists { .. } => ErrorClass::Refused,
            ListJobs { .. }
            | ReadJob { .. }
            | ReadWorkflow { .. }
            | WriteConfig { .. }
            | Trigger { .. }
            | WriteBackfill { .. }
            | SetServer { .. }
            | SetItem { .. }
            | Shutdown { .. }
            | CreateJob { .. }
            | MarkRemoval { .. }
            | Remove { .. } => ErrorClass::Failed,
        }
    }
}
