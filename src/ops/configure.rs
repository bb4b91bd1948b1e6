//! Reading and rewriting a job's `config` node (ElasticJob's `JobConfigurationAPI`).
//!
//! A rewrite is validated as the engine would validate it (built-in strategy and handler names,
//! the job's kind from its root data), so a config the engine would refuse never reaches the
//! registry. It is written at the version that was read: an operator who edits a stale copy is
//! told, instead of silently undoing someone else's change.

use serde::Serialize;

use super::audit::Entry;
use super::{Ops, OpsError};
use crate::config::{redact_config_yaml, ConfigErrors, JobConfig, JobKind, ValidationContext};
use crate::decide::adopt::RuntimeType;
use crate::paths::JobNode;
use crate::registry::RegistryError;
use crate::types::JobName;

/// The largest config text written: ZooKeeper refuses node data of 1 MiB or more by default
/// (`jute.maxbuffer`, 0xfffff bytes), and does so only after the request is sent, with a
/// connection loss rather than an error that says why.
pub const MAX_CONFIG_BYTES: usize = 1024 * 1024 - 1024;

/// Parses `--version` of `config set`: a config node's data version, 0 to 2147483647.
///
/// ```
/// use shardcron::ops::parse_config_version;
/// assert_eq!(parse_config_version("3"), Ok(3));
/// assert!(parse_config_version("99999999999").unwrap_err().contains("out of range"));
/// assert!(parse_config_version("x").unwrap_err().contains("whole number"));
/// ```
pub fn parse_config_version(value: &str) -> Result<i32, String> {
    use std::num::IntErrorKind;
    match value.parse::<i32>() {
        Ok(v) if v >= 0 => Ok(v),
        Ok(_) => Err("out of range: a config version is 0 or more".to_owned()),
        Err(e)
            if matches!(
                e.kind(),
                IntErrorKind::PosOverflow | IntErrorKind::NegOverflow
            ) =>
        {
            Err(format!(
                "out of range: a config version is 0 to {}",
                i32::MAX
            ))
        }
        Err(_) => Err("expected a config version, a whole number".to_owned()),
    }
}

/// The `config` node as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredConfig {
    /// The job.
    pub job_name: JobName,
    /// The YAML text.
    pub yaml: String,
    /// The node's data version: pass it to [`Ops::config_set_at`] to write over exactly this text.
    pub version: i32,
}

impl StoredConfig {
    /// The same with its secrets redacted ([`redact_config_yaml`]): what a person is shown.
    pub fn redacted(mut self) -> Self {
        self.yaml = redact_config_yaml(&self.yaml);
        self
    }
}

impl Ops {
    /// The job's stored config and its version (from the mirror when [`Ops::reading`] one).
    pub async fn config_get(&self, job: &JobName) -> Result<StoredConfig, OpsError> {
        if let Some(mirror) = &self.mirror {
            let node = mirror
                .get(&JobNode::Config.to_path(job))
                .ok_or_else(|| OpsError::UnknownJob { job: job.clone() })?;
            return Ok(StoredConfig {
                job_name: job.clone(),
                yaml: String::from_utf8_lossy(&node.data).into_owned(),
                version: node.stat.version,
            });
        }
        self.stored_config(job).await
    }

    /// The job's config as the registry holds it now: what an edit starts from.
    async fn stored_config(&self, job: &JobName) -> Result<StoredConfig, OpsError> {
        let (data, stat) = self
            .registry
            .get(&JobNode::Config.to_path(job))
            .await
            .map_err(|source| unknown_or(job, source, read_error))?;
        Ok(StoredConfig {
            job_name: job.clone(),
            yaml: String::from_utf8_lossy(&data).into_owned(),
            version: stat.version,
        })
    }

    /// Validates `yaml` and writes it over the config as it is now. Returns the new version.
    ///
    /// Only the read-to-write window is protected here; an editor that showed the config to a
    /// person should use [`Ops::config_set_at`] with the version it showed.
    pub async fn config_set(&self, job: &JobName, yaml: &str) -> Result<i32, OpsError> {
        self.edit_config(job, yaml, None).await
    }

    /// Validates `yaml` and writes it only if the config is still at `version`
    /// ([`OpsError::ConfigChanged`] otherwise). Returns the new version.
    ///
    /// `yaml` may be the redacted text a person was shown ([`StoredConfig::redacted`]): a secret
    /// still shown as `***` keeps its stored value ([`JobConfig::keep_unchanged_secrets`]).
    pub async fn config_set_at(
        &self,
        job: &JobName,
        yaml: &str,
        version: i32,
    ) -> Result<i32, OpsError> {
        self.edit_config(job, yaml, Some(version)).await
    }

