//! The audit log: one row per state-changing operation on a namespace (a config edit, a trigger, a
//! disable, a shutdown, a removal), whoever asked for it (the console, `shardcronctl`, code using
//! [`crate::ops`]), in the table `SHARDCRON_AUDIT_LOG` beside the execution history.
//!
//! A row says who (the console's token name and role, or the OS user of `shardcronctl`), what (the
//! operation, the job, the item, server or instance), when, the outcome, and the config before and
//! after with its secrets redacted ([`crate::secret`]): the table is read by people who may not
//! see them. ElasticJob has no such table; Java tools never look at it.

use chrono::{DateTime, NaiveDateTime, Utc};
use serde::Serialize;
use sqlx::Row;

use super::sql::{bind_all, fetch_rows, from_db, on_pool, to_db, Param, Store};
use super::HistoryError;
use crate::types::JobName;

/// The audit table. Ids are `TEXT` (time and a random suffix); configs are `TEXT` (up to 1 MiB).
pub(super) const CREATE_AUDIT_LOG: &str = "CREATE TABLE IF NOT EXISTS SHARDCRON_AUDIT_LOG (
    id TEXT NOT NULL,
    audit_time TIMESTAMP NOT NULL,
    actor TEXT NOT NULL,
    role VARCHAR(20) NULL,
    via VARCHAR(20) NOT NULL,
    operation VARCHAR(30) NOT NULL,
    job_name VARCHAR(100) NOT NULL,
    target TEXT NULL,
    outcome TEXT NOT NULL,
    config_before TEXT NULL,
    config_after TEXT NULL,
    PRIMARY KEY (id))";

/// Audit queries filter by job and order by time.
pub(super) const CREATE_AUDIT_INDEX: &str = "CREATE INDEX IF NOT EXISTS \
     SHARDCRON_AUDIT_LOG_JOB_TIME_INDEX ON SHARDCRON_AUDIT_LOG (job_name, audit_time)";

const AUDIT_COLUMNS: &str = "id, audit_time, actor, role, via, operation, job_name, target, \
     outcome, config_before, config_after";

const INSERT_AUDIT: &str = "INSERT INTO SHARDCRON_AUDIT_LOG (id, audit_time, actor, role, via, \
     operation, job_name, target, outcome, config_before, config_after) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT (id) DO NOTHING";

/// One audited operation (a row of `SHARDCRON_AUDIT_LOG`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditRecord {
    /// Unique id: the instant in microseconds and a random suffix.
    pub id: String,
    /// When the operation ended.
    pub at: DateTime<Utc>,
    /// Who: the console token's name (`operator`, `viewer`, `anonymous`) or the OS user.
    pub actor: String,
    /// The console role the actor had (`operator`, `viewer`); `None` outside the console.
    pub role: Option<String>,
    /// Through what: `console`, `shardcronctl`, or what embedding code names.
    pub via: String,
    /// What: `config-set`, `trigger`, `disable`, `enable`, `shutdown`, `remove`.
    pub operation: String,
    /// The job.
    pub job_name: String,
    /// The item, server or instance acted on; `None` for the whole job.
    pub target: Option<String>,
    /// `ok`, or the error that refused the operation.
    pub outcome: String,
    /// The config before a config edit, secrets redacted.
    pub config_before: Option<String>,
    /// The config after a config edit, secrets redacted.
    pub config_after: Option<String>,
}

/// What the audit log is asked for: newest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditQuery {
    /// Only this job's rows.
    pub job: Option<JobName>,
    /// At most this many rows.
    pub limit: u32,
}

impl Default for AuditQuery {
    fn default() -> Self {
        Self {
            job: None,
            limit: 100,
        }
    }
}

/// Reads an [`AuditRecord`] from a row of either backend.
macro_rules! audit_from_row {
    ($row:expr) => {{
        let row = $row;
        Ok::<_, sqlx::Error>(AuditRecord {
            id: row.try_get("id")?,
            at: from_db(row.try_get::<Option<NaiveDateTime>, _>("audit_time")?).unwrap_or_default(),
            actor: row.try_get("actor")?,
            role: row.try_get("role")?,
            via: row.try_get("via")?,
            operation: row.try_get("operation")?,
            job_name: row.try_get("job_name")?,
            target: row.try_get("target")?,
            outcome: row.try_get("outcome")?,
            config_before: row.try_get("config_before")?,
            config_after: row.try_get("config_after")?,
        })
    }};
}

