//! Registering a job on a session (ElasticJob's `registerStartUpInfo`): the job root, the config
//! (ours when absent or `overwrite`, otherwise the registry's), `servers/{ip}`, the ephemeral
//! `instances/{id}`, and the removal of this instance's stale `running` markers.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ractor::ActorRef;

use crate::config::{JobConfig, ValidatedConfig};
use crate::decide;
use crate::decide::answer::Answer;
use crate::decide::lifecycle::{
    FenceBudget, Input, JobMachine, Registration, SESSION_CHECK_TIMEOUT,
};
use crate::decide::register::{Failure, Register, RegisterFacts, RegisterStep};
use crate::paths::JobNode;
use crate::registry::{Op, OpKind, RegistryError};
use crate::sharding::instance_node_data;
use crate::types::JobName;
use crate::view::JobView;

use super::context::{validate, SessionCtx};
use super::error::EngineError;
use super::mail::ExecutorMsg;
use super::spec::{JobSpec, JobType};

/// What registration found: the config to run with, and whose the instance node is (an earlier
/// session's is replaced by ours when its deletion is seen).
#[derive(Debug)]
pub(crate) struct Registered {
    pub(crate) config: Arc<ValidatedConfig>,
    /// The config node's bytes `config` stands for (written here, or read and parsed), when known:
    /// the config node's events carrying these bytes are not parsed again.
    pub(crate) yaml: Option<Arc<[u8]>>,
    pub(crate) registration: Registration,
}

impl Registered {
    /// The job's machine on this session, starting from what registration found.
    pub(crate) fn machine(&self, ctx: &SessionCtx, labels: Vec<String>) -> JobMachine {
        let session = ctx.registry.session_info();
        let fence = FenceBudget::for_session(session.timeout);
        let job = self.config.job_name().clone();
        let (config, registration) = (self.config.clone(), self.registration);
        JobMachine::new(
            job,
            ctx.me().clone(),
            session.id,
            fence,
            config,
            registration,
        )
        .with_labels(labels)
    }
}

/// The YAML of the node's own config, to write to the registry: refused when a Java ElasticJob
/// 3.0.x instance could not load it (an IANA zone, an unknown field) unless the job is marked
/// shardcron-only, since a Java instance of the job would fail after registering.
fn our_yaml(spec: &JobSpec) -> Result<String, String> {
    spec.config
        .check_java_readable()
        .map_err(|e| e.to_string())?;
    spec.config.to_yaml().map_err(|e| e.to_string())
}

/// What registration reads: the mirror, and the parsing of configs.
struct MirrorRegisterFacts<'a> {
    ctx: &'a SessionCtx,
    spec: &'a JobSpec,
    job: &'a JobName,
}

impl RegisterFacts for MirrorRegisterFacts<'_> {
    fn data(&self, node: &JobNode) -> Option<Arc<[u8]>> {
        self.ctx.mirror().data(&node.to_path(self.job))
    }

    fn exists(&self, node: &JobNode) -> bool {
        self.ctx.mirror().exists(&node.to_path(self.job))
    }

    fn has_instances(&self) -> bool {
        let instances = JobNode::Instances.to_path(self.job);
        self.ctx.mirror().has_children(&instances)
    }

    fn stale_records(&self) -> Vec<Op> {
        let view = JobView::read(self.ctx.mirror(), self.job);
        crate::decide::reconcile::own_stale_records(&view, self.job, self.ctx.me())
    }

    fn our_yaml(&self) -> Result<String, String> {
        our_yaml(self.spec)
    }

    fn registry_config(&self, data: &[u8]) -> Result<Arc<ValidatedConfig>, String> {
        let path = JobNode::Config.to_path(self.job);
        registry_config(self.ctx, &path, data, &self.spec.job_type)
            .map(Arc::new)
            .map_err(|e| e.to_string())
    }
}

/// Registers `spec` for this instance on the session: the interpreter of
/// [`decide::register::Register`](crate::decide::register::Register), which decides every step
/// from the mirror and each write's answer.
///
/// Every job's executor awaits this at startup, all at once: its future is kept small (the config
/// behind an `Arc`, the machine boxed), as 10,000 of them are alive together.
pub(crate) async fn register(ctx: &SessionCtx, spec: &JobSpec) -> Result<Registered, EngineError> {
    let local = Arc::new(validate(&ctx.node, &spec.config, &spec.job_type)?);
    let job = local.job_name().clone();
    let me = ctx.me();
    let facts = MirrorRegisterFacts {
        ctx,
        spec,
        job: &job,
    };
    let mut machine = Box::new(Register::new(
        job.clone(),
        me.clone(),
        spec.job_type.root_data().to_owned(),
        instance_node_data(me, &spec.config.instance_labels),
        spec.config.overwrite,
        local,
    ));
    let mut next = machine.start(&facts);
    let mut last_error = None;
    loop {
        let result = match next {
            RegisterStep::Write(ops, mode) => ctx.write(ops, mode).await,
            RegisterStep::EnsurePaths(paths) => Box::pin(ensure_paths(ctx, &paths)).await,
            RegisterStep::Ended(end) => return registered(spec, &job, end, last_error),
        };
        let answer = Answer::of(&result);
        last_error = result.err();
        next = machine.written(answer, &facts);
    }
}