    /// Validates, keeps unchanged secrets, writes at `version` (the stored one when `None`) and
    /// records the edit with the config before and after, redacted.
    async fn edit_config(
        &self,
        job: &JobName,
        yaml: &str,
        version: Option<i32>,
    ) -> Result<i32, OpsError> {
        let mut entry = Entry::new("config-set", job);
        let result = async {
            let mut config = self.checked_config(job, yaml).await?;
            let stored = self.stored_config(job).await?;
            entry.before = Some(redact_config_yaml(&stored.yaml));
            if let Ok(before) = JobConfig::from_yaml(&stored.yaml) {
                config.keep_unchanged_secrets(&before);
            }
            entry.after = config.redacted().to_yaml().ok();
            let version = version.unwrap_or(stored.version);
            self.write_config(job, &config, version).await
        }
        .await;
        self.recorded(entry, result).await
    }

    /// Parses and validates a new config for `job`, naming every bad field.
    async fn checked_config(&self, job: &JobName, yaml: &str) -> Result<JobConfig, OpsError> {
        within_limit(job, yaml)?;
        let mut config = JobConfig::from_yaml(yaml).map_err(|source| OpsError::ConfigYaml {
            job: job.clone(),
            source,
        })?;
        // `UTC` and `+08:00` are stored as Java writes them (`GMT`, `GMT+08:00`).
        config.spell_time_zone_for_java();
        let (root, _) = self
            .registry
            .get(&JobNode::Root.to_path(job))
            .await
            .map_err(|source| unknown_or(job, source, read_error))?;
        // The root holds the job's type as the first instance registered it: a SCRIPT or HTTP
        // job is checked as `create` checks it (its command line, its request), another as a
        // job whose handler is compiled in.
        let runtime = std::str::from_utf8(&root)
            .ok()
            .and_then(RuntimeType::from_root_data);
        let mut problems = match runtime {
            Some(t) => match crate::job::runtime::check(t, &config) {
                Ok(()) => Vec::new(),
                Err(ConfigErrors(problems)) => problems,
            },
            None => {
                let simple = ValidationContext::builtin(JobKind::Simple);
                let mut problems = match config.validate(&simple) {
                    Ok(_) => Vec::new(),
                    Err(ConfigErrors(problems)) => problems,
                };
                if let Err(ConfigErrors(java)) = config.check_java_readable() {
                    problems.extend(java);
                }
                problems
            }
        };
        problems.extend(config.job_name_mismatch(job));
        if problems.is_empty() {
            self.check_workflow(job, &config).await?;
            Ok(config)
        } else {
            Err(OpsError::InvalidConfig {
                job: job.clone(),
                source: ConfigErrors(problems),
            })
        }
    }

    async fn write_config(
        &self,
        job: &JobName,
        config: &JobConfig,
        version: i32,
    ) -> Result<i32, OpsError> {
        let yaml = stored_yaml(job, config)?;
        match self
            .registry
            .set(
                &JobNode::Config.to_path(job),
                yaml.as_bytes(),
                Some(version),
            )
            .await
        {
            Ok(stat) => Ok(stat.version),
            Err(e) if e.is_bad_version() => Err(OpsError::ConfigChanged {
                job: job.clone(),
                version,
            }),
            Err(source) => Err(unknown_or(job, source, |job, source| {
                OpsError::WriteConfig { job, source }
            })),
        }
    }
}

/// `config` as stored: the Java layout (sorted keys, nulls left out) with unknown fields kept,
/// within [`MAX_CONFIG_BYTES`].
pub(super) fn stored_yaml(job: &JobName, config: &JobConfig) -> Result<String, OpsError> {
    let yaml = config.to_yaml().map_err(|source| OpsError::ConfigYaml {
        job: job.clone(),
        source,
    })?;
    within_limit(job, &yaml)?;
    Ok(yaml)
}

/// Refuses a config text longer than [`MAX_CONFIG_BYTES`] (a registry node holds 1 MiB).
fn within_limit(job: &JobName, yaml: &str) -> Result<(), OpsError> {
    if yaml.len() > MAX_CONFIG_BYTES {
        return Err(OpsError::ConfigTooLarge {
            job: job.clone(),
            bytes: yaml.len(),
        });
    }
    Ok(())
}

fn read_error(job: JobName, source: RegistryError) -> OpsError {
    OpsError::ReadJob { job, source }
}

/// A missing node means the job is unknown (or was removed meanwhile); other errors are `other`.
fn unknown_or(
    job: &JobName,
    source: RegistryError,
    other: impl FnOnce(JobName, RegistryError) -> OpsError,
) -> OpsError {
    if source.is_no_node() {
        OpsError::UnknownJob { job: job.clone() }
    } else {
        other(job.clone(), source)
    }
}
