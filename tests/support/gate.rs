//! A session wrapper whose reads the test can hold: [`Gated`] makes one kind of call ([`Held`])
//! wait at a [`Gate`] while the test holds it, and [`GatedConnector`] opens embedded sessions so
//! wrapped, remembering the last one's id for the server's fault controls.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use shardcron::registry::embedded::EmbeddedConnector;
use shardcron::registry::{Connector, Registry, Result};
use tokio::sync::watch;

/// Holds the gated calls while `held` is true; counts the calls it held.
#[derive(Debug)]
pub struct Gate {
    pub held: watch::Sender<bool>,
    pub waiting: watch::Sender<usize>,
}

impl Gate {
    /// An open gate.
    pub fn new() -> Arc<Self> {
        Arc::new(Gate {
            held: watch::Sender::new(false),
            waiting: watch::Sender::new(0),
        })
    }

    /// Waits at the gate while it is held.
    async fn pass(&self) {
        let mut held = self.held.subscribe();
        if *held.borrow() {
            self.waiting.send_modify(|n| *n += 1);
            let _ = held.wait_for(|h| !*h).await;
        }
    }
}

/// Which call waits at the gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Held {
    /// `get_many`: the feed's reads of changed nodes.
    GetMany,
    /// `list_subtree`: the feed's listings.
    ListSubtree,
}

/// A session whose `held` calls wait at the [`Gate`]; everything else is the inner session's.
#[derive(Debug)]
pub struct Gated {
    inner: Arc<dyn Registry>,
    gate: Arc<Gate>,
    held: Held,
}

crate::delegating_registry!(Gated, inner, get_many(this, paths) {
    if this.held == Held::GetMany {
        this.gate.pass().await;
    }
    this.inner.get_many(paths).await
}, list_subtree(this, path) {
    if this.held == Held::ListSubtree {
        this.gate.pass().await;
    }
    this.inner.list_subtree(path).await
});

/// Opens embedded sessions wrapped in [`Gated`]; remembers the last session's id.
#[derive(Debug)]
pub struct GatedConnector {
    pub inner: EmbeddedConnector,
    pub gate: Arc<Gate>,
    pub held: Held,
    pub last: Mutex<Option<i64>>,
}

impl GatedConnector {
    /// Sessions of `inner` whose `held` calls wait at `gate`.
    pub fn new(inner: EmbeddedConnector, gate: Arc<Gate>, held: Held) -> Arc<Self> {
        Arc::new(GatedConnector {
            inner,
            gate,
            held,
            last: Mutex::new(None),
        })
    }

    /// The id of the last session opened.
    pub fn last_session(&self) -> i64 {
        self.last.lock().unwrap().expect("a session was opened")
    }
}

#[async_trait]
impl Connector for GatedConnector {
    async fn connect(&self) -> Result<Arc<dyn Registry>> {
        let inner = self.inner.connect().await?;
        *self.last.lock().unwrap() = Some(inner.session_info().id);
        Ok(Arc::new(Gated {
            inner,
            gate: self.gate.clone(),
            held: self.held,
        }))
    }
    fn describe(&self) -> String {
        format!("gated {}", self.inner.describe())
    }
}
