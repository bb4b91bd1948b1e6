//! [`ZkConfig`]: where the ZooKeeper ensemble is, which namespace to chroot into, how long to wait,
//! which credentials to present and how to reach `tcp+tls://` hosts.
//!
//! Everything is validated when the config is built, so a typo in a connect string fails at start-up
//! with the offending host named, not later as an opaque connection error.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

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

/// The files that secure `tcp+tls://` connections: the CA that signs the servers' certificates and,
/// for mutual TLS, this client's certificate and key. They are read again at every new session, so a
/// renewed certificate is picked up at the next reconnect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZkTlsFiles {
    /// PEM CA certificates (and CRLs) that sign the servers' certificates.
    pub ca: PathBuf,
    /// PEM client certificate chain and private key, for servers that ask for one (`ssl.clientAuth`).
    pub identity: Option<(PathBuf, PathBuf)>,
}

impl ZkTlsFiles {
    /// Reads the files into the client's TLS options, naming the file that fails.
    pub(super) fn load(&self) -> Result<zookeeper_client::TlsOptions, ZkConfigError> {
        let ca = read_pem("CA certificates", &self.ca)?;
        let mut options = zookeeper_client::TlsOptions::new()
            .with_pem_ca(&ca)
            .map_err(|e| tls_file("CA certificates", &self.ca, e.to_string()))?;
        if let Some((cert_path, key_path)) = &self.identity {
            let cert = read_pem("client certificate", cert_path)?;
            let key = read_pem("client key", key_path)?;
            if !key.contains("PRIVATE KEY") {
                return Err(tls_file(
                    "client key",
                    key_path,
                    "holds no PEM private key".into(),
                ));
            }
            options = options
                .with_pem_identity(&cert, &key)
                .map_err(|e| tls_file("client certificate", cert_path, e.to_string()))?;
        }
        Ok(options)
    }
}

/// Bound of a PEM file read: a certificate chain is a few KiB.
const MAX_PEM_BYTES: u64 = 1024 * 1024;

fn read_pem(what: &'static str, path: &Path) -> Result<String, ZkConfigError> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| tls_file(what, path, e.to_string()))?;
    let mut text = String::new();
    file.take(MAX_PEM_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| tls_file(what, path, e.to_string()))?;
    if text.len() as u64 > MAX_PEM_BYTES {
        return Err(tls_file(
            what,
            path,
            format!("larger than {MAX_PEM_BYTES} bytes"),
        ));
    }
    if !text.contains("-----BEGIN ") {
        return Err(tls_file(what, path, "holds no PEM block".into()));
    }
    Ok(text)
}

fn tls_file(what: &'static str, path: &Path, reason: String) -> ZkConfigError {
    ZkConfigError::TlsFile {
        what,
        path: path.to_owned(),
        reason,
    }
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

/// The scheme of a TLS host, as the client reads it.
const TLS_SCHEME: &str = "tcp+tls://";
const PLAIN_SCHEME: &str = "tcp://";

fn parse_connect_string(connect: &str) -> Result<Vec<String>, ZkConfigError> {
    let mut hosts = Vec::new();
    for entry in connect.split(',').map(str::trim) {
        if entry.is_empty() {
            if connect.trim().is_empty() {
                return Err(ZkConfigError::EmptyConnectString);
            }
            return Err(bad_host(
                entry,
                "empty entry (a doubled or trailing comma?)",
            ));
        }
        let (scheme, address) = if let Some(rest) = entry.strip_prefix(TLS_SCHEME) {
            (TLS_SCHEME, rest)
        } else if let Some(rest) = entry.strip_prefix(PLAIN_SCHEME) {
            ("", rest)
        } else if entry.contains("://") {
            return Err(ZkConfigError::UnknownScheme {
                host: entry.to_owned(),
            });
        } else {
            ("", entry)
        };
        if address.contains('/') {
            return Err(ZkConfigError::ChrootInConnectString {
                connect: connect.to_owned(),
            });
        }
        hosts.push(format!("{scheme}{}", parse_host(address)?));
    }
    Ok(hosts)
}

fn parse_host(entry: &str) -> Result<String, ZkConfigError> {
    // `[v6]:port`, `host:port` or a bare host that gets ZooKeeper's default port.
    let (host, port) = if let Some(rest) = entry.strip_prefix('[') {
        let (v6, after) = rest
            .split_once(']')
            .ok_or_else(|| bad_host(entry, "unclosed '['"))?;
        (v6, after.strip_prefix(':'))
    } else {
        match entry.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (entry, None),
        }
    };
    if host.is_empty() {
        return Err(bad_host(entry, "empty host name"));
    }
    if host.chars().any(char::is_whitespace) {
        return Err(bad_host(entry, "whitespace in host name"));
    }
    let port = match port {
        None => 2181,
        Some(p) => p
            .parse::<u16>()
            .ok()
            .filter(|p| *p != 0)
            .ok_or_else(|| bad_host(entry, "port is not a number in 1..=65535"))?,
    };
    Ok(if entry.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    })
}

