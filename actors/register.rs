//! Registering a job on a session (ElasticJob's `registerStartUpInfo`): the job root, the config
//! (ours when absent or `overwrite`, otherwise the registry's), `servers/{ip}`, the ephemeral
//! `instances/{id}`, and the removal of this instance's stale `running` markers.

use std::sync::Arc;

use crate::config::{JobConfig, JobKind, ValidatedConfig, ValidationContext};
use crate::paths::JobNode;
use crate::registry::{CreateMode, Op, RegistryError};
use crate::types::JobName;
use crate::view::{JobView, ServerStatus};

use super::context::{apply_each_tolerant, JobSpec, JobType, NodeContext, SessionCtx};
use super::node::EngineError;

/// The config's job name, checked.
pub(crate) fn job_name(config: &JobConfig) -> Result<JobName, EngineError> {
    JobName::new(config.job_name.as_str()).map_err(|e| EngineError::InvalidConfig {
        job: config.job_name.clone(),
        reason: format!("jobName: {e}"),
    })
}

/// Validates a config with the names this node knows.
pub(crate) fn validate(
    node: &NodeContext,
    config: &JobConfig,
    job_type: &JobType,
) -> Result<ValidatedConfig, EngineError> {
    let strategies = node.strategies.names();
    let handler_names = node.handlers.error_handler_names();
    let handlers: Vec<&str> = handler_names.iter().map(String::as_str).collect();
    let kind = match job_type {
        JobType::Script => JobKind::Script,
        JobType::Named(_) => JobKind::Simple,
    };
    let ctx = ValidationContext {
        strategies: &strategies,
        error_handlers: &handlers,
        kind,
    };
    config
        .validate(&ctx)
        .map_err(|e| EngineError::InvalidConfig {
            job: config.job_name.clone(),
            reason: e.to_string(),
        })
}

/// What registration found: the config to run with, and whether the instance node still belongs
/// to an earlier session (then it is created when that one's deletion is seen).
#[derive(Debug)]
pub(crate) struct Registered {
    pub(crate) config: Arc<ValidatedConfig>,
    pub(crate) instance_node_pending: bool,
}

fn step<'a>(job: &'a JobName, what: &'static str) -> impl Fn(RegistryError) -> EngineError + 'a {
    move |source| EngineError::Registry {
        job: job.to_string(),
        step: what,
        source,
    }
}

/// Registers `spec` for this instance on the session.
pub(crate) async fn register(ctx: &SessionCtx, spec: &JobSpec) -> Result<Registered, EngineError> {
    let local = validate(&ctx.node, &spec.config, &spec.job_type)?;
    if let Some(done) = register_in_one_write(ctx, spec, &local).await? {
        return Ok(done);
    }
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
    let ours = || {
        spec.config
            .to_yaml()
            .map_err(|e| EngineError::InvalidConfig {
                job: job.to_string(),
                reason: e.to_string(),
            })
    };
    let config = match mirror.data(&config_path) {
        None => {
            match reg
                .create(&config_path, ours()?.as_bytes(), CreateMode::Persistent)
                .await
            {
                Ok(_) => {}
                Err(e) if e.is_node_exists() => {}
                Err(e) => return Err(step(&job, "writing config")(e)),
            }
            local
        }
        Some(_) if spec.config.overwrite => {
            reg.set(&config_path, ours()?.as_bytes(), None)
                .await
                .map_err(step(&job, "overwriting config"))?;
            local
        }
        Some(data) => match registry_config(ctx, &config_path, &data, &spec.job_type) {
            Ok(c) => c,
            Err(e) => {
                tracing::error!(%job, error = %e, "the registry's config is invalid; running with the local one");
                local
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

    let instance = JobNode::Instance(me.clone()).to_path(&job);
    let data = format!("jobInstanceId: {me}\nserverIp: {}\n", me.ip());
    let instance_node_pending = match reg
        .create(&instance, data.as_bytes(), CreateMode::Ephemeral)
        .await
    {
        Ok(_) => false,
        Err(e) if e.is_node_exists() => {
            // An ephemeral of an earlier session of ours: wait for the server to remove it.
            let owner = reg
                .exists(&instance)
                .await
                .map_err(step(&job, "checking instances/{id}"))?;
            owner.is_some_and(|s| s.ephemeral_owner != reg.session_info().id)
        }
        Err(e) => return Err(step(&job, "creating instances/{id}")(e)),
    };

    // Markers this instance left `running` in an earlier session describe runs that are over.
    let view = JobView::read(mirror, &job);
    let stale: Vec<Op> = view
        .items
        .iter()
        .filter(|(_, v)| v.running.as_deref() == Some(me.as_str()))
        .map(|(i, _)| Op::delete(JobNode::ShardingRunning(*i).to_path(&job)))
        .collect();
    apply_each_tolerant(reg, &stale)
        .await
        .map_err(step(&job, "clearing stale running markers"))?;
    Ok(Registered {
        config: Arc::new(config),
        instance_node_pending,
    })
}

/// The common case in one multi-op, decided from the mirror: whatever is missing is created. When
/// the mirror is behind (another instance registers the same job at the same moment) or the case is
/// unusual (a job root of another type, an instance node of an earlier session), it returns `None`
/// and the step-by-step path runs.
async fn register_in_one_write(
    ctx: &SessionCtx,
    spec: &JobSpec,
    local: &ValidatedConfig,
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
    let ours = || {
        spec.config
            .to_yaml()
            .map_err(|e| EngineError::InvalidConfig {
                job: job.to_string(),
                reason: e.to_string(),
            })
    };
    let config = match mirror.data(&path(JobNode::Config)) {
        None => {
            ops.push(Op::create(
                path(JobNode::Config),
                ours()?,
                CreateMode::Persistent,
            ));
            local.clone()
        }
        Some(_) if spec.config.overwrite => {
            ops.push(Op::set(path(JobNode::Config), ours()?));
            local.clone()
        }
        Some(data) => match registry_config(ctx, &path(JobNode::Config), &data, &spec.job_type) {
            Ok(c) => c,
            Err(e) => {
                tracing::error!(%job, error = %e, "the registry's config is invalid; running with the local one");
                local.clone()
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
    let data = format!("jobInstanceId: {me}\nserverIp: {}\n", me.ip());
    ops.push(Op::create(instance, data, CreateMode::Ephemeral));
    for (item, v) in &JobView::read(mirror, job).items {
        if v.running.as_deref() == Some(me.as_str()) {
            ops.push(Op::delete(path(JobNode::ShardingRunning(*item))));
        }
    }
    match ctx.apply(&ops).await {
        Ok(()) => Ok(Some(Registered {
            config: Arc::new(config),
            instance_node_pending: false,
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
    let text = std::str::from_utf8(data).map_err(|e| EngineError::InvalidConfig {
        job: path.to_owned(),
        reason: format!("{path} is not UTF-8: {e}"),
    })?;
    let config = JobConfig::from_yaml(text).map_err(|e| EngineError::InvalidConfig {
        job: path.to_owned(),
        reason: format!("{path}: {e}"),
    })?;
    // A config stored under another job's name is refused as `ctl config set` refuses it.
    if let Some(e) = JobNode::parse(path)
        .ok()
        .and_then(|(job, _)| config.job_name_mismatch(&job))
    {
        return Err(EngineError::InvalidConfig {
            job: path.to_owned(),
            reason: format!("{path}: {e}"),
        });
    }
    validate(&ctx.node, &config, job_type)
}
