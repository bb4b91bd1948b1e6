//! A cluster of nodes for engine tests: N instances on one registry, running jobs whose handler
//! records every item execution, and waits on that record (never on sleeps).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use shardcron::clock::{SharedClock, TokioClock};
use shardcron::config::JobConfig;
use shardcron::job::{
    ExecutionSource, FnJob, JobError, ReshardingFlag, ShardingContext, SharedHandler,
};
use shardcron::node::{NodeBuilder, NodeHandle};
use shardcron::registry::Connector;
use shardcron::{InstanceId, JobName, JobSpec, JobType, NodeOptions, ShardItem};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::wait::wait_until_changed;

/// One item execution as the job saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Execution {
    pub job: String,
    pub item: ShardItem,
    pub instance: InstanceId,
    pub source: ExecutionSource,
    pub at: DateTime<Utc>,
    pub total: u32,
    pub parameter: String,
}

/// One item run from its start to the end of its handler (`None` while it runs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    pub job: String,
    pub item: ShardItem,
    pub instance: InstanceId,
    pub start: DateTime<Utc>,
    pub end: Option<DateTime<Utc>>,
}

impl Span {
    /// Whether the two runs were under way at one instant (a run still going has no end).
    fn overlaps(&self, other: &Span) -> bool {
        let before =
            |start: DateTime<Utc>, end: Option<DateTime<Utc>>| end.is_none_or(|e| start < e);
        before(self.start, other.end) && before(other.start, self.end)
    }
}

/// Every execution of every job of a cluster, with a way to wait for a condition on them.
#[derive(Debug, Clone)]
pub struct Recorder {
    log: Arc<Mutex<Vec<Execution>>>,
    spans: Arc<Mutex<Vec<Span>>>,
    changed: watch::Sender<usize>,
    clock: SharedClock,
}

impl Default for Recorder {
    /// For paused-time tests: the clock follows tokio's from [`origin`].
    fn default() -> Self {
        Self::with_clock(Arc::new(TokioClock::starting_at(origin())))
    }
}

impl Recorder {
    /// For real-time tests across processes or a real ZooKeeper: the system clock.
    pub fn real_time() -> Self {
        Self::with_clock(Arc::new(shardcron::clock::SystemClock))
    }

    fn with_clock(clock: SharedClock) -> Self {
        Self {
            log: Default::default(),
            spans: Default::default(),
            changed: watch::channel(0).0,
            clock,
        }
    }

    /// The clock nodes of this cluster use.
    pub fn clock(&self) -> SharedClock {
        self.clock.clone()
    }

    pub fn record(&self, e: Execution) {
        let n = {
            let mut log = self.log.lock().unwrap();
            log.push(e);
            log.len()
        };
        self.changed.send_replace(n);
    }

    pub fn all(&self) -> Vec<Execution> {
        self.log.lock().unwrap().clone()
    }

    /// Every run with its end, in the order they started.
    pub fn spans(&self) -> Vec<Span> {
        self.spans.lock().unwrap().clone()
    }

    /// Pairs of runs of one item of one job, on two instances, that were under way at one
    /// instant: what no hand-over may produce.
    pub fn overlapping_runs(&self) -> Vec<(Span, Span)> {
        let spans = self.spans();
        let mut out = Vec::new();
        for (i, a) in spans.iter().enumerate() {
            for b in &spans[i + 1..] {
                if a.job == b.job && a.item == b.item && a.instance != b.instance && a.overlaps(b) {
                    out.push((a.clone(), b.clone()));
                }
            }
        }
        out
    }

    /// Waits until `pred` holds over the log, failing with `what` after `within` of tokio time.
    pub async fn wait_until(
        &self,
        what: &str,
        within: Duration,
        pred: impl Fn(&[Execution]) -> bool,
    ) -> Vec<Execution> {
        let mut rx = self.changed.subscribe();
        let log = &self.log;
        wait_until_changed(
            &mut rx,
            |_| {
                let log = log.lock().unwrap();
                if pred(&log) {
                    Ok(log.clone())
                } else {
                    let last: Vec<Execution> = log.iter().rev().take(20).cloned().collect();
                    Err(format!("{} executions, the last 20: {last:#?}", log.len()))
                }
            },
            what,
            within,
        )
        .await
    }

    /// Waits for `more` complete fires (every one of `items` items ran, see [`complete_fires`])
    /// beyond those recorded now.
    pub async fn wait_more_fires(
        &self,
        what: &str,
        items: u32,
        more: usize,
        within: Duration,
    ) -> Vec<Execution> {
        let before = complete_fires(&self.all(), items).len();
        self.wait_until(what, within, |log| {
            complete_fires(log, items).len() >= before + more
        })
        .await
    }

    /// Starts instance `n` on `conn` running `job` with [`Recorder::handler`]`(work)`.
    pub async fn start(
        &self,
        conn: &Arc<dyn Connector>,
        n: u32,
        job: JobConfig,
        work: Duration,
    ) -> NodeHandle {
        start_node(conn.clone(), instance(n), vec![(job, self.handler(work))]).await
    }

