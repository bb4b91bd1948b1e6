//! The command line, declared with clap's derive: clap checks each value before anything starts
//! and names the flag it refuses; `main` exits with code 2 on any such refusal.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use shardcron::decide::adopt::{AdoptPolicy, AdoptPolicyError};
use shardcron::history::RetentionWindow;
use shardcron::registry::zookeeper::{ZkAccessArgs, ZkConfig, ZkConfigError};
use shardcron::InstanceId;

/// The namespace when `--namespace` is not given.
pub(crate) const DEFAULT_NAMESPACE: &str = "shardcron-demo";

/// Embedded instances when `--nodes` is not given.
pub(crate) const DEFAULT_NODES: usize = 3;

/// Runs shardcron nodes and prints one line per item execution and per resharding.
#[derive(Debug, Parser)]
#[command(
    name = "node",
    about,
    after_help = "exit codes: 0 after a graceful shutdown, 1 when a node cannot start, 2 for a bad flag or jobs file"
)]
struct Cli {
    /// ZooKeeper connect string (host:port or tcp+tls://host:port, comma-separated); runs ONE
    /// instance. Without it, N instances share an in-process embedded registry.
    #[arg(long, value_name = "HOSTS", value_parser = connect_string)]
    zk: Option<String>,
    /// Registry namespace.
    #[arg(long, value_name = "NS", default_value = DEFAULT_NAMESPACE, value_parser = namespace)]
    namespace: String,
    /// YAML file with a `jobs:` list of ElasticJob job configurations, each with a `type:` of
    /// SCRIPT, demo, orders or inventory (default: the built-in demo jobs).
    #[arg(long, value_name = "FILE")]
    jobs: Option<PathBuf>,
    /// Embedded instances in this process [default: 3] (not with --zk: start one process per instance).
    #[arg(long, value_name = "N", conflicts_with = "zk", allow_negative_numbers = true, value_parser = clap::value_parser!(u16).range(1..))]
    nodes: Option<u16>,
    /// Instance id ip@-@suffix (embedded: each node gets ID-n).
    #[arg(long, value_name = "ID", value_parser = instance_id)]
    instance_id: Option<InstanceId>,
    /// Registry session timeout, in milliseconds.
    #[arg(long, value_name = "MS", allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..))]
    session_timeout_ms: Option<u64>,
    /// Serve Prometheus metrics on ADDR (e.g. 127.0.0.1:9464); off unless given.
    #[arg(long, value_name = "ADDR", value_parser = address)]
    metrics: Option<SocketAddr>,
    /// Serve /healthz, /readyz and /dump/{job} on ADDR (e.g. 127.0.0.1:8081). With several
    /// embedded nodes, node n listens on the port + n.
    #[arg(long, value_name = "ADDR", value_parser = address)]
    admin: Option<SocketAddr>,
    /// Record every item execution and run status (ElasticJob's JOB_EXECUTION_LOG /
    /// JOB_STATUS_TRACE_LOG) in a SQLite file or at a postgres://... URL; read it with
    /// `shardcronctl history NAME --db TARGET`. A password is refused here (`ps` shows it): set
    /// PGPASSWORD, or give the whole URL in SHARDCRON_HISTORY instead of this flag.
    #[arg(long, value_name = "TARGET")]
    history: Option<String>,
    /// Keep history rows for this window (30d, 12h, 90m), purging older ones every 10 minutes
    /// in small batches; a job's `shardcron.history.retention` prop overrides it. Default: keep
    /// rows for ever (only jobs with the prop are purged).
    #[arg(long, value_name = "WINDOW", requires = "history", value_parser = retention)]
    history_retention: Option<RetentionWindow>,
    /// This instance's labels, comma-separated (e.g. gpu,eu): a job whose `label:` names one of
    /// them runs here, a job with another label does not (ElasticJob's instance labels; embedded:
    /// every node gets them).
    #[arg(long = "label", value_name = "LABELS", value_parser = labels)]
    labels: Option<Labels>,
    /// Run the jobs created at runtime (`shardcronctl create`, the console's form) of these types:
    /// script, http or script,http, optionally only those labelled LABEL (script,http:gpu; the
    /// node then carries the label).
    #[arg(long, value_name = "TYPES[:LABEL]", value_parser = adopt)]
    adopt: Option<AdoptPolicy>,
    /// ZooKeeper credentials (SHARDCRON_ZK_AUTH or --zk-auth-file) and TLS files (with --zk).
    #[command(flatten)]
    access: ZkAccessArgs,
}

