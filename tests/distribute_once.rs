//! Distribute-once listeners on the embedded registry with paused time: three instances share a
//! three-item job whose listener must hear each fire exactly once, before any item starts and
//! after every item ends; a silent instance bounds the wait to the listener's timeout.

use support::cluster;
use support::wait::wait_until_changed;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use cluster::{instance, origin};
use shardcron::clock::TokioClock;
use shardcron::config::JobConfig;
use shardcron::job::handlers::{DistributeOnceListener, GuaranteeInfo, HandlerRegistry};
use shardcron::job::{FnJob, JobError, ShardingContext, SharedHandler};
use shardcron::node::{NodeBuilder, NodeHandle};
use shardcron::registry::embedded::EmbeddedServer;
use shardcron::registry::Connector;
use shardcron::ShardItem;
use tokio::sync::watch;

const WITHIN: Duration = Duration::from_secs(120);

/// What happened, in order: hook calls and item starts/ends, each with a sequence number.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seen {
    Before(Vec<ShardItem>),
    After(Vec<ShardItem>),
    Start(ShardItem),
    End(ShardItem),
}

#[derive(Debug, Clone)]
struct Journal {
    seq: Arc<AtomicU64>,
    log: watch::Sender<Vec<(u64, Seen)>>,
}

impl Journal {
    fn new() -> Self {
        Self {
            seq: Arc::new(AtomicU64::new(0)),
            log: watch::channel(Vec::new()).0,
        }
    }

    fn note(&self, seen: Seen) {
        let n = self.seq.fetch_add(1, Ordering::SeqCst);
        self.log.send_modify(|l| l.push((n, seen)));
    }

    async fn wait(&self, what: &str, pred: impl Fn(&[(u64, Seen)]) -> bool) -> Vec<(u64, Seen)> {
        let mut rx = self.log.subscribe();
        let check = |l: &Vec<(u64, Seen)>| {
            if pred(l) {
                Ok(l.clone())
            } else {
                Err(l.clone())
            }
        };
        wait_until_changed(&mut rx, check, what, WITHIN).await
    }
}

#[derive(Debug)]
struct Once {
    journal: Journal,
    timeout: Duration,
}

impl DistributeOnceListener for Once {
    fn started_timeout(&self) -> Duration {
        self.timeout
    }
    fn completed_timeout(&self) -> Duration {
        self.timeout
    }
    fn before_job_executed_at_last_started(&self, info: &GuaranteeInfo) {
        self.journal.note(Seen::Before(info.missing.clone()));
    }
    fn after_job_executed_at_last_completed(&self, info: &GuaranteeInfo) {
        self.journal.note(Seen::After(info.missing.clone()));
    }
}

fn handler(journal: &Journal, work: Duration) -> SharedHandler {
    let journal = journal.clone();
    Arc::new(FnJob(move |ctx: ShardingContext| {
        let journal = journal.clone();
        async move {
            journal.note(Seen::Start(ctx.sharding_item));
            tokio::time::sleep(work).await;
            journal.note(Seen::End(ctx.sharding_item));
            Ok::<(), JobError>(())
        }
    }))
}

async fn node(
    conn: &Arc<dyn Connector>,
    n: u32,
    journal: &Journal,
    timeout: Duration,
) -> NodeHandle {
    let mut handlers = HandlerRegistry::new();
    let listener = Arc::new(Once {
        journal: journal.clone(),
        timeout,
    });
    handlers
        .register_distribute_once_listener("ONCE", listener)
        .unwrap();
    let config = JobConfig::new("orders", 3)
        .cron("0/10 * * * * ?")
        .time_zone("GMT")
        .listener("ONCE");
    NodeBuilder::new(conn.clone())
        .instance_id(instance(n))
        .clock(Arc::new(TokioClock::starting_at(origin())))
        .handlers(handlers)
        .job(
            config,
            "recorded",
            handler(journal, Duration::from_secs(1) * n),
        )
        .start()
        .await
        .unwrap()
}

