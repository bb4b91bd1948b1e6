//! [`ProxiedSession`]: a session that keeps its proxy alive as long as the session itself.
//!
//! Tests often keep only the registry of a [`super::TestSession`] and drop its controls; the proxy
//! must not go with them, or the session would lose its connection for no reason of the test's.

use std::sync::Arc;

use shardcron::registry::zookeeper::ZkSession;

use super::TcpProxy;

/// A [`ZkSession`] plus the proxy its connection goes through. Every call is the session's.
#[derive(Debug)]
pub struct ProxiedSession {
    /// The session.
    pub session: Arc<ZkSession>,
    /// Its proxy, shared with the session's controls.
    pub proxy: Arc<TcpProxy>,
}

crate::delegating_registry!(ProxiedSession, session, get_many(this, paths) {
    this.session.get_many(paths).await
});
