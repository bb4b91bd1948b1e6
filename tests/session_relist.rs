//! After a reconnection a node starts nothing until its mirror is listed again: the watches lost
//! the events of the disconnection (a reshard meanwhile, a config change), and the re-list may
//! wait for the node's share of the spread window. The executors hear `Connected` with the
//! re-list's `Resynced`.
//!
//! The embedded registry with paused time, behind a gated session (`support::gate`) whose
//! `list_subtree` the test holds.

use support::cluster;

use std::sync::Arc;
use std::time::Duration;

use cluster::Recorder;
use shardcron::registry::embedded::EmbeddedServer;
use shardcron::registry::Connector;
use support::gate::{Gate, GatedConnector, Held};

const WITHIN: Duration = Duration::from_secs(60);

#[tokio::test(start_paused = true)]
async fn a_reconnected_node_fires_again_only_once_its_mirror_is_listed_again() {
    cluster::init_tracing();
    let server = EmbeddedServer::new();
    let gate = Gate::new();
    let embedded = server
        .connector("relist")
        .with_session_timeout(Duration::from_secs(30));
    let conn = GatedConnector::new(embedded, gate.clone(), Held::ListSubtree);
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
    let session = conn.last_session();
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
