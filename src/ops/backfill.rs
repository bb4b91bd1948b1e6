//! [`Ops::backfill`] and [`Ops::cancel_backfill`]: every cron instant of a past range run in order
//! on the job's live instances ([`crate::decide::backfill`] says how they go through it).
//!
//! The request is written to `shardcron/backfill`, where a Java ElasticJob instance never looks
//! (it runs none of the instants). One backfill at a time per job: a new one is refused while an
//! item of the current one has instants left; a finished one is replaced.

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::audit::Entry;
use super::{Ops, OpsError};
use crate::cron::CronSchedule;
use crate::decide::backfill::{instants, Progress, Request};
use crate::paths::JobNode;
use crate::registry::{CreateMode, Op};
use crate::timezone::JobTimeZone;
use crate::types::{JobName, ShardItem};

/// Progress records created with the request, in its write (a multi-op stays well under
/// ZooKeeper's 1 MiB packet).
const RECORDS_PER_WRITE: u32 = 1000;
/// The most items given a record (the most a validated config has).
const MAX_ITEMS: i32 = crate::config::MAX_SHARDING_TOTAL_COUNT as i32;

/// The items a job's backfill tracks: its config's count (none when unreadable), bounded.
fn item_count(snap: &super::snapshot::JobSnapshot) -> u32 {
    snap.config()
        .and_then(Result::ok)
        .map_or(0, |c| c.sharding_total_count.clamp(0, MAX_ITEMS) as u32)
}

/// A backfill as [`Ops::backfill`] planned (and, unless a dry run, requested) it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BackfillPlan {
    /// The job.
    pub job_name: JobName,
    /// Its instants, in the order they run.
    pub instants: Vec<DateTime<Utc>>,
    /// The request's id; `None` for a dry run.
    pub id: Option<String>,
}

/// A backfill under way or finished, as `shardcronctl backfill NAME --status` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BackfillStatus {
    /// The job.
    pub job_name: JobName,
    /// The request's id.
    pub id: String,
    /// How many instants it runs.
    pub instants: usize,
    /// Its first instant.
    pub first: Option<DateTime<Utc>>,
    /// Its last instant.
    pub last: Option<DateTime<Utc>>,
    /// Each item's progress.
    pub items: Vec<ItemProgress>,
    /// Item instants not run yet, over all items (0: finished).
    pub left: usize,
}

/// How many of a backfill's instants one item has run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ItemProgress {
    /// The item.
    pub item: u32,
    /// Instants run (done or failed), in order from the first.
    pub done: usize,
}

impl Ops {
    /// Lists the cron instants of `job` from `from` to `to` (both included, at most
    /// [`crate::decide::backfill::MAX_INSTANTS`], none after now) and, unless `dry_run`, asks the
    /// job's instances to run each once per item, in order.
    pub async fn backfill(
        &self,
        job: &JobName,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        dry_run: bool,
    ) -> Result<BackfillPlan, OpsError> {
        let planned = self.plan_backfill(job, from, to).await?;
        if dry_run {
            return Ok(planned);
        }
        let entry = Entry::new("backfill", job).on(Some(format!(
            "{} instants from {} to {}",
            planned.instants.len(),
            from.to_rfc3339(),
            to.to_rfc3339()
        )));
        let result = self.request_backfill(job, planned).await;
        self.recorded(entry, result).await
    }

    /// Cancels the job's backfill: no further instant starts, and the backfill runs under way are
    /// cancelled. Returns whether there was one.
    pub async fn cancel_backfill(&self, job: &JobName) -> Result<bool, OpsError> {
        let result = self.delete_backfill(job).await;
        self.recorded(Entry::new("backfill-cancel", job), result)
            .await
    }

