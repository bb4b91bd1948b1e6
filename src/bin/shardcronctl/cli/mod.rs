//! The command line, declared with clap's derive: global flags, one command (or a group and its
//! subcommand, as `config get`), each with its own flags. clap checks every value before anything
//! connects and names the flag or argument it refuses; `main` maps that to exit code 2.
//!
//! A new command group (say `cron next`) is one variant of [`Command`] holding its own
//! `#[derive(Subcommand)]` enum, as [`ConfigCommand`] does for `config`.
//!
//! Here the global flags, the command tree and the checks of flag values; in `args.rs` the flags
//! of each command.

mod args;

use chrono::{DateTime, Utc};
use clap::{Parser, Subcommand};
use shardcron::registry::zookeeper::{ZkAccessArgs, ZkConfig};
use shardcron::ShardItem;

pub(crate) use args::{
    AuditArgs, BackfillArgs, CompletionsArgs, ConfigSetArgs, ConsoleArgs, CreateArgs, CronNextArgs,
    HistoryArgs, JobArg, LogsArgs, RemoveArgs, ShutdownArgs, StatsArgs, SwitchArgs, TriggerArgs,
    WorkflowRunsArgs, WorkflowShowArgs,
};

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

/// `cron next`.
#[derive(Debug, Subcommand)]
pub(crate) enum CronCommand {
    /// The next fire times of EXPR (UTC instant and local time with offset per line), or the
    /// field it refuses (exit 2).
    Next(CronNextArgs),
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
