//! Operations on a running job (ElasticJob's `JobOperateAPI`): each writes the nodes that the
//! engine watches, and the engine does the rest.
//!
//! | call | writes | the engine then |
//! | --- | --- | --- |
//! | [`Ops::trigger`] | `trigger/{instanceId}` per live instance (`trigger.rs`) | each instance runs its items once |
//! | [`Ops::disable`] a server | `servers/{ip}` = `DISABLED` | the leader reshards its items away |
//! | [`Ops::disable`] an item | `sharding/{i}/disabled` | the owner skips the item |
//! | [`Ops::shutdown`] | deletes `instances/{id}` | that instance stops the job; the rest reshard |
//! | [`Ops::remove`] | deletes `/{job}` (a job created at runtime: `adoptable` = `removing` first, then waits for its adopters to leave) | every instance drops the job |

use serde::Serialize;

use super::audit::Entry;
use super::{Ops, OpsError};
use crate::paths::JobNode;
use crate::registry::{CreateMode, RegistryError};
use crate::types::{InstanceId, JobName, ShardItem};
use crate::view::ServerStatus;

/// What [`Ops::disable`] and [`Ops::enable`] act on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Target {
    /// Every `servers/{ip}` of the job.
    AllServers,
    /// One server: `servers/{ip}`.
    Server(String),
    /// One item on whatever instance owns it: `sharding/{i}/disabled`.
    Item(ShardItem),
}

impl Target {
    /// How the audit log names it; `None` for every server.
    fn describe(&self) -> Option<String> {
        match self {
            Target::AllServers => None,
            Target::Server(ip) => Some(format!("server {ip}")),
            Target::Item(item) => Some(format!("item {item}")),
        }
    }
}

/// Which instances [`Ops::shutdown`] stops the job on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShutdownScope {
    /// Every live instance.
    AllInstances,
    /// One instance.
    Instance(InstanceId),
}

/// Whether [`Ops::remove`] may stop live instances.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RemoveMode {
    /// Refuse ([`OpsError::StillRunning`]) while an instance runs the job.
    RefuseWhileRunning,
    /// Shut every instance down, then remove.
    Force,
}

/// How many times a removal re-deletes a subtree that instances were still writing to; each
/// round deletes what the last one left, and instances stop writing once their job is gone.
const REMOVE_ROUNDS: usize = 10;

impl Ops {
    /// Disables a server (or all) or an item. Returns what was disabled.
    pub async fn disable(&self, job: &JobName, target: Target) -> Result<Vec<Target>, OpsError> {
        let entry = Entry::new("disable", job).on(target.describe());
        let result = self.switch(job, target, Switch::Off).await;
        self.recorded(entry, result).await
    }

    /// Enables a server (or all) or an item. Returns what was enabled.
    pub async fn enable(&self, job: &JobName, target: Target) -> Result<Vec<Target>, OpsError> {
        let entry = Entry::new("enable", job).on(target.describe());
        let result = self.switch(job, target, Switch::On).await;
        self.recorded(entry, result).await
    }

    async fn switch(
        &self,
        job: &JobName,
        target: Target,
        switch: Switch,
    ) -> Result<Vec<Target>, OpsError> {
        let snap = self.listed_snapshot(job).await?;
        let ips: Vec<String> = match &target {
            Target::Item(item) => {
                let known = snap.view.items.contains_key(item);
                let total = snap
                    .config()
                    .and_then(Result::ok)
                    .map(|c| c.sharding_total_count);
                if !known && total.is_none_or(|t| i64::from(item.0) >= i64::from(t)) {
                    return Err(OpsError::UnknownItem {
                        job: job.clone(),
                        item: *item,
                        total: total.unwrap_or(0),
                    });
                }
                self.switch_item(job, *item, switch).await?;
                return Ok(vec![target]);
            }
            Target::Server(ip) if !snap.view.servers.contains_key(ip) => {
                return Err(OpsError::UnknownServer {
                    job: job.clone(),
                    ip: ip.clone(),
                })
            }
            Target::Server(ip) => vec![ip.clone()],
            Target::AllServers => snap.view.servers.keys().cloned().collect(),
        };
        let status = match switch {
            Switch::On => ServerStatus::Enabled,
            Switch::Off => ServerStatus::Disabled,
        };
        for ip in &ips {
            let failed = |source| OpsError::SetServer {
                job: job.clone(),
                ip: ip.clone(),
                source,
            };
            let path = JobNode::server(ip.as_str())
                .map_err(|e| {
                    failed(RegistryError::InvalidPath {
                        path: ip.clone(),
                        reason: e.to_string(),
                    })
                })?
                .to_path(job);
            self.registry
                .set(&path, status.as_data(), None)
                .await
                .map_err(failed)?;
        }
        Ok(ips.into_iter().map(Target::Server).collect())
    }

