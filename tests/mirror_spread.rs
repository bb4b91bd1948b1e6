//! After a reconnect a feed lists its roots again at its own point of a spread window
//! ([`RelistSpread`]), at most [`RELIST_AT_ONCE`] of them side by side, so that the instances of a
//! cluster do not all list at once after an ensemble's election; a root that hears an event
//! meanwhile is listed at once. `FeedRoots::relist` forces the same re-list when the watches did
//! not report the disconnection themselves.
//!
//! The embedded registry on paused time, behind a [`Counting`] session that counts its listings
//! and how many run side by side.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use shardcron::registry::embedded::EmbeddedServer;
use shardcron::registry::mirror::{FeedOptions, Mirror, RelistSpread, RELIST_AT_ONCE};
use shardcron::registry::{CreateMode, Registry};
use support::wait::wait_until;

/// A session that counts its `list_subtree` calls, those in flight and the most in flight at
/// once; each listing takes a millisecond (of paused time), so that side-by-side ones overlap.
#[derive(Debug)]
struct Counting {
    inner: Arc<dyn Registry>,
    listings: AtomicUsize,
    in_flight: AtomicUsize,
    most: AtomicUsize,
}

support::delegating_registry!(Counting, inner, get_many(this, paths) {
    this.inner.get_many(paths).await
}, list_subtree(this, path) {
    this.listings.fetch_add(1, Ordering::SeqCst);
    let now = this.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    this.most.fetch_max(now, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(1)).await;
    let listing = this.inner.list_subtree(path).await;
    this.in_flight.fetch_sub(1, Ordering::SeqCst);
    listing
});

const ROOTS: usize = 100;

const SPREAD: RelistSpread = RelistSpread {
    per_root: Duration::from_millis(10),
    max: Duration::from_millis(600),
    seed: 7,
};

/// A namespace of [`ROOTS`] job subtrees, a feed on all of them through a [`Counting`] session,
/// and the means to cut that session.
struct Setup {
    server: EmbeddedServer,
    admin: Arc<dyn Registry>,
    counting: Arc<Counting>,
    session: i64,
    mirror: Mirror,
    roots: shardcron::registry::mirror::FeedRoots,
    _feed: shardcron::registry::mirror::MirrorFeed,
}

impl Setup {
    /// Cuts the feed's session and waits for the feed to hear it.
    async fn cut(&self) {
        self.server.disconnect(self.session);
        wait_until(
            async || !self.mirror.is_synced(),
            "the feed to hear the disconnection",
            Duration::from_secs(5),
        )
        .await;
    }
}

async fn setup() -> Setup {
    support::cluster::init_tracing();
    let server = EmbeddedServer::new();
    let connector = server.connector("spread");
    let admin: Arc<dyn Registry> = Arc::new(connector.open());
    let roots: Vec<String> = (0..ROOTS).map(|i| format!("/job{i}")).collect();
    for root in &roots {
        admin
            .create(root, b"", CreateMode::Persistent)
            .await
            .unwrap();
        let config = format!("{root}/config");
        admin
            .create(&config, b"old", CreateMode::Persistent)
            .await
            .unwrap();
    }
    let session = connector.open();
    let id = session.session_info().id;
    let counting = Arc::new(Counting {
        inner: Arc::new(session),
        listings: AtomicUsize::new(0),
        in_flight: AtomicUsize::new(0),
        most: AtomicUsize::new(0),
    });
    let options = FeedOptions {
        relist_spread: Some(SPREAD),
        ..FeedOptions::default()
    };
    let mirror = Mirror::new();
    let (feed, feed_roots) = mirror
        .feed_roots(counting.clone(), roots, options)
        .await
        .expect("starting the feed");
    assert!(mirror.is_synced());
    counting.listings.store(0, Ordering::SeqCst);
    counting.most.store(0, Ordering::SeqCst);
    Setup {
        server,
        admin,
        counting,
        session: id,
        mirror,
        roots: feed_roots,
        _feed: feed,
    }
}

