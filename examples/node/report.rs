//! The lines the example prints on stdout, one event per line, `key=value` fields after a UTC
//! timestamp and a kind, so that tests and `grep`/`awk` can read them:
//!
//! ```text
//! 2026-11-22T07:00:00.412Z node instance=127.0.0.1@-@4242-0 registry=embedded namespace=shardcron-demo
//! 2026-11-22T07:00:00.413Z job job=orders type=orders items=8 cron="0/2 * * * * ?"
//! 2026-11-22T07:00:02.001Z reshard job=orders items=8 owners=127.0.0.1@-@4242-2:0,1,6;127.0.0.1@-@4242-1:2,3,7;127.0.0.1@-@4242-0:4,5
//! 2026-11-22T07:00:02.031Z exec job=orders item=3 instance=127.0.0.1@-@4242-1 source=normal outcome=ok duration_ms=65
//! 2026-11-22T07:00:02.003Z exec job=orders item=7 instance=127.0.0.1@-@4242-1 source=normal outcome=error duration_ms=0 error="no orders ship to Atlantis"
//! 2026-11-22T07:00:09.120Z shutdown reason=SIGTERM nodes=3
//! 2026-11-22T07:00:09.180Z stopped nodes=3
//! ```
//!
//! Executions are reported by wrapping each job's handler ([`Reported`]) rather than by a job
//! listener: the wrapper times each item on its own, and it needs no `jobListenerTypes` entry in
//! the registry's config, which another process may have written. Reshardings are noticed by the
//! same wrapper when the first item of a run starts: it reads the owners of the job's items from the
//! node's mirror and prints them when they differ from the owners last printed. Reading them costs
//! one mirror lookup per item of the job, so the run's other items do not read them again (a job of
//! ten thousand items would otherwise read a hundred million nodes per fire). The mirror's zxids order what
//! several in-process nodes see, so a node whose mirror lags behind cannot print an older
//! assignment again.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use async_trait::async_trait;
use shardcron::job::{ItemHandler, JobError, ShardingContext, SharedHandler};
use shardcron::paths::JobNode;
use shardcron::registry::mirror::Mirror;
use shardcron::{InstanceId, JobName, ShardItem};

/// Now, in UTC, to the millisecond: the first field of every line.
pub(crate) fn timestamp() -> String {
    chrono::Utc::now()
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

/// Prints lines, and remembers the assignment it last printed per job.
#[derive(Debug, Default)]
pub(crate) struct Console {
    printed: Mutex<HashMap<JobName, Assignment>>,
    /// Per job and instance, the task id of the run whose first item read the assignment.
    looked: Mutex<HashMap<(JobName, InstanceId), String>>,
}

/// Who owns which items of a job, as of a registry transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Assignment {
    /// The newest zxid among the `sharding/{i}/instance` nodes read.
    zxid: i64,
    /// The number of items the registry lists.
    items: usize,
    /// Owner instance id to its items; unowned items are left out.
    owners: BTreeMap<String, Vec<u32>>,
}

impl fmt::Display for Assignment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "items={} owners=", self.items)?;
        for (n, (owner, items)) in self.owners.iter().enumerate() {
            let items: Vec<String> = items.iter().map(u32::to_string).collect();
            let sep = if n == 0 { "" } else { ";" };
            write!(f, "{sep}{owner}:{}", items.join(","))?;
        }
        Ok(())
    }
}

impl Console {
    /// Prints `{timestamp} {kind} {fields}`.
    pub(crate) fn line(&self, kind: &str, fields: fmt::Arguments<'_>) {
        println!("{} {kind} {fields}", timestamp());
    }

    /// Prints one item's execution.
    fn execution(&self, ctx: &ShardingContext, result: &Result<(), JobError>, started: Instant) {
        let duration_ms = started.elapsed().as_millis();
        let head = format!(
            "job={} item={} instance={} source={}",
            ctx.job_name,
            ctx.sharding_item,
            ctx.instance_id,
            ctx.source.as_str()
        );
        match result {
            Ok(()) => self.line(
                "exec",
                format_args!("{head} outcome=ok duration_ms={duration_ms}"),
            ),
            Err(e) => self.line(
                "exec",
                format_args!(
                    "{head} outcome=error duration_ms={duration_ms} error={:?}",
                    e.to_string()
                ),
            ),
        }
    }

