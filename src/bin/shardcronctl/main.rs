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
//! | `cli/` | the commands and flags (clap derive); a bad one exits with code 2 and names it |
//! | `execute.rs` | the commands run over one registry session, their answers as text or JSON |
//! | `console.rs` | `console`: its options (tokens from files or the environment), its stop signals |
//! | `offline.rs` | `stats`, `history`, `audit`: read from the history database, no registry |
//! | `logs.rs` | `logs`: an item run's captured output, followed while it runs |
//! | `print.rs` | tables and `--json` |
//!
//! Exit codes: 0 done; 1 refused by the cluster's state (instances still run the job, the config
//! changed meanwhile, nothing to trigger) or the registry failed; 2 bad input (flag, file, job
//! name, unknown server/instance/item, invalid config field).

mod cli;
mod console;
mod execute;
mod logs;
mod offline;
mod print;

use std::process::ExitCode;
use std::sync::Arc;

use clap::{CommandFactory, Parser};
use shardcron::console::Console;
use shardcron::history::History;
use shardcron::ops::{Actor, ErrorClass, Ops, OpsError};
use shardcron::registry::zookeeper::{ZkConfig, ZkConnector};
use shardcron::registry::Connector;

use cli::{Cli, Command, ConfigCommand};
use console::{console_options, stop_signals};
use execute::execute;
use offline::{audit, history, stats};

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
