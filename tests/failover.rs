//! Failover on the embedded registry, on paused time: three instances of a job of three 5-second
//! items firing every 10 seconds; one instance's session expires while its item runs.

use support::cluster;

use std::sync::Arc;
use std::time::Duration;

use cluster::{instance, start_node, Execution, Recorder};
use shardcron::config::JobConfig;
use shardcron::job::ExecutionSource;
use shardcron::node::NodeHandle;
use shardcron::registry::embedded::EmbeddedServer;
use shardcron::registry::{Connector, Registry};
use shardcron::{InstanceId, ShardItem};

const WITHIN: Duration = Duration::from_secs(120);
const WORK: Duration = Duration::from_secs(5);

fn orders(failover: bool) -> JobConfig {
    JobConfig::new("orders", 3)
        .cron("0/10 * * * * ?")
        .time_zone("GMT")
        .failover(failover)
}

/// The first cron instant (seconds) after `after` at which all three items ran normally, each on
/// a different instance.
fn spread_fire(log: &[Execution], after: i64) -> Option<i64> {
    let mut fires: Vec<i64> = log
        .iter()
        .filter(|e| e.source == ExecutionSource::Normal && e.at.timestamp() > after)
        .map(|e| e.at.timestamp())
        .collect();
    fires.dedup();
    fires.into_iter().find(|f| {
        let at_f: Vec<_> = log
            .iter()
            .filter(|e| e.source == ExecutionSource::Normal && e.at.timestamp() == *f)
            .collect();
        let items: std::collections::BTreeSet<_> = at_f.iter().map(|e| e.item).collect();
        let owners: std::collections::BTreeSet<_> = at_f.iter().map(|e| &e.instance).collect();
        items.len() == 3 && owners.len() == 3
    })
}

struct Cluster {
    server: EmbeddedServer,
    admin: Arc<dyn Registry>,
    rec: Recorder,
    nodes: Vec<NodeHandle>,
}

async fn three_instances(failover: bool) -> Cluster {
    let (server, conn, rec) = cluster::embedded("engine");
    let mut nodes = Vec::new();
    for n in [1, 2, 3] {
        let job = (orders(failover), rec.handler(WORK));
        nodes.push(start_node(conn.clone(), instance(n), vec![job]).await);
    }
    let admin = conn.connect().await.unwrap();
    Cluster {
        server,
        admin,
        rec,
        nodes,
    }
}

impl Cluster {
    /// Waits for a fire that runs one item on each instance, and returns it with its executions.
    async fn spread_fire(&self) -> (i64, Vec<Execution>) {
        let log = self
            .rec
            .wait_until("a fire running one item on each instance", WITHIN, |log| {
                spread_fire(log, 0).is_some()
            })
            .await;
        let fire = spread_fire(&log, 0).unwrap();
        let at_fire = log
            .into_iter()
            .filter(|e| e.source == ExecutionSource::Normal && e.at.timestamp() == fire)
            .collect();
        (fire, at_fire)
    }

    /// Expires the registry session of `id`, found as the owner of its ephemeral instance node.
    async fn expire(&self, id: &InstanceId) {
        let stat = self
            .admin
            .exists(&format!("/orders/instances/{id}"))
            .await
            .unwrap()
            .expect("the instance is registered");
        self.server.expire(stat.ephemeral_owner);
    }

    async fn shutdown(self) {
        for n in &self.nodes {
            n.shutdown().await;
        }
    }
}

fn failovers(log: &[Execution]) -> Vec<&Execution> {
    log.iter()
        .filter(|e| e.source == ExecutionSource::Failover)
        .collect()
}

