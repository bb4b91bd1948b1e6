//! Scenario 7, balance across jobs: N one-item jobs with `NAMESPACE_BALANCE` on 4 instances joining
//! one after the other (on ZooKeeper); once every job is sharded and the counts hold still, the
//! items each instance owns across the namespace, min / max. AVG_ALLOCATION would put every one-item
//! job on the same instance: N / 0.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use shardcron::job::{FnJob, JobError, ShardingContext, SharedHandler};
use shardcron::node::NodeHandle;

use super::fleet::{self, Backend};
use super::report::{dur, Table};

const INSTANCES: u32 = 4;
const SETTLE_WITHIN: Duration = Duration::from_secs(300);

/// The items each instance owns across `jobs`, per the node's mirror; `None` while a job is not
/// sharded yet (no owner, or a resharding pending).
fn owners(node: &NodeHandle, jobs: &[String]) -> Option<BTreeMap<String, usize>> {
    let mirror = node.mirror();
    let mut per: BTreeMap<String, usize> = (1..=INSTANCES)
        .map(|n| (fleet::instance(n).to_string(), 0))
        .collect();
    for job in jobs {
        if mirror.exists(&format!("/{job}/leader/sharding/necessary")) {
            return None;
        }
        let owner = mirror.data(&format!("/{job}/sharding/0/instance"))?;
        *per.get_mut(std::str::from_utf8(&owner).ok()?)? += 1;
    }
    Some(per)
}

pub(crate) async fn run(addr: SocketAddr, jobs: usize, table: &mut Table) {
    let backend = Backend::Zk(addr);
    let ns = fleet::namespace("balance");
    let names: Vec<String> = (0..jobs).map(|n| format!("one-{n:04}")).collect();
    // A daily fire: the scenario measures sharding, not runs.
    let handler: SharedHandler =
        Arc::new(FnJob(|_: ShardingContext| async { Ok::<(), JobError>(()) }));
    let started = Instant::now();
    let mut nodes = Vec::new();
    for n in 1..=INSTANCES {
        let specs = names
            .iter()
            .map(|name| {
                let config = fleet::job(name, 1, "0 0 3 * * ?", false)
                    .sharding_strategy("NAMESPACE_BALANCE")
                    .prop("shardcron.only", "true");
                (config, handler.clone())
            })
            .collect();
        let conn = backend.connector(&ns, Duration::from_secs(10));
        let node = fleet::start_node(conn.connector.clone(), fleet::instance(n), specs).await;
        assert!(
            fleet::wait_registered(&node, &names, SETTLE_WITHIN).await,
            "instance {n} registered every job"
        );
        nodes.push(node);
    }
    // Settled: every job sharded, and the counts the same over three looks 200 ms apart.
    let deadline = Instant::now() + SETTLE_WITHIN;
    let mut last = None;
    let mut same = 0;
    let per = loop {
        let now = owners(&nodes[0], &names);
        match (&now, &last) {
            (Some(counts), Some(before)) if counts == before => {
                same += 1;
                if same == 3 {
                    break counts.clone();
                }
            }
            _ => same = 0,
        }
        last = now;
        assert!(
            Instant::now() < deadline,
            "the jobs settled within {SETTLE_WITHIN:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let settled = started.elapsed();
    let (min, max) = (
        per.values().copied().min().unwrap_or(0),
        per.values().copied().max().unwrap_or(0),
    );
    let scenario = format!("7 balance, ZooKeeper, {jobs} x 1 item, NAMESPACE_BALANCE");
    table.check(
        &scenario,
        &format!("items per instance over {INSTANCES} instances, min / max"),
        format!("{min} / {max}"),
        "max - min <= 1",
        max - min <= 1,
    );
    table.info(
        &scenario,
        "  4 instances joined and every job settled after",
        dur(settled),
    );
    for node in &nodes {
        node.shutdown().await;
    }
}
