//! Typed registry nodes: every node of a job in the layout contract
//! (`/work/shared/spec/registry-layout.md`), with [`JobNode::to_path`] and [`JobNode::parse`].
//!
//! Paths are relative to the namespace, because a registry session is rooted there:
//! `/{job}/sharding/{i}/running`, not `/{namespace}/{job}/...`. Nothing else in the crate builds or
//! splits a path by hand, so the layout lives in this one file.

use crate::{IdError, InstanceId, JobName, ShardItem};

/// Why a path was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// The path does not start with `/`.
    #[error("path {path:?} is not absolute")]
    NotAbsolute {
        /// The refused path.
        path: String,
    },
    /// The first segment is not a valid job name.
    #[error("path {path:?} does not start with a job name")]
    BadJobName {
        /// The refused path.
        path: String,
        /// Why the name was refused.
        #[source]
        source: IdError,
    },
    /// A server ip (`servers/{ip}`) is empty or contains `/`.
    #[error("server ip {ip:?} is empty or contains '/'")]
    BadServerIp {
        /// The refused ip.
        ip: String,
    },
    /// The segment naming an instance (`instances/{id}`, `trigger/{id}`) is not an instance id.
    #[error("path {path:?} names no valid instance")]
    BadInstanceId {
        /// The refused path.
        path: String,
        /// Why the id was refused.
        #[source]
        source: IdError,
    },
    /// The segment naming an item (`sharding/{i}`, `leader/failover/items/{i}`) is not an item.
    #[error("path {path:?} names no valid sharding item")]
    BadShardItem {
        /// The refused path.
        path: String,
        /// Why the item was refused.
        #[source]
        source: IdError,
    },
    /// The namespace root, or a node the layout does not define, such as Curator's
    /// `leader/election/latch` written by Java instances. Callers skip these.
    #[error("path {path:?} is not a node shardcron knows")]
    Unrecognised {
        /// The path.
        path: String,
    },
}