async fn ensure_paths(ctx: &SessionCtx, paths: &[String]) -> Result<(), RegistryError> {
    for path in paths {
        ctx.registry.ensure_path(path).await?;
    }
    Ok(())
}

/// What the machine's end means for the executor.
fn registered(
    spec: &JobSpec,
    job: &JobName,
    end: Result<decide::register::Registered, Failure>,
    last_error: Option<RegistryError>,
) -> Result<Registered, EngineError> {
    match end {
        Ok(found) => {
            if let Some(e) = found.refused_registry_config {
                tracing::error!(%job, error = %e, "the registry's config is invalid; running with the local one");
            }
            Ok(Registered {
                config: found.config,
                yaml: found.yaml,
                registration: Registration::Written,
            })
        }
        Err(Failure::InvalidConfig(reason)) => Err(EngineError::InvalidConfig {
            job: spec.config.job_name.clone(),
            reason,
        }),
        Err(Failure::JobTypeConflict { running }) => Err(EngineError::JobTypeConflict {
            job: job.to_string(),
            running,
        }),
        Err(Failure::Registry { step }) => Err(EngineError::Registry {
            job: job.to_string(),
            step,
            source: last_error.unwrap_or_else(|| RegistryError::Backend {
                op: OpKind::Multi,
                path: JobNode::Root.to_path(job),
                reason: "registration ended without a registry error".to_owned(),
            }),
        }),
    }
}

/// Parses and validates the config found in the registry, naming the path on failure.
pub(crate) fn registry_config(
    ctx: &SessionCtx,
    path: &str,
    data: &[u8],
    job_type: &JobType,
) -> Result<ValidatedConfig, EngineError> {
    let config = parse_registry_config(path, data)?;
    validate(&ctx.node, &Arc::new(config), job_type)
}

/// Reads the config node's bytes, naming `path` on failure: not UTF-8, refused before parsing
/// (over 1 MiB, or a YAML alias: see [`crate::config::untrusted`]), not a config, or stored under
/// another job's name (refused as `ctl config set` refuses it).
fn parse_registry_config(path: &str, data: &[u8]) -> Result<JobConfig, EngineError> {
    let invalid = |reason: String| EngineError::InvalidConfig {
        job: path.to_owned(),
        reason,
    };
    let text =
        std::str::from_utf8(data).map_err(|e| invalid(format!("{path} is not UTF-8: {e}")))?;
    let config = JobConfig::from_yaml(text).map_err(|e| invalid(format!("{path}: {e}")))?;
    if let Some(e) = JobNode::parse(path)
        .ok()
        .and_then(|(job, _)| config.job_name_mismatch(&job))
    {
        return Err(invalid(format!("{path}: {e}")));
    }
    Ok(config)
}

/// The job's config as the registry has it, read from the mirror and validated, as an input for
/// the job's machine; an invalid one is reported and the last valid one kept. `seen` holds the
/// bytes last read (or written by registration): the same bytes again (the event of this
/// instance's own write, a re-list) are not parsed again and give no input, as they can change
/// nothing. With 10,000 jobs, parsing each job's YAML once more at startup was a tenth of the
/// node's start-up CPU.
pub(crate) fn config_input(
    ctx: &SessionCtx,
    job: &JobName,
    job_type: &JobType,
    seen: &mut Option<Arc<[u8]>>,
) -> Option<Input> {
    let path = JobNode::Config.to_path(job);
    let data = ctx.mirror().data(&path)?;
    if seen.as_deref() == Some(&*data) {
        // Keep the mirror's copy, not a second one (registration's own, for one).
        *seen = Some(data);
        return None;
    }
    let parsed = registry_config(ctx, &path, &data, job_type);
    *seen = Some(data);
    match parsed {
        Ok(config) => Some(Input::Config(Arc::new(config))),
        Err(e) => {
            tracing::error!(%job, error = %e, "invalid config in the registry; keeping the last valid one");
            None
        }
    }
}

