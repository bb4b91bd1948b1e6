//! An example node: runs shardcron jobs and prints one line per item execution and per resharding.
//!
//! ```text
//! cargo run --example node                       # 3 instances on an in-process registry, demo jobs
//! cargo run --example node -- --nodes 5 --jobs examples/jobs.yaml
//! cargo run --example node -- --zk 127.0.0.1:2181 --namespace demo   # one instance per process
//! SHARDCRON_ZK_AUTH=digest:ops:PASSWORD cargo run --example node -- --zk 127.0.0.1:2181
//! ```
//!
//! | file | what it holds |
//! | --- | --- |
//! | `main.rs` | start-up, the nodes, and graceful shutdown on SIGINT / SIGTERM |
//! | `alloc.rs` | the global allocator: jemalloc, returning a burst's freed pages within a second |
//! | `cli.rs` | the flags (clap derive); a bad one exits with code 2 and names it |
//! | `jobs.rs` | the demo job set and jobs files (`jobs:` list of configs with a `type:`) |
//! | `demo.rs` | the jobs compiled in: `demo`, `orders`, `inventory` |
//! | `report.rs` | the printed lines and the handler wrapper that prints them |
//!
//! Exit codes: 0 after a graceful shutdown, 1 when a node cannot start (the registry is
//! unreachable, say), 2 for a bad flag or jobs file.

mod alloc;
mod cli;
mod demo;
mod jobs;
mod report;

use std::error::Error;
use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use shardcron::events::EventBus;
use shardcron::history::{windows_in, History, Retention};
use shardcron::node::{NodeBuilder, NodeHandle};
use shardcron::registry::embedded::EmbeddedServer;
use shardcron::registry::zookeeper::{ZkConfig, ZkConnector};
use shardcron::registry::Connector;
use shardcron::{InstanceId, JobSpec, NodeOptions};
use tokio::signal::unix::{signal, Signal, SignalKind};
use tracing_subscriber::EnvFilter;

use cli::Args;
use report::{Console, OnceLog, Reported, ONCE_LOG};

/// How long a shutdown waits for running items: the demo's items are short, and an operator who
/// pressed Ctrl-C does not want to wait ElasticJob's long default.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(10);

fn main() -> ExitCode {
    let args = match cli::parse() {
        Ok(args) => args,
        Err(e) => {
            // Help goes to stdout and succeeds; every refused flag is bad input.
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()))
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    // Credentials and TLS files are flags too: a wrong one is bad input, said before anything starts.
    if let Some(hosts) = &args.zk {
        if let Err(e) = zk_config(hosts, &args) {
            eprintln!("node: {e}");
            return ExitCode::from(2);
        }
    }
    let jobs = match &args.jobs {
        None => jobs::demo(),
        Some(file) => match jobs::from_file(file) {
            Ok(jobs) => jobs,
            Err(e) => {
                eprintln!("node: {e}");
                return ExitCode::from(2);
            }
        },
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("node: starting the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(args, jobs)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("node: {}", chain(e.as_ref()));
            ExitCode::FAILURE
        }
    }
}

/// An error and its sources, `: `-separated, so that the root cause reaches the terminal.
fn chain(error: &dyn Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        text.push_str(&format!(": {e}"));
        source = e.source();
    }
    text
}

/// SIGINT and SIGTERM, subscribed before anything starts so that neither can kill the process
/// without a graceful shutdown.
struct Signals {
    interrupt: Signal,
    terminate: Signal,
}

impl Signals {
    fn subscribe() -> std::io::Result<Self> {
        Ok(Self {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
        })
    }

    /// Completes with the signal's name when either arrives.
    async fn recv(&mut self) -> &'static str {
        tokio::select! {
            _ = self.interrupt.recv() => "SIGINT",
            _ = self.terminate.recv() => "SIGTERM",
        }
    }
}

/// One node to start: where it registers and as whom.
struct Planned {
    connector: Arc<dyn Connector>,
    instance_id: Option<InstanceId>,
    /// What the `node` line says it registered on.
    registry: String,
    namespace: String,
    metrics: Option<std::net::SocketAddr>,
    admin: Option<std::net::SocketAddr>,
    labels: Vec<String>,
    adopt: Option<shardcron::decide::adopt::AdoptPolicy>,
}

/// The address for node `n`: the given port plus `n`, so several embedded nodes do not collide
/// (port 0 stays 0: any free port).
fn nth(addr: Option<std::net::SocketAddr>, n: usize) -> Option<std::net::SocketAddr> {
    addr.map(|mut a| {
        if a.port() != 0 {
            a.set_port(a.port().saturating_add(n as u16));
        }
        a
    })
}

/// The ZooKeeper config of `--zk`, with the credentials and TLS files.
fn zk_config(hosts: &str, args: &Args) -> Result<ZkConfig, Box<dyn Error>> {
    let config = ZkConfig::new(hosts, &args.namespace)?;
    Ok(args.access.apply(config)?)
}

