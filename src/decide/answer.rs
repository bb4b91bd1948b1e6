//! What a registry write came to, as the step machines of [`commit`](super::commit) and
//! [`registration`](super::registration) branch on it: the interpreter classifies the registry's
//! result with [`Answer::of`] and hands it back as the machine's next input.

use crate::model::RegistryError;

/// The answer to one write (a plain call or a multi-op).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Applied.
    Done,
    /// A create found its node there. `at`: the failed operation of a multi-op (`None` for a
    /// plain call, whose one operation it is).
    Exists {
        /// Index of the failed operation in a multi-op.
        at: Option<usize>,
    },
    /// A set, delete or check found no node, or a create no parent.
    Missing {
        /// Index of the failed operation in a multi-op.
        at: Option<usize>,
    },
    /// A versioned operation found another version.
    BadVersion {
        /// Index of the failed operation in a multi-op.
        at: Option<usize>,
    },
    /// Anything else (connection loss, timeout, no auth): the message says what.
    Failed(String),
}

impl Answer {
    /// Classifies a registry result.
    pub fn of<T>(result: &Result<T, RegistryError>) -> Self {
        let e = match result {
            Ok(_) => return Self::Done,
            Err(e) => e,
        };
        let at = match e {
            RegistryError::MultiFailed { index, .. } => Some(*index),
            _ => None,
        };
        if e.is_node_exists() {
            Self::Exists { at }
        } else if e.is_no_node() {
            Self::Missing { at }
        } else if e.is_bad_version() {
            Self::BadVersion { at }
        } else {
            Self::Failed(e.to_string())
        }
    }

    /// Whether a node was already as the write wanted it (created, or gone).
    pub fn already(&self) -> bool {
        matches!(self, Self::Exists { .. } | Self::Missing { .. })
    }

    /// A short description for logs.
    pub fn describe(&self) -> String {
        match self {
            Self::Done => "done".to_owned(),
            Self::Exists { at } => format!("a node already exists (operation {at:?})"),
            Self::Missing { at } => format!("a node does not exist (operation {at:?})"),
            Self::BadVersion { at } => format!("a version did not match (operation {at:?})"),
            Self::Failed(e) => e.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::OpKind;

    #[test]
    fn registry_results_are_classified_with_the_failed_operation() {
        let exists = || RegistryError::NodeExists { path: "/a".into() };
        let multi = |index, source| RegistryError::MultiFailed {
            index,
            kind: OpKind::Create,
            path: "/a".into(),
            source: Box::new(source),
        };
        let cases: Vec<(Result<(), RegistryError>, Answer)> = vec![
            (Ok(()), Answer::Done),
            (Err(exists()), Answer::Exists { at: None }),
            (Err(multi(2, exists())), Answer::Exists { at: Some(2) }),
            (
                Err(multi(0, RegistryError::NoNode { path: "/a".into() })),
                Answer::Missing { at: Some(0) },
            ),
            (
                Err(RegistryError::BadVersion {
                    path: "/a".into(),
                    expected: 1,
                }),
                Answer::BadVersion { at: None },
            ),
            (
                Err(RegistryError::SessionExpired),
                Answer::Failed(RegistryError::SessionExpired.to_string()),
            ),
        ];
        for (result, want) in cases {
            assert_eq!(Answer::of(&result), want, "{result:?}");
        }
    }
}
