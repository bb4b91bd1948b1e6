//! Registering a job on a session (ElasticJob's `registerStartUpInfo`): the job root, the config
//! (ours when absent or `overwrite`, otherwise the registry's), `servers/{ip}`, the ephemeral
//! `instances/{id}`, and the removal of this instance's stale `running` markers.

use std::sync::Arc;
use std::time::Duration;

use ractor::ActorRef;

use crate::config::{JobConfig, JobKind, ValidatedConfig, ValidationContext};
use crate::decide::lifecycle::{FenceBudget, Input, JobMachine, Registration};
use crate::paths::JobNode;
use crate::registry::{CreateMode, Op, RegistryError};
use crate::sharding::instance_node_data;
use crate::types::JobName;
use crate::view::{JobView, ServerStatus};

use super::context::{apply_each_tolerant, JobSpec, JobType, NodeContext, SessionCtx};
use super::executor::ExecutorMsg;
use super::node::EngineError;

/// The config's job name, checked.
pub(crate) fn job_name(config: &JobConfig) -> Result<JobName, EngineError> {
    JobName::new(config.job_name.as_str()).map_err(|e| EngineError::InvalidConfig {
        job: config.job_name.clone(),
        reason: format!("jobName: {e}"),
    })
}

/// Validates a config with the names this node knows; the validated config shares `config`.
pub(crate) fn validate(
    node: &NodeContext,
    config: &Arc<JobConfig>,
    job_type: &JobType,
) -> Result<ValidatedConfig, EngineError> {
    let strategies = node.strategies.names();
    let handler_names = node.handlers.error_handler_names();
    let handlers: Vec<&str> = handler_names.iter().map(String::as_str).collect();
    let kind = match job_type {
        JobType::Script => JobKind::Script,
        JobType::Named(_) => JobKind::Simple,
        JobType::Java { kind, .. } => *kind,
    };
    let ctx = ValidationContext {
        strategies: &strategies,
        error_handlers: &handlers,
        kind,
    };
    let valid =
        JobConfig::validate_shared(config, &ctx).map_err(|e| EngineError::InvalidConfig {
            job: config.job_name.clone(),
            reason: e.to_string(),
        })?;
    // The notifier follows the config validated last: the local one at start, the registry's
    // at registration and at every change.
    node.handlers.notifiers().configure(
        valid.job_name(),
        valid.error_handler(),
        &valid.config().props,
    );
    Ok(valid)
}

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
fn our_yaml(spec: &JobSpec) -> Result<String, EngineError> {
    let invalid = |reason: String| EngineError::InvalidConfig {
        job: spec.config.job_name.clone(),
        reason,
    };
    spec.config
        .check_java_readable()
        .map_err(|e| invalid(e.to_string()))?;
    spec.config.to_yaml().map_err(|e| invalid(e.to_string()))
}

fn step<'a>(job: &'a JobName, what: &'static str) -> impl Fn(RegistryError) -> EngineError + 'a {
    move |source| EngineError::Registry {
        job: job.to_string(),
        step: what,
        source,
    }
}

/// Registers `spec` for this instance on the session.
///
/// Every job's executor awaits this at startup, all at once: its future is kept small (the config
/// behind an `Arc`, the rare step-by-step path boxed), as 10,000 of them are alive together.
pub(crate) async fn register(ctx: &SessionCtx, spec: &JobSpec) -> Result<Registered, EngineError> {
    let local = Arc::new(validate(&ctx.node, &spec.config, &spec.job_type)?);
    if let Some(done) = register_in_one_write(ctx, spec, &local).await? {
        return Ok(done);
    }
    Box::pin(register_step_by_step(ctx, spec, local)).await
}

