//! Session events never wait behind mirror reads (issue 17): a node whose mirror feed is stuck on a
//! `get_many` (a partitioned session's read waits for its call timeout) still learns at once that
//! its session is disconnected, and cancels its running items before the session could expire.
//!
//! The embedded registry with paused time, behind a gated session (`support::gate`) whose
//! `get_many` the test holds.

use support::cluster;

use std::time::Duration;

use cluster::Recorder;
use shardcron::events::EngineEvent;
use shardcron::registry::embedded::EmbeddedServer;
use shardcron::registry::{Connector, CreateMode, SessionState};
use support::gate::{Gate, GatedConnector, Held};

const WITHIN: Duration = Duration::from_secs(120);
const SESSION_TIMEOUT: Duration = Duration::from_secs(6);

#[tokio::test(start_paused = true)]
async fn a_disconnection_is_seen_and_fences_running_items_while_the_mirror_feed_is_stuck_on_a_read()
{
    cluster::init_tracing();
    let server = EmbeddedServer::new();
    let embedded = server
        .connector("stuck")
        .with_session_timeout(SESSION_TIMEOUT);
    let admin = embedded.connect().await.expect("an admin session");
    let gate = Gate::new();
    let conn = GatedConnector::new(embedded, gate.clone(), Held::GetMany);
    let rec = Recorder::default();
    let (node, mut cancellations) = rec
        .start_long_item(conn.clone(), Duration::from_secs(30), WITHIN)
        .await;
    let mut events = node.subscribe("test", 4096);

    tracing::info!("--- the feed gets stuck reading a changed node");
    gate.held.send_replace(true);
    admin
        .create("/long/stuck-marker", b"x", CreateMode::Persistent)
        .await
        .expect("an admin write");
    let mut waiting = gate.waiting.subscribe();
    tokio::time::timeout(Duration::from_secs(5), waiting.wait_for(|n| *n > 0))
        .await
        .expect("the feed reads the changed node with get_many")
        .expect("the gate lives");

    tracing::info!("--- the node's connection drops while the feed is stuck");
    let session = conn.last_session();
    server.disconnect(session);
    let seen = tokio::time::timeout(Duration::from_millis(500), async {
        while let Some(d) = events.events.recv().await {
            if d.event
                == (EngineEvent::SessionChanged {
                    state: SessionState::Disconnected,
                })
            {
                return;
            }
        }
    })
    .await;
    assert!(
        seen.is_ok(),
        "the disconnection reached the engine within 500 ms although the feed is stuck"
    );
    let started = tokio::time::Instant::now();
    tokio::time::timeout(SESSION_TIMEOUT, cancellations.wait_for(|n| *n > 0))
        .await
        .expect("the running item is cancelled before the session could expire")
        .expect("the counter lives");
    tracing::info!(after = ?started.elapsed(), "--- cancelled; the feed is let go");
    gate.held.send_replace(false);
    server.reconnect(session);
    node.shutdown().await;
}
