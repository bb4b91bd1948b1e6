//! Translations between `zookeeper-client` types and the registry's own: errors, stats, create modes,
//! session states. Kept apart so that the session code reads as registry logic only.

use std::time::Duration;

use zookeeper_client as zk;

use crate::registry::{parent_path, CreateMode, OpKind, RegistryError, SessionState, Stat};

/// The registry's view of a ZooKeeper session state.
pub(crate) fn session_state(state: zk::SessionState) -> SessionState {
    match state {
        zk::SessionState::SyncConnected | zk::SessionState::ConnectedReadOnly => {
            SessionState::Connected
        }
        zk::SessionState::Disconnected => SessionState::Disconnected,
        zk::SessionState::Expired => SessionState::Expired,
        zk::SessionState::AuthFailed => SessionState::AuthFailed,
        zk::SessionState::Closed => SessionState::Closed,
    }
}

/// The registry's stat from ZooKeeper's.
pub(crate) fn stat(s: &zk::Stat) -> Stat {
    Stat {
        czxid: s.czxid,
        mzxid: s.mzxid,
        ctime: s.ctime,
        mtime: s.mtime,
        version: s.version,
        cversion: s.cversion,
        ephemeral_owner: s.ephemeral_owner,
        num_children: s.num_children,
    }
}

/// ZooKeeper's create mode for ours.
pub(crate) fn create_mode(mode: CreateMode) -> zk::CreateMode {
    match mode {
        CreateMode::Persistent => zk::CreateMode::Persistent,
        CreateMode::Ephemeral => zk::CreateMode::Ephemeral,
        CreateMode::PersistentSequential => zk::CreateMode::PersistentSequential,
        CreateMode::EphemeralSequential => zk::CreateMode::EphemeralSequential,
    }
}

/// What one failed call was, so that its error can name it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Call<'a> {
    /// The operation.
    pub(crate) op: OpKind,
    /// The node it worked on.
    pub(crate) path: &'a str,
    /// The version it expected, for `BadVersion`.
    pub(crate) version: Option<i32>,
    /// The per-call bound, for `Timeout`.
    pub(crate) bound: Duration,
}

impl<'a> Call<'a> {
    /// A call on `path` that expects no particular version.
    pub(crate) fn new(op: OpKind, path: &'a str, bound: Duration) -> Self {
        Self {
            op,
            path,
            version: None,
            bound,
        }
    }

    /// The same call expecting `version`.
    pub(crate) fn at(self, version: Option<i32>) -> Self {
        Self { version, ..self }
    }

    /// Maps a client error to the registry's typed variants; outcomes callers branch on get their
    /// own variant, everything unknown keeps the client's description.
    pub(crate) fn error(&self, err: zk::Error) -> RegistryError {
        let path = self.path.to_owned();
        match err {
            zk::Error::NoNode => RegistryError::NoNode { path },
            zk::Error::NodeExists => RegistryError::NodeExists { path },
            zk::Error::BadVersion => RegistryError::BadVersion {
                path,
                expected: self.version.unwrap_or(-1),
            },
            zk::Error::NotEmpty => RegistryError::NotEmpty { path },
            // The server refuses a create under an ephemeral: the culprit is the parent.
            zk::Error::NoChildrenForEphemerals => RegistryError::NoChildrenForEphemerals {
                path: parent_path(self.path).to_owned(),
            },
            zk::Error::NoAuth => RegistryError::NoAuth { op: self.op, path },
            zk::Error::ConnectionLoss => RegistryError::ConnectionLoss { op: self.op, path },
            zk::Error::SessionExpired | zk::Error::SessionMoved => RegistryError::SessionExpired,
            zk::Error::ClientClosed => RegistryError::Closed,
            zk::Error::Timeout => RegistryError::Timeout {
                op: self.op,
                path,
                after: self.bound,
            },
            zk::Error::BadArguments(reason) => RegistryError::InvalidPath {
                path,
                reason: (*reason).to_owned(),
            },
            other => RegistryError::Backend {
                op: self.op,
                path,
                reason: other.to_string(),
            },
        }
    }

    /// The error for a call that did not finish within its bound.
    pub(crate) fn timed_out(&self) -> RegistryError {
        RegistryError::Timeout {
            op: self.op,
            path: self.path.to_owned(),
            after: self.bound,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_errors_become_the_variants_callers_branch_on() {
        let call = Call::new(OpKind::Create, "/a/b", Duration::from_secs(1));
        assert!(call.error(zk::Error::NoNode).is_no_node());
        assert!(call.error(zk::Error::NodeExists).is_node_exists());
        assert!(call
            .at(Some(3))
            .error(zk::Error::BadVersion)
            .is_bad_version());
        match call.error(zk::Error::NoChildrenForEphemerals) {
            RegistryError::NoChildrenForEphemerals { path } => assert_eq!(path, "/a"),
            other => panic!("expected NoChildrenForEphemerals, got {other:?}"),
        }
        assert!(call.error(zk::Error::SessionExpired).is_fatal());
        assert!(call.error(zk::Error::ClientClosed).is_fatal());
        assert!(matches!(
            call.error(zk::Error::NoAuth),
            RegistryError::NoAuth {
                op: OpKind::Create,
                ..
            }
        ));
    }
}
