//! The failover marks' guard on a real ZooKeeper (the soak's overlap after a whole-ensemble
//! pause). An instance keeps its id across sessions: after an expiry it registers again and its
//! first fire writes a `running` that names it again. A survivor whose mirror has not shown the
//! return yet decides to mark the old run; that mark must apply nothing on the registry as it then
//! is, or it deletes the new run's `running` and a taker runs the item beside it. The same mark
//! applies once the instance is gone for good, and so does the leader's clean-up of a dead
//! owner's `running`. The guard's create and delete of `instances/{x}` reach no ElasticJob
//! listener: its Curator cache (`tests/java/CuratorCacheWatch.java`) hears nothing of them.

#[macro_use]
extern crate support;

use support::namespace;
use support::zk;
use support::Peer;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use support::java;
use support::peer::which;

use shardcron::decide::{failover, reconcile};
use shardcron::registry::zookeeper::ZkConnector;
use shardcron::registry::{Connector, CreateMode, Registry};
use shardcron::view::{ItemView, JobView};
use shardcron::{InstanceId, JobName, ShardItem};

const RUNNING: &str = "/job/sharding/0/running";
const MARK: &str = "/job/leader/failover/items/0";

async fn session(ns: &str) -> Arc<dyn Registry> {
    ZkConnector::new(zk::backend().config(ns))
        .connect()
        .await
        .expect("a session on the test server")
}

/// What a survivor saw when `x` vanished while running item 0: `x` absent, its `running` there.
fn stale_view(survivor: &InstanceId, x: &InstanceId) -> JobView {
    let mut view = JobView {
        job: Some(JobName::new("job").unwrap()),
        ..JobView::default()
    };
    view.instances.insert(survivor.clone());
    view.items.insert(
        ShardItem(0),
        ItemView {
            owner: Some(x.clone()),
            has_owner_node: true,
            running: Some(x.to_string()),
            ..ItemView::default()
        },
    );
    view
}

/// The job's parents, the survivor's instance node, and `x` back on a new session: its
/// instance node and the `running` of the run its new session began.
async fn x_is_back(survivor: &dyn Registry, x_session: &dyn Registry, a: &str, x: &str) {
    for path in [
        "/job/instances",
        "/job/sharding/0",
        "/job/leader/failover/items",
    ] {
        survivor.ensure_path(path).await.unwrap();
    }
    let me = format!("/job/instances/{a}");
    survivor
        .create(&me, b"", CreateMode::Ephemeral)
        .await
        .unwrap();
    let instance = format!("/job/instances/{x}");
    x_session
        .create(&instance, b"", CreateMode::Ephemeral)
        .await
        .unwrap();
    x_session
        .create(RUNNING, x.as_bytes(), CreateMode::Persistent)
        .await
        .unwrap();
}

#[tokio::test]
async fn a_mark_decided_before_the_instance_came_back_leaves_its_new_runs_running_alone() {
    require!(Peer::ZooKeeper);
    let ns = namespace("zk", "failover-guard");
    let (survivor, x_session) = (session(&ns).await, session(&ns).await);
    let (a, x) = (
        InstanceId::parse("10.0.0.1@-@1").unwrap(),
        InstanceId::parse("10.0.0.9@-@1").unwrap(),
    );
    x_is_back(&*survivor, &*x_session, a.as_str(), x.as_str()).await;
    let view = stale_view(&a, &x);
    let job = JobName::new("job").unwrap();

    let marks = failover::marks_for_crashed(&view, &job, &x);
    assert_eq!(marks.len(), 1, "the stale view asks for one mark");
    let refused = survivor.multi(&marks[0]).await;
    assert!(
        refused.as_ref().is_err_and(|e| e.is_node_exists()),
        "the mark must fail on x's instance node: {refused:?}"
    );
    let orphans = failover::marks_for_orphans(&view, &job);
    assert!(survivor.multi(&orphans[0]).await.is_err());
    let mut marked = view.clone();
    marked.failover_marks.insert(ShardItem(0));
    for ops in reconcile::stale_records(&marked, &job, true) {
        assert!(survivor.multi(&ops).await.is_err(), "{ops:?}");
    }
    assert_eq!(
        survivor.get(RUNNING).await.unwrap().0,
        x.as_str().as_bytes()
    );
    assert!(survivor.exists(MARK).await.unwrap().is_none());

    // x's new session ends too: now the same mark applies, as it did before the guard.
    x_session.close().await;
    let instance = format!("/job/instances/{x}");
    support::wait::wait_until(
        async || survivor.exists(&instance).await.unwrap().is_none(),
        "x's instance node to go with its closed session",
        Duration::from_secs(10),
    )
    .await;
    survivor.multi(&marks[0]).await.expect("the mark applies");
    assert!(survivor.exists(RUNNING).await.unwrap().is_none());
    assert!(survivor.exists(MARK).await.unwrap().is_some());
    let gone = format!("/job/instances/{x}");
    assert!(
        survivor.exists(&gone).await.unwrap().is_none(),
        "the guard leaves no instance node behind"
    );
}

