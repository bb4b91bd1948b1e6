//! The command line, parsed by hand: a handful of `--flag VALUE` (or `--flag=VALUE`) options,
//! each checked here so that a typo exits with code 2 and names the flag before anything starts.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use shardcron::registry::zookeeper::{ZkConfig, ZkConfigError};
use shardcron::InstanceId;

/// The usage text printed by `--help` and pointed to by errors.
pub(crate) const USAGE: &str = "\
usage: node [--zk HOSTS] [--namespace NS] [--jobs FILE] [--nodes N]
            [--instance-id ID] [--session-timeout-ms MS] [--metrics ADDR] [--admin ADDR]
            [--history TARGET] [--label LABELS]

Runs shardcron nodes and prints one line per item execution and per resharding.

  --zk HOSTS                ZooKeeper connect string (host:port,...); runs ONE instance.
                            Without it, N instances share an in-process embedded registry.
  --namespace NS            registry namespace (default shardcron-demo)
  --jobs FILE               YAML file with a `jobs:` list of ElasticJob job configurations,
                            each with a `type:` of SCRIPT, demo, orders or inventory
                            (default: the built-in demo jobs)
  --nodes N                 embedded instances in this process (default 3; not with --zk)
  --instance-id ID          instance id ip@-@suffix (embedded: each node gets ID-n)
  --session-timeout-ms MS   registry session timeout
  --metrics ADDR            serve Prometheus metrics on ADDR (e.g. 127.0.0.1:9464); off unless given
  --admin ADDR              serve /healthz, /readyz and /dump/{job} on ADDR (e.g. 127.0.0.1:8081)
                            With several embedded nodes, node n listens on the port + n.
  --history TARGET          record every item execution and run status (ElasticJob's
                            JOB_EXECUTION_LOG / JOB_STATUS_TRACE_LOG) in a SQLite file or at a
                            postgres://... URL; read it with `ctl history NAME --db TARGET`
  --label LABELS            this instance's labels, comma-separated (e.g. gpu,eu): a job whose
                            `label:` names one of them runs here, a job with another label does
                            not (ElasticJob's instance labels; embedded: every node gets them)
  -h, --help                this text
";

/// The namespace when `--namespace` is not given.
pub(crate) const DEFAULT_NAMESPACE: &str = "shardcron-demo";

/// Embedded instances when `--nodes` is not given.
pub(crate) const DEFAULT_NODES: usize = 3;

/// What the command line asks for.
#[derive(Debug)]
pub(crate) enum Command {
    /// Run nodes.
    Run(Box<Args>),
    /// Print the usage and exit.
    Help,
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
    /// This instance's labels (`--label`).
    pub(crate) labels: Vec<String>,
}

/// Why the command line was refused; every variant names the flag.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ArgsError {
    /// A flag this program does not know, or a stray positional argument.
    #[error("unknown argument {0:?} (see --help)")]
    Unknown(String),
    /// A flag given without its value.
    #[error("{0} needs a value")]
    MissingValue(&'static str),
    /// A flag whose value is refused.
    #[error("{flag} {value:?}: {reason}")]
    BadValue {
        /// The flag.
        flag: &'static str,
        /// The value given.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A flag given twice, where the second would silently win.
    #[error("{0} is given more than once")]
    Repeated(&'static str),
    /// `--nodes` with `--zk`: a ZooKeeper process runs one instance, start more processes instead.
    #[error(
        "--nodes only applies to the embedded registry; with --zk start one process per instance"
    )]
    NodesWithZk,
}

const FLAGS: [&str; 10] = [
    "--zk",
    "--namespace",
    "--jobs",
    "--nodes",
    "--instance-id",
    "--session-timeout-ms",
    "--metrics",
    "--admin",
    "--history",
    "--label",
];

/// Parses the arguments after the program name.
pub(crate) fn parse(args: impl IntoIterator<Item = String>) -> Result<Command, ArgsError> {
    let mut values: [Option<String>; FLAGS.len()] = Default::default();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        if arg == "-h" || arg == "--help" {
            return Ok(Command::Help);
        }
        let (name, inline) = match arg.split_once('=') {
            Some((name, value)) if name.starts_with("--") => {
                (name.to_owned(), Some(value.to_owned()))
            }
            _ => (arg.clone(), None),
        };
        let Some(i) = FLAGS.iter().position(|f| *f == name) else {
            return Err(ArgsError::Unknown(arg));
        };
        let flag = FLAGS[i];
        let value = match inline {
            Some(v) => v,
            // A following flag is a forgotten value, not a value that starts with dashes.
            None => match args.next() {
                Some(v) if !v.starts_with("--") => v,
                _ => return Err(ArgsError::MissingValue(flag)),
            },
        };
        if values[i].replace(value).is_some() {
            return Err(ArgsError::Repeated(flag));
        }
    }
    let [zk, namespace, jobs, nodes, instance_id, session_timeout, metrics, admin, history, label] =
        values;
    let bad = |flag, value: &str, reason: String| ArgsError::BadValue {
        flag,
        value: value.to_owned(),
        reason,
    };

    let namespace = namespace.unwrap_or_else(|| DEFAULT_NAMESPACE.to_owned());
    // ZkConfig checks both strings; a placeholder stands in for whichever one is not under test.
    if let Err(e) = ZkConfig::new("127.0.0.1:2181", &namespace) {
        return Err(bad("--namespace", &namespace, e.to_string()));
    }
    if let Some(hosts) = &zk {
        if let Err(e) = ZkConfig::new(hosts, "ns") {
            let reason = match e {
                ZkConfigError::EmptyConnectString => "no host given".to_owned(),
                e => e.to_string(),
            };
            return Err(bad("--zk", hosts, reason));
        }
    }
    let nodes = match (nodes, &zk) {
        (Some(_), Some(_)) => return Err(ArgsError::NodesWithZk),
        (Some(n), None) => match n.parse::<usize>() {
            Ok(count) if count >= 1 => count,
            _ => {
                return Err(bad(
                    "--nodes",
                    &n,
                    "expected a whole number of at least 1".into(),
                ))
            }
        },
        (None, Some(_)) => 1,
        (None, None) => DEFAULT_NODES,
    };
    let instance_id = match instance_id {
        None => None,
        Some(id) => Some(
            InstanceId::parse(id.clone())
                .map_err(|e| bad("--instance-id", &id, format!("{e}; expected ip@-@suffix")))?,
        ),
    };
    let session_timeout = match session_timeout {
        None => None,
        Some(ms) => match ms.parse::<u64>() {
            Ok(n) if n > 0 => Some(Duration::from_millis(n)),
            _ => {
                let reason = "expected milliseconds, a whole number above 0".into();
                return Err(bad("--session-timeout-ms", &ms, reason));
            }
        },
    };
    let address = |flag: &'static str, value: Option<String>| match value {
        None => Ok(None),
        Some(v) => v.parse::<SocketAddr>().map(Some).map_err(|e| {
            bad(
                flag,
                &v,
                format!("{e}; expected ip:port such as 127.0.0.1:9464"),
            )
        }),
    };
    let mut labels = Vec::new();
    for part in label.iter().flat_map(|l| l.split(',')) {
        let part = part.trim();
        shardcron::sharding::check_label(part).map_err(|e| {
            bad(
                "--label",
                label.as_deref().unwrap_or_default(),
                e.to_string(),
            )
        })?;
        labels.push(part.to_owned());
    }
    let metrics = address("--metrics", metrics)?;
    let admin = address("--admin", admin)?;
    Ok(Command::Run(Box::new(Args {
        zk,
        namespace,
        jobs: jobs.map(PathBuf::from),
        nodes,
        instance_id,
        session_timeout,
        metrics,
        admin,
        history,
        labels,
    })))
}
