//! The console's registry session and its change signal.
//!
//! One session serves every request and feeds one recursive watch on the namespace through a
//! [`Mirror`]: every read of every page comes from that mirror ([`Live::reader`]), so an open page
//! costs the registry nothing; writes go to the session ([`Live::ops`]). Every event bumps a counter
//! that the event streams wait on, and the streams share one snapshot per change and page kind
//! (`shared.rs`). When the session ends (expired, say), a new one is opened with a new mirror, the
//! operations move to it and the counter is bumped, so open pages refresh instead of going stale.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Mutex, RwLock};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::ConsoleError;
use crate::ops::Ops;
use crate::registry::mirror::{Mirror, MirrorFeed};
use crate::registry::{Connector, Registry};

/// How long to wait before opening a new session after one ended or could not be opened.
const RECONNECT_BACKOFF: Duration = Duration::from_secs(1);

/// The session the console operates on and a counter of the changes seen on it.
#[derive(Debug, Clone)]
pub struct Live {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    ops: RwLock<Ops>,
    reader: RwLock<Ops>,
    changes: watch::Sender<u64>,
    stop: CancellationToken,
    task: Mutex<Option<JoinHandle<()>>>,
}

impl Live {
    /// Opens a session on `connector`, feeds a mirror of its namespace and keeps both alive.
    pub async fn start(connector: Arc<dyn Connector>) -> Result<Self, ConsoleError> {
        let (session, mirror, feed) = open(connector.as_ref()).await?;
        let inner = Arc::new(Inner {
            reader: RwLock::new(Ops::new(Arc::clone(&session)).reading(mirror)),
            ops: RwLock::new(Ops::new(session)),
            changes: watch::channel(0).0,
            stop: CancellationToken::new(),
            task: Mutex::new(None),
        });
        let task = tokio::spawn(follow(Arc::clone(&inner), connector, feed));
        *inner.task.lock() = Some(task);
        Ok(Self { inner })
    }

    /// The operations API on the current session: what writes use.
    pub fn ops(&self) -> Ops {
        self.inner.ops.read().clone()
    }

    /// The operations API reading the current mirror: what every page reads.
    pub fn reader(&self) -> Ops {
        self.inner.reader.read().clone()
    }

    /// The number of changes seen so far.
    pub fn change_count(&self) -> u64 {
        *self.inner.changes.borrow()
    }

    /// A receiver that changes whenever the namespace does.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.inner.changes.subscribe()
    }

    /// Completes when the console stops.
    pub async fn stopped(&self) {
        self.inner.stop.cancelled().await
    }

    /// Stops following and closes the session.
    pub async fn stop(&self) {
        self.inner.stop.cancel();
        let task = self.inner.task.lock().take();
        if let Some(task) = task {
            let _ = task.await;
        }
        let ops = self.ops();
        ops.registry().close().await;
    }
}

async fn open(
    connector: &dyn Connector,
) -> Result<(Arc<dyn Registry>, Mirror, MirrorFeed), ConsoleError> {
    let failed = |source| ConsoleError::Connect {
        target: connector.describe(),
        source,
    };
    let session = connector.connect().await.map_err(failed)?;
    let mirror = Mirror::new();
    let feed = mirror
        .feed(Arc::clone(&session), "/")
        .await
        .map_err(ConsoleError::Watch)?;
    Ok((session, mirror, feed))
}

/// Bumps the counter on every event; re-opens the session when the feed ends.
async fn follow(inner: Arc<Inner>, connector: Arc<dyn Connector>, mut feed: MirrorFeed) {
    loop {
        loop {
            tokio::select! {
                _ = inner.stop.cancelled() => return,
                event = feed.recv() => match event {
                    Some(_) => inner.changes.send_modify(|n| *n += 1),
                    None => break,
                },
            }
        }
        tracing::warn!("the console's registry session ended; opening a new one");
        loop {
            tokio::select! {
                _ = inner.stop.cancelled() => return,
                _ = tokio::time::sleep(RECONNECT_BACKOFF) => {}
            }
            match open(connector.as_ref()).await {
                Ok((session, mirror, new_feed)) => {
                    *inner.reader.write() = Ops::new(Arc::clone(&session)).reading(mirror);
                    let old = std::mem::replace(&mut *inner.ops.write(), Ops::new(session));
                    old.registry().close().await;
                    feed = new_feed;
                    inner.changes.send_modify(|n| *n += 1);
                    break;
                }
                Err(e) => tracing::warn!(error = %e, "the console cannot reach the registry"),
            }
        }
    }
}
