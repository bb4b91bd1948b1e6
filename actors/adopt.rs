//! Adoption's interpreter, inside the RegistryActor: a node started with an adoption policy
//! ([`NodeBuilder::adopt`](super::node::NodeBuilder::adopt)) runs the SCRIPT and HTTP jobs created
//! at runtime ([`crate::ops::Ops::create`]).
//!
//! The RegistryActor hands it the mirror events of a job's root, `config` and `adoptable` nodes,
//! and every job after a re-list ([`resynced`]). It reads the job's facts from the mirror, asks
//! [`Adoption::step`](crate::decide::adopt::Adoption::step) what to do, and carries that out
//! through the node's own paths: an adopted job is a `NodeMsg::AddJob` request to the RegistryActor
//! itself (so it is replayed on every new session, as every job of the node is); a dropped one
//! is drained on a task (its running items get the shutdown timeout to end, no new fire starts),
//! then a `NodeMsg::RemoveJob` request. Config changes of an adopted job need nothing here: its
//! executor follows them, and SCRIPT and HTTP handlers read their props at every run.

use std::sync::{Arc, Mutex, MutexGuard};

use ractor::{ActorRef, RpcReplyPort};

use crate::config::JobConfig;
use crate::decide::adopt::{AdoptCommand, Adoption, JobFacts, Marker, RuntimeType};
use crate::paths::JobNode;
use crate::types::JobName;

use super::context::{lock_jobs, JobEvent, NodeContext};
use super::error::EngineError;
use super::mail::{ExecutorMsg, NodeMsg, RegistryMsg};
use super::spec::{JobSpec, JobType};

fn lock(slot: &Mutex<Adoption>) -> MutexGuard<'_, Adoption> {
    slot.lock().unwrap_or_else(|p| p.into_inner())
}

/// Whether an event is about a node adoption reads (a job's root, `config` or `adoptable`).
pub(crate) fn concerns(ev: &JobEvent) -> bool {
    matches!(
        ev.node,
        JobNode::Root | JobNode::Config | JobNode::Adoptable
    )
}

/// One job's node changed: judge the job again.
pub(crate) fn heard(node: &NodeContext, registry: &ActorRef<RegistryMsg>, job: &JobName) {
    if let Some(slot) = &node.adoption {
        judge(node, slot, registry, job);
    }
}

/// The mirror was listed again: judge every job of the namespace, and every job held (one that
/// vanished during a disconnect has no event of its own).
pub(crate) fn resynced(node: &NodeContext, registry: &ActorRef<RegistryMsg>) {
    let Some(slot) = &node.adoption else {
        return;
    };
    let mut jobs: Vec<JobName> = node
        .mirror
        .children("/")
        .into_iter()
        .filter_map(|name| JobName::new(name).ok())
        .collect();
    jobs.extend(lock(slot).adopted().cloned());
    jobs.sort();
    jobs.dedup();
    for job in &jobs {
        judge(node, slot, registry, job);
    }
}

fn judge(
    node: &NodeContext,
    slot: &Mutex<Adoption>,
    registry: &ActorRef<RegistryMsg>,
    job: &JobName,
) {
    let mirror = &node.mirror;
    let root = mirror.data(&JobNode::Root.to_path(job));
    let marker = mirror
        .data(&JobNode::Adoptable.to_path(job))
        .map(|d| Marker::from_data(&d));
    let root_text = root.as_deref().map(String::from_utf8_lossy);
    let kind = root_text.as_deref().and_then(RuntimeType::from_root_data);
    // The config is read only for a job created at runtime (most events are about others).
    let config = match (marker, kind) {
        (Some(Marker::Created), Some(kind)) => Some(read_config(node, job, kind)),
        _ => None,
    };
    let (label, config_problem) = match &config {
        Some(Ok(c)) => (c.label.as_deref(), None),
        Some(Err(problem)) => (None, Some(problem.clone())),
        None => (None, None),
    };
    let facts = JobFacts {
        job,
        root: root_text.as_deref(),
        marker,
        label,
        config_problem,
        runs_otherwise: lock_jobs(node).contains_key(job),
    };
    let command = lock(slot).step(&facts);
    match command {
        None => {}
        Some(AdoptCommand::Adopt { job, kind }) => match config {
            Some(Ok(config)) => adopt(node, registry, job, kind, config),
            _ => lock(slot).forget(&job),
        },
        Some(AdoptCommand::Drop { job }) => drop_job(node, registry, job),
        Some(AdoptCommand::LeaveAlone { job, why }) => {
            tracing::info!(%job, %why, "a job created at runtime is left alone by this node");
        }
    }
}