/// One node of a job's subtree. Each variant's doc gives its path below `/{job}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum JobNode {
    /// The job root: its data is the job's type or handler name.
    Root,
    /// `config`: the job's YAML configuration.
    Config,
    /// `servers`.
    Servers,
    /// `servers/{ip}`: `ENABLED` or `DISABLED`. Build it with [`JobNode::server`] to validate the ip.
    Server(String),
    /// `instances`.
    Instances,
    /// `instances/{instanceId}`: an instance's ephemeral registration.
    Instance(InstanceId),
    /// `trigger`.
    Trigger,
    /// `trigger/{instanceId}`: a one-off run requested for that instance.
    TriggerInstance(InstanceId),
    /// `sharding`.
    Sharding,
    /// `sharding/{i}`.
    ShardingItem(ShardItem),
    /// `sharding/{i}/instance`: the item's owner.
    ShardingInstance(ShardItem),
    /// `sharding/{i}/running`.
    ShardingRunning(ShardItem),
    /// `sharding/{i}/misfire`.
    ShardingMisfire(ShardItem),
    /// `sharding/{i}/disabled`.
    ShardingDisabled(ShardItem),
    /// `sharding/{i}/failover`: the instance that took the item over.
    ShardingFailover(ShardItem),
    /// `sharding/{i}/failovering`: the taker, while it runs the item.
    ShardingFailovering(ShardItem),
    /// `leader`.
    Leader,
    /// `leader/election`.
    LeaderElection,
    /// `leader/election/instance`: the leader's id.
    LeaderElectionInstance,
    /// `leader/sharding`.
    LeaderSharding,
    /// `leader/sharding/necessary`: resharding is due.
    LeaderShardingNecessary,
    /// `leader/sharding/processing`: the leader is sharding.
    LeaderShardingProcessing,
    /// `leader/failover`.
    LeaderFailover,
    /// `leader/failover/items`.
    LeaderFailoverItems,
    /// `leader/failover/items/{i}`: an item waiting for a taker.
    LeaderFailoverItem(ShardItem),
    /// `guarantee`: distribute-once listeners' coordination.
    Guarantee,
    /// `guarantee/started`.
    GuaranteeStarted,
    /// `guarantee/started/{i}`: item `i` of the current fire has started (its instance waits).
    GuaranteeStartedItem(ShardItem),
    /// `guarantee/completed`.
    GuaranteeCompleted,
    /// `guarantee/completed/{i}`: item `i` of the current fire has completed.
    GuaranteeCompletedItem(ShardItem),
    /// `systemTime`.
    SystemTime,
    /// `systemTime/current`: written to read the registry's clock.
    SystemTimeCurrent,
    /// `shardcron`: shardcron's own records, where a Java ElasticJob instance never looks.
    Extensions,
    /// `shardcron/fired`.
    Fired,
    /// `shardcron/fired/{i}`: the last cron instant item `i` was fired for (RFC 3339), kept by
    /// jobs with a catch-up window ([`crate::decide::catchup`]).
    FiredItem(ShardItem),
    /// `shardcron/trigger`.
    TriggerParams,
    /// `shardcron/trigger/{instanceId}`: the parameters of the trigger `trigger/{instanceId}`
    /// asks for (JSON, [`crate::ops::TriggerParams`]); a Java instance sees the plain trigger.
    TriggerParamsFor(InstanceId),
    /// `shardcron/backfill`: a backfill's request (JSON, [`crate::decide::backfill::Request`]).
    Backfill,
    /// `shardcron/backfill/{i}`: how far item `i` got through it.
    BackfillItem(ShardItem),
    /// `shardcron/workflow`: the job's workflow records ([`crate::decide::workflow`]).
    Workflow,
    /// `shardcron/workflow/{run}@{i}` (item `i`'s state in workflow run `run`: `running:{instance}`,
    /// then its end) or `shardcron/workflow/{run}@start` (the job's start decision for the run).
    /// The name is checked by [`JobNode::workflow_record`].
    WorkflowRecord(String),
    /// `shardcron/downstream`: the jobs that run after this one.
    Downstream,
    /// `shardcron/downstream/{job}`: `job` runs after this one (written by its instances).
    DownstreamJob(JobName),
    /// `adoptable`: shardcron's own record (Java never reads it) that the job was created at
    /// runtime (`shardcronctl create`, the console, [`crate::ops::Ops::create`]) for nodes that
    /// adopt such jobs; its data is `created`, or `removing` while a removal stops them.
    Adoptable,
}

impl JobNode {
    /// `servers/{ip}`, refusing an ip that is empty or contains `/`.
    pub fn server(ip: impl Into<String>) -> Result<Self, PathError> {
        let ip = ip.into();
        if ip.is_empty() || ip.contains('/') {
            return Err(PathError::BadServerIp { ip });
        }
        Ok(Self::Server(ip))
    }

    /// `shardcron/workflow/{name}`, refusing a name that is not `{run}@{item}` or `{run}@start`
    /// (a run id is digits, or `m` and digits, at most 20 characters).
    pub fn workflow_record(name: &str) -> Option<Self> {
        let (run, what) = name.split_once('@')?;
        let digits = run.strip_prefix('m').unwrap_or(run);
        let run_ok =
            !digits.is_empty() && run.len() <= 20 && digits.bytes().all(|b| b.is_ascii_digit());
        let what_ok = what == "start" || what.parse::<ShardItem>().is_ok();
        (run_ok && what_ok).then(|| Self::WorkflowRecord(name.to_owned()))
    }

