//! Auditing the operations: an [`Ops`] made with [`Ops::audited`] records every state-changing
//! call (config edit, trigger, disable, enable, shutdown, remove), whether it succeeded or was
//! refused, as one row of the history's audit log ([`crate::history::AuditRecord`]): who asked,
//! through what, the job, the item, server or instance, the outcome, and a config's text before
//! and after with its secrets redacted.
//!
//! The row is written after the operation: a failed audit write is logged (`WARN`) and does not
//! undo or fail what the cluster already did.

use std::fmt;
use std::sync::Arc;

use chrono::Utc;

use super::{Ops, OpsError};
use crate::history::{audit_id, AuditRecord, History};
use crate::types::JobName;

/// Who asks for operations, as the audit log records them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    /// The name: the console token's (`operator`, `viewer`, `anonymous`) or the OS user.
    pub name: String,
    /// The console role, when the operation came through the console.
    pub role: Option<String>,
    /// Through what: `console`, `shardcronctl`, or what embedding code names.
    pub via: String,
}

impl Actor {
    /// The OS user running this process (`$USER`, else `$LOGNAME`, else the numeric uid) acting
    /// through `via`.
    pub fn os_user(via: &str) -> Self {
        let name = std::env::var("USER")
            .or_else(|_| std::env::var("LOGNAME"))
            .ok()
            .filter(|n| !n.trim().is_empty())
            // SAFETY: getuid has no preconditions and cannot fail.
            .unwrap_or_else(|| format!("uid {}", unsafe { libc::getuid() }));
        Self {
            name,
            role: None,
            via: via.to_owned(),
        }
    }
}

/// Where and as whom an audited [`Ops`] records.
#[derive(Clone)]
pub(super) struct Audit {
    history: History,
    actor: Actor,
}

impl fmt::Debug for Audit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Audit").field("actor", &self.actor).finish()
    }
}

/// One operation to record.
pub(super) struct Entry<'a> {
    pub(super) operation: &'static str,
    pub(super) job: &'a JobName,
    pub(super) target: Option<String>,
    pub(super) before: Option<String>,
    pub(super) after: Option<String>,
}

impl<'a> Entry<'a> {
    /// An operation on `job` as a whole.
    pub(super) fn new(operation: &'static str, job: &'a JobName) -> Self {
        Self {
            operation,
            job,
            target: None,
            before: None,
            after: None,
        }
    }

    /// On one item, server or instance.
    pub(super) fn on(mut self, target: Option<String>) -> Self {
        self.target = target;
        self
    }
}

impl Ops {
    /// The same operations, each state-changing call recorded in `history`'s audit log as done
    /// by `actor`.
    pub fn audited(mut self, history: History, actor: Actor) -> Self {
        self.audit = Some(Arc::new(Audit { history, actor }));
        self
    }

    /// Whether calls are recorded.
    pub fn is_audited(&self) -> bool {
        self.audit.is_some()
    }

    /// Records `entry` with the outcome of `result` (when this `Ops` is audited), then hands
    /// `result` back.
    pub(super) async fn recorded<T>(
        &self,
        entry: Entry<'_>,
        result: Result<T, OpsError>,
    ) -> Result<T, OpsError> {
        self.record(entry, &result).await;
        result
    }

    async fn record<T>(&self, entry: Entry<'_>, result: &Result<T, OpsError>) {
        let Some(audit) = &self.audit else {
            return;
        };
        let at = Utc::now();
        let record = AuditRecord {
            id: audit_id(at),
            at,
            actor: audit.actor.name.clone(),
            role: audit.actor.role.clone(),
            via: audit.actor.via.clone(),
            operation: entry.operation.to_owned(),
            job_name: entry.job.to_string(),
            target: entry.target,
            outcome: match result {
                Ok(_) => "ok".to_owned(),
                Err(e) => crate::secret::redact_text(&e.to_string()),
            },
            config_before: entry.before,
            config_after: entry.after,
        };
        if let Err(e) = audit.history.audit(&record).await {
            tracing::warn!(
                error = %e, job = %entry.job, operation = entry.operation,
                "the operation is done but its audit row could not be written"
            );
        }
    }
}