/// Registration op by op, for the cases [`register_in_one_write`] leaves.
async fn register_step_by_step(
    ctx: &SessionCtx,
    spec: &JobSpec,
    local: Arc<ValidatedConfig>,
) -> Result<Registered, EngineError> {
    let job = local.job_name().clone();
    let reg = &*ctx.registry;
    let mirror = ctx.mirror();
    let root = JobNode::Root.to_path(&job);
    let root_data = spec.job_type.root_data();

    // The job root names the job's type; another type may only take it over when nobody runs it.
    match mirror.data(&root) {
        None => match reg
            .create(&root, root_data.as_bytes(), CreateMode::Persistent)
            .await
        {
            Ok(_) => {}
            Err(e) if e.is_node_exists() => {}
            Err(e) => return Err(step(&job, "creating the job root")(e)),
        },
        Some(data) if &*data == root_data.as_bytes() => {}
        Some(data) => {
            let other = String::from_utf8_lossy(&data).into_owned();
            if !other.is_empty()
                && !mirror
                    .children(&JobNode::Instances.to_path(&job))
                    .is_empty()
            {
                return Err(EngineError::JobTypeConflict {
                    job: job.to_string(),
                    running: other,
                });
            }
            reg.set(&root, root_data.as_bytes(), None)
                .await
                .map_err(step(&job, "writing the job root"))?;
        }
    }

    // Ours when absent or overwrite; otherwise the registry's, if it is valid.
    let config_path = JobNode::Config.to_path(&job);
    let ours = || our_yaml(spec);
    let (config, yaml) = match mirror.data(&config_path) {
        None => {
            let text = ours()?;
            let yaml = match reg
                .create(&config_path, text.as_bytes(), CreateMode::Persistent)
                .await
            {
                Ok(_) => Some(Arc::from(text.as_bytes())),
                // Another instance wrote its own first: its event is read as a change.
                Err(e) if e.is_node_exists() => None,
                Err(e) => return Err(step(&job, "writing config")(e)),
            };
            (local, yaml)
        }
        Some(_) if spec.config.overwrite => {
            let text = ours()?;
            reg.set(&config_path, text.as_bytes(), None)
                .await
                .map_err(step(&job, "overwriting config"))?;
            (local, Some(Arc::from(text.as_bytes())))
        }
        Some(data) => match registry_config(ctx, &config_path, &data, &spec.job_type) {
            Ok(c) => (Arc::new(c), Some(data)),
            Err(e) => {
                tracing::error!(%job, error = %e, "the registry's config is invalid; running with the local one");
                (local, Some(data))
            }
        },
    };

    for parent in [
        JobNode::Servers,
        JobNode::Instances,
        JobNode::Sharding,
        JobNode::LeaderElection,
        JobNode::LeaderSharding,
    ] {
        reg.ensure_path(&parent.to_path(&job))
            .await
            .map_err(step(&job, "creating parents"))?;
    }
    let me = ctx.me();
    let status = if config.config().disabled {
        ServerStatus::Disabled
    } else {
        ServerStatus::Enabled
    };
    let server = JobNode::Server(me.ip().to_owned()).to_path(&job);
    match reg.set(&server, status.as_data(), None).await {
        Ok(_) => {}
        Err(e) if e.is_no_node() => {
            apply_each_tolerant(
                reg,
                &[Op::create(server, status.as_data(), CreateMode::Persistent)],
            )
            .await
            .map_err(step(&job, "writing servers/{ip}"))?;
        }
        Err(e) => return Err(step(&job, "writing servers/{ip}")(e)),
    }

    // Records this instance left in an earlier session describe runs that are over.
    let view = JobView::read(mirror, &job);
    let stale = crate::decide::reconcile::own_stale_records(&view, &job, me);
    let instance = JobNode::Instance(me.clone()).to_path(&job);
    let data = instance_node_data(me, &spec.config.instance_labels);
    match reg
        .create(&instance, data.as_bytes(), CreateMode::Ephemeral)
        .await
    {
        Ok(_) => apply_each_tolerant(reg, &stale)
            .await
            .map_err(step(&job, "clearing stale running markers"))?,
        Err(e) if e.is_node_exists() => {
            // An earlier session of this very instance still holds the node (a restart under
            // the same id, a new session after a client-side expiry). It is taken over in one
            // multi-op with the stale markers, as ElasticJob's persistEphemeral replaces an
            // existing node: waiting for the server to expire it would stop the job for up to a
            // session timeout, and running meanwhile would let the survivors fail over this
            // session's runs when the old node goes. Survivors see the node deleted and created
            // in one transaction, with no marker of this instance left to fail over.
            let mut ops = vec![Op::delete(instance.clone())];
            ops.extend(stale);
            ops.push(Op::create(instance, data, CreateMode::Ephemeral));
            match reg.multi(&ops).await {
                Ok(_) => {}
                Err(e) if e.is_no_node() || e.is_node_exists() => {
                    // The old node or a marker went meanwhile: op by op.
                    apply_each_tolerant(reg, &ops)
                        .await
                        .map_err(step(&job, "taking over instances/{id}"))?
                }
                Err(e) => return Err(step(&job, "taking over instances/{id}")(e)),
            }
        }
        Err(e) => return Err(step(&job, "creating instances/{id}")(e)),
    }
    Ok(Registered {
        config,
        yaml,
        registration: Registration::Unconfirmed,
    })
}

