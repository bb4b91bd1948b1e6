//! A small host service that embeds shardcron in its own ractor tree: its supervisor links the
//! shardcron node under itself, one job is implemented by the host's `ReportWorker` actor, and an
//! events subscriber prints what the engine does. Ctrl-C (or SIGTERM) stops the tree gracefully.
//!
//! ```text
//! cargo run --example embedded_service                 # embedded registry, no arguments
//! cargo run --example embedded_service -- --zk 127.0.0.1:2181 [--namespace NS]
//! ```

use std::sync::Arc;
use std::time::Duration;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent};
use shardcron::config::JobConfig;
use shardcron::embed::{forward_events, ActorJob};
use shardcron::events::{Delivered, EngineEvent, EventBus};
use shardcron::job::{JobError, ShardingContext};
use shardcron::node::{NodeBuilder, NodeHandle};
use shardcron::registry::embedded::EmbeddedServer;
use shardcron::registry::zookeeper::{ZkConfig, ZkConnector};
use shardcron::registry::Connector;
use shardcron::{JobSpec, JobType};

/// Messages of the host's job actor.
enum ReportMsg {
    /// Build the report for one item.
    Run(ShardingContext, RpcReplyPort<Result<(), JobError>>),
}

/// The host's own actor implementing the `reports` job.
struct ReportWorker;

impl Actor for ReportWorker {
    type Msg = ReportMsg;
    type State = ();
    type Arguments = ();

    async fn pre_start(&self, _: ActorRef<ReportMsg>, _: ()) -> Result<(), ActorProcessingErr> {
        Ok(())
    }

    async fn handle(
        &self,
        _: ActorRef<ReportMsg>,
        msg: ReportMsg,
        _: &mut (),
    ) -> Result<(), ActorProcessingErr> {
        let ReportMsg::Run(ctx, reply) = msg;
        println!(
            "report for region {} (item {})",
            ctx.sharding_parameter, ctx.sharding_item
        );
        let _ = reply.send(Ok(()));
        Ok(())
    }
}

/// Prints engine events.
struct EventPrinter;

impl Actor for EventPrinter {
    type Msg = Delivered;
    type State = ();
    type Arguments = ();

    async fn pre_start(&self, _: ActorRef<Delivered>, _: ()) -> Result<(), ActorProcessingErr> {
        Ok(())
    }

    async fn handle(
        &self,
        _: ActorRef<Delivered>,
        d: Delivered,
        _: &mut (),
    ) -> Result<(), ActorProcessingErr> {
        if d.missed_before > 0 {
            println!("event: ({} events missed: queue full)", d.missed_before);
        }
        match d.event {
            EngineEvent::ItemStarted { .. } | EngineEvent::RunStatus { .. } => {}
            other => println!(
                "event: {}",
                serde_json::to_string(&other).unwrap_or_default()
            ),
        }
        Ok(())
    }
}

/// The host's supervisor: owns the worker, the printer and the shardcron node.
struct Service;

struct ServiceState {
    node: Option<NodeHandle>,
}

impl Actor for Service {
    type Msg = ();
    type State = ServiceState;
    type Arguments = Arc<dyn Connector>;

    async fn pre_start(
        &self,
        myself: ActorRef<()>,
        connector: Arc<dyn Connector>,
    ) -> Result<ServiceState, ActorProcessingErr> {
        let cell = myself.get_cell();
        Actor::spawn_linked(
            Some("reports-worker".into()),
            ReportWorker,
            (),
            cell.clone(),
        )
        .await?;
        let (printer, _) = Actor::spawn_linked(None, EventPrinter, (), cell.clone()).await?;
        let bus = EventBus::new();
        forward_events(bus.subscribe("printer", 1024), printer, |d| d);
        let job = JobConfig::new("reports", 3)
            .cron("0/2 * * * * ?")
            .item_parameters("0=emea,1=amer,2=apac");
        let handler = Arc::new(ActorJob::new(
            "reports-worker",
            Duration::from_secs(10),
            ReportMsg::Run,
        ));
        let node = NodeBuilder::new(connector)
            .event_bus(bus)
            .job_spec(JobSpec {
                config: job.into(),
                job_type: JobType::Named("reports".into()),
                handler,
            })
            .start_linked(cell)
            .await?;
        Ok(ServiceState { node: Some(node) })
    }

    async fn handle_supervisor_evt(
        &self,
        _: ActorRef<()>,
        evt: SupervisionEvent,
        _: &mut ServiceState,
    ) -> Result<(), ActorProcessingErr> {
        if let SupervisionEvent::ActorFailed(_, e) = evt {
            eprintln!("a child of the service failed: {e}");
        }
        Ok(())
    }

    async fn post_stop(
        &self,
        myself: ActorRef<()>,
        state: &mut ServiceState,
    ) -> Result<(), ActorProcessingErr> {
        // Children stop with their post_stop only when asked: the node drains and leaves the registry.
        state.node.take();
        myself
            .stop_children_and_wait(Some("service stopping".into()), None)
            .await;
        Ok(())
    }
}

#[tokio::main]
async fn main() {
    let _ = tracing_subscriber_init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let connector: Arc<dyn Connector> = match flag("--zk") {
        Some(hosts) => {
            let ns = flag("--namespace").unwrap_or_else(|| "shardcron-embedded".into());
            match ZkConfig::new(&hosts, &ns) {
                Ok(config) => Arc::new(ZkConnector::new(config)),
                Err(e) => {
                    eprintln!("--zk/--namespace: {e}");
                    std::process::exit(2);
                }
            }
        }
        None if args.is_empty() => Arc::new(EmbeddedServer::new().connector("shardcron-embedded")),
        None => {
            eprintln!(
                "unknown arguments {args:?}; usage: embedded_service [--zk HOSTS [--namespace NS]]"
            );
            std::process::exit(2);
        }
    };
    let (service, handle) = match Actor::spawn(Some("service".into()), Service, connector).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("cannot start the service: {e}");
            std::process::exit(1);
        }
    };
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    println!("stopping");
    service.stop(None);
    let _ = handle.await;
}

fn tracing_subscriber_init() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .try_init()
}