    async fn switch_item(
        &self,
        job: &JobName,
        item: ShardItem,
        switch: Switch,
    ) -> Result<(), OpsError> {
        let failed = |source| OpsError::SetItem {
            job: job.clone(),
            item,
            source,
        };
        let path = JobNode::ShardingDisabled(item).to_path(job);
        match switch {
            Switch::Off => {
                self.registry
                    .ensure_path(&JobNode::ShardingItem(item).to_path(job))
                    .await
                    .map_err(failed)?;
                match self
                    .registry
                    .create(&path, b"", CreateMode::Persistent)
                    .await
                {
                    Ok(_) => Ok(()),
                    Err(e) if e.is_node_exists() => Ok(()),
                    Err(e) => Err(failed(e)),
                }
            }
            Switch::On => match self.registry.delete(&path, None).await {
                Ok(()) => Ok(()),
                Err(e) if e.is_no_node() => Ok(()),
                Err(e) => Err(failed(e)),
            },
        }
    }

    /// Stops the job on one instance or all, by deleting their `instances/{id}` nodes; the
    /// instances keep running their other jobs. Returns the instances stopped.
    pub async fn shutdown(
        &self,
        job: &JobName,
        scope: ShutdownScope,
    ) -> Result<Vec<InstanceId>, OpsError> {
        let target = match &scope {
            ShutdownScope::AllInstances => None,
            ShutdownScope::Instance(id) => Some(format!("instance {id}")),
        };
        let result = self.stop_instances(job, scope).await;
        self.recorded(Entry::new("shutdown", job).on(target), result)
            .await
    }

    async fn stop_instances(
        &self,
        job: &JobName,
        scope: ShutdownScope,
    ) -> Result<Vec<InstanceId>, OpsError> {
        let snap = self.listed_snapshot(job).await?;
        let instances: Vec<InstanceId> = match scope {
            ShutdownScope::AllInstances => snap.view.instances.iter().cloned().collect(),
            ShutdownScope::Instance(id) if snap.view.instances.contains(&id) => vec![id],
            ShutdownScope::Instance(instance) => {
                return Err(OpsError::UnknownInstance {
                    job: job.clone(),
                    instance,
                })
            }
        };
        for id in &instances {
            let path = JobNode::Instance(id.clone()).to_path(job);
            match self.registry.delete(&path, None).await {
                Ok(()) => {}
                // Gone meanwhile (the instance stopped by itself): the outcome asked for.
                Err(e) if e.is_no_node() => {}
                Err(source) => {
                    return Err(OpsError::Shutdown {
                        job: job.clone(),
                        instance: id.clone(),
                        source,
                    })
                }
            }
        }
        Ok(instances)
    }

    /// Deletes the job's subtree. Refused while instances run it unless `mode` is
    /// [`RemoveMode::Force`], which first shuts them down. Returns the instances shut down.
    pub async fn remove(
        &self,
        job: &JobName,
        mode: RemoveMode,
    ) -> Result<Vec<InstanceId>, OpsError> {
        let result = self.remove_subtree(job, mode).await;
        let target = (mode == RemoveMode::Force).then(|| "forced".to_owned());
        self.recorded(Entry::new("remove", job).on(target), result)
            .await
    }

    async fn remove_subtree(
        &self,
        job: &JobName,
        mode: RemoveMode,
    ) -> Result<Vec<InstanceId>, OpsError> {
        let snap = self.listed_snapshot(job).await?;
        let mut live: Vec<InstanceId> = snap.view.instances.iter().cloned().collect();
        // A job created at runtime: the nodes that adopted it stop it first, letting their
        // running items end; what still runs it after them is refused below as for any job.
        let force = mode == RemoveMode::Force;
        let adopters = self.stop_adopters(job, &live, force).await?;
        if let Some(left) = &adopters {
            live.retain(|id| !left.contains(id));
        }
        if !live.is_empty() && mode == RemoveMode::RefuseWhileRunning {
            return Err(OpsError::StillRunning {
                job: job.clone(),
                instances: live,
            });
        }
        // Instances first: each then stops the job, so fewer writes race the deletion below.
        let mut stopped = self
            .stop_instances(job, ShutdownScope::AllInstances)
            .await?;
        if let Some(left) = adopters {
            stopped.extend(left);
        }
        let root = JobNode::Root.to_path(job);
        let failed = |source| OpsError::Remove {
            job: job.clone(),
            source,
        };
        let mut last = None;
        for _ in 0..REMOVE_ROUNDS {
            match self.registry.delete_recursive(&root).await {
                Ok(()) => match self.registry.exists(&root).await.map_err(failed)? {
                    None => return Ok(stopped),
                    Some(_) => last = None,
                },
                // A node was created under one we were deleting: delete again.
                Err(e @ RegistryError::NotEmpty { .. }) => last = Some(e),
                Err(e) => return Err(failed(e)),
            }
        }
        Err(failed(
            last.unwrap_or(RegistryError::NotEmpty { path: root }),
        ))
    }
}

/// The direction of [`Ops::disable`] / [`Ops::enable`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Switch {
    On,
    Off,
}
