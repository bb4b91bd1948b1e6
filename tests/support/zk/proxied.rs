//! [`ProxiedSession`]: a session that keeps its proxy alive as long as the session itself.
//!
//! Tests often keep only the registry of a [`super::TestSession`] and drop its controls; the proxy
//! must not go with them, or the session would lose its connection for no reason of the test's.

use std::sync::Arc;

use async_trait::async_trait;
use shardcron::registry::zookeeper::ZkSession;
use shardcron::registry::{
    CreateMode, ListedNode, Op, OpResult, Registry, Result, SessionInfo, SessionState, Stat,
    WatchStream,
};
use tokio::sync::watch;

use super::TcpProxy;

/// A [`ZkSession`] plus the proxy its connection goes through. Every call is the session's.
#[derive(Debug)]
pub struct ProxiedSession {
    /// The session.
    pub session: Arc<ZkSession>,
    /// Its proxy, shared with the session's controls.
    pub proxy: Arc<TcpProxy>,
}

#[async_trait]
impl Registry for ProxiedSession {
    async fn create(&self, path: &str, data: &[u8], mode: CreateMode) -> Result<String> {
        self.session.create(path, data, mode).await
    }

    async fn get(&self, path: &str) -> Result<(Vec<u8>, Stat)> {
        self.session.get(path).await
    }

    async fn set(&self, path: &str, data: &[u8], version: Option<i32>) -> Result<Stat> {
        self.session.set(path, data, version).await
    }

    async fn delete(&self, path: &str, version: Option<i32>) -> Result<()> {
        self.session.delete(path, version).await
    }

    async fn children(&self, path: &str) -> Result<Vec<String>> {
        self.session.children(path).await
    }

    async fn exists(&self, path: &str) -> Result<Option<Stat>> {
        self.session.exists(path).await
    }

    async fn multi(&self, ops: &[Op]) -> Result<Vec<OpResult>> {
        self.session.multi(ops).await
    }

    async fn watch_recursive(&self, path: &str) -> Result<WatchStream> {
        self.session.watch_recursive(path).await
    }

    async fn get_many(&self, paths: &[String]) -> Result<Vec<Result<(Vec<u8>, Stat)>>> {
        self.session.get_many(paths).await
    }

    async fn list_subtree(&self, path: &str) -> Result<Vec<ListedNode>> {
        self.session.list_subtree(path).await
    }

    fn session_info(&self) -> SessionInfo {
        self.session.session_info()
    }

    fn session_state(&self) -> watch::Receiver<SessionState> {
        self.session.session_state()
    }

    async fn close(&self) {
        self.session.close().await
    }
}