fn plan(args: &Args) -> Result<Vec<Planned>, Box<dyn Error>> {
    if let Some(hosts) = &args.zk {
        let mut config = zk_config(hosts, args)?;
        if let Some(timeout) = args.session_timeout {
            config = config.with_session_timeout(timeout);
        }
        return Ok(vec![Planned {
            connector: Arc::new(ZkConnector::new(config)),
            instance_id: args.instance_id.clone(),
            registry: format!("zookeeper:{hosts}"),
            namespace: args.namespace.clone(),
            metrics: args.metrics,
            admin: args.admin,
            labels: args.labels.clone(),
            adopt: args.adopt.clone(),
        }]);
    }
    let server = EmbeddedServer::new();
    let pid = std::process::id();
    (0..args.nodes)
        .map(|n| {
            let mut connector = server.connector(&args.namespace);
            if let Some(timeout) = args.session_timeout {
                connector = connector.with_session_timeout(timeout);
            }
            let instance_id = match &args.instance_id {
                Some(id) if args.nodes == 1 => id.clone(),
                Some(id) => InstanceId::parse(format!("{id}-{n}"))?,
                None => InstanceId::new("127.0.0.1", &format!("{pid}-{n}"))?,
            };
            Ok(Planned {
                connector: Arc::new(connector),
                instance_id: Some(instance_id),
                registry: "embedded".to_owned(),
                namespace: args.namespace.clone(),
                metrics: nth(args.metrics, n),
                admin: nth(args.admin, n),
                labels: args.labels.clone(),
                adopt: args.adopt.clone(),
            })
        })
        .collect()
}

async fn run(args: Args, jobs: Vec<JobSpec>) -> Result<(), Box<dyn Error>> {
    let mut signals = Signals::subscribe()?;
    let console = Arc::new(Console::default());
    for job in &jobs {
        let cron = job.config.cron_expr().unwrap_or("");
        console.line(
            "job",
            format_args!(
                "job={} type={} items={} cron={cron:?}",
                job.config.job_name,
                job.job_type.root_data(),
                job.config.sharding_total_count
            ),
        );
    }
    // One bus for every node of this process: the history (when asked for) records them all.
    let bus = EventBus::new();
    let history = match &args.history {
        Some(target) => {
            let history = History::open(target).await?;
            let shown = shardcron::secret::redact_url(target);
            let window = args
                .history_retention
                .map_or("forever".to_owned(), |w| w.to_string());
            console.line("history", format_args!("target={shown} retention={window}"));
            Some((history.attach(&bus), history))
        }
        None => None,
    };
    // Started once a node runs: a job's own window is read from its config in the node's mirror.
    let mut purge = None;
    let mut nodes: Vec<NodeHandle> = Vec::new();
    for planned in plan(&args)? {
        let start = start_node(planned, &jobs, &console, &bus);
        let started = tokio::select! {
            started = start => started,
            name = signals.recv() => {
                // Nodes already running still leave gracefully; the one starting is abandoned.
                shutdown(&console, &nodes, name).await;
                return Ok(());
            }
        };
        match started {
            Ok(node) => {
                if let (None, Some((_, history))) = (&purge, &history) {
                    let mut retention = Retention::keep_forever();
                    retention.default_window = args.history_retention;
                    retention.per_job = Some(windows_in(node.mirror().clone()));
                    purge = Some(history.purge_periodically(retention));
                }
                nodes.push(node)
            }
            Err(e) => {
                shutdown(&console, &nodes, "start-failed").await;
                return Err(e);
            }
        }
    }
    let name = signals.recv().await;
    shutdown(&console, &nodes, name).await;
    if let Some(purge) = purge {
        purge.close().await;
    }
    if let Some((recording, _)) = history {
        // Writes what is still queued before the process exits.
        recording.close().await;
    }
    Ok(())
}

async fn start_node(
    planned: Planned,
    jobs: &[JobSpec],
    console: &Arc<Console>,
    bus: &EventBus,
) -> Result<NodeHandle, Box<dyn Error>> {
    let Planned {
        connector,
        instance_id,
        registry,
        namespace,
        metrics,
        admin,
        labels,
        adopt,
    } = planned;
    // The handlers are built before the node, and the node's mirror exists only once it started.
    let mirror = Arc::new(OnceLock::new());
    let mut handlers = shardcron::job::handlers::HandlerRegistry::new();
    handlers.register_distribute_once_listener(ONCE_LOG, Arc::new(OnceLog(console.clone())))?;
    let mut builder = NodeBuilder::new(connector)
        .handlers(handlers)
        .event_bus(bus.clone())
        .labels(labels)
        .options(NodeOptions {
            shutdown_timeout: SHUTDOWN_TIMEOUT,
            ..NodeOptions::default()
        });
    if let Some(id) = instance_id {
        builder = builder.instance_id(id);
    }
    if let Some(policy) = adopt {
        builder = builder.adopt(policy);
    }
    if let Some(addr) = metrics {
        builder = builder.metrics(addr);
    }
    if let Some(addr) = admin {
        builder = builder.admin(addr);
    }
    for job in jobs {
        let handler = Reported::new(job.handler.clone(), console.clone(), mirror.clone());
        builder = builder.job_spec(JobSpec {
            handler: Arc::new(handler),
            ..job.clone()
        });
    }
    let node = builder.start().await?;
    let _ = mirror.set(node.mirror().clone());
    console.line(
        "node",
        format_args!(
            "instance={} registry={} namespace={} metrics={} admin={} labels={}",
            node.instance_id(),
            registry,
            namespace,
            node.metrics_addr()
                .map_or("off".to_owned(), |a| a.to_string()),
            node.admin_addr()
                .map_or("off".to_owned(), |a| a.to_string()),
            if node.labels().is_empty() {
                "none".to_owned()
            } else {
                node.labels().join(",")
            },
        ),
    );
    Ok(node)
}

async fn shutdown(console: &Console, nodes: &[NodeHandle], reason: &str) {
    console.line(
        "shutdown",
        format_args!("reason={reason} nodes={}", nodes.len()),
    );
    futures::future::join_all(nodes.iter().map(NodeHandle::shutdown)).await;
    console.line("stopped", format_args!("nodes={}", nodes.len()));
}
