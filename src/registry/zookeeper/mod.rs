//! The ZooKeeper backend: [`ZkConnector`] opens [`ZkSession`]s chrooted at a namespace.
//!
//! | file | holds |
//! | --- | --- |
//! | `config/` | [`ZkConfig`]: hosts, namespace, timeouts, digest credentials, TLS files, validated once |
//! | `access.rs` | [`ZkAccessArgs`]: the credentials and TLS flags and variables every shipped tool takes |
//! | `session.rs` | [`ZkSession`]: the [`Registry`] calls, each bounded and counted |
//! | `watching.rs` | one persistent recursive watch forwarded as [`crate::registry::WatchEvent`]s |
//! | `listing.rs` | `list_subtree` in pipelined multi-read batches |
//! | `convert.rs` | client errors, stats and states to the registry's own types |
//! | `counters.rs` | [`OpCounts`], calls per kind and outcome |
//! | `io.rs` | the runtime the client's IO runs on: one thread of its own, whatever the job load |
//!
//! With digest credentials every node is created with creator-only ACLs, as ElasticJob does with its
//! `digest` option (Curator's ACL provider answering `CREATOR_ALL_ACL`); without them nodes are open
//! to anyone. A session must be able to read its namespace node: a namespace locked by other
//! credentials fails the connect with [`RegistryError::NoAuth`], not later in the mirror's listing.

mod access;
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

pub use self::access::{ZkAccessArgs, ZkAccessError, ZK_AUTH_ENV};
pub use self::config::{ZkConfig, ZkConfigError, ZkTlsFiles};
use self::counters::OpCounters;
pub use self::counters::OpCounts;
pub use self::session::ZkSession;
use crate::registry::{Connector, OpKind, Registry, RegistryError, Result};

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
        // Read at every session, so that renewed certificates are used at the next one.
        let tls = config
            .tls_options()
            .map_err(|e| failed("reading the TLS files", e.to_string()))?;
        let mut builder = zk::Client::connector()
            .with_session_timeout(config.session_timeout())
            .with_connection_timeout(config.connection_timeout())
            // Try every host once and report, rather than cycling until the session timeout: the
            // registry actor owns the retry policy.
            .with_fail_eagerly();
        if let Some(credentials) = config.digest() {
            builder = builder.with_auth("digest", credentials.as_bytes());
        }
        if let Some(tls) = tls {
            install_crypto_provider();
            builder = builder.with_tls(tls);
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
        let no_auth = |op, e: zk::Error| match e {
            zk::Error::NoAuth => Some(RegistryError::NoAuth {
                op,
                path: namespace.clone(),
            }),
            _ => None,
        };
        tokio::time::timeout(config.call_timeout(), root.mkdir(&namespace, &options))
            .await
            .map_err(|_| failed("creating the namespace node", "timed out".into()))?
            .map_err(|e| {
                let reason = e.to_string();
                no_auth(OpKind::Create, e)
                    .unwrap_or_else(|| failed("creating the namespace node", reason))
            })?;
        // `exists` needs no permission, so reading the namespace node is what tells a session
        // without the namespace's credentials, before the mirror's listing would loop on it.
        tokio::time::timeout(config.call_timeout(), root.get_data(&namespace))
            .await
            .map_err(|_| failed("reading the namespace node", "timed out".into()))?
            .map_err(|e| {
                let reason = e.to_string();
                no_auth(OpKind::Get, e)
                    .unwrap_or_else(|| failed("reading the namespace node", reason))
            })?;
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

/// rustls picks its process-wide crypto provider from its crate features, and more than one is
/// compiled in (the ZooKeeper client's TLS asks for aws-lc-rs, the HTTP clients for ring): name
/// one before the client builds its TLS config. An embedding host that installed its own keeps it.
fn install_crypto_provider() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
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
