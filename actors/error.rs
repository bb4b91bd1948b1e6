//! The engine API's errors.

use crate::registry::RegistryError;
use crate::types::JobName;

/// Errors of the engine's API.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// A job's configuration is invalid.
    #[error("job {job}: invalid config: {reason}")]
    InvalidConfig {
        /// The job (or the config path).
        job: String,
        /// Every problem found, each naming its field.
        reason: String,
    },
    /// The job root in the registry belongs to a job of another type that is running.
    #[error(
        "job {job}: the registry holds a running job of type {running:?}; refusing to take it \
         over. If it is a Java ElasticJob job this one shares, declare its class: `javaClass: \
         {running}` in the jobs file, or JobSpec::shared_with_java({running:?}) / \
         NodeBuilder::java_job in the API"
    )]
    JobTypeConflict {
        /// The job.
        job: String,
        /// The type the registry names.
        running: String,
    },
    /// A registry step of the job's registration failed.
    #[error("job {job}: {step} failed")]
    Registry {
        /// The job.
        job: String,
        /// The step.
        step: &'static str,
        /// The registry's error.
        #[source]
        source: RegistryError,
    },
    /// The job could not be started.
    #[error("job {job} could not start: {reason}")]
    JobStart {
        /// The job.
        job: JobName,
        /// Why.
        reason: String,
    },
    /// No job of this name runs on the node.
    #[error("no job named {0} on this node")]
    UnknownJob(JobName),
    /// No registry session is open right now.
    #[error("no registry session is open")]
    NoSession,
    /// The first connection to the registry failed.
    #[error("cannot reach the registry at {target}")]
    Connect {
        /// What was tried.
        target: String,
        /// The registry's error.
        #[source]
        source: RegistryError,
    },
    /// The actor system refused a message or a spawn.
    #[error("actor error: {0}")]
    Actor(String),
    /// A label given to `NodeBuilder::labels` is refused.
    #[error("node labels: {0}")]
    InvalidLabel(#[source] crate::sharding::LabelError),
    /// A metrics or admin endpoint could not start.
    #[error("operations endpoint could not start")]
    Endpoint(#[source] crate::admin::AdminError),
}

/// The child a supervision event says ended, failed or terminated, and why (empty when a
/// terminated child gave no reason); `None` for the other events.
pub(crate) fn child_ended(evt: &ractor::SupervisionEvent) -> Option<(&ractor::ActorCell, String)> {
    match evt {
        ractor::SupervisionEvent::ActorFailed(cell, e) => Some((cell, e.to_string())),
        ractor::SupervisionEvent::ActorTerminated(cell, _, reason) => {
            Some((cell, reason.clone().unwrap_or_default()))
        }
        _ => None,
    }
}
