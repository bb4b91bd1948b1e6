//! The flags of each command: which job, what to write and where, which history rows to read,
//! how the console listens. clap checks each value with the checks of `mod.rs` or those declared
//! here.

use std::net::SocketAddr;
use std::path::PathBuf;

use chrono::{DateTime, Utc};
use clap::Args;
use clap_complete::Shell;
use shardcron::history::Granularity;
use shardcron::{InstanceId, JobName, ShardItem};

use super::{
    config_version, instant, item, item_list, server_ip, since, workflow_run, DEFAULT_LISTEN,
};

/// A job name.
#[derive(Debug, Args)]
pub(crate) struct JobArg {
    /// The job.
    #[arg(value_name = "NAME")]
    pub(crate) job: JobName,
}

/// `workflow show [NAME]`.
#[derive(Debug, Args)]
pub(crate) struct WorkflowShowArgs {
    /// A job of the workflow to show (default: every workflow of the namespace).
    #[arg(value_name = "NAME")]
    pub(crate) job: Option<JobName>,
}

/// `workflow runs NAME [--limit N]`.
#[derive(Debug, Args)]
pub(crate) struct WorkflowRunsArgs {
    /// A job of the workflow.
    #[arg(value_name = "NAME")]
    pub(crate) job: JobName,
    /// How many runs, newest first (1 to 1000).
    #[arg(long, value_name = "N", default_value_t = 20,
          value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub(crate) limit: u16,
}

/// `cron next EXPR [--zone Z] [--from RFC3339] [--count N]`; the values are checked by the
/// library, which names the flag it refuses.
#[derive(Debug, Args)]
pub(crate) struct CronNextArgs {
    /// The Quartz expression (quote it: "0 0 12 * * ?").
    #[arg(value_name = "EXPR")]
    pub(crate) expr: String,
    /// The zone: an IANA name or GMT+hh:mm (default: the local zone, as a job without timeZone).
    #[arg(long, value_name = "Z")]
    pub(crate) zone: Option<String>,
    /// Start after this RFC 3339 instant (default: now).
    #[arg(long, value_name = "RFC3339")]
    pub(crate) from: Option<String>,
    /// How many fire times.
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub(crate) count: Option<String>,
}

/// `config set NAME FILE [--version V]`.
#[derive(Debug, Args)]
pub(crate) struct ConfigSetArgs {
    /// The job.
    #[arg(value_name = "NAME")]
    pub(crate) job: JobName,
    /// The file holding the new YAML.
    #[arg(value_name = "FILE")]
    pub(crate) file: PathBuf,
    /// Write only over this version of the config (as printed by `config get`).
    #[arg(long, value_name = "V", allow_negative_numbers = true, value_parser = config_version)]
    pub(crate) version: Option<i32>,
}

/// `trigger NAME [--param VALUE] [--items LIST]`.
#[derive(Debug, Args)]
pub(crate) struct TriggerArgs {
    /// The job.
    #[arg(value_name = "NAME")]
    pub(crate) job: JobName,
    /// The run's job parameter, in place of the config's `jobParameter` (a script reads it as
    /// `jobParameter` in its context JSON; a Java instance runs a plain trigger).
    #[arg(long, value_name = "VALUE")]
    pub(crate) param: Option<String>,
    /// Only these items run, e.g. `0,2,5`.
    #[arg(long, value_name = "LIST", value_parser = item_list)]
    pub(crate) items: Option<std::collections::BTreeSet<u32>>,
}

/// `backfill NAME --from T1 --to T2 [--dry-run]`, `backfill NAME --status`,
/// `backfill NAME --cancel`.
#[derive(Debug, Args)]
pub(crate) struct BackfillArgs {
    /// The job.
    #[arg(value_name = "NAME")]
    pub(crate) job: JobName,
    /// The first instant of the range (RFC 3339, included).
    #[arg(long, value_name = "RFC3339", value_parser = instant, required_unless_present_any = ["cancel", "status"])]
    pub(crate) from: Option<DateTime<Utc>>,
    /// The last instant of the range (RFC 3339, included; not after now).
    #[arg(long, value_name = "RFC3339", value_parser = instant, required_unless_present_any = ["cancel", "status"])]
    pub(crate) to: Option<DateTime<Utc>>,
    /// List the instants without running them.
    #[arg(long, conflicts_with = "cancel")]
    pub(crate) dry_run: bool,
    /// Cancel the job's backfill: no further instant starts, the runs under way are cancelled.
    #[arg(long, conflicts_with_all = ["from", "to"])]
    pub(crate) cancel: bool,
    /// Show the job's backfill: its instants and how far each item has come.
    #[arg(long, conflicts_with_all = ["from", "to", "cancel", "dry_run"])]
    pub(crate) status: bool,
}

