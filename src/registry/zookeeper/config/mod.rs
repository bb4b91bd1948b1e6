//! [`ZkConfig`]: where the ZooKeeper ensemble is, which namespace to chroot into, how long to wait,
//! which credentials to present and how to reach `tcp+tls://` hosts.
//!
//! Everything is validated when the config is built, so a typo in a connect string fails at start-up
//! with the offending host named, not later as an opaque connection error.
//!
//! Here the config and its errors; in `tls.rs` the TLS files and their reading; in `address.rs`
//! the checks of the connect string and the namespace.

mod address;
mod tls;

pub use tls::ZkTlsFiles;

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use address::{parse_connect_string, validate_namespace, TLS_SCHEME};

/// Why a [`ZkConfig`] was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ZkConfigError {
    /// The connect string names no host.
    #[error("connect string is empty; expected host:port[,host:port...]")]
    EmptyConnectString,
    /// One host of the connect string cannot be parsed.
    #[error("connect string host {host:?}: {reason}")]
    BadHost {
        /// The refused `host:port` entry.
        host: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The connect string carries a chroot suffix (`h:2181/ns`); the namespace says where to chroot.
    #[error("connect string {connect:?} carries a chroot; put it in the namespace instead")]
    ChrootInConnectString {
        /// The refused connect string.
        connect: String,
    },
    /// The namespace is not a valid relative ZooKeeper path.
    #[error("namespace {namespace:?}: {reason}")]
    BadNamespace {
        /// The refused namespace.
        namespace: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Digest credentials are not of the form `user:password`.
    #[error("digest credentials must be user:password with a non-empty user")]
    BadDigest,
    /// A timeout of zero would fail every call.
    #[error("{which} must be greater than zero")]
    ZeroTimeout {
        /// Which timeout.
        which: &'static str,
    },
    /// A host names a scheme other than `tcp://` or `tcp+tls://`.
    #[error("connect string host {host:?}: unknown scheme; expected host:port, tcp://host:port or tcp+tls://host:port")]
    UnknownScheme {
        /// The refused entry.
        host: String,
    },
    /// A `tcp+tls://` host is given without the CA certificates that sign the servers' certificates.
    #[error("connect string host {host:?} is tcp+tls:// but no CA is given (--zk-tls-ca FILE or SHARDCRON_ZK_TLS_CA, ZkConfig::with_tls_ca when embedding)")]
    TlsWithoutCa {
        /// The first TLS host.
        host: String,
    },
    /// TLS files are given, but no host of the connect string is `tcp+tls://`: they would be unused.
    #[error("TLS files are given but no connect string host is tcp+tls://host:port")]
    TlsWithoutTlsHost,
    /// A TLS file cannot be read or holds no usable PEM.
    #[error("TLS {what} {path}: {reason}")]
    TlsFile {
        /// What the file should hold (`CA certificates`, `client certificate`, `client key`).
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
}

/// How to reach ZooKeeper and how to behave there.
///
/// ```
/// use std::time::Duration;
/// use shardcron::registry::zookeeper::ZkConfig;
///
/// let config = ZkConfig::new("zk1:2181,zk2:2181", "elasticjob-demo")
///     .unwrap()
///     .with_session_timeout(Duration::from_secs(30))
///     .with_digest("ops:secret")
///     .unwrap();
/// assert_eq!(config.hosts(), ["zk1:2181", "zk2:2181"]);
/// assert!(ZkConfig::new("zk1:2181/chroot", "ns").is_err());
/// assert!(ZkConfig::new("zk1:2181", "/ns").is_err());
///
/// // TLS hosts need the CA that signs the servers' certificates.
/// let tls = ZkConfig::new("tcp+tls://zk1:2281", "ns").unwrap();
/// assert!(tls.check_tls().is_err());
/// // The CA file is read by the check, which names a file it cannot read.
/// let tls = tls.with_tls_ca("/nonexistent/zk-ca.pem");
/// assert!(tls.check_tls().unwrap_err().to_string().contains("/nonexistent/zk-ca.pem"));
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct ZkConfig {
    hosts: Vec<String>,
    namespace: String,
    session_timeout: Duration,
    connection_timeout: Duration,
    call_timeout: Duration,
    digest: Option<String>,
    tls: Option<ZkTlsFiles>,
}

// The password must never reach a log line.
impl fmt::Debug for ZkConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ZkConfig")
            .field("hosts", &self.hosts)
            .field("namespace", &self.namespace)
            .field("session_timeout", &self.session_timeout)
            .field("connection_timeout", &self.connection_timeout)
            .field("call_timeout", &self.call_timeout)
            .field("digest_user", &self.digest_user())
            .field("tls", &self.tls)
            .finish()
    }
}

impl ZkConfig {
    /// ElasticJob's default session timeout; the server may negotiate it down.
    pub const DEFAULT_SESSION_TIMEOUT: Duration = Duration::from_secs(60);
    /// ElasticJob's default connection timeout.
    pub const DEFAULT_CONNECTION_TIMEOUT: Duration = Duration::from_secs(15);
    /// Bound of one registry call unless configured otherwise.
    pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(10);

