//! Nodes under test: on which registry they run, how they start, and the registry op counters they
//! are measured with.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use shardcron::config::JobConfig;
use shardcron::job::SharedHandler;
use shardcron::node::{NodeBuilder, NodeHandle};
use shardcron::registry::embedded::EmbeddedServer;
use shardcron::registry::zookeeper::{ZkConfig, ZkConnector};
use shardcron::registry::{Connector, OpKind};
use shardcron::{InstanceId, NodeOptions};

/// Where a scenario's nodes register.
#[derive(Debug, Clone)]
pub(crate) enum Backend {
    /// A real ZooKeeper at this address.
    Zk(SocketAddr),
    /// One in-process tree shared by the scenario's nodes.
    Embedded(EmbeddedServer),
}

impl Backend {
    /// The name printed in the table.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Backend::Zk(_) => "ZooKeeper",
            Backend::Embedded(_) => "embedded",
        }
    }

    /// A connector for one node (its own, so that its counters are its own on ZooKeeper).
    pub(crate) fn connector(&self, namespace: &str, session_timeout: Duration) -> Counted {
        match self {
            Backend::Zk(addr) => {
                let config = ZkConfig::new(&addr.to_string(), namespace)
                    .expect("bench namespaces are valid")
                    .with_session_timeout(session_timeout)
                    .with_connection_timeout(session_timeout);
                let zk = Arc::new(ZkConnector::new(config));
                Counted {
                    connector: zk.clone(),
                    counts: CountSource::Zk(zk),
                }
            }
            Backend::Embedded(server) => Counted {
                connector: Arc::new(
                    server
                        .connector(namespace)
                        .with_session_timeout(session_timeout),
                ),
                counts: CountSource::Embedded(server.clone()),
            },
        }
    }
}

/// A connector and where its calls are counted.
#[derive(Debug, Clone)]
pub(crate) struct Counted {
    /// What the node connects with.
    pub(crate) connector: Arc<dyn Connector>,
    counts: CountSource,
}

#[derive(Debug, Clone)]
enum CountSource {
    /// This connector's own sessions.
    Zk(Arc<ZkConnector>),
    /// Every session of the tree: the embedded server counts server-wide.
    Embedded(EmbeddedServer),
}

impl Counted {
    /// Calls so far, folded into reads, writes and watches.
    pub(crate) fn counts(&self) -> Counts {
        let of = |kind: OpKind| -> u64 {
            match &self.counts {
                CountSource::Zk(zk) => {
                    let c = zk.op_counts();
                    c.ok(kind) + c.err(kind)
                }
                CountSource::Embedded(server) => {
                    server.op_counts().get(&kind).copied().unwrap_or(0)
                }
            }
        };
        Counts {
            reads: [
                OpKind::Get,
                OpKind::Children,
                OpKind::Exists,
                OpKind::List,
                OpKind::GetMany,
            ]
            .map(of)
            .iter()
            .sum(),
            writes: [OpKind::Create, OpKind::Set, OpKind::Delete, OpKind::Multi]
                .map(of)
                .iter()
                .sum(),
            watches: of(OpKind::Watch),
        }
    }

    /// Operations of `kind` this connector's sessions had applied (plain calls and the operations
    /// of multi-ops that succeeded), ZooKeeper only: the `running` markers a node wrote.
    pub(crate) fn applied(&self, kind: OpKind) -> Option<u64> {
        match &self.counts {
            CountSource::Zk(zk) => Some(zk.op_counts().applied(kind)),
            CountSource::Embedded(_) => None,
        }
    }

    /// Whether the counts cover only this connector (ZooKeeper) or the whole tree (embedded).
    pub(crate) fn is_per_node(&self) -> bool {
        matches!(self.counts, CountSource::Zk(_))
    }
}

/// Registry calls folded by effect. A multi-op counts once, as one write.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    /// get, children, exists, list_subtree.
    pub(crate) reads: u64,
    /// create, set, delete, multi.
    pub(crate) writes: u64,
    /// Recursive watches set.
    pub(crate) watches: u64,
}

impl Counts {
    /// The calls between `earlier` and `self`.
    pub(crate) fn since(self, earlier: Counts) -> Counts {
        Counts {
            reads: self.reads - earlier.reads,
            writes: self.writes - earlier.writes,
            watches: self.watches - earlier.watches,
        }
    }

    /// Sum of two nodes' counts.
    pub(crate) fn plus(self, other: Counts) -> Counts {
        Counts {
            reads: self.reads + other.reads,
            writes: self.writes + other.writes,
            watches: self.watches + other.watches,
        }
    }
}

/// A fresh namespace per cluster, so scenarios never see each other's nodes.
pub(crate) fn namespace(what: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "bench-{what}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// Instance `n` of a bench (`127.0.0.{n}@-@{n}`).
pub(crate) fn instance(n: u32) -> InstanceId {
    InstanceId::parse(format!("127.0.0.{n}@-@{n}")).expect("a valid instance id")
}

/// Starts a node running `jobs`.
pub(crate) async fn start_node(
    connector: Arc<dyn Connector>,
    id: InstanceId,
    jobs: Vec<(JobConfig, SharedHandler)>,
) -> NodeHandle {
    start_node_serving(connector, id, jobs, None).await
}

/// [`start_node`], serving `/metrics` on `metrics` when given.
pub(crate) async fn start_node_serving(
    connector: Arc<dyn Connector>,
    id: InstanceId,
    jobs: Vec<(JobConfig, SharedHandler)>,
    metrics: Option<std::net::SocketAddr>,
) -> NodeHandle {
    let mut builder = NodeBuilder::new(connector)
        .instance_id(id)
        .options(NodeOptions {
            shutdown_timeout: Duration::from_secs(5),
            ..NodeOptions::default()
        });
    if let Some(addr) = metrics {
        builder = builder.metrics(addr);
    }
    for (config, handler) in jobs {
        builder = builder.job(config, "bench", handler);
    }
    builder.start().await.expect("the bench node starts")
}

/// A job of `items` items on cron `cron`, in UTC (the delay arithmetic assumes whole UTC seconds).
pub(crate) fn job(name: &str, items: i32, cron: &str, monitor: bool) -> JobConfig {
    JobConfig::new(name, items)
        .cron(cron)
        .time_zone("GMT")
        .monitor_execution(monitor)
        .failover(monitor)
}

/// Waits until every job of `jobs` shows this node's instance node in its mirror: the node has
/// registered them all.
pub(crate) async fn wait_registered(node: &NodeHandle, jobs: &[String], within: Duration) -> bool {
    let below = format!("instances/{}", node.instance_id());
    wait_mirrored(node, jobs, &below, within).await
}

/// Waits until every one-item job of `jobs` has an owner for item 0 in the node's mirror: its
/// first sharding is committed, so its fires run on time.
pub(crate) async fn wait_sharded(node: &NodeHandle, jobs: &[String], within: Duration) -> bool {
    wait_mirrored(node, jobs, "sharding/0/instance", within).await
}

/// Waits until the node's mirror holds `/{job}/{below}` for every job of `jobs`. Polls every
/// 20 ms, resuming where the last look stopped (a bench harness timing a bulk operation, not
/// engine code).
async fn wait_mirrored(node: &NodeHandle, jobs: &[String], below: &str, within: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + within;
    let mut next = 0;
    while next < jobs.len() {
        while next < jobs.len() && node.mirror().exists(&format!("/{}/{below}", jobs[next])) {
            next += 1;
        }
        if next < jobs.len() {
            if tokio::time::Instant::now() > deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    true
}
