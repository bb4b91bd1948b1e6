//! Nodes whose data the mirror may read late (`FeedOptions::lazy_data`: the engine uses it for
//! `running` markers): a marker created and deleted between two other changes costs no read, a
//! marker still there after the settle window is read, and a pending marker is read before the
//! feed applies any other kind of event, so a consumer reacting to that event sees its data.

use std::sync::Arc;
use std::time::Duration;

use shardcron::registry::embedded::EmbeddedServer;
use shardcron::registry::mirror::{FeedOptions, Mirror, MirrorEvent, MirrorFeed};
use shardcron::registry::{CreateMode, OpKind, Registry};
use support::conformance::wait_for;
use support::namespace;

const MARKER: &str = "/orders/sharding/0/running";

fn lazy_markers(settle: Duration) -> FeedOptions {
    FeedOptions {
        lazy_data: Some(Arc::new(|p: &str| p.ends_with("/running"))),
        settle,
        ..FeedOptions::default()
    }
}

fn reads(server: &EmbeddedServer) -> u64 {
    server
        .op_counts()
        .get(&OpKind::Get)
        .copied()
        .unwrap_or_default()
}

/// A session with `/orders/sharding/0` and `/orders/instances/a`, and a mirror fed with `options`.
/// Creates the run marker, as an executor would.
async fn create_marker(session: &Arc<dyn Registry>, mode: CreateMode) {
    session
        .create(MARKER, b"10.0.0.1@-@1", mode)
        .await
        .expect("the marker is created");
}

async fn fed(options: FeedOptions) -> (EmbeddedServer, Arc<dyn Registry>, Mirror, MirrorFeed) {
    let server = EmbeddedServer::new();
    let session: Arc<dyn Registry> = Arc::new(server.connector(&namespace("conf", "lazy")).open());
    for p in ["/orders/sharding/0", "/orders/instances/a"] {
        session
            .ensure_path(p)
            .await
            .expect("creating the job's nodes");
    }
    let mirror = Mirror::new();
    let mut feed = mirror
        .feed_with(session.clone(), "/", options)
        .await
        .expect("starting the feed");
    // The listing's own events are queued already.
    while feed.events().try_recv().is_ok() {}
    (server, session, mirror, feed)
}

async fn next_event_on(feed: &mut MirrorFeed, path: &str, what: &str) -> MirrorEvent {
    wait_for(
        feed.events(),
        |e| match e {
            MirrorEvent::Created { path: p }
            | MirrorEvent::Changed { path: p }
            | MirrorEvent::Deleted { path: p } => p == path,
            _ => false,
        },
        what,
    )
    .await
}

#[tokio::test]
async fn a_run_marker_created_and_deleted_costs_the_mirror_no_read() {
    let (server, session, mirror, mut feed) = fed(lazy_markers(Duration::from_secs(60))).await;
    let before = reads(&server);
    create_marker(&session, CreateMode::Ephemeral).await;
    let created = next_event_on(&mut feed, MARKER, "the marker's creation").await;
    assert_eq!(
        created,
        MirrorEvent::Created {
            path: MARKER.into()
        }
    );
    assert!(mirror.exists(MARKER) && mirror.is_pending(MARKER));
    session.delete(MARKER, None).await.unwrap();
    let deleted = next_event_on(&mut feed, MARKER, "the marker's deletion").await;
    assert_eq!(
        deleted,
        MirrorEvent::Deleted {
            path: MARKER.into()
        }
    );
    assert!(!mirror.exists(MARKER));
    assert_eq!(
        reads(&server) - before,
        0,
        "no read for a short-lived marker"
    );
}

#[tokio::test]
async fn a_marker_that_outlives_the_settle_window_is_read() {
    let (server, session, mirror, mut feed) = fed(lazy_markers(Duration::from_millis(50))).await;
    let before = reads(&server);
    create_marker(&session, CreateMode::Ephemeral).await;
    next_event_on(&mut feed, MARKER, "the marker's creation").await;
    let changed = next_event_on(&mut feed, MARKER, "the marker's data, read late").await;
    assert_eq!(
        changed,
        MirrorEvent::Changed {
            path: MARKER.into()
        }
    );
    assert_eq!(mirror.data(MARKER).as_deref(), Some(&b"10.0.0.1@-@1"[..]));
    assert!(!mirror.is_pending(MARKER));
    assert_eq!(reads(&server) - before, 1);
}

#[tokio::test]
async fn a_pending_marker_is_read_before_another_kind_of_event_is_applied() {
    let (_server, session, mirror, mut feed) = fed(lazy_markers(Duration::from_secs(60))).await;
    create_marker(&session, CreateMode::Persistent).await;
    session.delete("/orders/instances/a", None).await.unwrap();
    let gone = next_event_on(&mut feed, "/orders/instances/a", "the instance's departure").await;
    assert_eq!(
        gone,
        MirrorEvent::Deleted {
            path: "/orders/instances/a".into()
        }
    );
    assert_eq!(
        mirror.data(MARKER).as_deref(),
        Some(&b"10.0.0.1@-@1"[..]),
        "the marker's owner is known when the departure is seen"
    );
}

#[tokio::test]
async fn without_lazy_paths_every_created_node_is_read_at_once() {
    let (server, session, mirror, mut feed) = fed(FeedOptions::default()).await;
    let before = reads(&server);
    create_marker(&session, CreateMode::Ephemeral).await;
    next_event_on(&mut feed, MARKER, "the marker's creation").await;
    assert!(!mirror.is_pending(MARKER));
    assert_eq!(mirror.data(MARKER).as_deref(), Some(&b"10.0.0.1@-@1"[..]));
    assert_eq!(reads(&server) - before, 1);
}
