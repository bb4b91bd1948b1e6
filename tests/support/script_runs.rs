//! Script jobs whose runs are seen as a script sees them: a node on ZooKeeper runs a script that
//! appends its context JSON to a file (`scheduledAt`, `jobParameter`, the source and instance in
//! `taskId`), and the test reads the runs back. Used by the catch-up, trigger and backfill tests.

use super::wait;
use super::zk;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use shardcron::config::JobConfig;
use shardcron::job::script::ScriptJob;
use shardcron::node::{NodeBuilder, NodeHandle};
use shardcron::registry::zookeeper::ZkConnector;
use shardcron::{InstanceId, JobSpec, JobType};

/// A bound on every wait.
pub const WITHIN: Duration = Duration::from_secs(40);

/// One run of one item, from the context JSON its script received.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    pub item: u32,
    /// `NORMAL`, `CATCHUP`, `MANUAL`, ... (from the task id).
    pub source: String,
    /// The instance's address (`10.0.0.{n}`, from the task id).
    pub instance: String,
    pub scheduled_at: Option<DateTime<Utc>>,
    pub job_parameter: String,
}

/// A script job `name` appending its context JSON (its last argument) to `out`.
pub fn script(name: &str, items: i32, out: &Path) -> JobConfig {
    let line = format!("/bin/sh -c 'printf \"%s\\n\" \"$0\" >> {}'", out.display());
    JobConfig::new(name, items)
        .time_zone("GMT")
        .script_command_line(line)
}

/// Every run the script recorded so far.
pub fn runs(out: &Path) -> Vec<Run> {
    let text = std::fs::read_to_string(out).unwrap_or_default();
    text.lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .map(|ctx| {
            let task: Vec<&str> = ctx["taskId"].as_str().unwrap().split("@-@").collect();
            Run {
                item: ctx["shardingItem"].as_u64().unwrap() as u32,
                source: task[2].to_owned(),
                instance: task[3].to_owned(),
                scheduled_at: ctx["scheduledAt"]
                    .as_str()
                    .map(|t| DateTime::parse_from_rfc3339(t).unwrap().to_utc()),
                job_parameter: ctx["jobParameter"].as_str().unwrap().to_owned(),
            }
        })
        .collect()
}

/// Waits until the recorded runs satisfy `pred`.
pub async fn wait_runs(out: &Path, what: &str, pred: impl Fn(&[Run]) -> bool) -> Vec<Run> {
    let out = out.to_path_buf();
    wait::wait_until(
        async || {
            let all = runs(&out);
            pred(&all).then_some(all)
        },
        what,
        WITHIN,
    )
    .await
}

/// Instance `n` on namespace `ns` running `config` as a script job.
pub async fn node(ns: &str, n: u32, config: &JobConfig) -> NodeHandle {
    let connector = Arc::new(ZkConnector::new(zk::backend().config(ns)));
    let line = config.props["script.command.line"].clone();
    NodeBuilder::new(connector)
        .instance_id(InstanceId::parse(format!("10.0.0.{n}@-@{n}")).unwrap())
        .job_spec(JobSpec {
            config: Arc::new(config.clone()),
            job_type: JobType::Script,
            handler: Arc::new(ScriptJob::new(&line).expect("a command line")),
        })
        .start()
        .await
        .expect("the node starts")
}

/// Waits until the wall clock passes `at`.
pub async fn wait_past(at: DateTime<Utc>, what: &str) {
    let within = (at - Utc::now()).to_std().unwrap_or_default() + WITHIN;
    wait::wait_until(async || (Utc::now() > at).then_some(()), what, within).await;
}

pub fn of(runs: &[Run], source: &str, item: u32) -> Vec<Run> {
    runs.iter()
        .filter(|r| r.source == source && r.item == item)
        .cloned()
        .collect()
}
