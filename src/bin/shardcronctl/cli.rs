//! The command line, declared with clap's derive: global flags, one command (or a group and its
//! subcommand, as `config get`), each with its own flags. clap checks every value before anything
//! connects and names the flag or argument it refuses; `main` maps that to exit code 2.
//!
//! A new command group (say `cron next`) is one variant of [`Command`] holding its own
//! `#[derive(Subcommand)]` enum, as [`ConfigCommand`] does for `config`.

use std::net::SocketAddr;
use std::path::PathBuf;

use chrono::{DateTime, Utc};
use clap::{Args, Parser, Subcommand};
use clap_complete::Shell;
use shardcron::history::Granularity;
use shardcron::registry::zookeeper::{ZkAccessArgs, ZkConfig};
use shardcron::{InstanceId, JobName, ShardItem};

/// The namespace when `--namespace` is not given (the example node's default).
pub(crate) const DEFAULT_NAMESPACE: &str = "shardcron-demo";

/// The address `console` listens on when `--listen` is not given.
pub(crate) const DEFAULT_LISTEN: &str = "127.0.0.1:8899";

/// Operates the shardcron (or ElasticJob-Lite 3.x) jobs of one registry namespace.
#[derive(Debug, Parser)]
#[command(
    name = "shardcronctl",
    version,
    about,
    after_help = "exit codes: 0 done, 1 refused or failed, 2 bad input (flag, file, job name, config field)"
)]
pub(crate) struct Cli {
    /// ZooKeeper connect string (host:port or tcp+tls://host:port, comma-separated); every command
    /// but `history`, `cron` and `completions` needs it.
    #[arg(long, global = true, value_name = "HOSTS", value_parser = connect_string)]
    pub(crate) zk: Option<String>,
    /// Registry namespace.
    #[arg(long, global = true, value_name = "NS", default_value = DEFAULT_NAMESPACE, value_parser = namespace)]
    pub(crate) namespace: String,
    /// Print JSON instead of tables.
    #[arg(long, global = true)]
    pub(crate) json: bool,
    /// ZooKeeper credentials (SHARDCRON_ZK_AUTH or --zk-auth-file) and TLS files.
    #[command(flatten)]
    pub(crate) access: ZkAccessArgs,
    /// Record every state-changing command in this history database's audit log (a SQLite file
    /// or postgres://...), as done by the OS user.
    #[arg(
        long,
        global = true,
        value_name = "TARGET",
        env = "SHARDCRON_AUDIT_DB",
        hide_env_values = true
    )]
    pub(crate) audit_db: Option<String>,
    /// The command.
    #[command(subcommand)]
    pub(crate) command: Command,
}

impl Cli {
    /// Refuses a history URL with a password in the arguments, naming the flag but not echoing
    /// the value (clap's own refusal would print the password it refuses).
    pub(crate) fn refuse_passwords(&self) -> Result<(), clap::Error> {
        // The same value in $SHARDCRON_AUDIT_DB came from the environment, which `ps` does not show.
        let from_env = std::env::var("SHARDCRON_AUDIT_DB").ok();
        let audit_db = self
            .audit_db
            .as_deref()
            .filter(|v| from_env.as_deref() != Some(*v));
        let mut flags = vec![("--audit-db", audit_db)];
        match &self.command {
            Command::History(args) => flags.push(("--db", args.db.as_deref())),
            Command::Logs(args) => flags.push(("--db", args.db.as_deref())),
            Command::Audit(args) => flags.push(("--db", args.db.as_deref())),
            Command::Console(args) => flags.push(("--history", args.history.as_deref())),
            _ => {}
        }
        for (flag, value) in flags {
            if let Some(Err(why)) = value.map(shardcron::history::history_flag) {
                return Err(clap::Error::raw(
                    clap::error::ErrorKind::ValueValidation,
                    format!("{flag}: {why}\n"),
                ));
            }
        }
        Ok(())
    }
}