fn adopt(value: &str) -> Result<AdoptPolicy, String> {
    value.parse().map_err(|e: AdoptPolicyError| e.to_string())
}

/// Where the nodes register and what they run.
#[derive(Debug)]
pub(crate) struct Args {
    /// The ZooKeeper ensemble; `None` runs on the embedded registry.
    pub(crate) zk: Option<String>,
    /// The registry namespace.
    pub(crate) namespace: String,
    /// The jobs file; `None` runs the built-in demo jobs.
    pub(crate) jobs: Option<PathBuf>,
    /// How many instances this process runs (1 with ZooKeeper).
    pub(crate) nodes: usize,
    /// The instance id (a prefix when several embedded instances run).
    pub(crate) instance_id: Option<InstanceId>,
    /// The session timeout to ask for.
    pub(crate) session_timeout: Option<Duration>,
    /// Where to serve Prometheus metrics.
    pub(crate) metrics: Option<SocketAddr>,
    /// Where to serve the health and dump endpoints.
    pub(crate) admin: Option<SocketAddr>,
    /// Where to record the execution history.
    pub(crate) history: Option<String>,
    /// How long history rows are kept (`None`: for ever, unless a job says otherwise).
    pub(crate) history_retention: Option<RetentionWindow>,
    /// This instance's labels (`--label`).
    pub(crate) labels: Vec<String>,
    /// Which jobs created at runtime it runs (`--adopt`).
    pub(crate) adopt: Option<AdoptPolicy>,
    /// ZooKeeper credentials and TLS files.
    pub(crate) access: ZkAccessArgs,
}

/// Parses the process's arguments; on a refusal (or `--help`) clap's error, which `main` prints.
pub(crate) fn parse() -> Result<Args, clap::Error> {
    let cli = Cli::try_parse()?;
    // Checked here, not by clap, whose refusal would print the password it refuses.
    if let Some(Err(why)) = cli.history.as_deref().map(shardcron::history::history_flag) {
        return Err(clap::Error::raw(
            clap::error::ErrorKind::ValueValidation,
            format!("--history: {why}\n"),
        ));
    }
    let nodes = match (&cli.zk, cli.nodes) {
        (Some(_), _) => 1,
        (None, Some(n)) => usize::from(n),
        (None, None) => DEFAULT_NODES,
    };
    Ok(Args {
        zk: cli.zk,
        namespace: cli.namespace,
        jobs: cli.jobs,
        nodes,
        instance_id: cli.instance_id,
        session_timeout: cli.session_timeout_ms.map(Duration::from_millis),
        metrics: cli.metrics,
        admin: cli.admin,
        history: cli
            .history
            .or_else(|| std::env::var(shardcron::history::HISTORY_ENV).ok()),
        history_retention: cli.history_retention,
        labels: cli.labels.map(|l| l.0).unwrap_or_default(),
        adopt: cli.adopt,
        access: cli.access,
    })
}

fn connect_string(value: &str) -> Result<String, String> {
    // ZkConfig checks both strings; a placeholder stands in for the namespace.
    match ZkConfig::new(value, "ns") {
        Ok(_) => Ok(value.to_owned()),
        Err(ZkConfigError::EmptyConnectString) => Err("no host given".to_owned()),
        Err(e) => Err(e.to_string()),
    }
}

fn namespace(value: &str) -> Result<String, String> {
    ZkConfig::new("127.0.0.1:2181", value)
        .map(|_| value.to_owned())
        .map_err(|e| e.to_string())
}

fn retention(value: &str) -> Result<RetentionWindow, String> {
    RetentionWindow::parse(value).map_err(|e| e.to_string())
}

fn instance_id(value: &str) -> Result<InstanceId, String> {
    InstanceId::parse(value).map_err(|e| format!("{e}; expected ip@-@suffix"))
}

/// `--label`'s list, one value for clap (which would read a bare `Vec` as a repeated flag).
#[derive(Debug, Clone)]
struct Labels(Vec<String>);

fn labels(value: &str) -> Result<Labels, String> {
    value
        .split(',')
        .map(|part| {
            let part = part.trim();
            shardcron::sharding::check_label(part)
                .map(|()| part.to_owned())
                .map_err(|e| e.to_string())
        })
        .collect::<Result<_, _>>()
        .map(Labels)
}

fn address(value: &str) -> Result<SocketAddr, String> {
    value
        .parse()
        .map_err(|e| format!("{e}; expected ip:port such as 127.0.0.1:9464"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_flags_are_consistent() {
        Cli::command().debug_assert();
    }
}