impl Store {
    /// Writes one audit row.
    pub(super) async fn write_audit(&self, r: &AuditRecord) -> Result<(), HistoryError> {
        let params = vec![
            Param::Text(r.id.clone()),
            Param::Time(to_db(r.at)),
            Param::Text(r.actor.clone()),
            Param::OptText(r.role.clone()),
            Param::Text(r.via.clone()),
            Param::Text(r.operation.clone()),
            Param::Text(r.job_name.clone()),
            Param::OptText(r.target.clone()),
            Param::Text(r.outcome.clone()),
            Param::OptText(r.config_before.clone()),
            Param::OptText(r.config_after.clone()),
        ];
        (self.execute("SHARDCRON_AUDIT_LOG", &r.id, INSERT_AUDIT, params)).await
    }

    /// Audit rows matching `q`, newest first.
    pub(super) async fn audits(&self, q: &AuditQuery) -> Result<Vec<AuditRecord>, HistoryError> {
        let mut params = Vec::new();
        let mut sql = format!("SELECT {AUDIT_COLUMNS} FROM SHARDCRON_AUDIT_LOG");
        if let Some(job) = &q.job {
            params.push(Param::Text(job.to_string()));
            sql += " WHERE job_name = $1";
        }
        params.push(Param::BigInt(i64::from(q.limit)));
        sql += &format!(" ORDER BY audit_time DESC, id DESC LIMIT ${}", params.len());
        fetch_rows!(self, &sql, params, "SHARDCRON_AUDIT_LOG", audit_from_row)
    }
}

/// A new row id: the instant in microseconds (so ids sort by time) and 64 random bits.
pub(crate) fn audit_id(at: DateTime<Utc>) -> String {
    let mut random = [0u8; 8];
    crate::secret::random_bytes(&mut random);
    format!(
        "{:016x}-{}",
        at.timestamp_micros(),
        random
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    )
}

/// The audit rows as a table for a terminal, newest first.
pub fn render_audits(records: &[AuditRecord]) -> String {
    let mut out = String::new();
    for r in records {
        out += &format!(
            "{}  {:<10} {:<20} {:<12} {:<10} {}{}  {}\n",
            r.at.format("%Y-%m-%d %H:%M:%S%.3fZ"),
            r.operation,
            r.job_name,
            r.via,
            r.role.as_deref().unwrap_or("-"),
            r.actor,
            r.target
                .as_deref()
                .map(|t| format!(" on {t}"))
                .unwrap_or_default(),
            r.outcome,
        );
        if r.config_before != r.config_after {
            out += &config_change(
                r.config_before.as_deref().unwrap_or(""),
                r.config_after.as_deref().unwrap_or(""),
            );
        }
    }
    out
}

/// The lines that differ between two configs, `-` before and `+` after, indented.
fn config_change(before: &str, after: &str) -> String {
    let old: Vec<&str> = before.lines().collect();
    let new: Vec<&str> = after.lines().collect();
    let mut out = String::new();
    for line in old.iter().filter(|l| !new.contains(l)) {
        out += &format!("    - {line}\n");
    }
    for line in new.iter().filter(|l| !old.contains(l)) {
        out += &format!("    + {line}\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_config_edit_renders_the_lines_it_changed() {
        let record = AuditRecord {
            id: "1".into(),
            at: DateTime::from_timestamp(1_770_000_000, 0).unwrap(),
            actor: "alice".into(),
            role: None,
            via: "shardcronctl".into(),
            operation: "config-set".into(),
            job_name: "orders".into(),
            target: None,
            outcome: "ok".into(),
            config_before: Some("cron: a\nprops:\n  email.password: '***'\n".into()),
            config_after: Some("cron: b\nprops:\n  email.password: '***'\n".into()),
        };
        let text = render_audits(&[record]);
        assert!(
            text.contains("config-set") && text.contains("alice"),
            "{text}"
        );
        assert!(text.contains("    - cron: a\n    + cron: b\n"), "{text}");
        assert!(
            !text.contains("email.password"),
            "unchanged lines are left out: {text}"
        );
    }

    #[test]
    fn ids_sort_by_time() {
        let a = audit_id(DateTime::from_timestamp(1_000, 0).unwrap());
        let b = audit_id(DateTime::from_timestamp(2_000, 0).unwrap());
        assert!(a < b && a.len() == 33, "{a} {b}");
    }
}