/// The common case in one multi-op, decided from the mirror: whatever is missing is created. When
/// the mirror is behind (another instance registers the same job at the same moment) or the case is
/// unusual (a job root of another type, an instance node of an earlier session), it returns `None`
/// and the step-by-step path runs.
async fn register_in_one_write(
    ctx: &SessionCtx,
    spec: &JobSpec,
    local: &Arc<ValidatedConfig>,
) -> Result<Option<Registered>, EngineError> {
    let job = local.job_name();
    let mirror = ctx.mirror();
    let me = ctx.me();
    let path = |n: JobNode| n.to_path(job);
    let mut ops = Vec::new();
    match mirror.data(&path(JobNode::Root)) {
        None => ops.push(Op::create(
            path(JobNode::Root),
            spec.job_type.root_data(),
            CreateMode::Persistent,
        )),
        Some(d) if &*d == spec.job_type.root_data().as_bytes() => {}
        Some(_) => return Ok(None),
    }
    let ours = || our_yaml(spec);
    let (config, yaml) = match mirror.data(&path(JobNode::Config)) {
        None => {
            let text = ours()?;
            let yaml = Arc::from(text.as_bytes());
            ops.push(Op::create(
                path(JobNode::Config),
                text,
                CreateMode::Persistent,
            ));
            (local.clone(), Some(yaml))
        }
        Some(_) if spec.config.overwrite => {
            let text = ours()?;
            let yaml = Arc::from(text.as_bytes());
            ops.push(Op::set(path(JobNode::Config), text));
            (local.clone(), Some(yaml))
        }
        Some(data) => match registry_config(ctx, &path(JobNode::Config), &data, &spec.job_type) {
            Ok(c) => (Arc::new(c), Some(data)),
            Err(e) => {
                tracing::error!(%job, error = %e, "the registry's config is invalid; running with the local one");
                (local.clone(), Some(data))
            }
        },
    };
    for parent in [
        JobNode::Servers,
        JobNode::Instances,
        JobNode::Sharding,
        JobNode::Leader,
        JobNode::LeaderElection,
        JobNode::LeaderSharding,
    ] {
        if !mirror.exists(&path(parent.clone())) {
            ops.push(Op::create(path(parent), "", CreateMode::Persistent));
        }
    }
    let status = if config.config().disabled {
        ServerStatus::Disabled
    } else {
        ServerStatus::Enabled
    };
    let server = path(JobNode::Server(me.ip().to_owned()));
    if mirror.exists(&server) {
        ops.push(Op::set(server, status.as_data()));
    } else {
        ops.push(Op::create(server, status.as_data(), CreateMode::Persistent));
    }
    let instance = path(JobNode::Instance(me.clone()));
    if mirror.exists(&instance) {
        return Ok(None);
    }
    let data = instance_node_data(me, &spec.config.instance_labels);
    ops.push(Op::create(instance, data, CreateMode::Ephemeral));
    ops.extend(crate::decide::reconcile::own_stale_records(
        &JobView::read(mirror, job),
        job,
        me,
    ));
    match ctx.apply(&ops).await {
        Ok(()) => Ok(Some(Registered {
            config,
            yaml,
            registration: Registration::Unconfirmed,
        })),
        Err(e) if e.is_node_exists() || e.is_no_node() || e.is_bad_version() => Ok(None),
        Err(e) => Err(step(job, "registering in one write")(e)),
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

/// How long a session check may take before the session counts as lost.
const SESSION_CHECK_TIMEOUT: Duration = Duration::from_secs(5);

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
