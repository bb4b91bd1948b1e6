//! A workflow declared at runtime, on a real ZooKeeper (started by the test, on loopback): a
//! config written through the ops API comes to name an upstream that no instance runs yet; when
//! the upstream appears, the downstream registers under it and runs after each of its fires.

#[macro_use]
extern crate support;

use support::script_runs::{node, of, script, wait_runs, WITHIN};
use support::{wait, zk, Peer};

use shardcron::config::JobConfig;
use shardcron::ops::Ops;
use shardcron::registry::zookeeper::ZkConnector;
use shardcron::registry::Connector;
use shardcron::JobName;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_written_at_runtime_that_names_an_upstream_not_there_yet_runs_after_it_once_it_appears(
) {
    require!(Peer::ZooKeeper);
    let (dir, ns) = support::prelude("workflow", "runtime");
    let (up_out, down_out) = (dir.path().join("up"), dir.path().join("down"));
    let report = JobName::new("report").unwrap();

    tracing::info!("--- a node runs the report, a job without a cron and without upstreams");
    let down_node = node(&ns, 1, &script("report", 2, &down_out)).await;
    let ops = Ops::new(
        (ZkConnector::new(zk::backend().config(&ns)).connect().await).expect("an operator session"),
    );
    let stored = wait::wait_until(
        async || ops.config_get(&report).await.ok(),
        "the report's config is stored",
        WITHIN,
    )
    .await;

    tracing::info!("--- its config comes to run after `import`, which no instance runs yet");
    let mut config = JobConfig::from_yaml(&stored.yaml).expect("the stored config reads");
    config = config.after(&["import"]);
    let yaml = config.to_yaml().expect("the config writes");
    ops.config_set(&report, &yaml)
        .await
        .expect("the config is written");

    tracing::info!("--- another node starts the upstream: the report runs after its fires");
    let upstream = script("import", 2, &up_out).cron("0/2 * * * * ?");
    let up_node = node(&ns, 2, &upstream).await;
    wait::wait_until(
        async || {
            let under = ops
                .registry()
                .children("/import/shardcron/downstream")
                .await;
            under.ok().filter(|u| u.iter().any(|d| d == "report"))
        },
        "the report registered under the upstream",
        WITHIN,
    )
    .await;
    let steps = wait_runs(&down_out, "two workflow runs of the report", |r| {
        (0..2).all(|i| of(r, "WORKFLOW", i).len() >= 2)
    })
    .await;
    up_node.shutdown().await;
    down_node.shutdown().await;
    for i in 0..2 {
        let at: Vec<_> = of(&steps, "WORKFLOW", i)
            .iter()
            .map(|r| r.scheduled_at)
            .collect();
        let mut once = at.clone();
        once.dedup();
        assert_eq!(at, once, "item {i}: one step per workflow run: {steps:#?}");
    }
}
