//! The errors of registry calls ([`RegistryError`]): the outcomes callers branch on (`NoNode`,
//! `NodeExists`, `BadVersion`) are variants of their own, and the fatal tier (`SessionExpired`,
//! `Closed`) is told apart by [`RegistryError::is_fatal`].

use std::time::Duration;

use super::ops::OpKind;

/// Errors of registry calls. Outcomes that callers branch on are variants of their own.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// The node (or, for a create, its parent) does not exist.
    #[error("node {path} does not exist")]
    NoNode {
        /// The missing path.
        path: String,
    },
    /// A create found the node already there.
    #[error("node {path} already exists")]
    NodeExists {
        /// The existing path.
        path: String,
    },
    /// A versioned set, delete or check found another version.
    #[error("node {path} is not at the expected version {expected}")]
    BadVersion {
        /// The node.
        path: String,
        /// The version the caller expected.
        expected: i32,
    },
    /// A delete found children under the node.
    #[error("node {path} has children")]
    NotEmpty {
        /// The node.
        path: String,
    },
    /// A create under an ephemeral node.
    #[error("node {path} is ephemeral and cannot have children")]
    NoChildrenForEphemerals {
        /// The ephemeral parent.
        path: String,
    },
    /// The path is not a valid registry path.
    #[error("invalid path {path:?}: {reason}")]
    InvalidPath {
        /// The refused path.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The caller's credentials do not allow the operation (ZooKeeper's `NoAuth`: the node's ACL
    /// admits other credentials only).
    #[error(
        "NoAuth on {op} {path}: the node's ACL refuses this session's credentials; give the \
         namespace's digest credentials (SHARDCRON_ZK_AUTH=digest:USER:PASSWORD or --zk-auth-file \
         FILE in the shipped tools, ZkConfig::with_digest when embedding)"
    )]
    NoAuth {
        /// The operation.
        op: OpKind,
        /// The node.
        path: String,
    },
    /// One operation of a multi-op failed, so none was applied.
    #[error("multi-op failed at operation {index} ({kind} {path}), nothing applied: {source}")]
    MultiFailed {
        /// Index of the failed operation.
        index: usize,
        /// Its kind.
        kind: OpKind,
        /// Its path.
        path: String,
        /// Why it failed (one of the node-level variants above).
        #[source]
        source: Box<RegistryError>,
    },
    /// The connection was lost while the call was in flight; it may or may not have been applied.
    #[error("connection lost during {op} on {path}")]
    ConnectionLoss {
        /// The operation.
        op: OpKind,
        /// The node.
        path: String,
    },
    /// The call did not complete within its bound.
    #[error("{op} on {path} timed out after {after:?}")]
    Timeout {
        /// The operation.
        op: OpKind,
        /// The node.
        path: String,
        /// The bound.
        after: Duration,
    },
    /// The session expired: this registry value is dead, build a new session. Fatal tier.
    #[error("registry session expired")]
    SessionExpired,
    /// The session was closed by its owner. Fatal tier.
    #[error("registry session closed")]
    Closed,
    /// Connecting failed.
    #[error("cannot connect to {target}: {reason}")]
    Connect {
        /// What we tried to reach (connect string, "embedded").
        target: String,
        /// Why it failed.
        reason: String,
    },
    /// A fault injected by a test through the embedded registry.
    #[error("injected fault on {op} {path}")]
    Injected {
        /// The operation.
        op: OpKind,
        /// The node.
        path: String,
    },
    /// Any other backend failure.
    #[error("{op} on {path} failed: {reason}")]
    Backend {
        /// The operation.
        op: OpKind,
        /// The node.
        path: String,
        /// The backend's description.
        reason: String,
    },
}

impl RegistryError {
    /// Whether the session is dead and must be rebuilt (the fatal tier).
    pub fn is_fatal(&self) -> bool {
        matches!(self, Self::SessionExpired | Self::Closed)
    }

    /// The node-level cause: for [`RegistryError::MultiFailed`] the failing operation's error,
    /// otherwise `self`. Lets callers match `NoNode`/`NodeExists` whether or not it came from a multi.
    pub fn cause(&self) -> &RegistryError {
        match self {
            Self::MultiFailed { source, .. } => source.cause(),
            other => other,
        }
    }

    /// Whether the cause is [`RegistryError::NoNode`].
    pub fn is_no_node(&self) -> bool {
        matches!(self.cause(), Self::NoNode { .. })
    }

    /// Whether the cause is [`RegistryError::NodeExists`].
    pub fn is_node_exists(&self) -> bool {
        matches!(self.cause(), Self::NodeExists { .. })
    }

    /// Whether the cause is [`RegistryError::BadVersion`].
    pub fn is_bad_version(&self) -> bool {
        matches!(self.cause(), Self::BadVersion { .. })
    }
}

/// Result of a registry call.
pub type Result<T, E = RegistryError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multi_failure_exposes_its_node_level_cause() {
        let e = RegistryError::MultiFailed {
            index: 1,
            kind: OpKind::Create,
            path: "/a".into(),
            source: Box::new(RegistryError::NodeExists { path: "/a".into() }),
        };
        assert!(e.is_node_exists());
        assert!(!e.is_no_node());
    }
}
