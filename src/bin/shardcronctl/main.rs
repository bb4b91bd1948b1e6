//! `shardcronctl`: the operations CLI and web console, over [`shardcron::ops`] on one ZooKeeper
//! session. Installed with `cargo install --path .`.
//!
//! ```text
//! shardcronctl --zk 127.0.0.1:2181 --namespace NS jobs
//! shardcronctl --zk 127.0.0.1:2181 --namespace NS --json job orders
//! shardcronctl --zk 127.0.0.1:2181 --namespace NS disable orders --server 10.0.0.1
//! shardcronctl --zk 127.0.0.1:2181 --namespace NS console --history hist.db
//! SHARDCRON_ZK_AUTH=digest:ops:PASSWORD shardcronctl --zk 127.0.0.1:2181 --namespace NS jobs
//! shardcronctl --zk tcp+tls://zk1:2281 --zk-tls-ca ca.pem --zk-auth-file /etc/shardcron/zk-auth jobs
//! shardcronctl completions bash > ~/.local/share/bash-completion/completions/shardcronctl
//! ```
//!
//! The name follows `kubectl` and `etcdctl`: a bare `ctl` on `PATH` would collide with other
//! tools, and the prefix says which system it operates.
//!
//! | file | what it holds |
//! | --- | --- |
//! | `main.rs` | parse, connect, run one command, map the outcome to an exit code |
//! | `cli.rs` | the commands and flags (clap derive); a bad one exits with code 2 and names it |
//! | `logs.rs` | `logs`: an item run's captured output, followed while it runs |
//! | `print.rs` | tables and `--json` |
//!
//! Exit codes: 0 done; 1 refused by the cluster's state (instances still run the job, the config
//! changed meanwhile, nothing to trigger) or the registry failed; 2 bad input (flag, file, job
//! name, unknown server/instance/item, invalid config field).

mod cli;
mod logs;
mod print;

use std::process::ExitCode;
use std::sync::Arc;

use clap::{CommandFactory, Parser};
use serde_json::json;
use shardcron::console::{Console, ConsoleOptions};
use shardcron::history::{
    render_audits, render_executions, render_stats, AuditQuery, Granularity, History, HistoryQuery,
    RetentionRecord, MAX_STATS_ROWS,
};
use shardcron::ops::{
    Actor, ErrorClass, JobForm, Ops, OpsError, RemoveMode, ShutdownScope, Target,
};
use shardcron::registry::zookeeper::{ZkConfig, ZkConnector};
use shardcron::registry::Connector;
use shardcron::secret::Secret;

use cli::{Cli, Command, ConfigCommand};

/// Exit code of a command that the cluster's state refused, or whose registry call failed.
const REFUSED: u8 = 1;
/// Exit code of bad input.
const BAD_INPUT: u8 = 2;