/// The job's config from the mirror, checked as `create` checks it.
fn read_config(node: &NodeContext, job: &JobName, kind: RuntimeType) -> Result<JobConfig, String> {
    let data = node
        .mirror
        .data(&JobNode::Config.to_path(job))
        .ok_or_else(|| "no config node yet".to_owned())?;
    let text = std::str::from_utf8(&data).map_err(|e| format!("config is not UTF-8: {e}"))?;
    let config = JobConfig::from_yaml(text).map_err(|e| e.to_string())?;
    if let Some(e) = config.job_name_mismatch(job) {
        return Err(e.to_string());
    }
    crate::job::runtime::check(kind, &config).map_err(|e| e.to_string())?;
    Ok(config)
}

fn adopt(
    node: &NodeContext,
    registry: &ActorRef<RegistryMsg>,
    job: JobName,
    kind: RuntimeType,
    mut config: JobConfig,
) {
    let handler = match crate::job::runtime::handler(kind, &config.props) {
        Ok(h) => h,
        Err(e) => {
            // `read_config` built it a moment ago; a failure now is the same refusal.
            tracing::warn!(%job, error = %e, "cannot build the handler of a job created at runtime");
            if let Some(slot) = &node.adoption {
                lock(slot).forget(&job);
            }
            return;
        }
    };
    if let Some(slot) = &node.adoption {
        config.instance_labels = lock(slot).node_labels().to_vec();
    }
    let job_type = match kind {
        RuntimeType::Script => JobType::Script,
        RuntimeType::Http => JobType::Named(kind.root_data().to_owned()),
    };
    let spec = JobSpec {
        config: Arc::new(config),
        job_type,
        handler,
    };
    tracing::info!(%job, %kind, "adopting a job created at runtime");
    let (reply, answer) = reply_port();
    let _ = registry.send_message(RegistryMsg::Request(NodeMsg::AddJob(Box::new(spec), reply)));
    tokio::spawn(async move {
        if let Ok(Err(e)) = answer.await {
            tracing::warn!(%job, error = %e, "an adopted job did not start on this session; it starts with the next");
        }
    });
}

/// Drains the job (its running items end, bounded by the shutdown timeout), then removes it from
/// the node. On a task: the RegistryActor's handler waits for neither.
fn drop_job(node: &NodeContext, registry: &ActorRef<RegistryMsg>, job: JobName) {
    let timeout = node.options.shutdown_timeout + std::time::Duration::from_millis(100);
    let registry = registry.clone();
    tracing::info!(%job, "stopping an adopted job: it was removed");
    tokio::spawn(async move {
        let executor = registry
            .call(
                |r| RegistryMsg::Request(NodeMsg::Executor(job.clone(), r)),
                None,
            )
            .await;
        if let Ok(ractor::rpc::CallResult::Success(Ok(cell))) = executor {
            let executor: ActorRef<ExecutorMsg> = cell.into();
            let drained = executor.call(ExecutorMsg::Drain, Some(timeout)).await;
            if !matches!(drained, Ok(ractor::rpc::CallResult::Success(()))) {
                tracing::warn!(%job, "the adopted job's running items did not end in time; removing it anyway");
            }
        }
        let (reply, answer) = reply_port();
        let _ = registry.send_message(RegistryMsg::Request(NodeMsg::RemoveJob(job.clone(), reply)));
        let _ = answer.await;
        let _ = registry.send_message(RegistryMsg::Dropped(job));
    });
}

/// The answer of an `AddJob` or `RemoveJob` sent from here.
type Answer = Result<(), EngineError>;

fn reply_port() -> (
    RpcReplyPort<Answer>,
    ractor::concurrency::OneshotReceiver<Answer>,
) {
    let (tx, rx) = ractor::concurrency::oneshot();
    (RpcReplyPort::from(tx), rx)
}

/// An adopted job is stopped and removed from the node: it is no longer held, so a job created
/// again under its name is judged afresh.
pub(crate) fn dropped(node: &NodeContext, registry: &ActorRef<RegistryMsg>, job: &JobName) {
    if let Some(slot) = &node.adoption {
        lock(slot).forget(job);
        judge(node, slot, registry, job);
    }
}
