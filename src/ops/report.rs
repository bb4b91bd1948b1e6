//! What the statistics calls report (ElasticJob's `JobBriefInfo`, `ShardingInfo`,
//! `ServerBriefInfo`), computed by pure functions from [`JobSnapshot`]s so that the status rules
//! are table-tested without a registry.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::snapshot::JobSnapshot;
use crate::config::JobConfig;
use crate::types::{InstanceId, JobName, ShardItem};
use crate::view::ServerStatus;

/// A job's overall status, in ElasticJob's precedence: crashed, disabled, sharding flag, ok.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum JobStatus {
    /// Instances run it and nothing is pending.
    Ok,
    /// No live instance.
    Crashed,
    /// Every server of the job is disabled.
    Disabled,
    /// `leader/sharding/necessary` is up: a resharding is due.
    ShardingFlag,
}

/// One item's status, in ElasticJob's precedence: disabled, running, sharding flag, pending.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ItemStatus {
    /// `sharding/{i}/disabled` is up.
    Disabled,
    /// `sharding/{i}/running` is up.
    Running,
    /// No live owner: the item waits for a resharding.
    ShardingFlag,
    /// Owned by a live instance, waiting for its next fire.
    Pending,
}

/// A server's status for one job (`servers/{ip}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ServerState {
    /// Takes items.
    Enabled,
    /// Takes no items.
    Disabled,
}

impl From<ServerStatus> for ServerState {
    fn from(s: ServerStatus) -> Self {
        match s {
            ServerStatus::Enabled => Self::Enabled,
            ServerStatus::Disabled => Self::Disabled,
        }
    }
}

/// One line of [`super::Ops::jobs`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JobBrief {
    /// The job.
    pub job_name: JobName,
    /// Its status.
    pub status: JobStatus,
    /// Its cron; `None` for a one-off job or an unreadable config.
    pub cron: Option<String>,
    /// Live instances.
    pub instance_count: usize,
    /// `shardingTotalCount`; `None` when the stored config cannot be read.
    pub sharding_total_count: Option<i32>,
    /// The config's description.
    pub description: Option<String>,
}

/// A child of the namespace root that is not a job, from [`super::Ops::job_roots`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NotAJob {
    /// The node's name.
    pub root: String,
    /// Why it is not a job.
    pub reason: String,
}

/// A job or root name as a table shows it: as is when it is plain (letters, digits, `-`, `_`,
/// `.`), else quoted with escapes, so that spaces, `#` or control characters stay visible.
///
/// ```
/// use shardcron::ops::quote_name;
/// assert_eq!(quote_name("orders"), "orders");
/// assert_eq!(quote_name("my job"), "\"my job\"");
/// assert_eq!(quote_name("a\u{1}b"), "\"a\\u{1}b\"");
/// ```
pub fn quote_name(name: &str) -> String {
    let plain = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if plain {
        name.to_owned()
    } else {
        format!("{name:?}")
    }
}

/// One server of a job in [`JobDetail`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerLine {
    /// The server's IP.
    pub ip: String,
    /// `ENABLED` or `DISABLED`.
    pub status: ServerState,
}

/// One item of a job in [`JobDetail`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ItemLine {
    /// The item.
    pub item: ShardItem,
    /// Its owner (`sharding/{i}/instance`).
    pub owner: Option<InstanceId>,
    /// Its status.
    pub status: ItemStatus,
    /// The instance that took it over from a crashed owner (`sharding/{i}/failover`).
    pub failover: Option<InstanceId>,
    /// A fire was missed while it ran; a catch-up run is due.
    pub misfire: bool,
}

/// What [`super::Ops::job`] reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JobDetail {
    /// The job.
    pub job_name: JobName,
    /// The job root's data: `SCRIPT` or the handler name.
    pub job_type: String,
    /// Its status.
    pub status: JobStatus,
    /// The stored config, when it parses.
    pub config: Option<JobConfig>,
    /// Why the stored config does not parse.
    pub config_error: Option<String>,
    /// Live instances.
    pub instances: Vec<InstanceId>,
    /// `servers/{ip}` statuses.
    pub servers: Vec<ServerLine>,
    /// The elected leader.
    pub leader: Option<InstanceId>,
    /// Every item of the config and every item with a `sharding/{i}` node.
    pub items: Vec<ItemLine>,
}

/// One line of [`super::Ops::servers`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerBrief {
    /// The server's IP.
    pub ip: String,
    /// Live instances on it, across jobs.
    pub instances: Vec<InstanceId>,
    /// Jobs with a `servers/{ip}` node for it.
    pub jobs: Vec<JobName>,
    /// How many of those jobs have it disabled.
    pub disabled_jobs: usize,
}