/// `disable` / `enable NAME [--server IP | --item N]`.
#[derive(Debug, Args)]
pub(crate) struct SwitchArgs {
    /// The job.
    #[arg(value_name = "NAME")]
    pub(crate) job: JobName,
    /// One server only.
    #[arg(long, value_name = "IP", conflicts_with = "item", value_parser = server_ip)]
    pub(crate) server: Option<String>,
    /// One item only.
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub(crate) item: Option<ShardItem>,
}

/// `shutdown NAME [--instance ID]`.
#[derive(Debug, Args)]
pub(crate) struct ShutdownArgs {
    /// The job.
    #[arg(value_name = "NAME")]
    pub(crate) job: JobName,
    /// One instance only (ip@-@suffix).
    #[arg(long, value_name = "ID")]
    pub(crate) instance: Option<InstanceId>,
}

/// `create NAME --type SCRIPT|HTTP --cron EXPR --items N [--command CMD | --url URL] [...]`.
#[derive(Debug, Args)]
pub(crate) struct CreateArgs {
    /// The job (refused if it exists).
    #[arg(value_name = "NAME")]
    pub(crate) job: JobName,
    /// SCRIPT (runs --command) or HTTP (requests --url).
    #[arg(long = "type", value_name = "SCRIPT|HTTP")]
    pub(crate) job_type: String,
    /// The Quartz cron expression (quote it: "0 0 3 * * ?").
    #[arg(long, value_name = "EXPR")]
    pub(crate) cron: String,
    /// How many sharding items (shardingTotalCount).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub(crate) items: i32,
    /// A SCRIPT job's command line, run without a shell (props.script.command.line).
    #[arg(long, value_name = "CMD", conflicts_with = "url")]
    pub(crate) command: Option<String>,
    /// An HTTP job's URI (props.http.uri). A token in its query is visible in `ps`: put such a
    /// URI in the config with `config set` instead.
    #[arg(long, value_name = "URL")]
    pub(crate) url: Option<String>,
    /// An HTTP job's method (default GET).
    #[arg(long, value_name = "METHOD")]
    pub(crate) method: Option<String>,
    /// An HTTP job's body (the query string of a method without a body).
    #[arg(long, value_name = "DATA")]
    pub(crate) data: Option<String>,
    /// An HTTP job's Content-Type.
    #[arg(long, value_name = "TYPE")]
    pub(crate) content_type: Option<String>,
    /// The time zone (GMT, GMT+08:00; UTC is written GMT).
    #[arg(long, value_name = "Z")]
    pub(crate) time_zone: Option<String>,
    /// shardingItemParameters, e.g. 0=Beijing,1=Shanghai.
    #[arg(long, value_name = "PARAMS")]
    pub(crate) item_parameters: Option<String>,
    /// jobParameter.
    #[arg(long, value_name = "TEXT")]
    pub(crate) job_parameter: Option<String>,
    /// Only instances carrying this label run it (and only nodes adopting it).
    #[arg(long, value_name = "LABEL")]
    pub(crate) label: Option<String>,
    /// description.
    #[arg(long, value_name = "TEXT")]
    pub(crate) description: Option<String>,
    /// Fail over the items of a crashed instance.
    #[arg(long)]
    pub(crate) failover: bool,
    /// Another props entry (repeatable), e.g. --prop shardcron.timeout=30s.
    #[arg(long = "prop", value_name = "KEY=VALUE", value_parser = prop)]
    pub(crate) props: Vec<(String, String)>,
}

/// `--prop KEY=VALUE`.
fn prop(value: &str) -> Result<(String, String), String> {
    match value.split_once('=') {
        Some((key, v)) if !key.trim().is_empty() => Ok((key.trim().to_owned(), v.to_owned())),
        _ => Err("expected KEY=VALUE".to_owned()),
    }
}

/// `remove NAME [--force]`.
#[derive(Debug, Args)]
pub(crate) struct RemoveArgs {
    /// The job.
    #[arg(value_name = "NAME")]
    pub(crate) job: JobName,
    /// Shut the instances that run it down first.
    #[arg(long)]
    pub(crate) force: bool,
}

/// `history NAME [--db TARGET] [--item N] [--since T] [--failed]`.
#[derive(Debug, Args)]
pub(crate) struct HistoryArgs {
    /// The job.
    #[arg(value_name = "NAME")]
    pub(crate) job: JobName,
    /// A SQLite file (default shardcron-history.db) or postgres://... without a password (set
    /// PGPASSWORD, or give the whole URL in SHARDCRON_HISTORY instead of this flag).
    #[arg(long, value_name = "TARGET")]
    pub(crate) db: Option<String>,
    /// One item only.
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = item)]
    pub(crate) item: Option<ShardItem>,
    /// Not before T: RFC 3339, a date, or an age (90s, 15m, 2h, 7d).
    #[arg(long, value_name = "T", value_parser = since)]
    pub(crate) since: Option<DateTime<Utc>>,
    /// Failures only.
    #[arg(long)]
    pub(crate) failed: bool,
    /// The steps of this workflow run only (its id: the root fire's instant in epoch ms).
    #[arg(long, value_name = "RUN", value_parser = workflow_run)]
    pub(crate) workflow_run: Option<String>,
}

