//! The machine's [`Facts`] read from the mirror and the injected clock: the implementation for
//! [`MirrorFacts`] (the struct is the view's; the questions are the machine's, so their answers
//! are here, and the view imports nothing from the decisions).

use std::collections::BTreeMap;
use std::rc::Rc;

use chrono::{DateTime, Utc};

use super::Facts;
use crate::decide::catchup;
use crate::paths::JobNode;
use crate::types::{JobName, ShardItem};
use crate::view::{JobView, MirrorFacts};

impl Facts for MirrorFacts<'_> {
    fn view(&self) -> Rc<JobView> {
        let read = || Rc::new(JobView::read_for(self.mirror, self.job, self.me));
        self.view.get_or_init(read).clone()
    }

    fn owns(&self, item: ShardItem) -> bool {
        let path = JobNode::ShardingInstance(item).to_path(self.job);
        let data = self.mirror.data(&path);
        data.is_some_and(|d| std::str::from_utf8(&d).is_ok_and(|s| s.trim() == self.me.as_str()))
    }

    fn marker_mirrored(&self, item: ShardItem) -> bool {
        self.mirror
            .exists(&JobNode::ShardingRunning(item).to_path(self.job))
    }

    fn instance_owner(&self) -> Option<i64> {
        let path = JobNode::Instance(self.me.clone()).to_path(self.job);
        self.mirror.get(&path).map(|n| n.stat.ephemeral_owner)
    }

    fn removed_instance_owner(&self) -> Option<i64> {
        let path = JobNode::Instance(self.me.clone()).to_path(self.job);
        self.mirror.removed_owner(&path)
    }

    fn has_failover_marks(&self) -> bool {
        (self.mirror).has_children(&JobNode::LeaderFailoverItems.to_path(self.job))
    }

    fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    fn registry_silent_for(&self) -> std::time::Duration {
        self.silence
            .map_or(std::time::Duration::ZERO, |s| s.silent_for())
    }

    fn clock_skew(&self) -> Option<std::time::Duration> {
        self.skew
    }

    fn fired(&self) -> catchup::FiredRecord {
        let parent = JobNode::Fired.to_path(self.job);
        let mut record = catchup::FiredRecord {
            parent: self.mirror.exists(&parent),
            ..Default::default()
        };
        if record.parent {
            for name in self.mirror.children(&parent) {
                let Ok(item) = name.parse::<ShardItem>() else {
                    continue;
                };
                let data = self
                    .mirror
                    .data(&JobNode::FiredItem(item).to_path(self.job));
                let at = data.and_then(|d| catchup::parse_fired(&d));
                record.items.insert(item, at);
            }
        }
        record
    }

    fn fired_item(&self, item: ShardItem) -> Option<DateTime<Utc>> {
        let data = self
            .mirror
            .data(&JobNode::FiredItem(item).to_path(self.job))?;
        catchup::parse_fired(&data)
    }

    fn trigger_params(&self) -> Option<Vec<u8>> {
        let path = JobNode::TriggerParamsFor(self.me.clone()).to_path(self.job);
        self.mirror.data(&path).map(|d| d.to_vec())
    }

    fn backfill_request(&self) -> Option<Vec<u8>> {
        let path = JobNode::Backfill.to_path(self.job);
        self.mirror.data(&path).map(|d| d.to_vec())
    }

    fn backfill_progress(&self) -> BTreeMap<ShardItem, Vec<u8>> {
        let parent = JobNode::Backfill.to_path(self.job);
        self.mirror
            .children(&parent)
            .into_iter()
            .filter_map(|name| {
                let item = name.parse::<ShardItem>().ok()?;
                let data = self
                    .mirror
                    .data(&JobNode::BackfillItem(item).to_path(self.job))?;
                Some((item, data.to_vec()))
            })
            .collect()
    }

    fn workflow_records(&self, job: &JobName) -> Vec<(String, Vec<u8>, i64)> {
        let parent = JobNode::Workflow.to_path(job);
        self.mirror
            .children(&parent)
            .into_iter()
            .filter_map(|name| {
                let node = self.mirror.get(&format!("{parent}/{name}"))?;
                Some((name.to_string(), node.data.to_vec(), node.stat.czxid))
            })
            .collect()
    }

    fn item_total(&self, job: &JobName) -> u32 {
        let sharding = JobNode::Sharding.to_path(job);
        let items = self.mirror.children(&sharding).into_iter();
        let count = items.filter(|n| n.parse::<ShardItem>().is_ok()).count();
        u32::try_from(count).unwrap_or(u32::MAX)
    }

    fn job_exists(&self, job: &JobName) -> bool {
        self.mirror.exists(&JobNode::Root.to_path(job))
    }

    fn downstream_since(&self, upstream: &JobName, downstream: &JobName) -> Option<i64> {
        let path = JobNode::DownstreamJob(downstream.clone()).to_path(upstream);
        self.mirror.get(&path).map(|n| n.stat.czxid)
    }

    fn has_downstream(&self) -> bool {
        (self.mirror).has_children(&JobNode::Downstream.to_path(self.job))
    }
}