impl JobSnapshot {
    /// The stored config, or why it cannot be read; `None` when there is no config node.
    pub(crate) fn config(&self) -> Option<Result<JobConfig, String>> {
        self.config_yaml
            .as_deref()
            .map(|y| JobConfig::from_yaml(y).map_err(|e| e.to_string()))
    }
}

/// The job's status: ElasticJob's `JobStatisticsAPI` rules.
pub(crate) fn job_status(snap: &JobSnapshot) -> JobStatus {
    let view = &snap.view;
    if view.instances.is_empty() {
        JobStatus::Crashed
    } else if !view.servers.is_empty()
        && view.servers.values().all(|s| *s == ServerStatus::Disabled)
    {
        JobStatus::Disabled
    } else if view.sharding_necessary {
        JobStatus::ShardingFlag
    } else {
        JobStatus::Ok
    }
}

/// The job's line in the jobs table.
pub(crate) fn job_brief(job: &JobName, snap: &JobSnapshot) -> JobBrief {
    let config = snap.config().and_then(Result::ok);
    JobBrief {
        job_name: job.clone(),
        status: job_status(snap),
        cron: config
            .as_ref()
            .and_then(|c| c.cron_expr().map(str::to_owned)),
        instance_count: snap.view.instances.len(),
        sharding_total_count: config.as_ref().map(|c| c.sharding_total_count),
        description: config.and_then(|c| c.description),
    }
}

/// The job's full report.
pub(crate) fn job_detail(job: &JobName, snap: &JobSnapshot) -> JobDetail {
    let view = &snap.view;
    let (config, config_error) = match snap.config() {
        Some(Ok(c)) => (Some(c), None),
        Some(Err(e)) => (None, Some(e)),
        None => (None, Some("no config node".to_owned())),
    };
    let total = config
        .as_ref()
        .map(|c| u32::try_from(c.sharding_total_count).unwrap_or(0))
        .unwrap_or(0);
    let numbers: BTreeSet<ShardItem> = (0..total)
        .map(ShardItem)
        .chain(view.items.keys().copied())
        .collect();
    let items = numbers
        .into_iter()
        .map(|item| {
            let iv = view.items.get(&item).cloned().unwrap_or_default();
            let live_owner = iv
                .owner
                .as_ref()
                .is_some_and(|o| view.instances.contains(o));
            let status = if iv.disabled {
                ItemStatus::Disabled
            } else if iv.running.is_some() {
                ItemStatus::Running
            } else if !live_owner {
                ItemStatus::ShardingFlag
            } else {
                ItemStatus::Pending
            };
            ItemLine {
                item,
                owner: iv.owner,
                status,
                failover: iv.failover,
                misfire: iv.misfire,
            }
        })
        .collect();
    JobDetail {
        job_name: job.clone(),
        job_type: snap.root_data.clone(),
        status: job_status(snap),
        config,
        config_error,
        instances: view.instances.iter().cloned().collect(),
        servers: view
            .servers
            .iter()
            .map(|(ip, s)| ServerLine {
                ip: ip.clone(),
                status: (*s).into(),
            })
            .collect(),
        leader: view.leader.clone(),
        items,
    }
}

/// Every server IP that a job names (`servers/{ip}` or a live instance), with its instances and jobs.
pub(crate) fn server_briefs<'a>(
    jobs: impl IntoIterator<Item = (&'a JobName, &'a JobSnapshot)>,
) -> Vec<ServerBrief> {
    #[derive(Default)]
    struct Acc {
        instances: BTreeSet<InstanceId>,
        jobs: BTreeSet<JobName>,
        disabled: usize,
    }
    let mut by_ip: BTreeMap<String, Acc> = BTreeMap::new();
    for (job, snap) in jobs {
        for (ip, status) in &snap.view.servers {
            let acc = by_ip.entry(ip.clone()).or_default();
            acc.jobs.insert(job.clone());
            if *status == ServerStatus::Disabled {
                acc.disabled += 1;
            }
        }
        for id in &snap.view.instances {
            let acc = by_ip.entry(id.ip().to_owned()).or_default();
            acc.instances.insert(id.clone());
            acc.jobs.insert(job.clone());
        }
    }
    by_ip
        .into_iter()
        .map(|(ip, acc)| ServerBrief {
            ip,
            instances: acc.instances.into_iter().collect(),
            jobs: acc.jobs.into_iter().collect(),
            disabled_jobs: acc.disabled,
        })
        .collect()
}
