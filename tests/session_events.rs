//! Session events never wait behind mirror reads (issue 17): a node whose mirror feed is stuck on a
//! `get_many` (a partitioned session's read waits for its call timeout) still learns at once that
//! its session is disconnected, and cancels its running items before the session could expire.
//!
//! The embedded registry with paused time, behind a [`Stalling`] registry whose `get_many` the test
//! holds.

use support::cluster;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use cluster::Recorder;
use shardcron::events::EngineEvent;
use shardcron::registry::embedded::{EmbeddedConnector, EmbeddedServer};
use shardcron::registry::{Connector, CreateMode, Registry, Result, SessionState};
use tokio::sync::watch;

const WITHIN: Duration = Duration::from_secs(120);
const SESSION_TIMEOUT: Duration = Duration::from_secs(6);

/// Holds every `get_many` while `held` is true; counts the calls it holds.
#[derive(Debug)]
struct Gate {
    held: watch::Sender<bool>,
    waiting: watch::Sender<usize>,
}

/// A session whose `get_many` waits at the [`Gate`]; everything else is the inner session's.
#[derive(Debug)]
struct Stalling {
    inner: Arc<dyn Registry>,
    gate: Arc<Gate>,
}

support::delegating_registry!(Stalling, inner, get_many(this, paths) {
    let mut held = this.gate.held.subscribe();
    if *held.borrow() {
        this.gate.waiting.send_modify(|n| *n += 1);
        let _ = held.wait_for(|h| !*h).await;
    }
    this.inner.get_many(paths).await
});

/// Opens embedded sessions wrapped in [`Stalling`]; remembers the last session's id.
#[derive(Debug)]
struct StallingConnector {
    inner: EmbeddedConnector,
    gate: Arc<Gate>,
    last: Mutex<Option<i64>>,
}

#[async_trait]
impl Connector for StallingConnector {
    async fn connect(&self) -> Result<Arc<dyn Registry>> {
        let inner = self.inner.connect().await?;
        *self.last.lock().unwrap() = Some(inner.session_info().id);
        Ok(Arc::new(Stalling {
            inner,
            gate: self.gate.clone(),
        }))
    }
    fn describe(&self) -> String {
        format!("stalling {}", self.inner.describe())
    }
}

#[tokio::test(start_paused = true)]
async fn a_disconnection_is_seen_and_fences_running_items_while_the_mirror_feed_is_stuck_on_a_read()
{
    cluster::init_tracing();
    let server = EmbeddedServer::new();
    let embedded = server
        .connector("stuck")
        .with_session_timeout(SESSION_TIMEOUT);
    let admin = embedded.connect().await.expect("an admin session");
    let gate = Arc::new(Gate {
        held: watch::Sender::new(false),
        waiting: watch::Sender::new(0),
    });
    let conn = Arc::new(StallingConnector {
        inner: embedded,
        gate: gate.clone(),
        last: Mutex::new(None),
    });
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
    let session = conn.last.lock().unwrap().expect("the node's session");
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
