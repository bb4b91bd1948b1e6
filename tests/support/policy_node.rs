//! A node on a real ZooKeeper (started by the test, on loopback) running one script job as real
//! processes, its execution history in a SQLite file: the run policies' process tests
//! (`tests/run_policies.rs`, `tests/overlap_policies.rs`).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use shardcron::config::JobConfig;
use shardcron::events::EventBus;
use shardcron::history::{ExecutionRecord, History, HistoryHandle, HistoryQuery};
use shardcron::job::handlers::HandlerRegistry;
use shardcron::job::script::ScriptJob;
use shardcron::node::{NodeBuilder, NodeHandle};
use shardcron::registry::zookeeper::ZkConnector;
use shardcron::{InstanceId, JobName, JobSpec, JobType};

use super::zk;

/// A bound on every wait that is not the one under test.
pub const WITHIN: Duration = Duration::from_secs(30);

/// A node on ZooKeeper namespace `ns` running the script job `config`, its events recorded in a
/// SQLite history.
pub async fn start(
    ns: &str,
    config: JobConfig,
    dir: &Path,
) -> (NodeHandle, History, HistoryHandle) {
    start_with(ns, config, dir, HandlerRegistry::new()).await
}

/// [`start`] with the error handlers and listeners of `handlers`.
pub async fn start_with(
    ns: &str,
    config: JobConfig,
    dir: &Path,
    handlers: HandlerRegistry,
) -> (NodeHandle, History, HistoryHandle) {
    let connector = Arc::new(ZkConnector::new(zk::backend().config(ns)));
    let line = config.props["script.command.line"].clone();
    let bus = EventBus::new();
    let history = History::sqlite(dir.join("history.db"))
        .await
        .expect("the SQLite history opens");
    let recording = history.attach(&bus);
    let node = NodeBuilder::new(connector)
        .instance_id(InstanceId::parse("10.0.0.1@-@1").unwrap())
        .event_bus(bus)
        .handlers(handlers)
        .job_spec(JobSpec {
            config: Arc::new(config),
            job_type: JobType::Script,
            handler: Arc::new(ScriptJob::new(&line).expect("a command line")),
        })
        .start()
        .await
        .expect("the node starts");
    (node, history, recording)
}

pub async fn records(history: &History, job: &str) -> Vec<ExecutionRecord> {
    let query = HistoryQuery::job(JobName::new(job).unwrap());
    history.query(&query).await.expect("the history answers")
}