/// One command of the CLI.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Every job: status, cron, instances, items.
    Jobs,
    /// One job: servers, instances, leader, every item.
    Job(JobArg),
    /// Every server IP: instances, jobs, disabled jobs.
    Servers,
    /// A job's stored config: read it, or validate a file and write it.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Every live instance runs its items once now (with a job parameter, or some items only).
    Trigger(TriggerArgs),
    /// Run every cron instant of a past range, in order, once per item (or cancel the backfill).
    Backfill(BackfillArgs),
    /// Disable every server of a job, one server, or one item.
    Disable(SwitchArgs),
    /// Undo `disable`.
    Enable(SwitchArgs),
    /// Stop the job on every instance, or on one.
    Shutdown(ShutdownArgs),
    /// Create a SCRIPT or HTTP job for the nodes started with `--adopt` to run.
    Create(CreateArgs),
    /// Delete the job (refused while instances run it; a job created with `create` is first
    /// stopped on the nodes that adopted it).
    Remove(RemoveArgs),
    /// Workflows (`shardcron.after`): the graph with each step's last run, or a workflow's runs.
    #[command(subcommand)]
    Workflow(WorkflowCommand),
    /// Item executions recorded by nodes with a history (no registry needed).
    History(HistoryArgs),
    /// The captured output of an item run (jobs with `shardcron.output`), from the history; with
    /// --follow, a running item's output as it comes (no registry needed).
    Logs(LogsArgs),
    /// Per-job statistics from the history: runs, failures, timeouts, p50/p99 duration and
    /// trigger delay per hour or day (no registry needed).
    Stats(StatsArgs),
    /// The audit log: who changed what, when, with the config before and after (no registry needed).
    Audit(AuditArgs),
    /// Quartz cron expressions, checked locally (no registry needed).
    #[command(subcommand)]
    Cron(CronCommand),
    /// Serve the web console: jobs, live sharding map, config editing, operations, history.
    Console(ConsoleArgs),
    /// Print a shell completion script (e.g. `shardcronctl completions bash > /etc/bash_completion.d/shardcronctl`).
    Completions(CompletionsArgs),
}

/// A job name.
#[derive(Debug, Args)]
pub(crate) struct JobArg {
    /// The job.
    #[arg(value_name = "NAME")]
    pub(crate) job: JobName,
}

/// `config get` / `config set`.
#[derive(Debug, Subcommand)]
pub(crate) enum ConfigCommand {
    /// The stored config YAML (stdout) and its version (stderr).
    Get(JobArg),
    /// Validate FILE and write it as the job's config.
    Set(ConfigSetArgs),
}

/// `workflow show` / `workflow runs`.
#[derive(Debug, Subcommand)]
pub(crate) enum WorkflowCommand {
    /// The graph (the namespace's, or the part linked to NAME): each job with its upstreams and
    /// `shardcron.after.on`, its downstreams and its last workflow run.
    Show(WorkflowShowArgs),
    /// The workflow runs of the workflow NAME belongs to, newest first, each step's outcome.
    Runs(WorkflowRunsArgs),
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

/// `cron next`.
#[derive(Debug, Subcommand)]
pub(crate) enum CronCommand {
    /// The next fire times of EXPR (UTC instant and local time with offset per line), or the
    /// field it refuses (exit 2).
    Next(CronNextArgs),
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

fn connect_string(value: &str) -> Result<String, String> {
    // ZkConfig checks both strings; a placeholder stands in for the namespace.
    ZkConfig::new(value, "ns")
        .map(|_| value.to_owned())
        .map_err(|e| e.to_string())
}

fn namespace(value: &str) -> Result<String, String> {
    ZkConfig::new("127.0.0.1:2181", value)
        .map(|_| value.to_owned())
        .map_err(|e| e.to_string())
}

fn server_ip(value: &str) -> Result<String, String> {
    if value.is_empty() || value.contains('/') {
        Err("expected an IP address".to_owned())
    } else {
        Ok(value.to_owned())
    }
}

fn config_version(value: &str) -> Result<i32, String> {
    shardcron::ops::parse_config_version(value)
}

fn workflow_run(value: &str) -> Result<String, String> {
    shardcron::decide::workflow::run::RunId::parse(value)
        .map(|r| r.to_string())
        .ok_or_else(|| "expected a workflow run id (epoch milliseconds)".to_owned())
}

fn item(value: &str) -> Result<ShardItem, String> {
    shardcron::history::parse_item(value).map_err(|e| e.to_string())
}

/// `0,2,5`: at most [`shardcron::ops::TriggerParams`]'s bound of items.
fn item_list(value: &str) -> Result<std::collections::BTreeSet<u32>, String> {
    let max = shardcron::decide::trigger_params::MAX_ITEMS;
    let mut items = std::collections::BTreeSet::new();
    for part in value.split(',') {
        if items.len() == max {
            return Err(format!("more than {max} items"));
        }
        items.insert(item(part.trim())?.0);
    }
    Ok(items)
}

fn instant(value: &str) -> Result<DateTime<Utc>, String> {
    DateTime::parse_from_rfc3339(value)
        .map(|t| t.to_utc())
        .map_err(|e| format!("{e}: expected an RFC 3339 instant such as 2026-11-25T00:00:00Z"))
}

fn since(value: &str) -> Result<DateTime<Utc>, String> {
    shardcron::history::parse_since(value, Utc::now()).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_tree_is_consistent() {
        Cli::command().debug_assert();
    }
}