/// ElasticJob's cache of a subtree (`tests/java/CuratorCacheWatch.java`, compiled against the
/// peer's class path) as a process, asked line by line what it heard.
struct CuratorCache {
    child: Child,
    stdin: ChildStdin,
    out: BufReader<ChildStdout>,
}

impl CuratorCache {
    /// Starts the cache on `path` of the test server; returns once it holds the subtree.
    fn start(peer: &Path, dir: &Path, path: &str) -> Self {
        let classpath = Command::new(peer.join("classpath")).output().unwrap();
        let classpath = String::from_utf8(classpath.stdout).unwrap();
        let classpath = java::compile("tests/java/CuratorCacheWatch.java", classpath.trim(), dir);
        let mut child = Command::new(which("java").expect("Peer::Quartz found java"))
            .args(["-cp", &classpath, "CuratorCacheWatch"])
            .arg(zk::server().connect_string())
            .arg(path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        assert_eq!(line.trim(), "ready", "the cache started");
        Self { child, stdin, out }
    }

    /// Asks for what the cache heard since the last report, until `until` is among it; returns
    /// everything heard meanwhile.
    fn heard_until(&mut self, until: &str) -> Vec<String> {
        let mut heard = Vec::new();
        support::wait::wait_until_blocking(
            || {
                writeln!(self.stdin, "report").unwrap();
                let mut line = String::new();
                self.out.read_line(&mut line).unwrap();
                let events = line.trim().strip_prefix("events:").unwrap_or("").trim();
                let events = events.split(", ").filter(|e| !e.is_empty());
                heard.extend(events.map(str::to_owned));
                heard.iter().any(|e| e == until)
            },
            &format!("ElasticJob's cache to hear {until}"),
            Duration::from_secs(30),
        );
        heard
    }

    /// Ends the process (its stdin closed) and waits for it.
    fn stop(mut self) {
        drop(self.stdin);
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn elasticjobs_cache_hears_nothing_of_the_guards_create_and_delete_of_an_instance_node() {
    require!(Peer::ZooKeeper);
    let peer = require!(Peer::ElasticJob);
    require!(Peer::Quartz);
    let ns = namespace("zk", "guard-java");
    let survivor = session(&ns).await;
    survivor.ensure_path("/job/instances").await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut cache = CuratorCache::start(&peer, dir.path(), &format!("/{ns}/job"));

    let job = JobName::new("job").unwrap();
    let x = InstanceId::parse("10.0.0.9@-@1").unwrap();
    for _ in 0..20 {
        survivor
            .multi(&failover::gone_guard(&job, &x))
            .await
            .unwrap();
    }
    // Later writes, heard in order: once the cache reports them, it has handled the pairs.
    survivor
        .create("/job/instances/y", b"", CreateMode::Persistent)
        .await
        .unwrap();
    let y = format!("/{ns}/job/instances/y");
    let heard = cache.heard_until(&format!("NODE_CREATED {y}"));
    survivor.delete("/job/instances/y", None).await.unwrap();
    let after = cache.heard_until(&format!("NODE_DELETED {y}"));
    cache.stop();
    let x_path = format!("/job/instances/{x}");
    assert!(
        heard.iter().chain(&after).all(|e| !e.ends_with(&x_path)),
        "20 guard pairs, then y created and deleted; the cache heard: {heard:?} {after:?}"
    );
}