/// Why a command did not complete.
#[derive(Debug, thiserror::Error)]
enum CtlError {
    /// The connect string or namespace is refused.
    #[error("--zk / --namespace: {0}")]
    BadRegistry(String),
    /// A command that needs the registry was given no `--zk`.
    #[error("--zk HOSTS is required for this command (see --help)")]
    NoRegistry,
    /// The ZooKeeper credentials or TLS files are refused.
    #[error(transparent)]
    Access(#[from] shardcron::registry::zookeeper::ZkAccessError),
    /// The config file cannot be read.
    #[error("reading config file {path}: {source}")]
    ReadFile {
        /// The file.
        path: String,
        /// The IO error.
        #[source]
        source: std::io::Error,
    },
    /// The registry cannot be reached.
    #[error("connecting to {target}: {source}")]
    Connect {
        /// The connect string and namespace.
        target: String,
        /// The registry's error.
        #[source]
        source: shardcron::registry::RegistryError,
    },
    /// The operation failed.
    #[error(transparent)]
    Ops(#[from] OpsError),
    /// The history could not be read.
    #[error("history: {0}")]
    History(#[from] shardcron::history::HistoryError),
    /// The history database named does not exist.
    #[error(transparent)]
    NoHistory(#[from] shardcron::history::HistoryLookupError),
    /// `cron next` refused its input (the error names the field or flag).
    #[error(transparent)]
    CronNext(#[from] shardcron::cron::next::CronNextError),
    /// A console token flag or file is refused.
    #[error("{option} {reason}")]
    BadToken {
        /// The flag.
        option: &'static str,
        /// Why.
        reason: String,
    },
    /// The console could not start or stopped on an error.
    #[error("console: {0}")]
    Console(#[from] shardcron::console::ConsoleError),
    /// `logs` found nothing to print.
    #[error(transparent)]
    Logs(#[from] logs::LogsError),
}

impl CtlError {
    fn exit_code(&self) -> u8 {
        match self {
            Self::NoRegistry
            | Self::BadRegistry(_)
            | Self::ReadFile { .. }
            | Self::BadToken { .. }
            | Self::Access(_) => BAD_INPUT,
            Self::Connect { .. } | Self::History(_) | Self::NoHistory(_) => REFUSED,
            Self::Logs(logs::LogsError::NoExecution { .. }) => BAD_INPUT,
            Self::Logs(_) => REFUSED,
            Self::CronNext(e) => e.exit_code(),
            Self::Console(e) if e.is_bad_input() => BAD_INPUT,
            Self::Console(_) => REFUSED,
            Self::Ops(e) => match e.class() {
                ErrorClass::BadInput => BAD_INPUT,
                ErrorClass::Refused | ErrorClass::Failed => REFUSED,
            },
        }
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse().and_then(|cli| cli.refuse_passwords().map(|()| cli)) {
        Ok(cli) => cli,
        Err(e) => {
            // Help and version go to stdout and succeed; every usage error is bad input.
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(BAD_INPUT)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    if let Command::Completions(args) = &cli.command {
        let mut command = Cli::command();
        let name = command.get_name().to_owned();
        clap_complete::generate(args.shell, &mut command, name, &mut std::io::stdout());
        return ExitCode::SUCCESS;
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("shardcronctl: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("shardcronctl: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

async fn run(cli: Cli) -> Result<(), CtlError> {
    let Cli {
        zk,
        namespace,
        json,
        access,
        audit_db,
        command,
    } = cli;
    if let Command::Cron(cli::CronCommand::Next(args)) = command {
        // Computed locally: --zk and --namespace are accepted and unused.
        let args = shardcron::cron::next::CronNextArgs {
            expr: args.expr,
            zone: args.zone,
            from: args.from,
            count: args.count,
            json,
        };
        let out = shardcron::cron::next::cron_next(&args, chrono::Utc::now())?;
        print!("{out}");
        return Ok(());
    }
    if let Command::History(args) = command {
        // The history lives in a database, not the registry: --zk and --namespace (often part of
        // an alias) are accepted and unused.
        return history(args, json).await;
    }
    if let Command::Logs(args) = command {
        return Ok(logs::logs(args, json).await?);
    }
    if let Command::Stats(args) = command {
        return stats(args, json).await;
    }
    if let Command::Audit(args) = command {
        return audit(args, json).await;
    }
    let hosts = zk.ok_or(CtlError::NoRegistry)?;
    // Both strings were checked by the parser; this cannot fail, but says so if it does.
    let config =
        ZkConfig::new(&hosts, &namespace).map_err(|e| CtlError::BadRegistry(e.to_string()))?;
    let config = access.apply(config)?;
    // Read the file before connecting: a typo in its name is bad input, not a registry problem.
    let new_config = match &command {
        Command::Config(ConfigCommand::Set(set)) => Some(
            std::fs::read_to_string(&set.file).map_err(|source| CtlError::ReadFile {
                path: set.file.display().to_string(),
                source,
            })?,
        ),
        _ => None,
    };
    if let Command::Console(args) = command {
        let options = console_options(args, &namespace)?;
        // Checked before connecting: an open listener without a token is bad input.
        options.check()?;
        let connector: Arc<dyn Connector> = Arc::new(ZkConnector::new(config));
        let console = Console::start(connector, options).await?;
        let stopped = stop_signals();
        println!(
            "console of namespace {namespace} on http://{} (Ctrl-C stops it)",
            console.local_addr()
        );
        stopped.await;
        console.stop().await;
        return Ok(());
    }
    let connector = ZkConnector::new(config);
    let session = connector
        .connect()
        .await
        .map_err(|source| CtlError::Connect {
            target: connector.describe(),
            source,
        })?;
    let mut ops = Ops::new(Arc::clone(&session));
    let mut audit_history = None;
    if is_write(&command) {
        match &audit_db {
            Some(target) => {
                let history = History::open(target).await?;
                ops = ops.audited(history.clone(), Actor::os_user("shardcronctl"));
                audit_history = Some(history);
            }
            None => eprintln!(
                "shardcronctl: note: not recorded in an audit log (give --audit-db TARGET or \
                 set SHARDCRON_AUDIT_DB)"
            ),
        }
    }
    let outcome = execute(&ops, command, new_config, json).await;
    session.close().await;
    if let Some(history) = audit_history {
        history.close().await;
    }
    outcome
}

/// Whether the command changes the namespace (and so is audited).
fn is_write(command: &Command) -> bool {
    matches!(
        command,
        Command::Config(ConfigCommand::Set(_))
            | Command::Trigger(_)
            | Command::Backfill(_)
            | Command::Disable(_)
            | Command::Enable(_)
            | Command::Shutdown(_)
            | Command::Create(_)
            | Command::Remove(_)
    )
}

/// The console's options from its flags: tokens from files or the environment, never argv.
fn console_options(args: cli::ConsoleArgs, namespace: &str) -> Result<ConsoleOptions, CtlError> {
    if args.token.is_some() {
        return Err(CtlError::BadToken {
            option: "--token",
            reason: "is removed: a token in argv is visible to every user in `ps`; put it in a \
                     file (--token-file FILE) or in $SHARDCRON_CONSOLE_TOKEN"
                .to_owned(),
        });
    }
    let token = read_token(
        "--token-file",
        args.token_file.as_deref(),
        "SHARDCRON_CONSOLE_TOKEN",
    )?;
    let viewer_token = read_token(
        "--viewer-token-file",
        args.viewer_token_file.as_deref(),
        "SHARDCRON_CONSOLE_VIEWER_TOKEN",
    )?;
    Ok(ConsoleOptions {
        listen: args.listen,
        token,
        viewer_token,
        allowed_hosts: args.allowed_host,
        history: args
            .history
            .or_else(|| std::env::var(shardcron::history::HISTORY_ENV).ok()),
        namespace: namespace.to_owned(),
    })
}

/// The largest token file read.
const MAX_TOKEN_FILE: u64 = 4096;

/// A token from `file` (its first line, trimmed), else from the environment variable `env`.
fn read_token(
    option: &'static str,
    file: Option<&std::path::Path>,
    env: &str,
) -> Result<Option<Secret<String>>, CtlError> {
    use std::io::Read;
    use std::os::unix::fs::PermissionsExt;
    let Some(path) = file else {
        return Ok(std::env::var(env)
            .ok()
            .map(|t| Secret::new(t.trim().to_owned())));
    };
    let bad = |reason: String| CtlError::BadToken { option, reason };
    let f = std::fs::File::open(path)
        .map_err(|e| bad(format!("{}: cannot be read: {e}", path.display())))?;
    let meta = f
        .metadata()
        .map_err(|e| bad(format!("{}: cannot be read: {e}", path.display())))?;
    if meta.len() > MAX_TOKEN_FILE {
        return Err(bad(format!(
            "{}: {} bytes, more than a token ({MAX_TOKEN_FILE} bytes at most)",
            path.display(),
            meta.len()
        )));
    }
    if meta.permissions().mode() & 0o077 != 0 {
        eprintln!(
            "shardcronctl: warning: {} can be read by other users (chmod 600 it)",
            path.display()
        );
    }
    let mut text = String::new();
    f.take(MAX_TOKEN_FILE)
        .read_to_string(&mut text)
        .map_err(|e| bad(format!("{}: cannot be read: {e}", path.display())))?;
    let token = text.lines().next().unwrap_or("").trim().to_owned();
    Ok(Some(Secret::new(token)))
}

async fn execute(
    ops: &Ops,
    command: Command,
    new_config: Option<String>,
    json: bool,
) -> Result<(), CtlError> {
    match command {
        Command::Jobs => {
            let (jobs, not_jobs) = ops.job_roots().await?;
            for n in &not_jobs {
                eprintln!(
                    "shardcronctl: root {} is not a job: {}",
                    shardcron::ops::quote_name(&n.root),
                    n.reason
                );
            }
            if json {
                print::json(&jobs)
            } else {
                print::jobs(&jobs)
            }
        }
        Command::Job(arg) => {
            let mut detail = ops.job(&arg.job).await?;
            detail.config = detail.config.map(|c| c.redacted());
            if json {
                print::json(&detail)
            } else {
                print::job(&detail)
            }
        }
        Command::Servers => {
            let servers = ops.servers().await?;
            if json {
                print::json(&servers)
            } else {
                print::servers(&servers)
            }
        }
        Command::Config(ConfigCommand::Get(arg)) => {
            // Shown redacted: `config set` of the edited text keeps the secrets left as `***`.
            let config = ops.config_get(&arg.job).await?.redacted();
            if json {
                print::json(&config)
            } else {
                print::config(&config)
            }
        }
        Command::Config(ConfigCommand::Set(set)) => {
            let (job, yaml) = (set.job, new_config.unwrap_or_default());
            let written = match set.version {
                Some(v) => ops.config_set_at(&job, &yaml, v).await?,
                None => ops.config_set(&job, &yaml).await?,
            };
            report(
                json,
                json!({ "jobName": job, "version": written }),
                format!("config of job {job} written (version {written})"),
            );
        }
        Command::Trigger(args) => {
            let job = args.job;
            let params = shardcron::ops::TriggerParams {
                job_parameter: args.param,
                items: args.items,
                workflow_run: None,
            };
            let asked = ops.trigger_with(&job, &params).await?;
            let names: Vec<&str> = asked.iter().map(|i| i.as_str()).collect();
            report(
                json,
                json!({ "jobName": job, "triggered": asked }),
                format!("job {job} triggered on {}", names.join(", ")),
            );
        }
        Command::Disable(args) => switch(ops, args, false, json).await?,
        Command::Enable(args) => switch(ops, args, true, json).await?,
        Command::Shutdown(args) => {
            let scope = match args.instance {
                Some(id) => ShutdownScope::Instance(id),
                None => ShutdownScope::AllInstances,
            };
            let stopped = ops.shutdown(&args.job, scope).await?;
            let names: Vec<&str> = stopped.iter().map(|i| i.as_str()).collect();
            report(
                json,
                json!({ "jobName": args.job, "shutdown": stopped }),
                format!("job {} shut down on {}", args.job, or_none(&names)),
            );
        }
        Command::Backfill(args) => backfill(ops, args, json).await?,
        Command::Workflow(cli::WorkflowCommand::Show(args)) => {
            let graph = ops.workflow_graph(args.job.as_ref()).await?;
            if json {
                print::json(&graph)
            } else {
                print!("{}", shardcron::ops::render_graph(&graph))
            }
        }
        Command::Workflow(cli::WorkflowCommand::Runs(args)) => {
            let runs = ops
                .workflow_runs(&args.job, usize::from(args.limit))
                .await?;
            if json {
                print::json(&runs)
            } else {
                print!("{}", shardcron::ops::render_runs(&runs))
            }
        }
        Command::Create(args) => {
            let form = JobForm {
                job_name: args.job.to_string(),
                job_type: args.job_type,
                cron: args.cron,
                items: args.items,
                command: args.command,
                url: args.url,
                method: args.method,
                data: args.data,
                content_type: args.content_type,
                time_zone: args.time_zone,
                item_parameters: args.item_parameters,
                job_parameter: args.job_parameter,
                label: args.label,
                description: args.description,
                failover: args.failover,
                props: args.props.into_iter().collect(),
            };
            let new = form.to_new_job()?;
            let job_type = new.job_type;
            ops.create(new).await?;
            report(
                json,
                json!({ "jobName": args.job, "type": job_type.root_data(), "created": true }),
                format!(
                    "job {} created ({job_type}); nodes started with --adopt run it from its next fire",
                    args.job
                ),
            );
        }
        Command::Remove(args) => {
            let mode = if args.force {
                RemoveMode::Force
            } else {
                RemoveMode::RefuseWhileRunning
            };
            let stopped = ops.remove(&args.job, mode).await?;
            let names: Vec<&str> = stopped.iter().map(|i| i.as_str()).collect();
            report(
                json,
                json!({ "jobName": args.job, "removed": true, "shutdown": stopped }),
                format!(
                    "job {} removed (shut down on {})",
                    args.job,
                    or_none(&names)
                ),
            );
        }
        Command::History(_)
        | Command::Logs(_)
        | Command::Stats(_)
        | Command::Audit(_)
        | Command::Cron(_)
        | Command::Console(_)
        | Command::Completions(_) => {
            unreachable!("answered before connecting")
        }
    }
    Ok(())
}

fn target(server: Option<String>, item: Option<shardcron::ShardItem>) -> Target {
    match (server, item) {
        (Some(ip), _) => Target::Server(ip),
        (None, Some(item)) => Target::Item(item),
        (None, None) => Target::AllServers,
    }
}

/// `disable` (`on` false) or `enable` (`on` true) a server or an item of a job.
async fn switch(ops: &Ops, args: cli::SwitchArgs, on: bool, json: bool) -> Result<(), OpsError> {
    let target = target(args.server, args.item);
    let (done, word) = if on {
        (ops.enable(&args.job, target).await?, "enabled")
    } else {
        (ops.disable(&args.job, target).await?, "disabled")
    };
    let mut answer = json!({ "jobName": args.job });
    answer[word] = json!(done);
    report(
        json,
        answer,
        format!("job {}: {word} {}", args.job, describe(&done)),
    );
    Ok(())
}

/// `backfill`: the instants listed (a dry run) or requested, or the backfill cancelled.
async fn backfill(ops: &Ops, args: cli::BackfillArgs, json: bool) -> Result<(), OpsError> {
    let job = args.job;
    if args.status {
        return backfill_status(ops, &job, json).await;
    }
    let (Some(from), Some(to)) = (args.from, args.to) else {
        let cancelled = ops.cancel_backfill(&job).await?;
        let text = if cancelled {
            format!("backfill of job {job} cancelled")
        } else {
            format!("job {job} has no backfill")
        };
        report(
            json,
            json!({ "jobName": job, "cancelled": cancelled }),
            text,
        );
        return Ok(());
    };
    let plan = ops.backfill(&job, from, to, args.dry_run).await?;
    let instants: Vec<String> = plan.instants.iter().map(|t| t.to_rfc3339()).collect();
    let text = if args.dry_run {
        format!(
            "job {job}: {} instants would run, in order:\n{}",
            instants.len(),
            instants.join("\n")
        )
    } else {
        format!(
            "job {job}: backfill of {} instants requested, from {} to {} (cancel with \
             `shardcronctl backfill {job} --cancel`)",
            instants.len(),
            instants.first().map_or("", String::as_str),
            instants.last().map_or("", String::as_str)
        )
    };
    report(json, serde_json::to_value(&plan).unwrap_or_default(), text);
    Ok(())
}

/// `backfill NAME --status`: the request and each item's progress.
async fn backfill_status(
    ops: &Ops,
    job: &shardcron::types::JobName,
    json: bool,
) -> Result<(), OpsError> {
    let Some(status) = ops.backfill_status(job).await? else {
        report(
            json,
            serde_json::Value::Null,
            format!("job {job} has no backfill"),
        );
        return Ok(());
    };
    let at =
        |t: Option<chrono::DateTime<chrono::Utc>>| t.map_or_else(String::new, |t| t.to_rfc3339());
    let mut text = format!(
        "job {job}: backfill {} of {} instants, from {} to {}: {}\n",
        status.id,
        status.instants,
        at(status.first),
        at(status.last),
        match status.left {
            0 => "finished".to_owned(),
            n => format!("{n} item instants left"),
        }
    );
    for i in &status.items {
        text.push_str(&format!(
            "  item {}: {}/{}\n",
            i.item, i.done, status.instants
        ));
    }
    report(
        json,
        serde_json::to_value(&status).unwrap_or_default(),
        text.trim_end().to_owned(),
    );
    Ok(())
}

fn report(json: bool, value: serde_json::Value, text: String) {
    if json {
        print::json(&value)
    } else {
        println!("{text}")
    }
}

fn describe(targets: &[Target]) -> String {
    let parts: Vec<String> = targets
        .iter()
        .map(|t| match t {
            Target::AllServers => "every server".to_owned(),
            Target::Server(ip) => format!("server {ip}"),
            Target::Item(i) => format!("item {i}"),
        })
        .collect();
    or_none(&parts.iter().map(String::as_str).collect::<Vec<_>>())
}

fn or_none(names: &[&str]) -> String {
    if names.is_empty() {
        "nothing".to_owned()
    } else {
        names.join(", ")
    }
}

/// SIGINT and SIGTERM, watched from the moment this is called (so a signal sent as soon as the
/// console says where it listens is not lost to the default action).
fn stop_signals() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{signal, SignalKind};
    let interrupt = signal(SignalKind::interrupt());
    let terminate = signal(SignalKind::terminate());
    async move {
        match (interrupt, terminate) {
            (Ok(mut interrupt), Ok(mut terminate)) => tokio::select! {
                _ = interrupt.recv() => {}
                _ = terminate.recv() => {}
            },
            (interrupt, terminate) => {
                let e = interrupt.err().or(terminate.err());
                eprintln!("shardcronctl: cannot watch signals ({e:?}); stopping on Ctrl-C only");
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
}

/// `stats`: statistics from the execution history; no registry is involved.
async fn stats(args: cli::StatsArgs, json: bool) -> Result<(), CtlError> {
    let since = args.since.unwrap_or_else(|| {
        let back = match args.by {
            Granularity::Hour => chrono::Duration::hours(24),
            Granularity::Day => chrono::Duration::days(30),
        };
        chrono::Utc::now() - back
    });
    let history = logs::open_to_read::<CtlError>(args.db).await?;
    let stats = history.stats(&args.job, since, args.by).await?;
    let retention = history.retention_of(args.job.as_str()).await?;
    history.close().await;
    if json {
        print::json(&stats);
    } else {
        print!("{}", render_stats(&stats.buckets, args.by));
    }
    eprintln!(
        "stats of {} since {}{}; history {}",
        args.job,
        since.format("%Y-%m-%d %H:%M:%S UTC"),
        if stats.truncated {
            format!(" (the newest {MAX_STATS_ROWS} executions only)")
        } else {
            String::new()
        },
        RetentionRecord::describe(retention.as_ref())
    );
    Ok(())
}

/// `history`: reads the execution history directly; no registry is involved.
async fn history(args: cli::HistoryArgs, json: bool) -> Result<(), CtlError> {
    let mut query = HistoryQuery::job(args.job);
    query.item = args.item;
    query.since = args.since;
    query.failed_only = args.failed;
    query.workflow_run = args.workflow_run;
    let history = logs::open_to_read::<CtlError>(args.db).await?;
    let records = history.query(&query).await?;
    let retention = history.retention_of(query.job.as_str()).await?;
    history.close().await;
    if json {
        print::json(&records);
    } else {
        print!("{}", render_executions(&records));
    }
    // Which window the rows were kept for, on stderr so that the table (or JSON) stays as it is.
    eprintln!(
        "history of {}: {}",
        query.job,
        RetentionRecord::describe(retention.as_ref())
    );
    Ok(())
}

/// `audit`: reads the audit log directly; no registry is involved.
async fn audit(args: cli::AuditArgs, json: bool) -> Result<(), CtlError> {
    let history = logs::open_to_read::<CtlError>(args.db).await?;
    let query = AuditQuery {
        job: args.job,
        limit: args.limit,
    };
    let records = history.audits(&query).await?;
    history.close().await;
    if json {
        print::json(&records);
    } else {
        print!("{}", render_audits(&records));
    }
    Ok(())
}