    /// A handler that records, runs `work` unless cancelled, and counts cancellations in
    /// `cancelled` (failing a cancelled item with "session lost").
    pub fn cancellable(
        &self,
        work: Duration,
        cancelled: Arc<watch::Sender<usize>>,
    ) -> SharedHandler {
        let inner = self.handler(Duration::ZERO);
        Arc::new(FnJob(move |ctx: ShardingContext| {
            let (inner, cancelled) = (inner.clone(), cancelled.clone());
            async move {
                let token = ctx.cancellation.clone();
                inner.run_item(ctx).await?;
                tokio::select! {
                    _ = tokio::time::sleep(work) => Ok(()),
                    _ = token.cancelled() => {
                        cancelled.send_modify(|n| *n += 1);
                        Err(JobError::Cancelled("session lost".into()))
                    }
                }
            }
        }))
    }

    /// Starts instance 1 on `conn` running the one-item job `long` (every 10 s) with
    /// [`Recorder::cancellable`]`(work)` and waits until its item starts; returns the node and the
    /// count of cancellations.
    pub async fn start_long_item(
        &self,
        conn: Arc<dyn Connector>,
        work: Duration,
        within: Duration,
    ) -> (NodeHandle, watch::Receiver<usize>) {
        let cancelled = Arc::new(watch::channel(0usize).0);
        let cancellations = cancelled.subscribe();
        let job = JobConfig::new("long", 1)
            .cron("0/10 * * * * ?")
            .time_zone("GMT");
        let handler = self.cancellable(work, cancelled);
        let node = start_node(conn, instance(1), vec![(job, handler)]).await;
        self.wait_until("the long item starts", within, |log| !log.is_empty())
            .await;
        (node, cancellations)
    }

    /// A handler recording each item, then taking `work` of (tokio) time; the end of each run is
    /// recorded too ([`Recorder::spans`]).
    pub fn handler(&self, work: Duration) -> SharedHandler {
        let rec = self.clone();
        Arc::new(FnJob(move |ctx: ShardingContext| {
            let rec = rec.clone();
            async move {
                let start = rec.clock.now();
                let span = {
                    let mut spans = rec.spans.lock().unwrap();
                    spans.push(Span {
                        job: ctx.job_name.to_string(),
                        item: ctx.sharding_item,
                        instance: ctx.instance_id.clone(),
                        start,
                        end: None,
                    });
                    spans.len() - 1
                };
                rec.record(Execution {
                    job: ctx.job_name.to_string(),
                    item: ctx.sharding_item,
                    instance: ctx.instance_id.clone(),
                    source: ctx.source,
                    at: start,
                    total: ctx.sharding_total_count,
                    parameter: ctx.sharding_parameter.clone(),
                });
                let outcome = if work.is_zero() {
                    Ok(())
                } else {
                    tokio::select! {
                        _ = tokio::time::sleep(work) => Ok(()),
                        _ = ctx.cancelled() => Err(JobError::Cancelled("item lost".into())),
                    }
                };
                rec.spans.lock().unwrap()[span].end = Some(rec.clock.now());
                outcome
            }
        }))
    }
}

/// The wall-clock origin of paused-time tests: a round second, so `0/1 * * * * ?` fires on whole
/// seconds after it.
pub fn origin() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-03-02T10:00:00Z")
        .unwrap()
        .to_utc()
}

pub fn instance(n: u32) -> InstanceId {
    InstanceId::parse(format!("10.0.0.{n}@-@{n}")).unwrap()
}

/// Starts one node running `jobs` (config, handler) on `connector`.
pub async fn start_node(
    connector: Arc<dyn Connector>,
    id: InstanceId,
    jobs: Vec<(JobConfig, SharedHandler)>,
) -> NodeHandle {
    start_node_with_clock(
        connector,
        id,
        jobs,
        Arc::new(TokioClock::starting_at(origin())),
    )
    .await
}

/// Starts one node with an explicit clock (the system clock for real-time tests).
pub async fn start_node_with_clock(
    connector: Arc<dyn Connector>,
    id: InstanceId,
    jobs: Vec<(JobConfig, SharedHandler)>,
    clock: SharedClock,
) -> NodeHandle {
    start_labelled_node(connector, id, jobs, clock, &[]).await
}

/// Starts one node carrying `labels` (an instance's labels, see `NodeBuilder::labels`).
pub async fn start_labelled_node(
    connector: Arc<dyn Connector>,
    id: InstanceId,
    jobs: Vec<(JobConfig, SharedHandler)>,
    clock: SharedClock,
    labels: &[&str],
) -> NodeHandle {
    let shape = NodeShape {
        labels,
        ..NodeShape::default()
    };
    start_node_with(connector, id, jobs, clock, shape).await
}

