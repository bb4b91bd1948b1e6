//! [`ZkConfig`]: where the ZooKeeper ensemble is, which namespace to chroot into, how long to wait.
//!
//! Everything is validated when the config is built, so a typo in a connect string fails at start-up
//! with the offending host named, not later as an opaque connection error.

use std::fmt;
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
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct ZkConfig {
    hosts: Vec<String>,
    namespace: String,
    session_timeout: Duration,
    connection_timeout: Duration,
    call_timeout: Duration,
    digest: Option<String>,
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

    /// The hosts, `host:port` each.
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

fn parse_connect_string(connect: &str) -> Result<Vec<String>, ZkConfigError> {
    if connect.contains('/') {
        return Err(ZkConfigError::ChrootInConnectString {
            connect: connect.to_owned(),
        });
    }
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
        hosts.push(parse_host(entry)?);
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
