//! [`JobView`]: a snapshot of one job's coordination nodes, read from the [`Mirror`] without a
//! registry call. Every decision in [`crate::decide`] takes a view and returns registry operations.

use std::collections::{BTreeMap, BTreeSet};

use crate::paths::JobNode;
use crate::store::{Mirror, Under};
use crate::types::{InstanceId, JobName, ShardItem};

mod namespace;

pub use namespace::NamespaceCache;

/// What `servers/{ip}` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerStatus {
    /// `ENABLED` (or empty, as ElasticJob 2.x wrote).
    Enabled,
    /// `DISABLED`.
    Disabled,
}

impl ServerStatus {
    /// Reads the node's data; anything but `DISABLED` counts as enabled, as in ElasticJob.
    pub fn from_data(data: &[u8]) -> Self {
        if data == b"DISABLED" {
            Self::Disabled
        } else {
            Self::Enabled
        }
    }

    /// The node's data.
    pub fn as_data(self) -> &'static [u8] {
        match self {
            Self::Enabled => b"ENABLED",
            Self::Disabled => b"DISABLED",
        }
    }
}

/// One item's nodes under `sharding/{i}`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ItemView {
    /// `sharding/{i}/instance`: the owner.
    pub owner: Option<InstanceId>,
    /// `sharding/{i}/instance` exists (its data may not name a valid instance).
    pub has_owner_node: bool,
    /// `sharding/{i}/instance`'s data version: every commit of a plan that sets it bumps it, so a
    /// start write checking it applies only under the plan the fire was planned with.
    pub owner_version: i32,
    /// `sharding/{i}/running`: who runs it now (`Some` with an unknown owner when the data is empty or
    /// not an instance id, as older writers left it).
    pub running: Option<String>,
    /// `sharding/{i}/misfire` exists.
    pub misfire: bool,
    /// `sharding/{i}/disabled` exists.
    pub disabled: bool,
    /// `sharding/{i}/failover`: the instance that took the item over.
    pub failover: Option<InstanceId>,
    /// `sharding/{i}/failovering`: the instance running the taken-over item.
    pub failovering: Option<InstanceId>,
}

/// A snapshot of one job's coordination state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobView {
    /// The job.
    pub job: Option<JobName>,
    /// Live instances (`instances/` children).
    pub instances: BTreeSet<InstanceId>,
    /// The labels of the live instances that carry any (`labels` in their `instances/{id}` YAML).
    pub labels: BTreeMap<InstanceId, BTreeSet<String>>,
    /// `servers/{ip}` statuses.
    pub servers: BTreeMap<String, ServerStatus>,
    /// `leader/election/instance`.
    pub leader: Option<InstanceId>,
    /// `leader/sharding/necessary` exists.
    pub sharding_necessary: bool,
    /// `leader/sharding/processing` exists.
    pub sharding_processing: bool,
    /// Items that have a `sharding/{i}` node.
    pub items: BTreeMap<ShardItem, ItemView>,
    /// `leader/failover/items/{i}` marks.
    pub failover_marks: BTreeSet<ShardItem>,
}

// The nodes `JobView::read` reads, relative to the job's node (`paths_below_the_job_are_its_nodes`
// checks them against `JobNode::to_path`).
const INSTANCES: &str = "instances";
const SERVERS: &str = "servers";
const LEADER: &str = "leader/election/instance";
const NECESSARY: &str = "leader/sharding/necessary";
const PROCESSING: &str = "leader/sharding/processing";
const SHARDING: &str = "sharding";
const FAILOVER_ITEMS: &str = "leader/failover/items";

pub(crate) fn instance_of(data: &[u8]) -> Option<InstanceId> {
    std::str::from_utf8(data)
        .ok()
        .and_then(|s| InstanceId::parse(s.trim()).ok())
}

impl JobView {
    /// Reads the job's nodes from the mirror. Nodes whose names do not parse (written by other tools)
    /// are left out.
    pub fn read(mirror: &Mirror, job: &JobName) -> Self {
        // Every machine step of every job reads this: the job's node is looked up once and the
        // rest below it (paths relative to the job, which `paths_below_the_job_are_its_nodes`
        // checks against `JobNode::to_path`), under one read lock.
        mirror.read_under(&JobNode::Root.to_path(job), |at| {
            Self::read_at(at, job, None)
        })
    }

    /// [`JobView::read`] by instance `me`: the ids that name `me` share its text (no copy each).
    pub fn read_for(mirror: &Mirror, job: &JobName, me: &InstanceId) -> Self {
        mirror.read_under(&JobNode::Root.to_path(job), |at| {
            Self::read_at(at, job, Some(me))
        })
    }