#[tokio::test(start_paused = true)]
async fn the_item_of_an_instance_that_crashes_mid_run_runs_again_once_on_a_survivor_before_the_next_fire(
) {
    let c = three_instances(true).await;
    let (fire, at_fire) = c.spread_fire().await;
    let crashed = at_fire[0].instance.clone();
    let item = at_fire[0].item;
    tracing::info!("--- the session of {crashed} expires while it runs item {item}");
    c.expire(&crashed).await;

    tracing::info!("--- a survivor runs the item as a failover, then the next fire runs all items");
    let log = c
        .rec
        .wait_until("the next complete fire after the crash", WITHIN, |log| {
            spread_fire(log, fire).is_some()
        })
        .await;
    let next = spread_fire(&log, fire).unwrap();
    let taken: Vec<_> = failovers(&log);
    assert_eq!(taken.len(), 1, "exactly one failover run: {taken:#?}");
    let taken = taken[0];
    assert_eq!(taken.item, item, "the crashed item is the one re-run");
    assert_ne!(taken.instance, crashed, "a survivor runs it");
    assert!(
        taken.at.timestamp() > fire && taken.at.timestamp() < next,
        "after the crash ({fire}) and before the next fire ({next}): {taken:?}"
    );

    tracing::info!("--- one more fire: nothing is failed over again");
    c.rec
        .wait_until("another complete fire", WITHIN, |log| {
            spread_fire(log, next).is_some()
        })
        .await;
    assert_eq!(failovers(&c.rec.all()).len(), 1, "no second failover run");
    let marks = c
        .admin
        .children("/orders/leader/failover/items")
        .await
        .unwrap_or_default();
    assert!(marks.is_empty(), "no mark is left: {marks:?}");
    c.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn without_failover_the_item_of_a_crashed_instance_waits_for_the_next_fire() {
    let c = three_instances(false).await;
    let (fire, at_fire) = c.spread_fire().await;
    let crashed = at_fire[0].instance.clone();
    let item = at_fire[0].item;
    tracing::info!("--- the session of {crashed} expires while it runs item {item}");
    c.expire(&crashed).await;
    let log = c
        .rec
        .wait_until("two complete fires after the crash", WITHIN, |log| {
            spread_fire(log, fire).is_some_and(|next| spread_fire(log, next).is_some())
        })
        .await;
    assert!(
        failovers(&log).is_empty(),
        "nothing is re-run as a failover"
    );
    let next = spread_fire(&log, fire).unwrap();
    let early: Vec<_> = log
        .iter()
        .filter(|e| e.item == item && e.at.timestamp() > fire && e.at.timestamp() < next)
        .collect();
    assert!(
        early.is_empty(),
        "the item is not run before the next fire: {early:#?}"
    );
    c.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn when_the_taker_crashes_during_a_failover_run_the_item_fails_over_again() {
    let c = three_instances(true).await;
    let (fire, at_fire) = c.spread_fire().await;
    let crashed = at_fire[0].instance.clone();
    let item: ShardItem = at_fire[0].item;
    c.expire(&crashed).await;
    tracing::info!("--- the survivor that took item {item} over crashes during the failover run");
    let log = c
        .rec
        .wait_until("a failover run", WITHIN, |log| !failovers(log).is_empty())
        .await;
    let taker = failovers(&log)[0].instance.clone();
    c.expire(&taker).await;
    let log = c
        .rec
        .wait_until("a second failover run", WITHIN, |log| {
            failovers(log).len() >= 2
        })
        .await;
    let again = failovers(&log)[1];
    assert_eq!(again.item, item);
    assert_ne!(again.instance, taker, "another instance takes it over");
    assert!(again.at.timestamp() > fire);
    c.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn the_first_instance_back_after_a_cluster_outage_reruns_items_left_running_by_the_dead() {
    let (_server, conn, _) = cluster::embedded("engine");
    tracing::info!("--- the registry as a cluster left it: instance 9 was running item 1");
    let admin = conn.connect().await.unwrap();
    let dead = instance(9);
    admin.ensure_path("/orders/config").await.unwrap();
    let yaml = orders(true).to_yaml().unwrap();
    admin
        .set("/orders/config", yaml.as_bytes(), None)
        .await
        .unwrap();
    for i in 0..3 {
        admin
            .ensure_path(&format!("/orders/sharding/{i}/instance"))
            .await
            .unwrap();
        admin
            .set(
                &format!("/orders/sharding/{i}/instance"),
                dead.as_str().as_bytes(),
                None,
            )
            .await
            .unwrap();
    }
    admin
        .ensure_path("/orders/sharding/1/running")
        .await
        .unwrap();
    admin
        .set("/orders/sharding/1/running", dead.as_str().as_bytes(), None)
        .await
        .unwrap();
    tracing::info!("--- one instance starts");
    let rec = Recorder::default();
    let node = rec.start(&conn, 1, orders(true), WORK).await;
    let log = rec
        .wait_until("a failover run", WITHIN, |log| !failovers(log).is_empty())
        .await;
    let taken = failovers(&log);
    assert_eq!(taken.len(), 1);
    assert_eq!(
        (taken[0].item, &taken[0].instance),
        (ShardItem(1), &instance(1))
    );
    assert!(
        log.iter().all(|e| e.at >= taken[0].at),
        "the recovered item runs before the first fire: {log:#?}"
    );
    node.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn an_instance_restarted_under_the_same_id_runs_at_once_and_its_old_sessions_expiry_fails_nothing_over(
) {
    let mut c = three_instances(true).await;
    let (fire, at_fire) = c.spread_fire().await;
    let id = at_fire[0].instance.clone();
    let stat = c
        .admin
        .exists(&format!("/orders/instances/{id}"))
        .await
        .unwrap()
        .expect("the instance is registered");
    tracing::info!("--- {id} is killed mid-run; its session lives on the server");
    let at = c.nodes.iter().position(|n| n.instance_id() == &id).unwrap();
    let killed = c.nodes.remove(at);
    killed.actor().kill();
    drop(killed);
    c.server.disconnect(stat.ephemeral_owner);

    tracing::info!("--- it restarts at once under the same id and runs its items at the next fire");
    let conn: Arc<dyn Connector> = Arc::new(c.server.connector("engine"));
    let n: u32 = id
        .as_str()
        .rsplit("@-@")
        .next()
        .unwrap()
        .parse()
        .unwrap_or(0);
    let job = (orders(true), c.rec.handler(WORK));
    c.nodes.push(start_node(conn, instance(n), vec![job]).await);
    let log = c
        .rec
        .wait_until("the restarted instance runs a fire", WITHIN, |log| {
            log.iter()
                .any(|e| e.instance == id && e.at.timestamp() > fire)
        })
        .await;
    let restarted_fire = log
        .iter()
        .find(|e| e.instance == id && e.at.timestamp() > fire)
        .map(|e| e.at.timestamp())
        .unwrap();
    assert!(
        restarted_fire <= fire + 20,
        "it ran within two fires of its restart, not after its old session's expiry"
    );

    tracing::info!("--- the old session expires: its node was taken over, nothing is failed over");
    c.server.expire(stat.ephemeral_owner);
    let log = c
        .rec
        .wait_until("two complete fires after the expiry", WITHIN, |log| {
            spread_fire(log, restarted_fire + 10).is_some()
        })
        .await;
    assert!(
        failovers(&log).is_empty(),
        "no failover run: {:#?}",
        failovers(&log)
    );
    let mut pairs: Vec<_> = log.iter().map(|e| (e.at.timestamp(), e.item)).collect();
    let all = pairs.len();
    pairs.sort();
    pairs.dedup();
    assert_eq!(pairs.len(), all, "no (fire, item) ran twice");
    c.shutdown().await;
}