/// The fires so far: each `Before`, the items started after it, up to its `After`.
fn count(log: &[(u64, Seen)], f: impl Fn(&Seen) -> bool) -> usize {
    log.iter().filter(|(_, s)| f(s)).count()
}

#[tokio::test(start_paused = true)]
async fn the_hooks_run_once_per_fire_across_three_instances_before_any_item_and_after_every_item() {
    let (_server, conn, _) = cluster::embedded("engine");
    let journal = Journal::new();
    let mut nodes = Vec::new();
    for n in [1, 2, 3] {
        nodes.push(node(&conn, n, &journal, Duration::from_secs(60)).await);
    }
    // Wait for two fires in which the three items ran on three instances.
    let log = journal
        .wait("two fires with their after hooks", |l| {
            count(l, |s| matches!(s, Seen::After(_))) >= 2
        })
        .await;
    // Fires before the three nodes had all joined may have run on fewer instances; each fire
    // still heard its hooks once. Check fire by fire: Before, its starts, its ends, After.
    let mut open = false;
    let mut started = 0;
    let mut ended = 0;
    for (n, seen) in &log {
        match seen {
            Seen::Before(missing) => {
                assert!(
                    !open,
                    "#{n}: a second before hook within one fire: {log:#?}"
                );
                assert!(missing.is_empty(), "no item was missing: {log:#?}");
                open = true;
                (started, ended) = (0, 0);
            }
            Seen::Start(_) => {
                assert!(
                    open,
                    "#{n}: an item started before the before hook: {log:#?}"
                );
                started += 1;
            }
            Seen::End(_) => ended += 1,
            Seen::After(missing) => {
                assert!(missing.is_empty(), "no item was missing: {log:#?}");
                assert_eq!(
                    (started, ended),
                    (3, 3),
                    "#{n}: after every item of the fire"
                );
                open = false;
            }
        }
    }
    for n in &nodes {
        n.shutdown().await;
    }
}

#[tokio::test(start_paused = true)]
async fn an_instance_that_never_fires_bounds_the_wait_to_the_timeout_and_the_hook_names_its_item() {
    cluster::init_tracing();
    let server = EmbeddedServer::new();
    let conn: Arc<dyn Connector> = Arc::new(
        server
            .connector("engine")
            .with_session_timeout(Duration::from_secs(60)),
    );
    let journal = Journal::new();
    let a = node(&conn, 1, &journal, Duration::from_secs(4)).await;
    let b = node(&conn, 2, &journal, Duration::from_secs(4)).await;
    journal
        .wait("a fire over both instances", |l| {
            count(l, |s| matches!(s, Seen::After(m) if m.is_empty())) >= 1
        })
        .await;
    tracing::info!("--- instance 2 is cut off: it stops firing, its node stays for 60 s");
    let silent: Vec<ShardItem> = (0..3u32)
        .filter(|i| {
            let data = b.mirror().data(&format!("/orders/sharding/{i}/instance"));
            data.is_some_and(|d| &*d == instance(2).as_str().as_bytes())
        })
        .map(ShardItem)
        .collect();
    assert!(!silent.is_empty(), "instance 2 owns items");
    let admin = conn.connect().await.unwrap();
    let stat = admin
        .exists(&format!("/orders/instances/{}", instance(2)))
        .await
        .unwrap()
        .expect("instance 2 is registered");
    server.disconnect(stat.ephemeral_owner);
    let before = journal.log.borrow().len();
    let log = journal
        .wait("a before hook naming the silent items", |l| {
            l[before..]
                .iter()
                .any(|(_, s)| matches!(s, Seen::Before(m) if *m == silent))
        })
        .await;
    assert!(
        log[before..]
            .iter()
            .any(|(_, s)| matches!(s, Seen::Start(_))),
        "instance 1's items ran after the bounded wait"
    );
    a.shutdown().await;
    b.shutdown().await;
}