/// Checks, off the executor's handler, that the session still answers (one round trip); the
/// answer comes back to `executor` as [`Input::SessionChecked`].
pub(crate) fn check_session(ctx: &SessionCtx, job: &JobName, executor: &ActorRef<ExecutorMsg>) {
    let (registry, executor) = (ctx.registry.clone(), executor.clone());
    let path = JobNode::Instance(ctx.me().clone()).to_path(job);
    tokio::spawn(async move {
        let call = tokio::time::timeout(SESSION_CHECK_TIMEOUT, registry.exists(&path));
        let alive = matches!(call.await, Ok(Ok(_)));
        let _ = executor.send_message(ExecutorMsg::Step(Input::SessionChecked { alive }));
    });
}

/// Registrations ended since the allocator last gave back its free memory, and whether a look
/// for the burst's end is pending.
static SINCE_RELEASE: AtomicUsize = AtomicUsize::new(0);
static LOOKING: AtomicBool = AtomicBool::new(false);

/// A burst of at least this many registrations (a session's start with many jobs) is followed
/// by [`release_free_memory`] once it is over.
const RELEASE_AFTER: usize = 256;

/// How long no registration must end for a burst to be over.
const BURST_OVER_AFTER: Duration = Duration::from_millis(500);

/// One registration ended (its permit given back). A registration's transient buffers, a few
/// kilobytes a job with 128 at once, are freed by the thousand during a burst, and glibc keeps
/// what it freed in its arenas (about 5 MiB after 10,000 jobs, measured on the bench's
/// `versus` child): once the burst is over (no registration under way and none ended for
/// [`BURST_OVER_AFTER`]), the memory goes back, once a burst, off the runtime's threads (about
/// 10 ms of CPU after 10,000 jobs, timed with `clock()` around the call in that child). A
/// debounce, so a timer: the task wakes each [`BURST_OVER_AFTER`] only while registrations end.
pub(crate) fn registration_ended(registering: &Arc<tokio::sync::Semaphore>) {
    if SINCE_RELEASE.fetch_add(1, Ordering::Relaxed) + 1 < RELEASE_AFTER
        || LOOKING.swap(true, Ordering::AcqRel)
    {
        return;
    }
    let registering = registering.clone();
    tokio::spawn(async move {
        loop {
            let seen = SINCE_RELEASE.load(Ordering::Relaxed);
            tokio::time::sleep(BURST_OVER_AFTER).await;
            let idle = registering.available_permits() == super::context::REGISTERING_AT_ONCE;
            if idle && SINCE_RELEASE.load(Ordering::Relaxed) == seen {
                break;
            }
        }
        SINCE_RELEASE.store(0, Ordering::Relaxed);
        LOOKING.store(false, Ordering::Release);
        let _ = tokio::task::spawn_blocking(release_free_memory).await;
    });
}

/// Gives the allocator's free memory back to the system (glibc's `malloc_trim`; elsewhere
/// nothing: other allocators return memory on their own terms).
fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` takes no pointer; it walks glibc's own arenas under their locks.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::untrusted::MAX_REGISTRY_YAML_BYTES;

    fn refused(data: &[u8]) -> String {
        match parse_registry_config("/orders/config", data) {
            Err(EngineError::InvalidConfig { job, reason }) => {
                assert_eq!(job, "/orders/config");
                reason
            }
            other => panic!("expected InvalidConfig, got {other:?}"),
        }
    }

    #[test]
    fn a_registry_config_with_an_alias_is_refused_naming_its_path_and_the_alias() {
        let anchor = "x".repeat(100 * 1024);
        let bomb = format!(
            "jobName: orders\nshardingTotalCount: 2\nbig: &a '{anchor}'\nbomb: [{}*a]\n",
            "*a,".repeat(50_000)
        );
        let reason = refused(bomb.as_bytes());
        assert!(
            reason.starts_with("/orders/config: refusing job config YAML: YAML alias at line 4"),
            "{reason}"
        );
    }

    #[test]
    fn a_registry_config_over_one_mebibyte_is_refused_naming_its_path_before_parsing() {
        let mut data = b"jobName: orders\ndescription: ".to_vec();
        data.resize(MAX_REGISTRY_YAML_BYTES + 1, b'x');
        let reason = refused(&data);
        assert!(
            reason.starts_with("/orders/config: refusing job config YAML:")
                && reason.contains("more than the 1048575 accepted"),
            "{reason}"
        );
    }

    #[test]
    fn a_plain_registry_config_still_reads() {
        let config = parse_registry_config(
            "/orders/config",
            b"jobName: orders\ncron: 0/5 * * * * ?\nshardingTotalCount: 2\n",
        )
        .unwrap();
        assert_eq!(config.sharding_total_count, 2);
    }
}
