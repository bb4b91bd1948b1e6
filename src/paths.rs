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
    /// `systemTime`.
    SystemTime,
    /// `systemTime/current`: written to read the registry's clock.
    SystemTimeCurrent,
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
            SystemTime => format!("/{job}/systemTime"),
            SystemTimeCurrent => format!("/{job}/systemTime/current"),
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
        ["systemTime"] => SystemTime,
        ["systemTime", "current"] => SystemTimeCurrent,
        _ => return Err(unrecognised(path)),
    })
}

fn unrecognised(path: &str) -> PathError {
    PathError::Unrecognised {
        path: path.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every variant once, with its path for job `orders`.
    fn every_node() -> Vec<(JobNode, &'static str)> {
        use JobNode::*;
        let id = || InstanceId::parse("192.0.2.2@-@9526").unwrap();
        let i = ShardItem(12);
        vec![
            (Root, "/orders"),
            (Config, "/orders/config"),
            (Servers, "/orders/servers"),
            (Server("192.0.2.2".into()), "/orders/servers/192.0.2.2"),
            (Instances, "/orders/instances"),
            (Instance(id()), "/orders/instances/192.0.2.2@-@9526"),
            (Trigger, "/orders/trigger"),
            (TriggerInstance(id()), "/orders/trigger/192.0.2.2@-@9526"),
            (Sharding, "/orders/sharding"),
            (ShardingItem(ShardItem(0)), "/orders/sharding/0"),
            (ShardingInstance(i), "/orders/sharding/12/instance"),
            (ShardingRunning(i), "/orders/sharding/12/running"),
            (ShardingMisfire(i), "/orders/sharding/12/misfire"),
            (ShardingDisabled(i), "/orders/sharding/12/disabled"),
            (ShardingFailover(i), "/orders/sharding/12/failover"),
            (ShardingFailovering(i), "/orders/sharding/12/failovering"),
            (Leader, "/orders/leader"),
            (LeaderElection, "/orders/leader/election"),
            (LeaderElectionInstance, "/orders/leader/election/instance"),
            (LeaderSharding, "/orders/leader/sharding"),
            (LeaderShardingNecessary, "/orders/leader/sharding/necessary"),
            (
                LeaderShardingProcessing,
                "/orders/leader/sharding/processing",
            ),
            (LeaderFailover, "/orders/leader/failover"),
            (LeaderFailoverItems, "/orders/leader/failover/items"),
            (LeaderFailoverItem(i), "/orders/leader/failover/items/12"),
            (SystemTime, "/orders/systemTime"),
            (SystemTimeCurrent, "/orders/systemTime/current"),
        ]
    }

    /// A number per variant; being exhaustive, it stops compiling when a variant is added, which
    /// is the reminder to add it to [`every_node`].
    fn variant_index(node: &JobNode) -> usize {
        use JobNode::*;
        match node {
            Root => 0,
            Config => 1,
            Servers => 2,
            Server(_) => 3,
            Instances => 4,
            Instance(_) => 5,
            Trigger => 6,
            TriggerInstance(_) => 7,
            Sharding => 8,
            ShardingItem(_) => 9,
            ShardingInstance(_) => 10,
            ShardingRunning(_) => 11,
            ShardingMisfire(_) => 12,
            ShardingDisabled(_) => 13,
            ShardingFailover(_) => 14,
            ShardingFailovering(_) => 15,
            Leader => 16,
            LeaderElection => 17,
            LeaderElectionInstance => 18,
            LeaderSharding => 19,
            LeaderShardingNecessary => 20,
            LeaderShardingProcessing => 21,
            LeaderFailover => 22,
            LeaderFailoverItems => 23,
            LeaderFailoverItem(_) => 24,
            SystemTime => 25,
            SystemTimeCurrent => 26,
        }
    }

    #[test]
    fn every_node_has_its_contract_path_and_parses_back_to_itself() {
        let job = JobName::new("orders").unwrap();
        let nodes = every_node();
        let mut indices: Vec<usize> = nodes.iter().map(|(node, _)| variant_index(node)).collect();
        indices.sort_unstable();
        assert_eq!(indices, (0..=26).collect::<Vec<_>>(), "each variant once");
        for (node, path) in nodes {
            assert_eq!(node.to_path(&job), path, "{node:?}");
            assert_eq!(JobNode::parse(path), Ok((job.clone(), node)), "{path}");
        }
    }

    #[test]
    fn paths_outside_the_layout_are_refused_with_the_step_that_failed() {
        let table: &[(&str, &str)] = &[
            ("", "not absolute"),
            ("orders/config", "not absolute"),
            ("/", "unrecognised"),
            ("/orders/", "unrecognised"),
            ("/orders//config", "unrecognised"),
            ("/orders/config/", "unrecognised"),
            ("/orders/Config", "unrecognised"),
            ("/orders/leader/election/latch", "unrecognised"),
            (
                "/orders/leader/election/latch/_c_1f-latch-0000000001",
                "unrecognised",
            ),
            ("/orders/sharding/0/owner", "unrecognised"),
            ("/orders/sharding/0/running/x", "unrecognised"),
            ("/orders/servers/192.0.2.2/x", "unrecognised"),
            ("/orders/leader/failover/items/1/x", "unrecognised"),
            ("/a b/config", "job name"),
            ("/zookeeper/quota", "job name"),
            ("//config", "job name"),
            ("/orders/servers/", "server ip"),
            ("/orders/instances/192.0.2.2", "instance id"),
            ("/orders/trigger/@-@1", "instance id"),
            ("/orders/sharding/01", "shard item"),
            ("/orders/sharding/-1/running", "shard item"),
            ("/orders/sharding/latch", "shard item"),
            ("/orders/leader/failover/items/x", "shard item"),
        ];
        for &(path, expected) in table {
            let step = match JobNode::parse(path) {
                Ok(parsed) => panic!("{path:?} parsed as {parsed:?}"),
                Err(PathError::NotAbsolute { .. }) => "not absolute",
                Err(PathError::Unrecognised { .. }) => "unrecognised",
                Err(PathError::BadJobName { .. }) => "job name",
                Err(PathError::BadServerIp { .. }) => "server ip",
                Err(PathError::BadInstanceId { .. }) => "instance id",
                Err(PathError::BadShardItem { .. }) => "shard item",
            };
            assert_eq!(step, expected, "{path:?}");
        }
    }

    #[test]
    fn a_server_node_refuses_an_ip_that_is_not_one_segment() {
        assert_eq!(
            JobNode::server("10.0.0.1"),
            Ok(JobNode::Server("10.0.0.1".into()))
        );
        for bad in ["", "10.0.0.1/x"] {
            assert_eq!(
                JobNode::server(bad),
                Err(PathError::BadServerIp { ip: bad.into() })
            );
        }
    }
}
