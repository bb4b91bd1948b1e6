//! A job's place in a workflow as its config declares it: `shardcron.after` (the upstream jobs)
//! and `shardcron.after.on` (when it runs after them), read from `props` with the key of a bad
//! value named. The namespace's graph built from these declarations is
//! [`decide::workflow::graph`](crate::decide::workflow::graph).

use std::collections::BTreeMap;

use crate::types::JobName;

/// When a downstream job runs after an upstream run (`shardcron.after.on`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum RunWhen {
    /// Every item of the upstream run succeeded (the default). A failed, timed-out or skipped
    /// upstream run skips the downstream run, and the skip travels on down the graph.
    #[default]
    Success,
    /// Every item of the upstream run ended, whatever its outcome: the downstream runs anyway.
    Completed,
}

impl RunWhen {
    /// The value as written in `shardcron.after.on`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::Completed => "completed",
        }
    }

    /// Reads `shardcron.after.on`; `None` for anything else (the caller names the key).
    pub fn parse(text: &str) -> Option<Self> {
        match text.trim() {
            "success" => Some(Self::Success),
            "completed" => Some(Self::Completed),
            _ => None,
        }
    }
}

/// One job's dependencies, as its config declares them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Dependency {
    /// The upstream jobs, in the order written, without repeats.
    pub after: Vec<JobName>,
    /// When the job runs after them.
    pub on: RunWhen,
}

/// Reads a job's declaration from its `props` (`shardcron.after`, `shardcron.after.on`), naming
/// the key of a bad value. No `shardcron.after` is an empty declaration.
pub fn dependency_from_props(
    props: &BTreeMap<String, String>,
) -> Result<Dependency, DependencyError> {
    let Some(after) = props.get(AFTER_KEY) else {
        if props.contains_key(AFTER_ON_KEY) {
            return Err(DependencyError::OnWithoutAfter);
        }
        return Ok(Dependency::default());
    };
    let mut upstreams: Vec<JobName> = Vec::new();
    for name in after.split(',').map(str::trim) {
        if name.is_empty() {
            return Err(DependencyError::EmptyName {
                value: after.clone(),
            });
        }
        let job = JobName::new(name).map_err(|e| DependencyError::BadName {
            name: name.to_owned(),
            reason: e.to_string(),
        })?;
        if !upstreams.contains(&job) {
            upstreams.push(job);
        }
        if upstreams.len() > MAX_UPSTREAMS {
            return Err(DependencyError::TooMany);
        }
    }
    let on = match props.get(AFTER_ON_KEY) {
        None => RunWhen::default(),
        Some(text) => RunWhen::parse(text).ok_or_else(|| DependencyError::BadOn {
            value: text.clone(),
        })?,
    };
    Ok(Dependency {
        after: upstreams,
        on,
    })
}

/// The `props` key naming a job's upstream jobs.
pub const AFTER_KEY: &str = "shardcron.after";
/// The `props` key saying when the job runs after them.
pub const AFTER_ON_KEY: &str = "shardcron.after.on";
/// The most upstream jobs one job may name (a fan-in wider than this is a mistake, and each
/// upstream costs a record per workflow run).
pub const MAX_UPSTREAMS: usize = 64;

/// Why a job's declaration is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DependencyError {
    /// `shardcron.after` has an empty entry.
    #[error("props.shardcron.after: an empty job name in {value:?}")]
    EmptyName {
        /// The whole value.
        value: String,
    },
    /// An entry is not a job name.
    #[error("props.shardcron.after: {name:?} is not a job name: {reason}")]
    BadName {
        /// The entry.
        name: String,
        /// Why.
        reason: String,
    },
    /// More upstreams than [`MAX_UPSTREAMS`].
    #[error("props.shardcron.after: more than {MAX_UPSTREAMS} upstream jobs")]
    TooMany,
    /// `shardcron.after.on` is neither `success` nor `completed`.
    #[error("props.shardcron.after.on: {value:?} is neither `success` nor `completed`")]
    BadOn {
        /// The value.
        value: String,
    },
    /// `shardcron.after.on` without `shardcron.after`.
    #[error("props.shardcron.after.on is set but props.shardcron.after is not")]
    OnWithoutAfter,
}