fn bad_host(entry: &str, reason: &str) -> ZkConfigError {
    ZkConfigError::BadHost {
        host: entry.to_owned(),
        reason: reason.to_owned(),
    }
}

fn validate_namespace(namespace: &str) -> Result<String, ZkConfigError> {
    let bad = |reason: &str| ZkConfigError::BadNamespace {
        namespace: namespace.to_owned(),
        reason: reason.to_owned(),
    };
    if namespace.is_empty() {
        return Err(bad("empty; every deployment needs its own namespace"));
    }
    if namespace.starts_with('/') || namespace.ends_with('/') {
        return Err(bad("must not start or end with '/'"));
    }
    for seg in namespace.split('/') {
        if seg.is_empty() || seg == "." || seg == ".." {
            return Err(bad("empty or relative path segment"));
        }
        if seg == "zookeeper" {
            return Err(bad("'zookeeper' is reserved by the server"));
        }
        if seg.chars().any(|c| c.is_control() || c.is_whitespace()) {
            return Err(bad("control or whitespace character"));
        }
    }
    Ok(namespace.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_strings_with_several_hosts_are_normalised() {
        let c = ZkConfig::new("a:1, b ,[::1]:2182", "ns").unwrap();
        assert_eq!(c.hosts(), ["a:1", "b:2181", "[::1]:2182"]);
        assert_eq!(c.connect_string(), "a:1,b:2181,[::1]:2182");
    }

    #[test]
    fn bad_connect_strings_name_the_offending_host() {
        assert_eq!(
            ZkConfig::new(" ", "ns").unwrap_err(),
            ZkConfigError::EmptyConnectString
        );
        for (connect, host) in [
            ("a:1,,b:2", ""),
            ("a:x", "a:x"),
            ("a:0", "a:0"),
            (":1", ":1"),
        ] {
            match ZkConfig::new(connect, "ns").unwrap_err() {
                ZkConfigError::BadHost { host: h, .. } => assert_eq!(h, host, "{connect}"),
                other => panic!("{connect}: expected BadHost, got {other:?}"),
            }
        }
        assert!(matches!(
            ZkConfig::new("a:1/x", "ns").unwrap_err(),
            ZkConfigError::ChrootInConnectString { .. }
        ));
    }

    #[test]
    fn namespaces_must_be_relative_paths() {
        for bad in ["", "/ns", "ns/", "a//b", "a/../b", "zookeeper", "a b"] {
            assert!(
                matches!(
                    ZkConfig::new("h:1", bad),
                    Err(ZkConfigError::BadNamespace { .. })
                ),
                "{bad:?} should be refused"
            );
        }
        assert_eq!(ZkConfig::new("h:1", "a/b").unwrap().namespace(), "a/b");
    }

    #[test]
    fn digest_credentials_need_a_user_and_stay_out_of_debug_output() {
        assert_eq!(
            ZkConfig::new("h:1", "ns").unwrap().with_digest(":pw"),
            Err(ZkConfigError::BadDigest)
        );
        let c = ZkConfig::new("h:1", "ns")
            .unwrap()
            .with_digest("ops:s3cret")
            .unwrap();
        assert_eq!(c.digest_user(), Some("ops"));
        assert!(!format!("{c:?}").contains("s3cret"));
    }
}
