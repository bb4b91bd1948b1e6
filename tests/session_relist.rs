//! After a reconnection a node starts nothing until its mirror is listed again: the watches lost
//! the events of the disconnection (a reshard meanwhile, a config change), and the re-list may
//! wait for the node's share of the spread window. The executors hear `Connected` with the
//! re-list's `Resynced`.
//!
//! The embedded registry with paused time, behind a [`Listing`] registry whose `list_subtree`
//! the test holds.

use support::cluster;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use cluster::Recorder;
use shardcron::registry::embedded::{EmbeddedConnector, EmbeddedServer};
use shardcron::registry::{Connector, Registry, Result};
use tokio::sync::watch;

const WITHIN: Duration = Duration::from_secs(60);

/// Holds every `list_subtree` while `held` is true; counts the calls it holds.
#[derive(Debug)]
struct Gate {
    held: watch::Sender<bool>,
    waiting: watch::Sender<usize>,
}

/// A session whose `list_subtree` waits at the [`Gate`]; everything else is the inner session's.
#[derive(Debug)]
struct Listing {
    inner: Arc<dyn Registry>,
    gate: Arc<Gate>,
}

support::delegating_registry!(Listing, inner, get_many(this, paths) {
    this.inner.get_many(paths).await
}, list_subtree(this, path) {
    let mut held = this.gate.held.subscribe();
    if *held.borrow() {
        this.gate.waiting.send_modify(|n| *n += 1);
        let _ = held.wait_for(|h| !*h).await;
    }
    this.inner.list_subtree(path).await
});

/// Opens embedded sessions wrapped in [`Listing`]; remembers the last session's id.
#[derive(Debug)]
struct ListingConnector {
    inner: EmbeddedConnector,
    gate: Arc<Gate>,
    last: Mutex<Option<i64>>,
}

#[async_trait]
impl Connector for ListingConnector {
    async fn connect(&self) -> Result<Arc<dyn Registry>> {
        let inner = self.inner.connect().await?;
        *self.last.lock().unwrap() = Some(inner.session_info().id);
        Ok(Arc::new(Listing {
            inner,
            gate: self.gate.clone(),
        }))
    }
    fn describe(&self) -> String {
        format!("listing {}", self.inner.describe())
    }
}

#[tokio::test(start_paused = true)]
async fn a_reconnected_node_fires_again_only_once_its_mirror_is_listed_again() {
    cluster::init_tracing();
    let server = EmbeddedServer::new();
    let gate = Arc::new(Gate {
        held: watch::Sender::new(false),
        waiting: watch::Sender::new(0),
    });
    let conn = Arc::new(ListingConnector {
        inner: server
            .connector("relist")
            .with_session_timeout(Duration::from_secs(30)),
        gate: gate.clone(),
        last: Mutex::new(None),
    });
    let rec = Recorder::default();
    let conn_dyn: Arc<dyn Connector> = conn.clone();
    let node = rec
        .start(
            &conn_dyn,
            1,
            cluster::every_second("tick", 1),
            Duration::ZERO,
        )
        .await;
    rec.wait_more_fires("two fires before the cut", 1, 2, WITHIN)
        .await;

    tracing::info!("--- the connection drops; the re-list after it will be held");
    gate.held.send_replace(true);
    let session = conn.last.lock().unwrap().expect("the node's session");
    server.disconnect(session);
    tokio::time::sleep(Duration::from_secs(2)).await;
    server.reconnect(session);
    let mut waiting = gate.waiting.subscribe();
    tokio::time::timeout(Duration::from_secs(5), waiting.wait_for(|n| *n > 0))
        .await
        .expect("the feed lists its roots again after the reconnect")
        .expect("the gate lives");

    tracing::info!("--- connected, the mirror not listed yet: five seconds without a start");
    let before = rec.all().len();
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(
        rec.all().len(),
        before,
        "no item started while the mirror was not listed again: {:#?}",
        &rec.all()[before..]
    );

    tracing::info!("--- the listing answers: the job fires again");
    gate.held.send_replace(false);
    rec.wait_more_fires("fires after the re-list", 1, 2, WITHIN)
        .await;
    node.shutdown().await;
}