    /// Validates a connect string (`host:port` entries separated by commas, the port defaults to
    /// 2181) and a namespace (one or more path segments, no leading or trailing `/`).
    pub fn new(connect: &str, namespace: &str) -> Result<Self, ZkConfigError> {
        Ok(Self {
            hosts: parse_connect_string(connect)?,
            namespace: validate_namespace(namespace)?,
            session_timeout: Self::DEFAULT_SESSION_TIMEOUT,
            connection_timeout: Self::DEFAULT_CONNECTION_TIMEOUT,
            call_timeout: Self::DEFAULT_CALL_TIMEOUT,
            digest: None,
            tls: None,
        })
    }

    /// Sets the session timeout to ask the server for (zero keeps the previous value).
    pub fn with_session_timeout(mut self, timeout: Duration) -> Self {
        if !timeout.is_zero() {
            self.session_timeout = timeout;
        }
        self
    }

    /// Sets how long a connection may stay silent before it counts as lost (zero keeps the
    /// previous value).
    pub fn with_connection_timeout(mut self, timeout: Duration) -> Self {
        if !timeout.is_zero() {
            self.connection_timeout = timeout;
        }
        self
    }

    /// Sets the bound of every registry call.
    pub fn with_call_timeout(mut self, timeout: Duration) -> Result<Self, ZkConfigError> {
        if timeout.is_zero() {
            return Err(ZkConfigError::ZeroTimeout {
                which: "call timeout",
            });
        }
        self.call_timeout = timeout;
        Ok(self)
    }

    /// Authenticates with digest credentials `user:password`; every node this session creates is
    /// then readable and writable only by that identity (ElasticJob's `digest` option).
    pub fn with_digest(mut self, credentials: &str) -> Result<Self, ZkConfigError> {
        match credentials.split_once(':') {
            Some((user, _)) if !user.is_empty() => {
                self.digest = Some(credentials.to_owned());
                Ok(self)
            }
            _ => Err(ZkConfigError::BadDigest),
        }
    }

    /// Trusts the PEM CA certificates in `file` for `tcp+tls://` hosts (read at each new session).
    pub fn with_tls_ca(mut self, file: impl Into<PathBuf>) -> Self {
        let ca = file.into();
        match &mut self.tls {
            Some(tls) => tls.ca = ca,
            None => {
                self.tls = Some(ZkTlsFiles { ca, identity: None });
            }
        }
        self
    }

    /// Presents the PEM client certificate `cert` and its private key `key` to `tcp+tls://` hosts
    /// that ask for one (mutual TLS). Needs [`ZkConfig::with_tls_ca`] too.
    pub fn with_tls_client_cert(
        mut self,
        cert: impl Into<PathBuf>,
        key: impl Into<PathBuf>,
    ) -> Self {
        let identity = Some((cert.into(), key.into()));
        match &mut self.tls {
            Some(tls) => tls.identity = identity,
            None => {
                self.tls = Some(ZkTlsFiles {
                    ca: PathBuf::new(),
                    identity,
                });
            }
        }
        self
    }

    /// The TLS files, when any is given.
    pub fn tls(&self) -> Option<&ZkTlsFiles> {
        self.tls.as_ref()
    }

    /// Whether some host is `tcp+tls://`.
    pub fn uses_tls(&self) -> bool {
        self.hosts.iter().any(|h| h.starts_with(TLS_SCHEME))
    }

    /// Checks that TLS hosts and TLS files go together and that the files read as PEM: a
    /// `tcp+tls://` host needs a CA, and TLS files without a `tcp+tls://` host are a mistake.
    pub fn check_tls(&self) -> Result<(), ZkConfigError> {
        self.tls_options().map(|_| ())
    }

    /// The client's TLS options read from the files; `None` without TLS hosts.
    pub(super) fn tls_options(
        &self,
    ) -> Result<Option<zookeeper_client::TlsOptions>, ZkConfigError> {
        let first_tls = self.hosts.iter().find(|h| h.starts_with(TLS_SCHEME));
        match (first_tls, &self.tls) {
            (None, None) => Ok(None),
            (None, Some(_)) => Err(ZkConfigError::TlsWithoutTlsHost),
            (Some(host), None) => Err(ZkConfigError::TlsWithoutCa { host: host.clone() }),
            (Some(host), Some(tls)) if tls.ca.as_os_str().is_empty() => {
                Err(ZkConfigError::TlsWithoutCa { host: host.clone() })
            }
            (Some(_), Some(tls)) => tls.load().map(Some),
        }
    }

    /// The hosts, `host:port` or `tcp+tls://host:port` each.
    pub fn hosts(&self) -> &[String] {
        &self.hosts
    }

    /// The hosts joined into a client connect string.
    pub fn connect_string(&self) -> String {
        self.hosts.join(",")
    }

    /// The namespace, without a leading `/`.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The session timeout asked for.
    pub fn session_timeout(&self) -> Duration {
        self.session_timeout
    }

    /// The connection timeout.
    pub fn connection_timeout(&self) -> Duration {
        self.connection_timeout
    }

    /// The bound of one registry call.
    pub fn call_timeout(&self) -> Duration {
        self.call_timeout
    }

    /// The digest credentials, `user:password`.
    pub fn digest(&self) -> Option<&str> {
        self.digest.as_deref()
    }

    /// The digest user alone, safe to log.
    pub fn digest_user(&self) -> Option<&str> {
        self.digest
            .as_deref()
            .and_then(|d| d.split_once(':'))
            .map(|(u, _)| u)
    }
}

#[cfg(test)]
mod tests;