    async fn plan_backfill(
        &self,
        job: &JobName,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<BackfillPlan, OpsError> {
        let bad = |problem: String| OpsError::Backfill {
            job: job.clone(),
            problem,
        };
        let snap = self.listed_snapshot(job).await?;
        let config = match snap.config() {
            Some(Ok(c)) => c,
            Some(Err(e)) => return Err(bad(format!("its config does not parse: {e}"))),
            None => return Err(OpsError::UnknownJob { job: job.clone() }),
        };
        let Some(expr) = config.cron_expr() else {
            return Err(bad(
                "a job without a cron has no instants to backfill".into()
            ));
        };
        let cron = CronSchedule::parse(expr).map_err(|e| bad(format!("cron: {e}")))?;
        let zone = JobTimeZone::from_config(config.time_zone.as_deref())
            .map_err(|e| bad(format!("timeZone: {e}")))?;
        if to > Utc::now() {
            return Err(bad(format!(
                "--to {} is in the future: a backfill runs past instants",
                to.to_rfc3339()
            )));
        }
        let next_after = |t| cron.next_fire_after(t, &zone);
        let instants = instants(&next_after, from, to).map_err(|e| bad(e.to_string()))?;
        Ok(BackfillPlan {
            job_name: job.clone(),
            instants,
            id: None,
        })
    }

    async fn request_backfill(
        &self,
        job: &JobName,
        mut planned: BackfillPlan,
    ) -> Result<BackfillPlan, OpsError> {
        let failed = |source| OpsError::WriteBackfill {
            job: job.clone(),
            source,
        };
        let snap = self.listed_snapshot(job).await?;
        if snap.view.instances.is_empty() {
            return Err(OpsError::NoLiveInstance { job: job.clone() });
        }
        let path = JobNode::Backfill.to_path(job);
        if let Some(left) = self.backfill_left(job, &snap).await? {
            return Err(OpsError::BackfillUnderWay {
                job: job.clone(),
                left,
            });
        }
        self.registry
            .delete_recursive(&path)
            .await
            .map_err(failed)?;
        self.registry
            .ensure_path(&JobNode::Extensions.to_path(job))
            .await
            .map_err(failed)?;
        let id = Utc::now().timestamp_millis().to_string();
        let request = Request {
            id: id.clone(),
            instants: planned.instants.clone(),
        };
        // The request and the items' progress records (the first `RECORDS_PER_WRITE` in the
        // request's write): an owner records its progress in its run's end write, a set when
        // the record exists (see `decide::lifecycle::backfill`).
        let total = item_count(&snap);
        let start = Progress {
            id: id.clone(),
            done: 0,
        }
        .encode();
        let record = |i| JobNode::BackfillItem(ShardItem(i)).to_path(job);
        let mut ops = vec![Op::create(
            path.clone(),
            request.encode(),
            CreateMode::Persistent,
        )];
        let first = total.min(RECORDS_PER_WRITE);
        ops.extend(
            (0..first).map(|i| Op::create(record(i), start.clone(), CreateMode::Persistent)),
        );
        self.registry.multi(&ops).await.map_err(failed)?;
        // The rest one by one: an owner may have created its own meanwhile.
        for i in first..total {
            match self
                .registry
                .create(&record(i), &start, CreateMode::Persistent)
                .await
            {
                Ok(_) => {}
                Err(e) if e.is_node_exists() => {}
                Err(e) => return Err(failed(e)),
            }
        }
        planned.id = Some(id);
        Ok(planned)
    }

    /// How many item instants the current backfill has left (`None`: none, or finished).
    async fn backfill_left(
        &self,
        job: &JobName,
        snap: &super::snapshot::JobSnapshot,
    ) -> Result<Option<usize>, OpsError> {
        let status = self.backfill_progress(job, snap).await?;
        Ok(status.map(|s| s.left).filter(|left| *left > 0))
    }

    /// The job's backfill and each item's progress (`None`: there is none).
    pub async fn backfill_status(&self, job: &JobName) -> Result<Option<BackfillStatus>, OpsError> {
        let snap = self.listed_snapshot(job).await?;
        self.backfill_progress(job, &snap).await
    }

    async fn backfill_progress(
        &self,
        job: &JobName,
        snap: &super::snapshot::JobSnapshot,
    ) -> Result<Option<BackfillStatus>, OpsError> {
        let failed = |source| OpsError::WriteBackfill {
            job: job.clone(),
            source,
        };
        let path = JobNode::Backfill.to_path(job);
        let data = match self.registry.get(&path).await {
            Ok((data, _)) => data,
            Err(e) if e.is_no_node() => return Ok(None),
            Err(e) => return Err(failed(e)),
        };
        // An unreadable request runs nothing: it is replaced.
        let Ok(request) = Request::parse(&data) else {
            return Ok(None);
        };
        let total = item_count(snap);
        let mut items = Vec::with_capacity(total as usize);
        for item in 0..total {
            let node = JobNode::BackfillItem(ShardItem(item)).to_path(job);
            let done = match self.registry.get(&node).await {
                Ok((data, _)) => Progress::done_of(&data, &request),
                Err(e) if e.is_no_node() => 0,
                Err(e) => return Err(failed(e)),
            };
            items.push(ItemProgress { item, done });
        }
        let n = request.instants.len();
        Ok(Some(BackfillStatus {
            job_name: job.clone(),
            left: items.iter().map(|i| n - i.done).sum(),
            id: request.id,
            first: request.instants.first().copied(),
            last: request.instants.last().copied(),
            instants: n,
            items,
        }))
    }

    async fn delete_backfill(&self, job: &JobName) -> Result<bool, OpsError> {
        self.listed_snapshot(job).await?;
        let failed = |source| OpsError::WriteBackfill {
            job: job.clone(),
            source,
        };
        let path = JobNode::Backfill.to_path(job);
        let existed = self.registry.exists(&path).await.map_err(failed)?.is_some();
        self.registry
            .delete_recursive(&path)
            .await
            .map_err(failed)?;
        Ok(existed)
    }
}
