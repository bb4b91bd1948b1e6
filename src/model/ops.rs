//! The operation model of the registry: what a write does ([`Op`], [`CreateMode`]), what a
//! successful multi-op answers ([`OpResult`]), a node's metadata ([`Stat`], [`ListedNode`]) and every
//! kind of call ([`OpKind`]). The core's decisions return these; the registry adapters carry them out.

use std::fmt;

/// How a node lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CreateMode {
    /// Stays until deleted.
    Persistent,
    /// Deleted when the session that created it ends.
    Ephemeral,
    /// Persistent, with a 10-digit sequence number appended to the name.
    PersistentSequential,
    /// Ephemeral, with a 10-digit sequence number appended to the name.
    EphemeralSequential,
}

impl CreateMode {
    /// Whether nodes of this mode die with their session.
    pub fn is_ephemeral(self) -> bool {
        matches!(self, Self::Ephemeral | Self::EphemeralSequential)
    }

    /// Whether the name gets a sequence suffix.
    pub fn is_sequential(self) -> bool {
        matches!(self, Self::PersistentSequential | Self::EphemeralSequential)
    }
}

/// The metadata of a node (the subset of ZooKeeper's `Stat` that shardcron uses).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stat {
    /// Transaction id that created the node.
    pub czxid: i64,
    /// Transaction id that last changed the node's data.
    pub mzxid: i64,
    /// Creation time, milliseconds since the Unix epoch (registry clock).
    pub ctime: i64,
    /// Last modification time, milliseconds since the Unix epoch (registry clock).
    pub mtime: i64,
    /// Data version, incremented by every set.
    pub version: i32,
    /// Child version, incremented by every child create/delete.
    pub cversion: i32,
    /// Owning session for an ephemeral node, 0 otherwise.
    pub ephemeral_owner: i64,
    /// Number of children.
    pub num_children: i32,
}

/// The version that [`Op::Check`] accepts whatever the node's version is (ZooKeeper's `-1`).
pub const ANY_VERSION: i32 = -1;

/// One operation of an atomic [`Registry::multi`](crate::registry::Registry::multi).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// Create a node.
    Create {
        /// Path of the node.
        path: String,
        /// Its data.
        data: Vec<u8>,
        /// How it lives.
        mode: CreateMode,
    },
    /// Replace a node's data, optionally only at `version`.
    Set {
        /// Path of the node.
        path: String,
        /// New data.
        data: Vec<u8>,
        /// Expected version, `None` for any.
        version: Option<i32>,
    },
    /// Delete a node (it must have no children), optionally only at `version`.
    Delete {
        /// Path of the node.
        path: String,
        /// Expected version, `None` for any.
        version: Option<i32>,
    },
    /// Fail the whole multi-op unless the node exists at `version` ([`ANY_VERSION`]: at any).
    Check {
        /// Path of the node.
        path: String,
        /// Expected version, or [`ANY_VERSION`].
        version: i32,
    },
}

impl Op {
    /// Creates a node: shorthand for [`Op::Create`].
    pub fn create(path: impl Into<String>, data: impl Into<Vec<u8>>, mode: CreateMode) -> Self {
        Self::Create {
            path: path.into(),
            data: data.into(),
            mode,
        }
    }

    /// Sets a node's data regardless of version.
    pub fn set(path: impl Into<String>, data: impl Into<Vec<u8>>) -> Self {
        Self::Set {
            path: path.into(),
            data: data.into(),
            version: None,
        }
    }

    /// Deletes a node regardless of version.
    pub fn delete(path: impl Into<String>) -> Self {
        Self::Delete {
            path: path.into(),
            version: None,
        }
    }

    /// The path the operation works on.
    pub fn path(&self) -> &str {
        match self {
            Self::Create { path, .. }
            | Self::Set { path, .. }
            | Self::Delete { path, .. }
            | Self::Check { path, .. } => path,
        }
    }

    /// The operation's kind, for counters and error messages.
    pub fn kind(&self) -> OpKind {
        match self {
            Self::Create { .. } => OpKind::Create,
            Self::Set { .. } => OpKind::Set,
            Self::Delete { .. } => OpKind::Delete,
            Self::Check { .. } => OpKind::Check,
        }
    }
}

/// The outcome of one operation of a successful multi-op, in the order of the operations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpResult {
    /// The node was created at this path (with its sequence suffix for sequential modes).
    Created(String),
    /// The data was set; the node's new stat.
    Set(Stat),
    /// The node was deleted.
    Deleted,
    /// The version check passed.
    Checked,
}

/// Every kind of registry call, for counters, metrics and error messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OpKind {
    /// `create`.
    Create,
    /// `get`.
    Get,
    /// `set`.
    Set,
    /// `delete`.
    Delete,
    /// `children`.
    Children,
    /// `exists`.
    Exists,
    /// `multi`.
    Multi,
    /// A version check inside a multi-op.
    Check,
    /// `watch_recursive`.
    Watch,
    /// `list_subtree`.
    List,
    /// `get_many`: one call reading several nodes (on ZooKeeper, multi-read requests of up to 128
    /// paths); counted once per call.
    GetMany,
}

impl OpKind {
    /// Every kind, in the order declared: the order of the call counters' tables.
    pub(crate) const ALL: [OpKind; 11] = [
        OpKind::Create,
        OpKind::Get,
        OpKind::Set,
        OpKind::Delete,
        OpKind::Children,
        OpKind::Exists,
        OpKind::Multi,
        OpKind::Check,
        OpKind::Watch,
        OpKind::List,
        OpKind::GetMany,
    ];

    /// This kind's position in [`OpKind::ALL`] (its counter's slot).
    pub(crate) fn index(self) -> usize {
        self as usize
    }

    /// A short lowercase name (`create`, `get`, ...), used as a metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Create => "create",
            Self::Get => "get",
            Self::Set => "set",
            Self::Delete => "delete",
            Self::Children => "children",
            Self::Exists => "exists",
            Self::Multi => "multi",
            Self::Check => "check",
            Self::Watch => "watch",
            Self::List => "list",
            Self::GetMany => "get_many",
        }
    }
}

impl fmt::Display for OpKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One node of a subtree listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedNode {
    /// Absolute path within the namespace.
    pub path: String,
    /// Data.
    pub data: Vec<u8>,
    /// Metadata.
    pub stat: Stat,
}

#[cfg(test)]
mod tests {
    use super::OpKind;

    #[test]
    fn every_kind_stands_at_its_own_index_in_the_list_of_all_kinds() {
        for (i, kind) in OpKind::ALL.iter().enumerate() {
            assert_eq!(kind.index(), i, "{kind}");
        }
    }
}