    /// The node's path within the namespace.
    ///
    /// ```
    /// use shardcron::{paths::JobNode, JobName, ShardItem};
    /// let job = JobName::new("orders").unwrap();
    /// assert_eq!(JobNode::ShardingRunning(ShardItem(2)).to_path(&job), "/orders/sharding/2/running");
    /// ```
    pub fn to_path(&self, job: &JobName) -> String {
        use JobNode::*;
        match self {
            Root => format!("/{job}"),
            Config => format!("/{job}/config"),
            Servers => format!("/{job}/servers"),
            Server(ip) => format!("/{job}/servers/{ip}"),
            Instances => format!("/{job}/instances"),
            Instance(id) => format!("/{job}/instances/{id}"),
            Trigger => format!("/{job}/trigger"),
            TriggerInstance(id) => format!("/{job}/trigger/{id}"),
            Sharding => format!("/{job}/sharding"),
            ShardingItem(i) => format!("/{job}/sharding/{i}"),
            ShardingInstance(i) => format!("/{job}/sharding/{i}/instance"),
            ShardingRunning(i) => format!("/{job}/sharding/{i}/running"),
            ShardingMisfire(i) => format!("/{job}/sharding/{i}/misfire"),
            ShardingDisabled(i) => format!("/{job}/sharding/{i}/disabled"),
            ShardingFailover(i) => format!("/{job}/sharding/{i}/failover"),
            ShardingFailovering(i) => format!("/{job}/sharding/{i}/failovering"),
            Leader => format!("/{job}/leader"),
            LeaderElection => format!("/{job}/leader/election"),
            LeaderElectionInstance => format!("/{job}/leader/election/instance"),
            LeaderSharding => format!("/{job}/leader/sharding"),
            LeaderShardingNecessary => format!("/{job}/leader/sharding/necessary"),
            LeaderShardingProcessing => format!("/{job}/leader/sharding/processing"),
            LeaderFailover => format!("/{job}/leader/failover"),
            LeaderFailoverItems => format!("/{job}/leader/failover/items"),
            LeaderFailoverItem(i) => format!("/{job}/leader/failover/items/{i}"),
            Guarantee => format!("/{job}/guarantee"),
            GuaranteeStarted => format!("/{job}/guarantee/started"),
            GuaranteeStartedItem(i) => format!("/{job}/guarantee/started/{i}"),
            GuaranteeCompleted => format!("/{job}/guarantee/completed"),
            GuaranteeCompletedItem(i) => format!("/{job}/guarantee/completed/{i}"),
            SystemTime => format!("/{job}/systemTime"),
            SystemTimeCurrent => format!("/{job}/systemTime/current"),
            Extensions => format!("/{job}/shardcron"),
            Fired => format!("/{job}/shardcron/fired"),
            FiredItem(i) => format!("/{job}/shardcron/fired/{i}"),
            TriggerParams => format!("/{job}/shardcron/trigger"),
            TriggerParamsFor(id) => format!("/{job}/shardcron/trigger/{id}"),
            Backfill => format!("/{job}/shardcron/backfill"),
            BackfillItem(i) => format!("/{job}/shardcron/backfill/{i}"),
            Workflow => format!("/{job}/shardcron/workflow"),
            WorkflowRecord(name) => format!("/{job}/shardcron/workflow/{name}"),
            Downstream => format!("/{job}/shardcron/downstream"),
            DownstreamJob(down) => format!("/{job}/shardcron/downstream/{down}"),
            Adoptable => format!("/{job}/adoptable"),
        }
    }

    /// Reads a namespace-relative path as a job and one of its nodes.
    ///
    /// This runs for every watch event, so it splits in place: no regex, and nothing is allocated
    /// but the returned names. The namespace root and nodes the layout does not define give
    /// [`PathError::Unrecognised`].
    ///
    /// ```
    /// use shardcron::{paths::{JobNode, PathError}, ShardItem};
    /// let (job, node) = JobNode::parse("/orders/leader/failover/items/7").unwrap();
    /// assert_eq!((job.as_str(), node), ("orders", JobNode::LeaderFailoverItem(ShardItem(7))));
    /// let latch = JobNode::parse("/orders/leader/election/latch");
    /// assert!(matches!(latch, Err(PathError::Unrecognised { .. })));
    /// ```
    pub fn parse(path: &str) -> Result<(JobName, JobNode), PathError> {
        let rest = path
            .strip_prefix('/')
            .ok_or_else(|| PathError::NotAbsolute {
                path: path.to_owned(),
            })?;
        if rest.is_empty() {
            return Err(unrecognised(path));
        }
        let (job, below) = match rest.split_once('/') {
            Some((job, below)) => (job, Some(below)),
            None => (rest, None),
        };
        let job = JobName::new(job).map_err(|source| PathError::BadJobName {
            path: path.to_owned(),
            source,
        })?;
        let node = match below {
            None => JobNode::Root,
            Some(below) => parse_below_job(path, below)?,
        };
        Ok((job, node))
    }
}

