//! The ZooKeeper backend: [`ZkConnector`] opens [`ZkSession`]s chrooted at a namespace.
//!
//! | file | holds |
//! | --- | --- |
//! | `config.rs` | [`ZkConfig`]: hosts, namespace, timeouts, digest credentials, validated once |
//! | `session.rs` | [`ZkSession`]: the [`Registry`] calls, each bounded and counted |
//! | `watching.rs` | one persistent recursive watch forwarded as [`crate::registry::WatchEvent`]s |
//! | `listing.rs` | `list_subtree` in pipelined multi-read batches |
//! | `convert.rs` | client errors, stats and states to the registry's own types |
//! | `counters.rs` | [`OpCounts`], calls per kind and outcome |
//! | `io.rs` | the runtime the client's IO runs on: one thread of its own, whatever the job load |
//!
//! With digest credentials every node is created with creator-only ACLs, as ElasticJob does with its
//! `digest` option; without them nodes are open to anyone.

mod config;
mod convert;
mod counters;
mod io;
mod listing;
mod session;
mod watching;

use std::sync::Arc;

use async_trait::async_trait;
use zookeeper_client as zk;

pub use self::config::{ZkConfig, ZkConfigError};
use self::counters::OpCounters;
pub use self::counters::OpCounts;
pub use self::session::ZkSession;
use crate::registry::{Connector, Registry, RegistryError, Result};

/// Opens ZooKeeper sessions on one namespace; the registry actor keeps one and asks it for a new
/// session after an expiry.
#[derive(Debug)]
pub struct ZkConnector {
    config: ZkConfig,
    counts: Arc<OpCounters>,
}

impl ZkConnector {
    /// A connector for `config`. Nothing is contacted until [`Connector::connect`].
    pub fn new(config: ZkConfig) -> Self {
        Self {
            config,
            counts: Arc::default(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &ZkConfig {
        &self.config
    }

    /// The calls of every session this connector opened, per kind and outcome.
    pub fn op_counts(&self) -> OpCounts {
        self.counts.snapshot()
    }

    /// Opens a session and returns it as its concrete type (for its counters and identity).
    ///
    /// Creates the namespace node when it is missing, before chrooting into it.
    pub async fn connect_session(&self) -> Result<ZkSession> {
        let config = &self.config;
        let target = self.describe();
        let failed = |step: &str, reason: String| RegistryError::Connect {
            target: target.clone(),
            reason: format!("{step}: {reason}"),
        };
        let acls = if config.digest().is_some() {
            zk::Acls::creator_all()
        } else {
            zk::Acls::anyone_all()
        };
        let mut builder = zk::Client::connector()
            .with_session_timeout(config.session_timeout())
            .with_connection_timeout(config.connection_timeout())
            // Try every host once and report, rather than cycling until the session timeout: the
            // registry actor owns the retry policy.
            .with_fail_eagerly();
        if let Some(credentials) = config.digest() {
            builder = builder.with_auth("digest", credentials.as_bytes());
        }
        let bound = config.connection_timeout().max(config.session_timeout());
        // Connected on the IO runtime, where the client spawns the task that owns the connection.
        let hosts = config.connect_string();
        let connecting = io::handle()
            .spawn(async move { builder.connect(&hosts).await.map_err(|e| e.to_string()) });
        let abort = connecting.abort_handle();
        let root = tokio::time::timeout(bound, connecting)
            .await
            .map_err(|_| {
                // A session that connects after we gave up would be nobody's.
                abort.abort();
                failed(
                    "opening a session",
                    format!("no server answered within {bound:?}"),
                )
            })?
            .map_err(|e| {
                failed(
                    "opening a session",
                    format!("the connecting task failed: {e}"),
                )
            })?
            .map_err(|e| failed("opening a session", e))?;
        let namespace = format!("/{}", config.namespace());
        let options = zk::CreateMode::Persistent.with_acls(acls);
        tokio::time::timeout(config.call_timeout(), root.mkdir(&namespace, &options))
            .await
            .map_err(|_| failed("creating the namespace node", "timed out".into()))?
            .map_err(|e| failed("creating the namespace node", e.to_string()))?;
        let client = root
            .chroot(namespace.as_str())
            .map_err(|_| failed("chrooting", format!("{namespace} is not a valid root")))?;
        Ok(ZkSession::new(
            client,
            config.call_timeout(),
            acls,
            self.counts.clone(),
            target,
        ))
    }
}

#[async_trait]
impl Connector for ZkConnector {
    async fn connect(&self) -> Result<Arc<dyn Registry>> {
        Ok(Arc::new(self.connect_session().await?))
    }

    fn describe(&self) -> String {
        format!(
            "{}/{}",
            self.config.connect_string(),
            self.config.namespace()
        )
    }
}
