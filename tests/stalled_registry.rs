//! A registry that stalls between a fire's prepare and its instant (an ensemble paused, a
//! connection black-holed): the markers written ahead get no answer, and the plan they were
//! written under may have moved unseen. The fire, taken ahead at its arm on those markers, must
//! not run on them: at the instant the trigger finds the registry silent and hands the run back,
//! and its items wait at a gate until the markers and a session check answer (the soak's seed
//! 1795868835535426447 ran item 2 on two nodes 220 ms into a whole-ensemble pause that began just
//! before the prepare). The embedded registry on paused time, behind a session that can stall
//! every call and counts its silence as the ZooKeeper session does: the stall begins with no call
//! in flight, so the silence counts from the prepare's write.

use support::cluster;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use cluster::{instance, start_node};
use shardcron::model::Silence;
use shardcron::registry::{
    Connector, CreateMode, ListedNode, Op, OpResult, Registry, Result, SessionInfo, SessionState,
    Stat, WatchStream,
};
use tokio::sync::watch;

const WITHIN: Duration = Duration::from_secs(30);

/// A session whose calls wait while `stalled` is up, counted in its own [`Silence`]. Watches
/// and session state pass through (a stalled server sends nothing either, but nothing here
/// waits on them).
#[derive(Debug)]
struct Stalling {
    inner: Arc<dyn Registry>,
    stalled: watch::Receiver<bool>,
    silence: Arc<Silence>,
}

impl Stalling {
    async fn gate<T>(&self, call: impl std::future::Future<Output = T>) -> T {
        let _waiting = self.silence.call();
        let mut stalled = self.stalled.clone();
        let _ = stalled.wait_for(|s| !*s).await;
        call.await
    }
}

#[async_trait]
impl Registry for Stalling {
    async fn create(&self, path: &str, data: &[u8], mode: CreateMode) -> Result<String> {
        self.gate(self.inner.create(path, data, mode)).await
    }
    async fn get(&self, path: &str) -> Result<(Vec<u8>, Stat)> {
        self.gate(self.inner.get(path)).await
    }
    async fn set(&self, path: &str, data: &[u8], version: Option<i32>) -> Result<Stat> {
        self.gate(self.inner.set(path, data, version)).await
    }
    async fn delete(&self, path: &str, version: Option<i32>) -> Result<()> {
        self.gate(self.inner.delete(path, version)).await
    }
    async fn children(&self, path: &str) -> Result<Vec<String>> {
        self.gate(self.inner.children(path)).await
    }
    async fn exists(&self, path: &str) -> Result<Option<Stat>> {
        self.gate(self.inner.exists(path)).await
    }
    async fn multi(&self, ops: &[Op]) -> Result<Vec<OpResult>> {
        self.gate(self.inner.multi(ops)).await
    }
    async fn watch_recursive(&self, path: &str) -> Result<WatchStream> {
        self.inner.watch_recursive(path).await
    }
    async fn get_many(&self, paths: &[String]) -> Result<Vec<Result<(Vec<u8>, Stat)>>> {
        self.gate(self.inner.get_many(paths)).await
    }
    async fn list_subtree(&self, path: &str) -> Result<Vec<ListedNode>> {
        self.gate(self.inner.list_subtree(path)).await
    }
    fn session_info(&self) -> SessionInfo {
        self.inner.session_info()
    }
    fn session_state(&self) -> watch::Receiver<SessionState> {
        self.inner.session_state()
    }
    fn silence(&self) -> Option<&Silence> {
        Some(&*self.silence)
    }
    async fn close(&self) {
        self.inner.close().await
    }
}

#[derive(Debug)]
struct StallingConnector {
    inner: Arc<dyn Connector>,
    stalled: watch::Receiver<bool>,
    silence: Arc<Silence>,
}

#[async_trait]
impl Connector for StallingConnector {
    async fn connect(&self) -> Result<Arc<dyn Registry>> {
        Ok(Arc::new(Stalling {
            inner: self.inner.connect().await?,
            stalled: self.stalled.clone(),
            silence: self.silence.clone(),
        }))
    }
    fn describe(&self) -> String {
        format!("stalling {}", self.inner.describe())
    }
}

/// The next whole second after `now`.
fn next_second(now: DateTime<Utc>) -> DateTime<Utc> {
    let secs = now.timestamp() + 1;
    DateTime::from_timestamp(secs, 0).unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_fire_does_not_run_on_markers_a_stalled_registry_never_answered() {
    let (_server, embedded, rec) = cluster::embedded("stalled");
    let (stall, stalled) = watch::channel(false);
    let silence = Arc::new(Silence::new());
    let conn: Arc<dyn Connector> = Arc::new(StallingConnector {
        inner: embedded,
        stalled,
        silence: silence.clone(),
    });
    let job = (
        cluster::every_second("tick", 1),
        rec.handler(Duration::ZERO),
    );
    let node = start_node(conn, instance(1), vec![job]).await;
    rec.wait_more_fires("the job runs every second", 1, 2, WITHIN)
        .await;

    tracing::info!("--- the registry stalls half a second before an instant, before its prepare");
    let clock = rec.clock();
    let instant = next_second(clock.now() + chrono::TimeDelta::milliseconds(600));
    let until_stall = (instant - chrono::TimeDelta::milliseconds(500) - clock.now())
        .to_std()
        .unwrap();
    tokio::time::sleep(until_stall).await;
    stall.send_replace(true);
    let stalled_at = clock.now();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let during: Vec<_> = (rec.all().into_iter())
        .filter(|e| e.at >= stalled_at)
        .collect();
    assert!(
        during.is_empty(),
        "nothing runs on markers the stalled registry never answered: {during:?}"
    );

    tracing::info!("--- the registry answers again: the job runs on");
    stall.send_replace(false);
    let resumed_at = clock.now();
    rec.wait_until("a run after the registry answered again", WITHIN, |log| {
        log.iter().any(|e| e.at >= resumed_at)
    })
    .await;
    node.shutdown().await;
}
