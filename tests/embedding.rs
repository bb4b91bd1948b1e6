//! shardcron inside a host's ractor tree: linked under the host's supervisor, a job implemented by a
//! host actor, engine events delivered to a host actor, several nodes in one process.

use support::cluster;
use support::wait::wait_until_woken;

use std::sync::Arc;
use std::time::Duration;

use cluster::{instance, origin};
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent};
use shardcron::clock::TokioClock;
use shardcron::config::JobConfig;
use shardcron::embed::{forward_events, ActorJob};
use shardcron::events::{Delivered, EngineEvent, EventBus};
use shardcron::job::{JobError, ShardingContext};
use shardcron::node::{NodeBuilder, NodeHandle};
use shardcron::registry::Connector;
use shardcron::{JobSpec, JobType};
use tokio::sync::mpsc;

const WITHIN: Duration = Duration::from_secs(60);

async fn recv<T>(rx: &mut mpsc::UnboundedReceiver<T>, what: &str) -> T {
    match tokio::time::timeout(WITHIN, rx.recv()).await {
        Ok(Some(v)) => v,
        _ => panic!("timed out waiting for {what}"),
    }
}

/// A host supervisor that reports the supervision events it receives.
struct Host;

impl Actor for Host {
    type Msg = ();
    type State = mpsc::UnboundedSender<String>;
    type Arguments = mpsc::UnboundedSender<String>;

    async fn pre_start(
        &self,
        _: ActorRef<()>,
        tx: Self::Arguments,
    ) -> Result<Self::State, ActorProcessingErr> {
        Ok(tx)
    }

    async fn handle_supervisor_evt(
        &self,
        _: ActorRef<()>,
        evt: SupervisionEvent,
        tx: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        let line = match evt {
            SupervisionEvent::ActorFailed(_, e) => format!("failed: {e}"),
            SupervisionEvent::ActorTerminated(_, _, r) => format!("terminated: {r:?}"),
            _ => return Ok(()),
        };
        let _ = tx.send(line);
        Ok(())
    }
}

fn builder(conn: Arc<dyn Connector>, n: u32) -> NodeBuilder {
    NodeBuilder::new(conn)
        .instance_id(instance(n))
        .clock(Arc::new(TokioClock::starting_at(origin())))
}

#[tokio::test(start_paused = true)]
async fn the_host_supervisor_sees_the_subtree_terminate_and_fail() {
    let (_server, conn, _) = cluster::embedded("embed");
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (host, _) = Actor::spawn(None, Host, tx).await.unwrap();
    tracing::info!("--- a node stopped on purpose: the host sees its termination");
    let node = builder(conn.clone(), 1)
        .start_linked(host.get_cell())
        .await
        .unwrap();
    node.shutdown().await;
    assert!(recv(&mut rx, "termination").await.starts_with("terminated"));
    tracing::info!("--- a node whose registry actor keeps dying: the host sees it fail");
    let node = builder(conn.clone(), 2)
        .start_linked(host.get_cell())
        .await
        .unwrap();
    for _ in 0..6 {
        let name = node.actor_name("registry");
        let Some(cell) = ractor::registry::where_is(name) else {
            break;
        };
        cell.kill();
        // The node restarts it on the next message round: wait for the new one to register.
        let check = async || {
            let now = ractor::registry::where_is(node.actor_name("registry"));
            now.is_none_or(|c| c.get_id() != cell.get_id())
        };
        let wake = async || tokio::task::yield_now().await;
        wait_until_woken(check, wake, "the killed registry actor replaced", WITHIN).await;
    }
    let line = recv(&mut rx, "the node's failure").await;
    assert!(
        line.starts_with("failed") && line.contains("giving up"),
        "{line}"
    );
    host.stop(None);
}

/// The host's job actor.
enum WorkerMsg {
    RunItem(ShardingContext, RpcReplyPort<Result<(), JobError>>),
}

struct Worker;

impl Actor for Worker {
    type Msg = WorkerMsg;
    type State = mpsc::UnboundedSender<(u32, String, String)>;
    type Arguments = mpsc::UnboundedSender<(u32, String, String)>;

    async fn pre_start(
        &self,
        _: ActorRef<WorkerMsg>,
        tx: Self::Arguments,
    ) -> Result<Self::State, ActorProcessingErr> {
        Ok(tx)
    }

