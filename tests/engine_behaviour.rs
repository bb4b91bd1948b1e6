//! Engine behaviours around a run on the embedded registry with paused time: clock-skew refusal,
//! job-type conflicts, queued triggers, listeners, and live failover settings.

use support::cluster;
use support::wait::wait_until_woken;

use std::sync::Arc;
use std::time::Duration;

use cluster::{complete_fires, every_second, instance, start_node};
use shardcron::config::JobConfig;
use shardcron::ShardItem;

const WITHIN: Duration = Duration::from_secs(60);

/// An error handler that records what it is given.
#[derive(Debug, Default)]
struct Collect(std::sync::Mutex<Vec<String>>);

impl shardcron::job::handlers::ErrorHandler for Collect {
    fn handle(
        &self,
        _job: &shardcron::JobName,
        _item: Option<ShardItem>,
        error: &shardcron::job::JobError,
    ) -> shardcron::job::handlers::ErrorAction {
        self.0.lock().unwrap().push(error.to_string());
        shardcron::job::handlers::ErrorAction::Continue
    }
}

#[tokio::test(start_paused = true)]
async fn a_clock_far_from_the_registrys_refuses_runs_through_the_error_handler() {
    let (_server, conn, rec) = cluster::embedded("engine");
    let collect = Arc::new(Collect::default());
    let mut handlers = shardcron::job::handlers::HandlerRegistry::new();
    handlers
        .register_error_handler("COLLECT", collect.clone())
        .unwrap();
    // The node's clock reads March 2026 (paused tokio time); the embedded registry stamps nodes with
    // the machine's real clock, months later: far past 60 s.
    let strict = every_second("strict", 1)
        .max_time_diff_seconds(60)
        .error_handler("COLLECT");
    let relaxed = every_second("relaxed", 1);
    let node = shardcron::node::NodeBuilder::new(conn.clone())
        .instance_id(instance(1))
        .clock(Arc::new(shardcron::clock::TokioClock::starting_at(
            cluster::origin(),
        )))
        .handlers(handlers)
        .job(strict, "recorded", rec.handler(Duration::ZERO))
        .job(relaxed, "recorded", rec.handler(Duration::ZERO))
        .start()
        .await
        .unwrap();
    rec.wait_until("five runs of the job without a limit", WITHIN, |log| {
        log.len() >= 5
    })
    .await;
    assert!(
        rec.all().iter().all(|e| e.job == "relaxed"),
        "the strict job never ran"
    );
    let refused = collect.0.lock().unwrap().clone();
    assert!(
        refused
            .iter()
            .any(|m| m.contains("refused") && m.contains("clock")),
        "refusals reach the error handler: {refused:?}"
    );
    node.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_job_root_of_another_running_type_is_refused_with_a_clear_error() {
    let (_server, conn, rec) = cluster::embedded("engine");
    let first = rec
        .start(&conn, 1, every_second("orders", 2), Duration::ZERO)
        .await;
    rec.wait_until("the first instance runs", WITHIN, |log| !log.is_empty())
        .await;
    let other = shardcron::JobSpec {
        config: std::sync::Arc::new(every_second("orders", 2)),
        job_type: shardcron::JobType::Named("something-else".into()),
        handler: rec.handler(Duration::ZERO),
    };
    let second = start_node(conn.clone(), instance(2), vec![]).await;
    let err = second.add_job(other).await.unwrap_err().to_string();
    assert!(
        err.contains("orders") && err.contains("recorded"),
        "names the job and the running type: {err}"
    );
    first.shutdown().await;
    second.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_trigger_that_arrives_during_a_run_is_queued_for_after_it() {
    let (_server, conn, rec) = cluster::embedded("engine");
    let job = JobConfig::new("batch", 1).one_off();
    let node = rec.start(&conn, 1, job, Duration::from_secs(5)).await;
    let name = shardcron::JobName::new("batch").unwrap();
    node.trigger(&name).await.unwrap();
    rec.wait_until("the first run starts", WITHIN, |log| log.len() == 1)
        .await;
    tracing::info!("--- a second trigger while the first run takes 5 s");
    node.trigger(&name).await.unwrap();
    let log = rec
        .wait_until("the queued run", WITHIN, |log| log.len() == 2)
        .await;
    assert_eq!(
        log[1].at - log[0].at,
        chrono::Duration::seconds(5),
        "runs right after the first"
    );
    node.shutdown().await;
}

#[derive(Debug, Default)]
struct CountingListener(std::sync::Mutex<Vec<String>>);

impl shardcron::job::handlers::JobListener for CountingListener {
    fn before_run(&self, info: &shardcron::job::handlers::RunInfo) {
        self.0
            .lock()
            .unwrap()
            .push(format!("before {:?}", info.items));
    }
    fn after_run(
        &self,
        info: &shardcron::job::handlers::RunInfo,
        outcome: &shardcron::job::handlers::RunOutcome,
    ) {
        self.0.lock().unwrap().push(format!(
            "after {:?} ok={}",
            info.items,
            outcome.is_success()
        ));
    }
}

#[tokio::test(start_paused = true)]
async fn listeners_named_in_the_config_hear_before_and_after_each_run() {
    let (_server, conn, rec) = cluster::embedded("engine");
    let listener = Arc::new(CountingListener::default());
    let mut handlers = shardcron::job::handlers::HandlerRegistry::new();
    handlers
        .register_listener("COUNT", listener.clone())
        .unwrap();
    let node = shardcron::node::NodeBuilder::new(conn)
        .instance_id(instance(1))
        .clock(Arc::new(shardcron::clock::TokioClock::starting_at(
            cluster::origin(),
        )))
        .handlers(handlers)
        .job(
            every_second("heard", 2).listener("COUNT"),
            "recorded",
            rec.handler(Duration::ZERO),
        )
        .start()
        .await
        .unwrap();
    rec.wait_until("two runs", WITHIN, |log| log.len() >= 4)
        .await;
    node.shutdown().await;
    let heard = listener.0.lock().unwrap().clone();
    assert!(heard.len() >= 4, "{heard:?}");
    for pair in heard.chunks(2) {
        assert!(
            pair[0].starts_with("before")
                && pair[1].starts_with("after")
                && pair[1].ends_with("ok=true"),
            "{heard:?}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn turning_failover_off_clears_the_failover_records() {
    let (_server, conn, rec) = cluster::embedded("engine");
    let node = start_node(
        conn.clone(),
        instance(1),
        vec![(
            every_second("orders", 2).failover(true),
            rec.handler(Duration::ZERO),
        )],
    )
    .await;
    rec.wait_until("a complete fire", WITHIN, |log| {
        !complete_fires(log, 2).is_empty()
    })
    .await;
    let admin = conn.connect().await.unwrap();
    tracing::info!("--- failover records left from an earlier takeover");
    admin
        .ensure_path("/orders/leader/failover/items/1")
        .await
        .unwrap();
    admin
        .create(
            "/orders/sharding/0/failovering",
            instance(1).as_str().as_bytes(),
            shardcron::registry::CreateMode::Persistent,
        )
        .await
        .unwrap();
    tracing::info!("--- failover is turned off in the registry");
    let off = every_second("orders", 2).failover(false).to_yaml().unwrap();
    admin
        .set("/orders/config", off.as_bytes(), None)
        .await
        .unwrap();
    let mut changes = admin.watch_recursive("/orders").await.unwrap();
    let check = async || {
        let marks = admin
            .children("/orders/leader/failover/items")
            .await
            .unwrap();
        let failovering = admin
            .exists("/orders/sharding/0/failovering")
            .await
            .unwrap();
        if marks.is_empty() && failovering.is_none() {
            Ok(())
        } else {
            Err((marks, failovering))
        }
    };
    let wake = async || {
        changes.recv().await.expect("the watch lives");
    };
    wait_until_woken(check, wake, "failover records cleared", WITHIN).await;
    node.shutdown().await;
}

/// A graceful leave while one of the leaver's items runs: the leaver ends its session (and so its
/// instance node) only once the item has ended, so the instance that takes the item over starts it
/// after that, never beside it.
#[tokio::test(start_paused = true)]
async fn a_leaving_node_hands_over_its_running_item_only_after_the_item_ends() {
    leave_while_an_item_runs(Duration::from_secs(3), Duration::from_secs(5)).await;
}

/// The same leave when the item outlasts the shutdown timeout: the leaver cancels it, and only
/// then does its session end and the item go to the other instance.
#[tokio::test(start_paused = true)]
async fn a_leaving_node_cancels_an_item_past_its_shutdown_timeout_before_handing_it_over() {
    leave_while_an_item_runs(Duration::from_secs(30), Duration::from_secs(1)).await;
}

/// Instance 2 (whose items take `work`) leaves while one of its items runs; instance 1 must take
/// that item over, and no two runs of one item may overlap.
async fn leave_while_an_item_runs(work: Duration, shutdown_timeout: Duration) {
    let (_server, conn, rec) = cluster::embedded("leave");
    let job = every_second("orders", 2);
    let stays = rec
        .start(&conn, 1, job.clone(), Duration::from_millis(100))
        .await;
    let shape = cluster::NodeShape {
        shutdown_timeout,
        ..Default::default()
    };
    let jobs = vec![(job, rec.handler(work))];
    let leaves =
        cluster::start_node_with(conn.clone(), instance(2), jobs, rec.clock(), shape).await;
    let (one, two) = (instance(1), instance(2));
    let log = rec
        .wait_until("instance 2 starts an item", WITHIN, |log| {
            log.iter().any(|e| e.instance == two)
        })
        .await;
    let item = log.iter().find(|e| e.instance == two).unwrap().item;
    let left = rec.clock().now();
    leaves.shutdown().await;
    rec.wait_until("instance 1 runs the leaver's item", WITHIN, |log| {
        log.iter()
            .any(|e| e.instance == one && e.item == item && e.at >= left)
    })
    .await;
    let leaver_run = rec
        .spans()
        .into_iter()
        .rfind(|s| s.instance == two && s.item == item)
        .unwrap();
    assert!(
        leaver_run.end.is_some(),
        "the leaver's run ended with its node: {leaver_run:?}"
    );
    let overlaps = rec.overlapping_runs();
    assert!(
        overlaps.is_empty(),
        "runs of one item overlapped across instances: {overlaps:#?}"
    );
    stays.shutdown().await;
}
