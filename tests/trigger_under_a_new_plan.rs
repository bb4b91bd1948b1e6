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
use shardcron::registry::{
    Connector, CreateMode, ListedNode, Op, OpResult, Registry, Result, SessionInfo, SessionState,
    Stat, WatchEvent, WatchGuard, WatchStream,
};
use shardcron::JobName;
use tokio::sync::{mpsc, watch};

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

#[async_trait]
impl Registry for Overtaken {
    async fn create(&self, path: &str, data: &[u8], mode: CreateMode) -> Result<String> {
        self.inner.create(path, data, mode).await
    }
    async fn get(&self, path: &str) -> Result<(Vec<u8>, Stat)> {
        self.inner.get(path).await
    }
    async fn set(&self, path: &str, data: &[u8], version: Option<i32>) -> Result<Stat> {
        self.inner.set(path, data, version).await
    }
    async fn delete(&self, path: &str, version: Option<i32>) -> Result<()> {
        self.inner.delete(path, version).await
    }
    async fn children(&self, path: &str) -> Result<Vec<String>> {
        self.inner.children(path).await
    }
    async fn exists(&self, path: &str) -> Result<Option<Stat>> {
        self.inner.exists(path).await
    }
    async fn multi(&self, ops: &[Op]) -> Result<Vec<OpResult>> {
        let starts_item_0 = ops
            .iter()
            .any(|op| matches!(op, Op::Create { path, .. } if path == "/once/sharding/0/running"));
        if starts_item_0 && self.armed.swap(false, Ordering::SeqCst) {
            tracing::info!("--- a commit overtakes the start write");
            let (owner, _) = self.inner.get(OWNER).await?;
            self.inner.set(OWNER, &owner, None).await?;
        }
        self.inner.multi(ops).await
    }
    async fn watch_recursive(&self, path: &str) -> Result<WatchStream> {
        self.inner.watch_recursive(path).await
    }
    async fn watch_recursive_into(
        &self,
        path: &str,
        into: mpsc::UnboundedSender<WatchEvent>,
    ) -> Result<WatchGuard> {
        self.inner.watch_recursive_into(path, into).await
    }
    async fn get_many(&self, paths: &[String]) -> Result<Vec<Result<(Vec<u8>, Stat)>>> {
        self.inner.get_many(paths).await
    }
    async fn list_subtree(&self, path: &str) -> Result<Vec<ListedNode>> {
        self.inner.list_subtree(path).await
    }
    fn session_info(&self) -> SessionInfo {
        self.inner.session_info()
    }
    fn session_state(&self) -> watch::Receiver<SessionState> {
        self.inner.session_state()
    }
    async fn close(&self) {
        self.inner.close().await
    }
}

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