#[tokio::test(start_paused = true)]
async fn a_reconnected_feed_lists_its_roots_at_its_point_of_the_spread_window_a_bounded_number_at_a_time(
) {
    let s = setup().await;
    let delay = SPREAD.delay(ROOTS);
    assert!(
        delay > Duration::from_millis(20) && delay < SPREAD.max,
        "seed 7 falls inside the window: {delay:?}"
    );

    // Cut, change every root meanwhile (the cut session's watches miss it), reconnect.
    s.cut().await;
    for i in 0..ROOTS {
        let config = format!("/job{i}/config");
        s.admin.set(&config, b"new", None).await.unwrap();
    }
    s.server.reconnect(s.session);
    let reconnected = tokio::time::Instant::now();

    // Nothing is listed before the feed's share of the window has passed.
    tokio::time::sleep(delay.saturating_sub(Duration::from_millis(5))).await;
    assert_eq!(
        s.counting.listings.load(Ordering::SeqCst),
        0,
        "no listing before {delay:?} after the reconnect"
    );
    assert!(!s.mirror.is_synced());

    wait_until(
        async || s.mirror.is_synced(),
        "the mirror to be listed again",
        Duration::from_secs(5),
    )
    .await;
    assert!(tokio::time::Instant::now() - reconnected >= delay);
    for i in 0..ROOTS {
        let config = format!("/job{i}/config");
        assert_eq!(
            s.mirror.data(&config).as_deref(),
            Some(&b"new"[..]),
            "{config}"
        );
    }
    assert_eq!(s.counting.listings.load(Ordering::SeqCst), ROOTS);
    let most = s.counting.most.load(Ordering::SeqCst);
    assert!(
        most > 1 && most <= RELIST_AT_ONCE,
        "listings side by side, at most {RELIST_AT_ONCE}: {most}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_root_that_hears_an_event_during_the_spread_is_listed_at_once() {
    let s = setup().await;
    let delay = SPREAD.delay(ROOTS);
    s.cut().await;
    s.admin.set("/job3/config", b"cut", None).await.unwrap();
    s.server.reconnect(s.session);
    tokio::time::sleep(Duration::from_millis(1)).await;

    // An event on /job3 after the reconnect: its root is listed before the event applies.
    s.admin.set("/job3/config", b"after", None).await.unwrap();
    wait_until(
        async || s.mirror.data("/job3/config").as_deref() == Some(&b"after"[..]),
        "/job3 listed and its event applied at once",
        delay / 2,
    )
    .await;
    assert!(!s.mirror.is_synced(), "the other roots wait for the window");
}

#[tokio::test(start_paused = true)]
async fn a_relist_request_lists_every_root_again_even_when_no_watch_reported_a_disconnection() {
    let s = setup().await;
    // A change the watches report normally, then a request as after a reconnect that the
    // watches themselves did not report.
    s.roots.relist();
    wait_until(
        async || !s.mirror.is_synced(),
        "the request to open a gap in every root",
        Duration::from_secs(5),
    )
    .await;
    wait_until(
        async || s.mirror.is_synced(),
        "every root listed again",
        Duration::from_secs(5),
    )
    .await;
    assert_eq!(s.counting.listings.load(Ordering::SeqCst), ROOTS);
}

#[test]
fn the_spread_delay_stays_inside_a_window_that_grows_with_the_roots_up_to_its_maximum() {
    let spread = |seed| RelistSpread {
        per_root: Duration::from_millis(1),
        max: Duration::from_secs(1),
        seed,
    };
    // (roots, the window the delay falls in)
    for (roots, window) in [
        (0, Duration::ZERO),
        (1, Duration::from_millis(1)),
        (25, Duration::from_millis(25)),
        (1_000, Duration::from_secs(1)),
        (1_000_000, Duration::from_secs(1)),
        (usize::MAX, Duration::from_secs(1)),
    ] {
        for seed in [0, 1, 2, u64::MAX] {
            let delay = spread(seed).delay(roots);
            assert!(
                delay <= window && (window.is_zero() || delay < window),
                "{roots} roots, seed {seed}: {delay:?} outside {window:?}"
            );
        }
    }
    // Instances with neighbouring seeds land apart: 64 seeds over a one-second window fill
    // more than half of its tenths.
    let tenths: std::collections::BTreeSet<u128> = (0..64)
        .map(|seed| spread(seed).delay(1_000).as_millis() / 100)
        .collect();
    assert!(tenths.len() > 5, "seeds spread over the window: {tenths:?}");
}
