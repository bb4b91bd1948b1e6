//! [`Ops::trigger`] and [`Ops::trigger_with`]: one run of a job now on every live instance,
//! optionally with a job parameter and limited to some items.
//!
//! Each live instance gets ElasticJob's `trigger/{instanceId}`, which a Java instance takes as a
//! plain trigger. The parameters go first into `shardcron/trigger/{instanceId}` (JSON,
//! [`TriggerParams`]), where Java never looks: a shardcron instance reads them when it takes its
//! trigger and deletes both. A plain trigger deletes parameters an earlier trigger left for an
//! instance that did not take them (a Java instance never does).

use super::audit::Entry;
use super::{Ops, OpsError};
use crate::decide::trigger_params::TriggerParams;
use crate::decide::workflow::run::RunId;
use crate::paths::JobNode;
use crate::registry::{CreateMode, RegistryError};
use crate::types::{InstanceId, JobName};
use chrono::Utc;

impl Ops {
    /// Asks every live instance to run its items once now. Returns the instances asked.
    pub async fn trigger(&self, job: &JobName) -> Result<Vec<InstanceId>, OpsError> {
        self.trigger_with(job, &TriggerParams::default()).await
    }

    /// Asks every live instance to run its items once now (those of `params.items` it owns, when
    /// given), with `params.job_parameter` as the run's job parameter (a script reads it as
    /// `jobParameter` in its context JSON). Returns the instances asked. The audit log records
    /// the items and that a parameter was given, never its value.
    pub async fn trigger_with(
        &self,
        job: &JobName,
        params: &TriggerParams,
    ) -> Result<Vec<InstanceId>, OpsError> {
        let mut target = Vec::new();
        if let Some(items) = &params.items {
            let items: Vec<String> = items.iter().map(u32::to_string).collect();
            target.push(format!("items {}", items.join(",")));
        }
        if params.job_parameter.is_some() {
            target.push("with a job parameter".to_owned());
        }
        let entry = Entry::new("trigger", job).on((!target.is_empty()).then(|| target.join(" ")));
        let result = self.ask_to_trigger(job, params).await;
        self.recorded(entry, result).await
    }

    async fn ask_to_trigger(
        &self,
        job: &JobName,
        params: &TriggerParams,
    ) -> Result<Vec<InstanceId>, OpsError> {
        params.check().map_err(|problem| OpsError::TriggerParams {
            job: job.clone(),
            problem,
        })?;
        let snap = self.listed_snapshot(job).await?;
        if let Some(items) = &params.items {
            let total = snap
                .config()
                .and_then(Result::ok)
                .map_or(0, |c| c.sharding_total_count);
            if let Some(item) = items.iter().find(|i| i64::from(**i) >= i64::from(total)) {
                return Err(OpsError::UnknownItem {
                    job: job.clone(),
                    item: crate::types::ShardItem(*item),
                    total,
                });
            }
        }
        let instances: Vec<InstanceId> = snap.view.instances.iter().cloned().collect();
        if instances.is_empty() {
            return Err(OpsError::NoLiveInstance { job: job.clone() });
        }
        let params = self.workflow_trigger(job, params).await;
        let params = &params;
        let failed = |instance: &InstanceId| {
            let (job, instance) = (job.clone(), instance.clone());
            move |source| OpsError::Trigger {
                job,
                instance,
                source,
            }
        };
        let data = (!params.is_plain()).then(|| params.encode());
        for id in &instances {
            self.write_params(job, id, data.as_deref())
                .await
                .map_err(failed(id))?;
            self.registry
                .ensure_path(&JobNode::Trigger.to_path(job))
                .await
                .map_err(failed(id))?;
            let path = JobNode::TriggerInstance(id.clone()).to_path(job);
            match self
                .registry
                .create(&path, b"", CreateMode::Persistent)
                .await
            {
                // A trigger not yet taken covers this one too (with these parameters).
                Ok(_) => {}
                Err(e) if e.is_node_exists() => {}
                Err(e) => return Err(failed(id)(e)),
            }
        }
        Ok(instances)
    }

    /// Writes `shardcron/trigger/{id}` (or deletes it for a plain trigger).
    async fn write_params(
        &self,
        job: &JobName,
        id: &InstanceId,
        data: Option<&[u8]>,
    ) -> Result<(), RegistryError> {
        let path = JobNode::TriggerParamsFor(id.clone()).to_path(job);
        let Some(data) = data else {
            return match self.registry.delete(&path, None).await {
                Err(e) if !e.is_no_node() => Err(e),
                _ => Ok(()),
            };
        };
        self.registry
            .ensure_path(&JobNode::TriggerParams.to_path(job))
            .await?;
        match self
            .registry
            .create(&path, data, CreateMode::Persistent)
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if e.is_node_exists() => self.registry.set(&path, data, None).await.map(drop),
            Err(e) => Err(e),
        }
    }

    /// A trigger of a whole job that other jobs run after (`shardcron/downstream` has children)
    /// starts a workflow run, named by the trigger's instant (`m{epoch ms}`), the same for every
    /// instance asked. A trigger of some items only runs them outside any workflow run; a
    /// trigger that reaches an instance without a run named (`shardcronctl` and the console
    /// always name one; a Java tool writes `trigger/{id}` alone) runs outside any.
    async fn workflow_trigger(&self, job: &JobName, params: &TriggerParams) -> TriggerParams {
        let mut params = params.clone();
        // Named here only: a caller's name could be an old run's, whose records stop its items.
        params.workflow_run = None;
        if params.items.is_some() {
            return params;
        }
        let under = JobNode::Downstream.to_path(job);
        let downstream = match &self.mirror {
            Some(mirror) => mirror.has_children(&under),
            None => (self.registry.children(&under).await).is_ok_and(|c| !c.is_empty()),
        };
        if downstream {
            let millis = u64::try_from(Utc::now().timestamp_millis()).unwrap_or_default();
            params.workflow_run = Some(RunId::manual(millis).to_string());
        }
        params
    }
}