/// The deepest node (`sharding/{i}/failovering`, `leader/failover/items/{i}`) has four segments.
const MAX_SEGMENTS: usize = 4;

/// Parses the part of `path` below the job name.
fn parse_below_job(path: &str, below: &str) -> Result<JobNode, PathError> {
    use JobNode::*;
    let mut segments = [""; MAX_SEGMENTS];
    let mut count = 0;
    for segment in below.split('/') {
        if count == MAX_SEGMENTS {
            return Err(unrecognised(path));
        }
        segments[count] = segment;
        count += 1;
    }
    let item = |segment: &str| {
        segment
            .parse::<ShardItem>()
            .map_err(|source| PathError::BadShardItem {
                path: path.to_owned(),
                source,
            })
    };
    let instance = |segment: &str| {
        InstanceId::parse(segment).map_err(|source| PathError::BadInstanceId {
            path: path.to_owned(),
            source,
        })
    };
    Ok(match &segments[..count] {
        ["config"] => Config,
        ["servers"] => Servers,
        ["servers", ip] => JobNode::server(*ip)?,
        ["instances"] => Instances,
        ["instances", id] => Instance(instance(id)?),
        ["trigger"] => Trigger,
        ["trigger", id] => TriggerInstance(instance(id)?),
        ["sharding"] => Sharding,
        ["sharding", i] => ShardingItem(item(i)?),
        ["sharding", i, leaf] => {
            let node = match *leaf {
                "instance" => ShardingInstance,
                "running" => ShardingRunning,
                "misfire" => ShardingMisfire,
                "disabled" => ShardingDisabled,
                "failover" => ShardingFailover,
                "failovering" => ShardingFailovering,
                _ => return Err(unrecognised(path)),
            };
            node(item(i)?)
        }
        ["leader"] => Leader,
        ["leader", "election"] => LeaderElection,
        ["leader", "election", "instance"] => LeaderElectionInstance,
        ["leader", "sharding"] => LeaderSharding,
        ["leader", "sharding", "necessary"] => LeaderShardingNecessary,
        ["leader", "sharding", "processing"] => LeaderShardingProcessing,
        ["leader", "failover"] => LeaderFailover,
        ["leader", "failover", "items"] => LeaderFailoverItems,
        ["leader", "failover", "items", i] => LeaderFailoverItem(item(i)?),
        ["guarantee"] => Guarantee,
        ["guarantee", "started"] => GuaranteeStarted,
        ["guarantee", "started", i] => GuaranteeStartedItem(item(i)?),
        ["guarantee", "completed"] => GuaranteeCompleted,
        ["guarantee", "completed", i] => GuaranteeCompletedItem(item(i)?),
        ["systemTime"] => SystemTime,
        ["systemTime", "current"] => SystemTimeCurrent,
        ["shardcron"] => Extensions,
        ["shardcron", "fired"] => Fired,
        ["shardcron", "fired", i] => FiredItem(item(i)?),
        ["shardcron", "trigger"] => TriggerParams,
        ["shardcron", "trigger", id] => TriggerParamsFor(instance(id)?),
        ["shardcron", "backfill"] => Backfill,
        ["shardcron", "backfill", i] => BackfillItem(item(i)?),
        ["shardcron", "workflow"] => Workflow,
        ["shardcron", "workflow", name] => {
            JobNode::workflow_record(name).ok_or_else(|| unrecognised(path))?
        }
        ["shardcron", "downstream"] => Downstream,
        ["shardcron", "downstream", down] => {
            DownstreamJob(JobName::new(*down).map_err(|source| PathError::BadJobName {
                path: path.to_owned(),
                source,
            })?)
        }
        ["adoptable"] => Adoptable,
        _ => return Err(unrecognised(path)),
    })
}

fn unrecognised(path: &str) -> PathError {
    PathError::Unrecognised {
        path: path.to_owned(),
    }
}

#[cfg(test)]
mod tests;
