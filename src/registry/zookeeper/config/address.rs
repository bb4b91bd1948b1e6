//! The checks of a connect string (hosts, ports, schemes, no chroot) and of a namespace, each
//! refusal naming the host or the namespace and why.

use super::ZkConfigError;

/// The scheme of a TLS host, as the client reads it.
pub(super) const TLS_SCHEME: &str = "tcp+tls://";
const PLAIN_SCHEME: &str = "tcp://";

pub(super) fn parse_connect_string(connect: &str) -> Result<Vec<String>, ZkConfigError> {
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

pub(super) fn validate_namespace(namespace: &str) -> Result<String, ZkConfigError> {
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