    async fn handle(
        &self,
        _: ActorRef<WorkerMsg>,
        msg: WorkerMsg,
        tx: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        let WorkerMsg::RunItem(ctx, reply) = msg;
        let _ = tx.send((
            ctx.sharding_item.0,
            ctx.sharding_parameter.clone(),
            ctx.job_name.to_string(),
        ));
        let _ = reply.send(Ok(()));
        Ok(())
    }
}

#[tokio::test(start_paused = true)]
async fn a_job_actor_receives_every_item_and_a_restarted_actor_gets_the_next_fire() {
    let (_server, conn, _) = cluster::embedded("embed");
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (worker, _) = Actor::spawn(Some("billing-worker".into()), Worker, tx.clone())
        .await
        .unwrap();
    let job = JobConfig::new("billing", 2)
        .cron("0/2 * * * * ?")
        .time_zone("GMT")
        .item_parameters("0=a,1=b");
    let handler = Arc::new(ActorJob::new(
        "billing-worker",
        Duration::from_secs(5),
        WorkerMsg::RunItem,
    ));
    let spec = JobSpec {
        config: std::sync::Arc::new(job),
        job_type: JobType::Named("billing".into()),
        handler,
    };
    let node = builder(conn, 1).job_spec(spec).start().await.unwrap();
    let mut seen = Vec::new();
    while seen.len() < 2 {
        seen.push(recv(&mut rx, "both items at the job actor").await);
    }
    seen.sort();
    assert_eq!(
        seen,
        vec![
            (0, "a".into(), "billing".into()),
            (1, "b".into(), "billing".into())
        ]
    );
    tracing::info!("--- the job actor dies; the host starts a new one under the same name");
    worker.stop_and_wait(None, None).await.unwrap();
    while rx.try_recv().is_ok() {}
    let (tx2, mut rx2) = mpsc::unbounded_channel();
    let (_worker2, _) = Actor::spawn(Some("billing-worker".into()), Worker, tx2)
        .await
        .unwrap();
    let first = recv(&mut rx2, "the next fire at the new actor").await;
    assert!(first.0 < 2);
    node.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_subscriber_sees_leadership_and_a_reshard_in_order() {
    let (_server, conn, _) = cluster::embedded("embed");
    let (tx, mut rx) = mpsc::unbounded_channel::<Delivered>();
    struct Sink;
    impl Actor for Sink {
        type Msg = Delivered;
        type State = mpsc::UnboundedSender<Delivered>;
        type Arguments = mpsc::UnboundedSender<Delivered>;
        async fn pre_start(
            &self,
            _: ActorRef<Delivered>,
            tx: Self::Arguments,
        ) -> Result<Self::State, ActorProcessingErr> {
            Ok(tx)
        }
        async fn handle(
            &self,
            _: ActorRef<Delivered>,
            m: Delivered,
            tx: &mut Self::State,
        ) -> Result<(), ActorProcessingErr> {
            let _ = tx.send(m);
            Ok(())
        }
    }
    let (sink, _) = Actor::spawn(None, Sink, tx).await.unwrap();
    let recorder = cluster::Recorder::default();
    let job = || {
        JobConfig::new("orders", 4)
            .cron("* * * * * ?")
            .time_zone("GMT")
    };
    let spec = |h| JobSpec {
        config: std::sync::Arc::new(job()),
        job_type: JobType::Named("orders".into()),
        handler: h,
    };
    // Subscribed before the node starts, so its first election is seen.
    let bus = EventBus::new();
    forward_events(bus.subscribe("host", 1024), sink.clone(), |d| d);
    let a: NodeHandle = builder(conn.clone(), 1)
        .event_bus(bus)
        .job_spec(spec(recorder.handler(Duration::ZERO)))
        .start()
        .await
        .unwrap();
    let b = builder(conn.clone(), 2)
        .job_spec(spec(recorder.handler(Duration::ZERO)))
        .start()
        .await
        .unwrap();
    let mut kinds = Vec::new();
    loop {
        let d = recv(&mut rx, "leadership then a reshard over both instances").await;
        assert_eq!(d.missed_before, 0, "nothing dropped");
        match &d.event {
            EngineEvent::LeadershipGained { .. } => kinds.push("leader"),
            EngineEvent::ShardingChanged { assignment, .. } => {
                kinds.push("sharded");
                let owners: std::collections::BTreeSet<_> =
                    assignment.iter().map(|(_, i)| i.clone()).collect();
                if owners.len() == 2 {
                    break;
                }
            }
            _ => {}
        }
    }
    assert_eq!(
        kinds.first(),
        Some(&"leader"),
        "leadership comes before any reshard: {kinds:?}"
    );
    a.shutdown().await;
    b.shutdown().await;
}

/// A job actor that keeps items without answering until it is killed.
struct Hoarder;

impl Actor for Hoarder {
    type Msg = WorkerMsg;
    type State = (
        mpsc::UnboundedSender<u32>,
        Vec<RpcReplyPort<Result<(), JobError>>>,
    );
    type Arguments = mpsc::UnboundedSender<u32>;

    async fn pre_start(
        &self,
        _: ActorRef<WorkerMsg>,
        tx: Self::Arguments,
    ) -> Result<Self::State, ActorProcessingErr> {
        Ok((tx, Vec::new()))
    }

    async fn handle(
        &self,
        _: ActorRef<WorkerMsg>,
        msg: WorkerMsg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        let WorkerMsg::RunItem(ctx, reply) = msg;
        let _ = state.0.send(ctx.sharding_item.0);
        state.1.push(reply);
        Ok(())
    }
}

#[tokio::test(start_paused = true)]
async fn killing_the_job_actor_fails_its_in_flight_items_and_the_restarted_actor_takes_the_next_fire(
) {
    let (_server, conn, _) = cluster::embedded("embed");
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (hoarder, _) = Actor::spawn(Some("slow-worker".into()), Hoarder, tx)
        .await
        .unwrap();
    let bus = EventBus::new();
    let mut events = bus.subscribe("test", 1024);
    let job = JobConfig::new("slow", 1)
        .cron("0/10 * * * * ?")
        .time_zone("GMT");
    let handler = Arc::new(ActorJob::new(
        "slow-worker",
        Duration::from_secs(60),
        WorkerMsg::RunItem,
    ));
    let spec = JobSpec {
        config: std::sync::Arc::new(job),
        job_type: JobType::Named("slow".into()),
        handler,
    };
    let node = builder(conn, 1)
        .event_bus(bus)
        .job_spec(spec)
        .start()
        .await
        .unwrap();
    recv(&mut rx, "the item at the hoarding actor").await;
    tracing::info!("--- the job actor is killed with the item in flight");
    hoarder.kill();
    let failure = loop {
        let d = tokio::time::timeout(WITHIN, events.events.recv())
            .await
            .expect("an item result")
            .unwrap();
        if let EngineEvent::ItemFinished { failure, .. } = d.event {
            break failure;
        }
    };
    let failure = failure.expect("the in-flight item failed");
    assert!(failure.contains("slow-worker"), "{failure}");
    tracing::info!("--- the host restarts its actor under the same name");
    let (tx2, mut rx2) = mpsc::unbounded_channel();
    let (_worker, _) = Actor::spawn(Some("slow-worker".into()), Worker, tx2)
        .await
        .unwrap();
    recv(&mut rx2, "the next fire at the restarted actor").await;
    let ok = loop {
        let d = tokio::time::timeout(WITHIN, events.events.recv())
            .await
            .expect("an item result")
            .unwrap();
        if let EngineEvent::ItemFinished { failure, .. } = d.event {
            break failure.is_none();
        }
    };
    assert!(ok, "the next fire succeeds");
    node.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn two_nodes_and_the_hosts_own_named_actors_share_one_process() {
    let (_server, conn, _) = cluster::embedded("embed");
    // Host actors with the plain names the engine's actors would have without scoping.
    let (tx, _rx) = mpsc::unbounded_channel();
    let (_t, _) = Actor::spawn(Some("trigger".into()), Worker, tx.clone())
        .await
        .unwrap();
    let (_l, _) = Actor::spawn(Some("leader".into()), Worker, tx)
        .await
        .unwrap();
    let rec = cluster::Recorder::default();
    let spec = || JobSpec {
        config: JobConfig::new("orders", 2)
            .cron("* * * * * ?")
            .time_zone("GMT")
            .into(),
        job_type: JobType::Named("orders".into()),
        handler: rec.handler(Duration::ZERO),
    };
    let a = builder(conn.clone(), 1)
        .job_spec(spec())
        .start()
        .await
        .unwrap();
    let b = builder(conn.clone(), 2)
        .job_spec(spec())
        .start()
        .await
        .unwrap();
    assert_ne!(a.actor_name("trigger"), b.actor_name("trigger"));
    let (one, two) = (instance(1), instance(2));
    rec.wait_until("both nodes run items", WITHIN, |log| {
        log.iter().any(|e| e.instance == one) && log.iter().any(|e| e.instance == two)
    })
    .await;
    a.shutdown().await;
    b.shutdown().await;
}
