//! A job's item concurrency (`jobExecutorThreadPoolSizeProviderType`) and the fencing token its
//! items receive, on the embedded registry with paused time.

use support::cluster;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use cluster::{instance, start_node};
use shardcron::config::JobConfig;
use shardcron::job::{FencingToken, FnJob, JobError, ShardingContext};
use shardcron::{InstanceId, ShardItem};
use tokio::sync::{watch, Notify};

const WITHIN: Duration = Duration::from_secs(120);

/// The writes a store accepted, or refused: who wrote, with which token.
type Writes = Vec<(InstanceId, FencingToken)>;

fn orders(items: i32, pool: &str) -> JobConfig {
    JobConfig::new("orders", items)
        .cron("0 * * * * ?")
        .time_zone("GMT")
        .thread_pool_size_provider(pool)
}

/// The first write `log` holds, once it holds one.
async fn first_write(log: &watch::Sender<Writes>, what: &str) -> (InstanceId, FencingToken) {
    let mut rx = log.subscribe();
    support::wait::wait_until_changed(&mut rx, |l| l.first().cloned(), what, WITHIN).await
}

#[tokio::test(start_paused = true)]
async fn a_single_thread_job_runs_its_items_one_after_the_other_in_item_order() {
    let (_server, conn, rec) = cluster::embedded("engine");
    let job = (
        orders(3, "SINGLE_THREAD"),
        rec.handler(Duration::from_secs(2)),
    );
    let node = start_node(conn, instance(1), vec![job]).await;
    let log = rec
        .wait_until("the three items of one fire", WITHIN, |log| log.len() >= 3)
        .await;
    let items: Vec<ShardItem> = log[..3].iter().map(|e| e.item).collect();
    assert_eq!(items, [ShardItem(0), ShardItem(1), ShardItem(2)]);
    let starts: Vec<i64> = log[..3].iter().map(|e| e.at.timestamp()).collect();
    assert_eq!(
        [starts[1] - starts[0], starts[2] - starts[1]],
        [2, 2],
        "each item starts when the one before it ends: {starts:?}"
    );
    node.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn raising_the_pool_size_live_starts_the_waiting_items_at_once() {
    let (_server, conn, rec) = cluster::embedded("engine");
    let job = (orders(3, "1"), rec.handler(Duration::from_secs(40)));
    let node = start_node(conn.clone(), instance(1), vec![job]).await;
    let first = rec
        .wait_until("the first item running", WITHIN, |log| !log.is_empty())
        .await;
    let started = first[0].at;
    tracing::info!("--- an operator raises the limit from 1 to 3 while item 0 runs");
    let admin = conn.connect().await.unwrap();
    let yaml = orders(3, "3").to_yaml().unwrap();
    admin
        .set("/orders/config", yaml.as_bytes(), None)
        .await
        .unwrap();
    let log = rec
        .wait_until("the waiting items started", WITHIN, |log| log.len() >= 3)
        .await;
    for e in &log[1..3] {
        assert!(
            (e.at - started).num_seconds() < 40,
            "item {} started at {} while item 0 (started {started}) still ran",
            e.item,
            e.at
        );
    }
    assert_eq!(
        log[1].item,
        ShardItem(1),
        "the waiting items keep their order"
    );
    node.shutdown().await;
}

/// A store that keeps the largest fencing token it accepted and refuses older ones.
#[derive(Debug, Default)]
struct FencedStore {
    fence: FencingToken,
    value: Option<InstanceId>,
}

impl FencedStore {
    /// `UPDATE ... SET value = $1, fence = $token WHERE fence <= $token`.
    fn write(&mut self, token: FencingToken, value: InstanceId) -> Result<(), FencingToken> {
        if token < self.fence {
            return Err(self.fence);
        }
        self.fence = token;
        self.value = Some(value);
        Ok(())
    }
}

#[tokio::test(start_paused = true)]
async fn a_paused_old_owners_late_write_is_refused_by_the_fencing_token() {
    let (server, conn, _) = cluster::embedded("engine");
    let store = Arc::new(Mutex::new(FencedStore::default()));
    let refused = watch::channel(Writes::new()).0;
    let accepted = watch::channel(Writes::new()).0;
    let resume = Arc::new(Notify::new());
    let paused_once = Arc::new(Mutex::new(false));
    let stalled = watch::channel(None::<InstanceId>).0;
    let handler = {
        let (store, refused, accepted) = (store.clone(), refused.clone(), accepted.clone());
        let (resume, paused_once, stalled) = (resume.clone(), paused_once.clone(), stalled.clone());
        Arc::new(FnJob(move |ctx: ShardingContext| {
            let (store, refused, accepted) = (store.clone(), refused.clone(), accepted.clone());
            let (resume, paused_once) = (resume.clone(), paused_once.clone());
            let stalled = stalled.clone();
            async move {
                let first = !std::mem::replace(&mut *paused_once.lock().unwrap(), true);
                if first {
                    // The first owner stalls (a GC pause, SIGSTOP) and does not see the
                    // cancellation: it writes late, with its old token.
                    stalled.send_replace(Some(ctx.instance_id.clone()));
                    resume.notified().await;
                }
                let me = ctx.instance_id.clone();
                let result = store.lock().unwrap().write(ctx.fencing_token, me.clone());
                let log = if result.is_ok() { &accepted } else { &refused };
                log.send_modify(|l| l.push((me, ctx.fencing_token)));
                Ok::<(), JobError>(())
            }
        }))
    };
    let config = JobConfig::new("orders", 1)
        .cron("0/10 * * * * ?")
        .time_zone("GMT")
        .failover(true);
    let mut nodes = Vec::new();
    for n in [1, 2] {
        let job = (
            config.clone(),
            handler.clone() as shardcron::job::SharedHandler,
        );
        nodes.push(start_node(conn.clone(), instance(n), vec![job]).await);
    }
    let admin = conn.connect().await.unwrap();
    tracing::info!("--- the first owner runs item 0 and stalls");
    let mut rx = stalled.subscribe();
    let owner = tokio::time::timeout(WITHIN, rx.wait_for(Option::is_some))
        .await
        .expect("a first run within the time")
        .unwrap()
        .clone()
        .unwrap();
    tracing::info!("--- {owner}'s session expires; item 0 is taken over");
    let stat = admin
        .exists(&format!("/orders/instances/{owner}"))
        .await
        .unwrap()
        .expect("the owner is registered");
    server.expire(stat.ephemeral_owner);
    // The taker may be the other instance or the owner itself, back on a new session while its
    // old run stalls (it is idle there): either way a run after the expiry, with a newer token.
    let new = first_write(&accepted, "the new owner wrote").await;
    tracing::info!("--- the stalled old owner resumes and writes with its old token");
    resume.notify_one();
    let late = first_write(&refused, "the late write was refused").await;
    assert_eq!(late.0, owner, "the refused write is the old owner's");
    assert!(late.1 < new.1, "old token {} < new token {}", late.1, new.1);
    assert_eq!(store.lock().unwrap().value.as_ref(), Some(&new.0));
    for n in &nodes {
        n.shutdown().await;
    }
}
