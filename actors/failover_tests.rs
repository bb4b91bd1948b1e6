//! The FailoverActor on the embedded registry with fake executors: one job's executor that never
//! says whether it is idle delays no other job's claim.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{TimeZone, Utc};
use ractor::{Actor, ActorRef, RpcReplyPort};
use tokio::sync::watch;

use super::*;
use crate::actors::context::JobConfigs;
use crate::config::{JobConfig, JobKind, ValidationContext};
use crate::decide::lifecycle::Input;
use crate::registry::embedded::EmbeddedServer;
use crate::registry::{Connector, Registry};

/// An executor that answers `IsIdle` with `idle`, or (`None`) keeps the question open for ever,
/// and reports the items claimed for it.
#[derive(Debug)]
struct FakeExecutor;

#[derive(Debug)]
struct FakeState {
    idle: Option<bool>,
    /// Questions kept open, shared with the test.
    open: watch::Sender<Vec<RpcReplyPort<bool>>>,
    claimed: watch::Sender<Vec<ShardItem>>,
}

sync_actor!(FakeExecutor: ExecutorMsg, FakeState, FakeState);

impl FakeState {
    fn started(_myself: &ActorRef<ExecutorMsg>, state: FakeState) -> Self {
        state
    }

    fn handle(&mut self, _myself: &ActorRef<ExecutorMsg>, msg: ExecutorMsg) {
        match (msg, self.idle) {
            (ExecutorMsg::IsIdle(reply), Some(idle)) => drop(reply.send(idle)),
            (ExecutorMsg::IsIdle(reply), None) => self.open.send_modify(|o| o.push(reply)),
            (ExecutorMsg::Step(Input::FailoverClaimed(items)), _) => {
                self.claimed.send_modify(|c| c.extend(items))
            }
            _ => {}
        }
    }
}

type Watches = (
    watch::Receiver<Vec<RpcReplyPort<bool>>>,
    watch::Receiver<Vec<ShardItem>>,
);

async fn fake(idle: Option<bool>) -> (ActorRef<ExecutorMsg>, Watches) {
    let (open, open_rx) = watch::channel(Vec::new());
    let (claimed, claimed_rx) = watch::channel(Vec::new());
    let state = FakeState {
        idle,
        open,
        claimed,
    };
    let (actor, _) = Actor::spawn(None, FakeExecutor, state)
        .await
        .expect("the fake executor starts");
    (actor, (open_rx, claimed_rx))
}

fn job(name: &str) -> JobName {
    JobName::new(name).expect("a job name")
}

/// Writes a job of one item owned by a vanished instance, marked for failover, with `me`
/// registered; returns its failover config.
async fn marked_job(
    registry: &dyn Registry,
    name: &str,
    me: &InstanceId,
) -> Arc<crate::config::ValidatedConfig> {
    let j = job(name);
    let gone = InstanceId::parse("10.0.0.9@-@9").expect("an instance id");
    let nodes = [
        (JobNode::Instance(me.clone()), String::new()),
        (JobNode::ShardingInstance(ShardItem(0)), gone.to_string()),
        (JobNode::LeaderFailoverItem(ShardItem(0)), String::new()),
    ];
    for (node, data) in nodes {
        let path = node.to_path(&j);
        registry
            .ensure_path(&path)
            .await
            .expect("a node is written");
        registry
            .set(&path, data.as_bytes(), None)
            .await
            .expect("its data");
    }
    let ctx = ValidationContext {
        strategies: &[],
        error_handlers: &[],
        kind: JobKind::Simple,
    };
    let config = JobConfig::test(name).items(1).failover(true);
    Arc::new(config.validate(&ctx).expect("a valid config"))
}

#[tokio::test(start_paused = true)]
async fn one_job_s_stuck_executor_does_not_delay_another_job_s_failover_claim() {
    tracing::info!("--- two jobs with a mark each; the stuck job's executor never answers");
    let server = EmbeddedServer::new();
    let connector: Arc<dyn Connector> = Arc::new(server.connector("failover-lanes"));
    let registry = connector.connect().await.expect("a session");
    let me = InstanceId::parse("10.0.0.1@-@1").expect("an instance id");
    let configs = Arc::new(JobConfigs::default());
    for name in ["stuck", "free"] {
        configs.insert(job(name), marked_job(&*registry, name, &me).await);
    }
    let node = Arc::new(crate::actors::context::NodeContext {
        instance_id: me.clone(),
        connector,
        clock: Arc::new(crate::clock::TokioClock::starting_at(
            Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap(),
        )),
        strategies: Arc::new(crate::sharding::StrategyRegistry::new()),
        handlers: Arc::new(crate::job::handlers::HandlerRegistry::new()),
        mirror: Mirror::new(),
        jobs: Mutex::new(BTreeMap::new()),
        options: Default::default(),
        events: crate::events::EventBus::new(),
        name_prefix: "failover-lanes".to_owned(),
        clock_skew_ms: Default::default(),
        adoption: None,
    });
    let (_feed, roots) = node
        .mirror
        .feed_roots(registry.clone(), vec!["/".into()], Default::default())
        .await
        .expect("the mirror is fed");
    let ctx = SessionCtx {
        node,
        registry: registry.clone(),
        configs,
        writes: crate::actors::writes::WriteBatcher::start(registry.clone()),
        registering: Arc::new(tokio::sync::Semaphore::new(1)),
        roots,
    };
    let (stuck, (open, _)) = fake(None).await;
    let (free, (_, mut claimed)) = fake(Some(true)).await;
    let executors = HashMap::from([(job("stuck"), stuck), (job("free"), free)]);
    let (failover, _) = Actor::spawn(None, FailoverActor, FailoverArgs { ctx, executors })
        .await
        .expect("the failover actor starts");

    tracing::info!("--- both jobs' runs end: the stuck job first");
    failover
        .send_message(FailoverMsg::RunEnded(job("stuck")))
        .expect("sent");
    failover
        .send_message(FailoverMsg::RunEnded(job("free")))
        .expect("sent");
    let got = tokio::time::timeout(Duration::from_secs(60), claimed.wait_for(|c| !c.is_empty()))
        .await
        .expect("the free job's mark is claimed")
        .expect("the fake executor lives")
        .clone();
    assert_eq!(got, vec![ShardItem(0)]);
    let open = open.borrow();
    assert_eq!(open.len(), 1, "the stuck executor was asked");
    assert!(
        !open[0].is_closed(),
        "the free job was claimed while the stuck job's question was still open, not after it \
         timed out"
    );
}
