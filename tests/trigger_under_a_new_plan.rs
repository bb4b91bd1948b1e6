//! A manual trigger whose start write a plan commit overtakes still runs (the flaky failure of
//! `run_policies`: a node committed two plans in a row at start, and the trigger planned under the
//! first was refused by the second and lost). The embedded registry on paused time, behind a
//! session wrapper that lets a commit of the same owner land just before the node's start write:
//! the write's guard on the owner node's version fails (`Stale`) every time, not by chance.

use support::{cluster, wait};

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use cluster::{instance, start_node};
use shardcron::config::JobConfig;
use shardcron::job::ExecutionSource;
use shardcron::registry::{Connector, Op, Registry, Result};
use shardcron::JobName;

const WITHIN: Duration = Duration::from_secs(30);
const OWNER: &str = "/once/sharding/0/instance";

/// A session whose next multi-op creating item 0's `running` marker (a start write), once
/// `armed`, is overtaken by a commit: item 0's owner node is set again, to the same owner,
/// before the multi-op goes.
#[derive(Debug)]
struct Overtaken {
    inner: Arc<dyn Registry>,
    armed: Arc<AtomicBool>,
}

support::delegating_registry!(Overtaken, inner, multi(this, ops) {
    let starts_item_0 = ops
        .iter()
        .any(|op| matches!(op, Op::Create { path, .. } if path == "/once/sharding/0/running"));
    if starts_item_0 && this.armed.swap(false, Ordering::SeqCst) {
        tracing::info!("--- a commit overtakes the start write");
        let (owner, _) = this.inner.get(OWNER).await?;
        this.inner.set(OWNER, &owner, None).await?;
    }
    this.inner.multi(ops).await
});

/// Opens sessions wrapped in [`Overtaken`], all sharing one `armed` switch.
#[derive(Debug)]
struct OvertakenConnector {
    inner: Arc<dyn Connector>,
    armed: Arc<AtomicBool>,
}

#[async_trait]
impl Connector for OvertakenConnector {
    async fn connect(&self) -> Result<Arc<dyn Registry>> {
        Ok(Arc::new(Overtaken {
            inner: self.inner.connect().await?,
            armed: self.armed.clone(),
        }))
    }
    fn describe(&self) -> String {
        format!("overtaken {}", self.inner.describe())
    }
}

#[tokio::test(start_paused = true)]
async fn a_trigger_whose_start_a_new_plan_overtook_runs_under_that_plan_once() {
    let (_server, embedded, rec) = cluster::embedded("triggered");
    tracing::info!("--- one node owns the one item of a job without a cron");
    let armed = Arc::new(AtomicBool::new(false));
    let conn: Arc<dyn Connector> = Arc::new(OvertakenConnector {
        inner: embedded.clone(),
        armed: armed.clone(),
    });
    let job = (
        JobConfig::new("once", 1).one_off(),
        rec.handler(Duration::ZERO),
    );
    let node = start_node(conn, instance(1), vec![job]).await;
    wait::wait_until(
        async || cluster::assignment(&node, "once").contains_key(instance(1).as_str()),
        "the node's mirror shows its first plan",
        WITHIN,
    )
    .await;

    tracing::info!("--- triggered; a commit overtakes the trigger's start write");
    armed.store(true, Ordering::SeqCst);
    let name = JobName::new("once").unwrap();
    node.trigger(&name).await.unwrap();
    let log = rec
        .wait_until("the triggered item runs", WITHIN, |log| !log.is_empty())
        .await;
    assert!(
        !armed.load(Ordering::SeqCst),
        "the start write was overtaken (its guard failed), so the race was reproduced"
    );
    assert_eq!(log[0].source, ExecutionSource::Manual, "{log:?}");

    tracing::info!("--- and it ran once");
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(rec.all().len(), 1, "{:?}", rec.all());
    node.shutdown().await;
}