/// `logs NAME [--db TARGET] [--item N] [--run ID] [--follow]`.
#[derive(Debug, Args)]
pub(crate) struct LogsArgs {
    /// The job.
    #[arg(value_name = "NAME")]
    pub(crate) job: JobName,
    /// A SQLite file (default shardcron-history.db) or postgres://... without a password (set
    /// PGPASSWORD, or give the whole URL in SHARDCRON_HISTORY instead of this flag).
    #[arg(long, value_name = "TARGET")]
    pub(crate) db: Option<String>,
    /// One item only.
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = item)]
    pub(crate) item: Option<ShardItem>,
    /// One run: an execution id, a task id, or the run number ending a task id [default: the
    /// newest execution].
    #[arg(long, value_name = "ID")]
    pub(crate) run: Option<String>,
    /// Keep printing a running item's output until the item ends.
    #[arg(long)]
    pub(crate) follow: bool,
}

/// `stats NAME [--db TARGET] [--since T] [--by hour|day]`.
#[derive(Debug, Args)]
pub(crate) struct StatsArgs {
    /// The job.
    #[arg(value_name = "NAME")]
    pub(crate) job: JobName,
    /// A SQLite file (default shardcron-history.db) or postgres://... without a password (set
    /// PGPASSWORD, or give the whole URL in SHARDCRON_HISTORY instead of this flag).
    #[arg(long, value_name = "TARGET")]
    pub(crate) db: Option<String>,
    /// Executions started at or after T: RFC 3339, a date, or an age [default: 24h for --by
    /// hour, 30d for --by day].
    #[arg(long, value_name = "T", value_parser = since)]
    pub(crate) since: Option<DateTime<Utc>>,
    /// One line per hour or per day.
    #[arg(long, value_name = "hour|day", default_value = "hour", value_parser = granularity)]
    pub(crate) by: Granularity,
}

fn granularity(value: &str) -> Result<Granularity, String> {
    Granularity::parse(value).map_err(|e| e.to_string())
}

/// `audit [--db TARGET] [--job NAME] [--limit N]`.
#[derive(Debug, Args)]
pub(crate) struct AuditArgs {
    /// A SQLite file (default shardcron-history.db) or postgres://... without a password (set
    /// PGPASSWORD, or give the whole URL in SHARDCRON_HISTORY instead of this flag).
    #[arg(long, value_name = "TARGET")]
    pub(crate) db: Option<String>,
    /// One job only.
    #[arg(long, value_name = "NAME")]
    pub(crate) job: Option<JobName>,
    /// At most N rows, newest first.
    #[arg(long, value_name = "N", default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub(crate) limit: u32,
}

/// `console [--listen ADDR] [--history DB] [--token-file FILE] [--viewer-token-file FILE]
/// [--allowed-host NAME]...`.
#[derive(Debug, Args)]
pub(crate) struct ConsoleArgs {
    /// Where to serve the console; an address other than loopback requires an operator token.
    #[arg(long, value_name = "ADDR", default_value = DEFAULT_LISTEN)]
    pub(crate) listen: SocketAddr,
    /// The execution history to show (a SQLite file or postgres://... without a password: set
    /// PGPASSWORD, or give the whole URL in SHARDCRON_HISTORY), where the audit log is written
    /// too; none when absent.
    #[arg(long, value_name = "DB")]
    pub(crate) history: Option<String>,
    /// A file holding the operator's token (reads and writes); else $SHARDCRON_CONSOLE_TOKEN.
    /// Required off loopback.
    #[arg(long, value_name = "FILE")]
    pub(crate) token_file: Option<PathBuf>,
    /// A file holding the viewer's token (reads only); else $SHARDCRON_CONSOLE_VIEWER_TOKEN.
    #[arg(long, value_name = "FILE")]
    pub(crate) viewer_token_file: Option<PathBuf>,
    /// Another host name the console answers to (NAME on any port, or NAME:PORT), e.g. a
    /// reverse proxy's; repeatable. It always answers its listen address, localhost, 127.0.0.1
    /// and [::1] on its port.
    #[arg(long, value_name = "NAME")]
    pub(crate) allowed_host: Vec<String>,
    /// Removed: a token in argv is visible to every user in `ps`. Use --token-file or
    /// $SHARDCRON_CONSOLE_TOKEN.
    #[arg(long, value_name = "TOKEN", hide = true)]
    pub(crate) token: Option<String>,
}

/// `completions SHELL`.
#[derive(Debug, Args)]
pub(crate) struct CompletionsArgs {
    /// The shell.
    #[arg(value_name = "SHELL")]
    pub(crate) shell: Shell,
}