    fn read_at(at: Under<'_>, job: &JobName, me: Option<&InstanceId>) -> Self {
        let parse = |name: &str| match me {
            Some(me) => InstanceId::parse_known(name, me),
            None => InstanceId::parse(name),
        };
        let instance_of = |data: &[u8]| {
            let text = std::str::from_utf8(data).ok()?;
            parse(text.trim()).ok()
        };
        let mut view = JobView {
            job: Some(job.clone()),
            ..Default::default()
        };
        for (name, node) in at.children(INSTANCES) {
            if let Ok(id) = parse(name) {
                if let Some(data) = node.data("") {
                    let labels = crate::sharding::parse_labels(&data, || {
                        JobNode::Instance(id.clone()).to_path(job)
                    });
                    if !labels.is_empty() {
                        view.labels.insert(id.clone(), labels);
                    }
                }
                view.instances.insert(id);
            }
        }
        for (ip, node) in at.children(SERVERS) {
            if let Some(data) = node.data("") {
                view.servers
                    .insert(ip.to_owned(), ServerStatus::from_data(&data));
            }
        }
        view.leader = at.data(LEADER).and_then(|d| instance_of(&d));
        view.sharding_necessary = at.exists(NECESSARY);
        view.sharding_processing = at.exists(PROCESSING);
        for (name, node) in at.children(SHARDING) {
            let Ok(item) = name.parse::<ShardItem>() else {
                continue;
            };
            // One pass over the item's few children, not a lookup from the item for each leaf:
            // a fire reads every item of its job.
            let mut iv = ItemView::default();
            for (leaf, sub) in node.children("") {
                let Some(n) = sub.get("") else {
                    continue; // a placeholder: nothing mirrored there
                };
                match leaf {
                    "instance" => {
                        iv.has_owner_node = true;
                        iv.owner_version = n.stat.version;
                        iv.owner = instance_of(&n.data);
                    }
                    "running" => {
                        iv.running = Some(String::from_utf8_lossy(&n.data).trim().to_owned());
                    }
                    "misfire" => iv.misfire = true,
                    "disabled" => iv.disabled = true,
                    "failover" => iv.failover = instance_of(&n.data),
                    "failovering" => iv.failovering = instance_of(&n.data),
                    _ => {}
                }
            }
            view.items.insert(item, iv);
        }
        for (name, _) in at.children(FAILOVER_ITEMS) {
            if let Ok(item) = name.parse::<ShardItem>() {
                view.failover_marks.insert(item);
            }
        }
        view
    }

    /// The status of an instance's server; a server without a node counts as enabled (ElasticJob).
    pub fn server_status(&self, ip: &str) -> ServerStatus {
        self.servers
            .get(ip)
            .copied()
            .unwrap_or(ServerStatus::Enabled)
    }

    /// Live instances whose server is enabled: those that take items and may lead.
    pub fn available_instances(&self) -> Vec<InstanceId> {
        crate::sharding::sharding_order(
            self.instances
                .iter()
                .filter(|i| self.server_status(i.ip()) == ServerStatus::Enabled)
                .cloned(),
        )
    }

    /// The available instances that may run a job configured with `label` (all of them when the
    /// job has none), in sharding order: those sharding sees.
    pub fn eligible_instances(&self, label: Option<&str>) -> Vec<InstanceId> {
        let mut available = self.available_instances();
        available.retain(|i| crate::sharding::carries(self.labels.get(i), label));
        available
    }

    /// Whether `instance` carries the job's `label` (always, for a job without one).
    pub fn carries(&self, instance: &InstanceId, label: Option<&str>) -> bool {
        crate::sharding::carries(self.labels.get(instance), label)
    }

    /// Items owned by `me`, ascending.
    pub fn items_owned_by(&self, me: &InstanceId) -> Vec<ShardItem> {
        self.items
            .iter()
            .filter(|(_, v)| v.owner.as_ref() == Some(me))
            .map(|(i, _)| *i)
            .collect()
    }

    /// Whether any item has a `running` marker.
    pub fn has_running_items(&self) -> bool {
        self.items.values().any(|v| v.running.is_some())
    }
}

