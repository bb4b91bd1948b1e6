//! `ctl`: the operations CLI, over [`shardcron::ops`] on one ZooKeeper session.
//!
//! ```text
//! cargo run --example ctl -- --zk 127.0.0.1:2181 --namespace NS jobs
//! cargo run --example ctl -- --zk 127.0.0.1:2181 --namespace NS --json job orders
//! cargo run --example ctl -- --zk 127.0.0.1:2181 --namespace NS disable orders --server 10.0.0.1
//! ```
//!
//! | file | what it holds |
//! | --- | --- |
//! | `main.rs` | connect, run one command, map the outcome to an exit code |
//! | `args.rs` | the flags and commands; a bad one exits with code 2 and names it |
//! | `print.rs` | tables and `--json` |
//!
//! Exit codes: 0 done; 1 refused by the cluster's state (instances still run the job, the config
//! changed meanwhile, nothing to trigger) or the registry failed; 2 bad input (flag, file, job
//! name, unknown server/instance/item, invalid config field).

mod args;
mod print;

use std::process::ExitCode;
use std::sync::Arc;

use serde_json::json;
use shardcron::ops::{ErrorClass, Ops, OpsError};
use shardcron::registry::zookeeper::ZkConnector;
use shardcron::registry::Connector;

use args::{Command, Invocation, Parsed};

/// Exit code of a command that the cluster's state refused, or whose registry call failed.
const REFUSED: u8 = 1;
/// Exit code of bad input.
const BAD_INPUT: u8 = 2;

/// Why a command did not complete.
#[derive(Debug, thiserror::Error)]
enum CtlError {
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
}

impl CtlError {
    fn exit_code(&self) -> u8 {
        match self {
            Self::ReadFile { .. } => BAD_INPUT,
            Self::Connect { .. } => REFUSED,
            Self::Ops(e) => match e.class() {
                ErrorClass::BadInput => BAD_INPUT,
                ErrorClass::Refused | ErrorClass::Failed => REFUSED,
            },
        }
    }
}

fn main() -> ExitCode {
    let invocation = match args::parse(std::env::args().skip(1)) {
        Ok(Parsed::Run(invocation)) => invocation,
        Ok(Parsed::Help) => {
            print!("{}", args::USAGE);
            return ExitCode::SUCCESS;
        }
        Ok(Parsed::History(history)) => return run_history(history),
        Ok(Parsed::CronNext(args)) => {
            return match shardcron::cron::next::cron_next(&args, chrono::Utc::now()) {
                Ok(out) => {
                    print!("{out}");
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("ctl: {e}");
                    ExitCode::from(e.exit_code())
                }
            }
        }
        Err(e) => {
            eprintln!("ctl: {e}");
            return ExitCode::from(BAD_INPUT);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("ctl: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(invocation)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ctl: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

async fn run(invocation: Invocation) -> Result<(), CtlError> {
    let Invocation { zk, json, command } = invocation;
    // Read the file before connecting: a typo in its name is bad input, not a registry problem.
    let new_config = match &command {
        Command::ConfigSet { file, .. } => Some(std::fs::read_to_string(file).map_err(
            |source| CtlError::ReadFile {
                path: file.display().to_string(),
                source,
            },
        )?),
        _ => None,
    };
    let connector = ZkConnector::new(zk);
    let session = connector
        .connect()
        .await
        .map_err(|source| CtlError::Connect {
            target: connector.describe(),
            source,
        })?;
    let ops = Ops::new(Arc::clone(&session));
    let outcome = execute(&ops, command, new_config, json).await;
    session.close().await;
    outcome
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
                    "ctl: root {} is not a job: {}",
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
        Command::Job(job) => {
            let detail = ops.job(&job).await?;
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
        Command::ConfigGet(job) => {
            let config = ops.config_get(&job).await?;
            if json {
                print::json(&config)
            } else {
                print::config(&config)
            }
        }
        Command::ConfigSet { job, version, .. } => {
            let yaml = new_config.unwrap_or_default();
            let written = match version {
                Some(v) => ops.config_set_at(&job, &yaml, v).await?,
                None => ops.config_set(&job, &yaml).await?,
            };
            report(
                json,
                json!({ "jobName": job, "version": written }),
                format!("config of job {job} written (version {written})"),
            );
        }
        Command::Trigger(job) => {
            let asked = ops.trigger(&job).await?;
            let names: Vec<&str> = asked.iter().map(|i| i.as_str()).collect();
            report(
                json,
                json!({ "jobName": job, "triggered": asked }),
                format!("job {job} triggered on {}", names.join(", ")),
            );
        }
        Command::Disable(job, target) => {
            let done = ops.disable(&job, target).await?;
            report(
                json,
                json!({ "jobName": job, "disabled": done }),
                format!("job {job}: disabled {}", describe(&done)),
            );
        }
        Command::Enable(job, target) => {
            let done = ops.enable(&job, target).await?;
            report(
                json,
                json!({ "jobName": job, "enabled": done }),
                format!("job {job}: enabled {}", describe(&done)),
            );
        }
        Command::Shutdown(job, scope) => {
            let stopped = ops.shutdown(&job, scope).await?;
            let names: Vec<&str> = stopped.iter().map(|i| i.as_str()).collect();
            report(
                json,
                json!({ "jobName": job, "shutdown": stopped }),
                format!("job {job} shut down on {}", or_none(&names)),
            );
        }
        Command::Remove(job, mode) => {
            let stopped = ops.remove(&job, mode).await?;
            let names: Vec<&str> = stopped.iter().map(|i| i.as_str()).collect();
            report(
                json,
                json!({ "jobName": job, "removed": true, "shutdown": stopped }),
                format!("job {job} removed (shut down on {})", or_none(&names)),
            );
        }
        Command::History(_) => unreachable!("history is answered before connecting"),
    }
    Ok(())
}

fn report(json: bool, value: serde_json::Value, text: String) {
    if json {
        print::json(&value)
    } else {
        println!("{text}")
    }
}

fn describe(targets: &[shardcron::ops::Target]) -> String {
    use shardcron::ops::Target;
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

/// `history`: reads the execution history directly; no registry is involved.
fn run_history(args: args::HistoryArgs) -> ExitCode {
    use shardcron::history::{parse_item, parse_since, render_executions, History, HistoryQuery};
    let mut query = HistoryQuery::job(args.job.clone());
    match args.item.as_deref().map(parse_item).transpose() {
        Ok(item) => query.item = item,
        Err(e) => {
            eprintln!("ctl: --item: {e}");
            return ExitCode::from(BAD_INPUT);
        }
    }
    match args
        .since
        .as_deref()
        .map(|s| parse_since(s, chrono::Utc::now()))
        .transpose()
    {
        Ok(since) => query.since = since,
        Err(e) => {
            eprintln!("ctl: --since: {e}");
            return ExitCode::from(BAD_INPUT);
        }
    }
    query.failed_only = args.failed;
    if let Err(e) = shardcron::history::HistoryTarget::parse(&args.db).require_existing() {
        eprintln!("ctl: {e}");
        return ExitCode::from(REFUSED);
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("ctl: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        let history = History::open(&args.db).await?;
        history.query(&query).await
    });
    match result {
        Ok(records) if args.json => {
            println!(
                "{}",
                serde_json::to_string_pretty(&records).unwrap_or_default()
            );
            ExitCode::SUCCESS
        }
        Ok(records) => {
            print!("{}", render_executions(&records));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("ctl: history: {e}");
            ExitCode::from(REFUSED)
        }
    }
}
