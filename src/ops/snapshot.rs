//! One job's subtree, read straight from the registry in one listing and sorted into a
//! [`JobView`] (the same view the engine decides from), plus the root and `config` nodes.
//!
//! A short-lived client (`shardcronctl`) reads the registry: a listing is cheaper than feeding a
//! mirror and leaves no watch behind. A long-lived one that already feeds a [`Mirror`] (the
//! console) reads the same snapshot from it ([`JobSnapshot::from_mirror`]) and costs the registry
//! nothing per read.

use crate::paths::JobNode;
use crate::registry::mirror::{Mirror, Under};
use crate::registry::{ListedNode, Registry, RegistryError};
use crate::types::{InstanceId, JobName};
use crate::view::{JobView, ServerStatus};

/// A job's nodes as listed at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct JobSnapshot {
    /// The job.
    pub(crate) job: Option<JobName>,
    /// The job root's data: its type (`SCRIPT`) or handler name.
    pub(crate) root_data: String,
    /// The `config` node's text, when it exists.
    pub(crate) config_yaml: Option<String>,
    /// The `config` node's data version, for a versioned rewrite.
    pub(crate) config_version: Option<i32>,
    /// The coordination nodes.
    pub(crate) view: JobView,
}

impl JobSnapshot {
    /// Lists `/{job}`; `None` when the job root does not exist.
    pub(crate) async fn read(
        registry: &dyn Registry,
        job: &JobName,
    ) -> Result<Option<Self>, RegistryError> {
        match registry.list_subtree(&JobNode::Root.to_path(job)).await {
            Ok(nodes) => Ok(Some(Self::from_listing(job, &nodes))),
            Err(e) if e.is_no_node() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The same snapshot from `mirror` (a mirror of the whole namespace); `None` when the job
    /// root is not mirrored.
    pub(crate) fn from_mirror(mirror: &Mirror, job: &JobName) -> Option<Self> {
        let root = JobNode::Root.to_path(job);
        mirror.read_under(&root, |under| {
            under.get("")?;
            let mut snap = Self::empty(job);
            snap.apply_mirrored(job, &root, under);
            Some(snap)
        })
    }

    /// Applies the node at `path` (mirrored as `under`) and everything below it.
    fn apply_mirrored(&mut self, job: &JobName, path: &str, under: Under<'_>) {
        if let Some(node) = under.get("") {
            if let Ok((owner, kind)) = JobNode::parse(path) {
                if owner == *job {
                    self.apply(kind, &node.data, node.stat.version);
                }
            }
        }
        for (name, child) in under.children("") {
            self.apply_mirrored(job, &format!("{path}/{name}"), child);
        }
    }

    fn empty(job: &JobName) -> Self {
        JobSnapshot {
            job: Some(job.clone()),
            view: JobView {
                job: Some(job.clone()),
                ..JobView::default()
            },
            ..JobSnapshot::default()
        }
    }

    /// Sorts listed nodes into a snapshot. Nodes the layout does not define (Curator's latch,
    /// other tools' leftovers) and nodes of other jobs are skipped.
    pub(crate) fn from_listing(job: &JobName, nodes: &[ListedNode]) -> Self {
        let mut snap = Self::empty(job);
        for node in nodes {
            let Ok((owner, kind)) = JobNode::parse(&node.path) else {
                continue;
            };
            if owner != *job {
                continue;
            }
            snap.apply(kind, &node.data, node.stat.version);
        }
        snap
    }

    fn apply(&mut self, node: JobNode, data: &[u8], version: i32) {
        let text = || String::from_utf8_lossy(data).trim().to_owned();
        let view = &mut self.view;
        match node {
            JobNode::Root => self.root_data = text(),
            JobNode::Config => {
                self.config_yaml = Some(String::from_utf8_lossy(data).into_owned());
                self.config_version = Some(version);
            }
            JobNode::Server(ip) => {
                view.servers.insert(ip, ServerStatus::from_data(data));
            }
            JobNode::Instance(id) => {
                let job = &view.job;
                let labels = crate::sharding::parse_labels(data, || {
                    job.as_ref()
                        .map(|j| JobNode::Instance(id.clone()).to_path(j))
                        .unwrap_or_else(|| format!("instances/{id}"))
                });
                if !labels.is_empty() {
                    view.labels.insert(id.clone(), labels);
                }
                view.instances.insert(id);
            }
            JobNode::LeaderElectionInstance => view.leader = instance_of(data),
            JobNode::LeaderShardingNecessary => view.sharding_necessary = true,
            JobNode::LeaderShardingProcessing => view.sharding_processing = true,
            JobNode::LeaderFailoverItem(item) => {
                view.failover_marks.insert(item);
            }
            JobNode::ShardingItem(item) => {
                view.items.entry(item).or_default();
            }
            JobNode::ShardingInstance(item) => {
                let iv = view.items.entry(item).or_default();
                iv.owner = instance_of(data);
                iv.has_owner_node = true;
            }
            JobNode::ShardingRunning(item) => {
                view.items.entry(item).or_default().running = Some(text())
            }
            JobNode::ShardingMisfire(item) => view.items.entry(item).or_default().misfire = true,
            JobNode::ShardingDisabled(item) => view.items.entry(item).or_default().disabled = true,
            JobNode::ShardingFailover(item) => {
                view.items.entry(item).or_default().failover = instance_of(data)
            }
            JobNode::ShardingFailovering(item) => {
                view.items.entry(item).or_default().failovering = instance_of(data)
            }
            _ => {}
        }
    }
}

fn instance_of(data: &[u8]) -> Option<InstanceId> {
    std::str::from_utf8(data)
        .ok()
        .and_then(|s| InstanceId::parse(s.trim()).ok())
}