/// What a job's state machine reads ([`Facts`](crate::decide::lifecycle::Facts)), taken from the
/// mirror and the injected clock: no registry call. The machine's side of it, the trait and its
/// implementation for this struct, lives in `decide/lifecycle/mirror_facts.rs`.
#[derive(Debug)]
pub struct MirrorFacts<'a> {
    /// The local copy of the namespace.
    pub mirror: &'a Mirror,
    /// The job.
    pub job: &'a JobName,
    /// This instance.
    pub me: &'a InstanceId,
    /// Wall-clock time.
    pub clock: &'a crate::clock::SharedClock,
    /// The last measured clock skew against the registry.
    pub skew: Option<std::time::Duration>,
    /// The session's calls in flight and their last answer, when it counts them.
    pub silence: Option<&'a crate::model::Silence>,
    /// The job's view, read at its first use: a machine's step reads it once, and a fire's step
    /// looks at it two or three times (tens of mirror lookups each, at every fire of every job).
    pub view: std::cell::OnceCell<std::rc::Rc<JobView>>,
}

/// The owner of each item of `job` as the mirror has it, in item order (items without a readable
/// owner left out): to tell whether the mirror caught up with a plan.
pub fn owners_in_mirror(mirror: &Mirror, job: &JobName) -> Vec<InstanceId> {
    let sharding = JobNode::Sharding.to_path(job);
    let mut items: Vec<(ShardItem, InstanceId)> = mirror
        .children(&sharding)
        .into_iter()
        .filter_map(|name| {
            let item = name.parse::<ShardItem>().ok()?;
            let data = mirror.data(&format!("{sharding}/{name}/instance"))?;
            Some((item, instance_of(&data)?))
        })
        .collect();
    items.sort();
    items.into_iter().map(|(_, o)| o).collect()
}

/// Whether `instances/{me}` of `job` stands in the mirror for session `session` (its ephemeral
/// owner): a job that should run here and is not registered for the current session, the fact
/// readiness reports. An older session's node (a quick restart, a stale re-list) does not count.
pub fn registered_for_session(
    mirror: &Mirror,
    job: &JobName,
    me: &InstanceId,
    session: i64,
) -> bool {
    mirror
        .get(&JobNode::Instance(me.clone()).to_path(job))
        .is_some_and(|n| !n.pending && n.stat.ephemeral_owner == session)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Stat;

    #[test]
    fn paths_below_the_job_are_its_nodes() {
        let job = JobName::new("orders").unwrap();
        let item = ShardItem(3);
        let below = |rel: &str| format!("/orders/{rel}");
        let cases = [
            (INSTANCES, JobNode::Instances),
            (SERVERS, JobNode::Servers),
            (LEADER, JobNode::LeaderElectionInstance),
            (NECESSARY, JobNode::LeaderShardingNecessary),
            (PROCESSING, JobNode::LeaderShardingProcessing),
            (SHARDING, JobNode::Sharding),
            (FAILOVER_ITEMS, JobNode::LeaderFailoverItems),
        ];
        for (rel, node) in cases {
            assert_eq!(below(rel), node.to_path(&job));
        }
        for (leaf, node) in [
            ("instance", JobNode::ShardingInstance(item)),
            ("running", JobNode::ShardingRunning(item)),
            ("misfire", JobNode::ShardingMisfire(item)),
            ("disabled", JobNode::ShardingDisabled(item)),
            ("failover", JobNode::ShardingFailover(item)),
            ("failovering", JobNode::ShardingFailovering(item)),
        ] {
            assert_eq!(below(&format!("{SHARDING}/3/{leaf}")), node.to_path(&job));
        }
    }

    #[test]
    fn an_instance_node_counts_as_registered_only_for_the_session_that_owns_it() {
        let (old_id, new_id) = (0x11, 0x22);
        let (job, me) = (
            JobName::new("orders").unwrap(),
            InstanceId::parse("10.0.0.1@-@1").unwrap(),
        );
        let mirror = Mirror::new();
        let path = JobNode::Instance(me.clone()).to_path(&job);
        for (zxid, at) in [(1, "/"), (2, "/orders"), (3, "/orders/instances")] {
            mirror.upsert(
                at,
                Vec::new(),
                Stat {
                    czxid: zxid,
                    mzxid: zxid,
                    ..Stat::default()
                },
            );
        }
        let owned = Stat {
            czxid: 4,
            mzxid: 4,
            ephemeral_owner: old_id,
            ..Stat::default()
        };
        mirror.upsert(&path, Vec::new(), owned);
        assert!(registered_for_session(&mirror, &job, &me, old_id));
        assert!(
            !registered_for_session(&mirror, &job, &me, new_id),
            "an older session's node is not this session's registration"
        );
        assert!(!registered_for_session(
            &mirror,
            &JobName::new("other").unwrap(),
            &me,
            new_id
        ));
    }
}
