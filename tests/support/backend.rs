//! The interface the conformance suite runs against: a backend opens sessions on a namespace and
//! can expire, disconnect and reconnect each of them.

use std::sync::Arc;

use async_trait::async_trait;
use shardcron::registry::{Connector, Registry};

/// Fault controls for one session opened by a [`Backend`].
#[async_trait]
pub trait SessionControl: Send + Sync {
    /// Ends the session on the server side, as a session timeout would.
    async fn expire(&self);
    /// Cuts the session's connection without ending the session.
    async fn disconnect(&self);
    /// Lets a cut connection through again.
    async fn reconnect(&self);
}

/// One session of a test, with its fault controls.
pub struct TestSession {
    /// The session.
    pub registry: Arc<dyn Registry>,
    /// Its fault controls.
    pub control: Box<dyn SessionControl>,
}

/// A registry backend under test.
#[async_trait]
pub trait Backend: Send + Sync {
    /// `embedded` or `zookeeper`, for messages.
    fn name(&self) -> &'static str;
    /// A connector for `namespace` (sessions it opens have no fault controls).
    async fn connector(&self, namespace: &str) -> Arc<dyn Connector>;
    /// Opens a session on `namespace` whose connection the test can cut.
    async fn open(&self, namespace: &str) -> TestSession;
}
