//! A feed whose read fails on a non-fatal error while its session stays connected lists the root
//! again by itself ([`RELIST_RETRY`](shardcron::registry::mirror) later): a quiet job's mirror does
//! not stay unsynced until its next event or a reconnect.
//!
//! The embedded registry on paused time, behind a [`Failing`] session whose `get_many` fails the
//! number of times the test sets.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use shardcron::registry::embedded::EmbeddedServer;
use shardcron::registry::mirror::{FeedOptions, Mirror};
use shardcron::registry::{Connector, CreateMode, OpKind, Registry, RegistryError};
use support::wait::wait_until;

/// A session whose next `failures` calls of `get_many` fail with a lost connection.
#[derive(Debug)]
struct Failing {
    inner: Arc<dyn Registry>,
    failures: AtomicUsize,
}

support::delegating_registry!(Failing, inner, get_many(this, paths) {
    let failing = this
        .failures
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok();
    if failing {
        return Err(RegistryError::ConnectionLoss {
            op: OpKind::Get,
            path: paths.first().cloned().unwrap_or_default(),
        });
    }
    this.inner.get_many(paths).await
});

#[tokio::test(start_paused = true)]
async fn a_failed_read_on_a_connected_session_is_listed_again_without_another_event() {
    support::cluster::init_tracing();
    let server = EmbeddedServer::new();
    let connector = server.connector("retry");
    let admin = connector.connect().await.expect("an admin session");
    admin
        .create("/job", b"", CreateMode::Persistent)
        .await
        .unwrap();
    let failing = Arc::new(Failing {
        inner: connector.connect().await.expect("the feed's session"),
        failures: AtomicUsize::new(0),
    });
    let mirror = Mirror::new();
    let (_feed, _roots) = mirror
        .feed_roots(failing.clone(), vec!["/job".into()], FeedOptions::default())
        .await
        .expect("starting the feed");
    assert!(mirror.is_synced());

    // The event's read fails; nothing else happens in the namespace after it.
    failing.failures.store(1, Ordering::SeqCst);
    admin
        .create(
            "/job/config",
            b"cron: 0/5 * * * * ?",
            CreateMode::Persistent,
        )
        .await
        .unwrap();
    wait_until(
        async || {
            failing.failures.load(Ordering::SeqCst) == 0 || mirror.data("/job/config").is_some()
        },
        "the feed to try reading /job/config",
        Duration::from_secs(10),
    )
    .await;
    wait_until(
        async || {
            mirror.is_synced()
                && mirror.data("/job/config").as_deref() == Some(&b"cron: 0/5 * * * * ?"[..])
        },
        "the mirror to list /job again on its own and hold /job/config",
        Duration::from_secs(10),
    )
    .await;
}