    /// Whether `ctx` is the first item of its run to start (per job and instance).
    fn first_of_run(&self, ctx: &ShardingContext) -> bool {
        let mut looked = self.looked.lock().unwrap_or_else(|p| p.into_inner());
        let key = (ctx.job_name.clone(), ctx.instance_id.clone());
        if looked.get(&key) == Some(&ctx.task_id) {
            return false;
        }
        looked.insert(key, ctx.task_id.clone());
        true
    }

    /// Prints the job's assignment as `mirror` holds it, when it is newer than and different from
    /// the one printed last.
    fn sharding_seen(&self, mirror: &Mirror, job: &JobName) {
        let Some(now) = assignment(mirror, job) else {
            return;
        };
        let mut printed = self.printed.lock().unwrap_or_else(|p| p.into_inner());
        match printed.get(job) {
            Some(last) if last.zxid >= now.zxid => return,
            Some(last) if last.owners == now.owners && last.items == now.items => {
                printed.insert(job.clone(), now);
                return;
            }
            _ => {}
        }
        // Printed under the lock, so that two nodes cannot print the same change in either order.
        self.line("reshard", format_args!("job={job} {now}"));
        printed.insert(job.clone(), now);
    }
}

/// The job's assignment in `mirror`; `None` before the first sharding.
fn assignment(mirror: &Mirror, job: &JobName) -> Option<Assignment> {
    let mut zxid = None;
    let mut owners: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    let children = mirror.children(&JobNode::Sharding.to_path(job));
    for child in &children {
        let Ok(item) = child.parse::<u32>() else {
            continue;
        };
        let Some(node) = mirror.get(&JobNode::ShardingInstance(ShardItem(item)).to_path(job))
        else {
            continue;
        };
        zxid = zxid.max(Some(node.stat.mzxid));
        let owner = String::from_utf8_lossy(&node.data).into_owned();
        owners.entry(owner).or_default().push(item);
    }
    for items in owners.values_mut() {
        items.sort_unstable();
    }
    Some(Assignment {
        zxid: zxid?,
        items: children.len(),
        owners,
    })
}

/// A job's handler, wrapped to print its executions and the reshardings it notices.
#[derive(Debug)]
pub(crate) struct Reported {
    inner: SharedHandler,
    console: Arc<Console>,
    mirror: Arc<OnceLock<Mirror>>,
}

impl Reported {
    /// Wraps `inner`; `mirror` is filled in once the node has started (items that run before
    /// that are reported, but cannot notice a resharding).
    pub(crate) fn new(
        inner: SharedHandler,
        console: Arc<Console>,
        mirror: Arc<OnceLock<Mirror>>,
    ) -> Self {
        Self {
            inner,
            console,
            mirror,
        }
    }
}

#[async_trait]
impl ItemHandler for Reported {
    async fn run_item(&self, ctx: ShardingContext) -> Result<(), JobError> {
        if let Some(mirror) = self.mirror.get() {
            if self.console.first_of_run(&ctx) {
                self.console.sharding_seen(mirror, &ctx.job_name);
            }
        }
        let started = Instant::now();
        let report = ctx.clone();
        let result = self.inner.run_item(ctx).await;
        self.console.execution(&report, &result, started);
        result
    }
}

/// The name jobs files give the example's distribute-once listener in `jobListenerTypes`.
pub(crate) const ONCE_LOG: &str = "ONCE_LOG";

/// A distribute-once listener that prints its hooks:
///
/// ```text
/// 2026-11-22T07:00:02.001Z once hook=before job=orders missing=
/// 2026-11-22T07:00:02.310Z once hook=after job=orders missing=
/// ```
///
/// Its waits are bounded at 10 seconds (the library's default is 60).
#[derive(Debug)]
pub(crate) struct OnceLog(pub(crate) Arc<Console>);

impl OnceLog {
    fn print(&self, hook: &str, info: &shardcron::job::handlers::GuaranteeInfo) {
        let missing: Vec<String> = info.missing.iter().map(|i| i.to_string()).collect();
        self.0.line(
            "once",
            format_args!(
                "hook={hook} job={} missing={}",
                info.job_name,
                missing.join(",")
            ),
        );
    }
}

impl shardcron::job::handlers::DistributeOnceListener for OnceLog {
    fn started_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(10)
    }
    fn completed_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(10)
    }
    fn before_job_executed_at_last_started(&self, info: &shardcron::job::handlers::GuaranteeInfo) {
        self.print("before", info);
    }
    fn after_job_executed_at_last_completed(&self, info: &shardcron::job::handlers::GuaranteeInfo) {
        self.print("after", info);
    }
}
