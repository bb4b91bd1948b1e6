//! Losing the registry session, on the embedded registry with paused time: a disconnection stops new
//! runs and cancels running items before the session could expire; a reconnection resumes without
//! re-running anything; an expiry builds a new session and the node rejoins on its own.

use support::cluster;
use support::wait::wait_until_woken;

use std::sync::Arc;
use std::time::Duration;

use cluster::{every_second, instance, start_node, Recorder};
use shardcron::decide::lifecycle::FenceBudget;
use shardcron::registry::embedded::{EmbeddedConnector, EmbeddedServer};
use shardcron::registry::{Connector, Registry};

const WITHIN: Duration = Duration::from_secs(120);

/// The session id owning `instances/{id}` of `job`, read by an admin session.
async fn session_of(admin: &Arc<dyn Registry>, job: &str, n: u32) -> i64 {
    let path = format!("/{job}/instances/{}", instance(n));
    admin
        .exists(&path)
        .await
        .unwrap()
        .expect("instance node exists")
        .ephemeral_owner
}

#[tokio::test(start_paused = true)]
async fn a_disconnection_cancels_running_items_before_expiry_and_a_reconnection_resumes() {
    cluster::init_tracing();
    let server = EmbeddedServer::new();
    let conn = server
        .connector("loss")
        .with_session_timeout(Duration::from_secs(6));
    let conn: Arc<dyn Connector> = Arc::new(conn);
    let admin = conn.connect().await.unwrap();
    let rec = Recorder::default();
    let (node, mut cancellations) = rec
        .start_long_item(conn.clone(), Duration::from_secs(8), WITHIN)
        .await;
    tracing::info!("--- the node's connection drops during the run");
    let session = session_of(&admin, "long", 1).await;
    server.disconnect(session);
    let started = tokio::time::Instant::now();
    tokio::time::timeout(Duration::from_secs(6), cancellations.wait_for(|n| *n > 0))
        .await
        .expect("the running item is cancelled before the 6 s session timeout")
        .unwrap();
    let waited = started.elapsed();
    // The fencing budget: noticed at most 9 client ticks after the last answer, cancelled with
    // a tenth of the timeout to spare before the server can expire the session.
    let budget = FenceBudget::for_session(Duration::from_secs(6));
    assert_eq!(budget.cancel_after_notice(), Duration::from_millis(2_700));
    assert!(
        waited >= budget.cancel_after_notice()
            && waited < budget.cancel_after_notice() + Duration::from_millis(100),
        "at the fencing deadline: {waited:?}"
    );
    let runs_while_cut = rec.all().len();
    tracing::info!("--- the connection comes back within the timeout");
    server.reconnect(session);
    rec.wait_until("the next fire after the reconnect", WITHIN, |log| {
        log.len() > runs_while_cut
    })
    .await;
    assert_eq!(
        session_of(&admin, "long", 1).await,
        session,
        "the same session resumed"
    );
    node.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn an_expired_session_is_replaced_and_the_node_rejoins_and_fires_again() {
    cluster::init_tracing();
    let server = EmbeddedServer::new();
    let conn: EmbeddedConnector = server
        .connector("loss")
        .with_session_timeout(Duration::from_secs(6));
    let conn: Arc<dyn Connector> = Arc::new(conn);
    let admin = conn.connect().await.unwrap();
    let rec = Recorder::default();
    let job = every_second("orders", 2);
    let node = rec.start(&conn, 1, job, Duration::ZERO).await;
    rec.wait_until("first runs", WITHIN, |log| log.len() >= 4)
        .await;
    let old = session_of(&admin, "orders", 1).await;
    tracing::info!("--- the session expires");
    server.expire(old);
    let before = rec.all().len();
    rec.wait_until("runs on a new session", WITHIN, |log| {
        log.len() >= before + 6
    })
    .await;
    let new = session_of(&admin, "orders", 1).await;
    assert_ne!(new, old, "a new session registered the instance again");
    let leader = admin
        .get("/orders/leader/election/instance")
        .await
        .unwrap()
        .0;
    assert_eq!(
        leader,
        instance(1).as_str().as_bytes(),
        "leadership taken again"
    );
    node.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn an_operator_deleting_the_instance_node_stops_the_job_here_and_leaves_the_others_running() {
    let (_server, conn, _) = cluster::embedded("loss");
    let admin = conn.connect().await.unwrap();
    let rec = Recorder::default();
    let orders = every_second("orders", 1);
    let other = every_second("other", 1);
    let node = start_node(
        conn.clone(),
        instance(1),
        vec![
            (orders, rec.handler(Duration::ZERO)),
            (other, rec.handler(Duration::ZERO)),
        ],
    )
    .await;
    rec.wait_until("both jobs run", WITHIN, |log| {
        ["orders", "other"]
            .iter()
            .all(|j| log.iter().any(|e| e.job.as_str() == *j))
    })
    .await;
    tracing::info!(
        "--- an operator deletes /orders/instances/{{id}} (ElasticJob's console shutdown)"
    );
    let path = format!("/orders/instances/{}", instance(1));
    admin.delete(&path, None).await.unwrap();
    let orders = shardcron::JobName::new("orders").unwrap();
    // The node's job list is the state: asked again on paused time until the job is gone.
    let removed = async || node.trigger(&orders).await.is_err();
    let what = "the job removed from this node after the operator's deletion";
    wait_until_woken(removed, every_10_ms, what, WITHIN).await;
    assert!(
        admin.exists(&path).await.unwrap().is_none(),
        "the node is not created again: the operator's shutdown stands"
    );
    let before = rec.all().len();
    rec.wait_until("the other job keeps running", WITHIN, |log| {
        log[before..].iter().any(|e| e.job.as_str() == "other")
    })
    .await;
    node.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_node_whose_watch_ends_while_its_session_lives_opens_a_new_session_and_runs_on() {
    let (server, conn, _) = cluster::embedded("loss");
    let admin = conn.connect().await.unwrap();
    let rec = Recorder::default();
    let orders = every_second("orders", 1);
    let node = rec.start(&conn, 1, orders, Duration::ZERO).await;
    rec.wait_until("the job runs", WITHIN, |log| !log.is_empty())
        .await;
    let first = session_of(&admin, "orders", 1).await;
    tracing::info!("--- the node's recursive watch ends (not renewed after a reconnect)");
    server.end_watches(first);
    // The registry is the state: read again on paused time until another session holds the node.
    let path = format!("/orders/instances/{}", instance(1));
    let registered_again = async || {
        let owner = admin
            .exists(&path)
            .await
            .unwrap()
            .map(|s| s.ephemeral_owner);
        if owner.is_some_and(|o| o != first) {
            Ok(())
        } else {
            Err(owner)
        }
    };
    let what = "a new session to register the instance again after its watch ended";
    wait_until_woken(registered_again, every_10_ms, what, WITHIN).await;
    let before = rec.all().len();
    rec.wait_until("the job runs on the new session", WITHIN, |log| {
        log.len() > before
    })
    .await;
    node.shutdown().await;
}

/// Asks again every 10 ms of (paused) tokio time.
async fn every_10_ms() {
    tokio::time::sleep(Duration::from_millis(10)).await;
}