/// What a test node has beyond its jobs and clock.
#[derive(Debug, Clone, Copy)]
pub struct NodeShape<'a> {
    /// The instance's labels (`NodeBuilder::labels`).
    pub labels: &'a [&'a str],
    /// How long its running items get to end when it stops.
    pub shutdown_timeout: Duration,
}

impl Default for NodeShape<'_> {
    fn default() -> Self {
        Self {
            labels: &[],
            shutdown_timeout: Duration::from_secs(5),
        }
    }
}

/// Starts one node of `shape`.
pub async fn start_node_with(
    connector: Arc<dyn Connector>,
    id: InstanceId,
    jobs: Vec<(JobConfig, SharedHandler)>,
    clock: SharedClock,
    shape: NodeShape<'_>,
) -> NodeHandle {
    let mut b = NodeBuilder::new(connector)
        .instance_id(id)
        .clock(clock)
        .labels(shape.labels.iter().copied())
        .options(NodeOptions {
            shutdown_timeout: shape.shutdown_timeout,
            ..NodeOptions::default()
        });
    for (config, handler) in jobs {
        b = b.job_spec(JobSpec {
            config: config.into(),
            job_type: JobType::Named("recorded".into()),
            handler,
        });
    }
    b.start().await.expect("node starts")
}

/// Items each instance owns per the registry (through a node's mirror).
pub fn assignment(node: &NodeHandle, job: &str) -> std::collections::BTreeMap<String, Vec<u32>> {
    let mirror = node.mirror();
    let mut out: std::collections::BTreeMap<String, Vec<u32>> = Default::default();
    for item in mirror.children(&format!("/{job}/sharding")) {
        if let Some(owner) = mirror.data(&format!("/{job}/sharding/{item}/instance")) {
            out.entry(String::from_utf8_lossy(&owner).into_owned())
                .or_default()
                .push(item.parse().unwrap());
        }
    }
    for v in out.values_mut() {
        v.sort();
    }
    out
}

/// The context a handler gets for item `item` of `total` of job `job` in a normal fire on the
/// test instance `192.0.2.1@-@1`: for tests that run a handler directly.
pub fn item_context(job: &str, item: u32, total: u32) -> ShardingContext {
    ShardingContext {
        job_name: JobName::new(job).expect("a job name"),
        task_id: format!("{job}@-@{item}@-@NORMAL@-@192.0.2.1@-@1"),
        sharding_total_count: total,
        job_parameter: String::new(),
        sharding_item: ShardItem(item),
        sharding_parameter: String::new(),
        source: ExecutionSource::Normal,
        instance_id: InstanceId::parse("192.0.2.1@-@1").expect("an instance id"),
        cancellation: CancellationToken::new(),
        resharding: ReshardingFlag::default(),
        props: Default::default(),
        child_lease: None,
        stop_grace: Default::default(),
        output: None,
        scheduled_at: None,
        workflow_run: None,
        fencing_token: Default::default(),
    }
}

/// Logs to the test's output (`RUST_LOG=shardcron=debug` for more).
pub fn init_tracing() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("shardcron=info,warn")),
        )
        .with_test_writer()
        .try_init();
}

/// A job of `items` items firing every second (UTC).
pub fn every_second(name: &str, items: i32) -> JobConfig {
    JobConfig::new(name, items)
        .cron("* * * * * ?")
        .time_zone("GMT")
}

/// Fires (cron instants, as seconds) at which every item in `0..items` ran exactly once.
pub fn complete_fires(log: &[Execution], items: u32) -> Vec<i64> {
    let mut by_fire: BTreeMap<i64, Vec<u32>> = BTreeMap::new();
    for e in log.iter().filter(|e| e.source == ExecutionSource::Normal) {
        by_fire.entry(e.at.timestamp()).or_default().push(e.item.0);
    }
    by_fire
        .into_iter()
        .filter(|(_, v)| {
            let mut v = v.clone();
            v.sort();
            v == (0..items).collect::<Vec<_>>()
        })
        .map(|(k, _)| k)
        .collect()
}

/// An embedded registry for one test: its server, a connector on `namespace`, and a recorder on
/// paused-time clocks.
pub fn embedded(
    namespace: &str,
) -> (
    shardcron::registry::embedded::EmbeddedServer,
    Arc<dyn Connector>,
    Recorder,
) {
    init_tracing();
    let server = shardcron::registry::embedded::EmbeddedServer::new();
    let conn: Arc<dyn Connector> = Arc::new(server.connector(namespace));
    (server, conn, Recorder::default())
}

/// Starts one node per instance number, each running `job` with a handler recording into `rec`
/// that takes `work`.
pub async fn start_nodes(
    conn: &Arc<dyn Connector>,
    instances: &[u32],
    job: &JobConfig,
    rec: &Recorder,
    work: Duration,
) -> Vec<NodeHandle> {
    let mut nodes = Vec::new();
    for n in instances {
        nodes.push(rec.start(conn, *n, job.clone(), work).await);
    }
    nodes
}
