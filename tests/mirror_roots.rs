//! A feed on several roots (issue 31: an instance mirrors the jobs it runs, not the namespace),
//! against every backend: it mirrors its roots and nothing else, takes roots while it runs,
//! drops them silently, widens to the whole namespace, and re-lists each root in place after a
//! gap with one `Resynced` for all.

#[macro_use]
extern crate support;

use std::collections::BTreeMap;
use std::sync::Arc;

use shardcron::registry::mirror::{FeedOptions, FeedRoots, Mirror, MirrorEvent, MirrorFeed};
use shardcron::registry::{CreateMode, Registry, SessionState};
use support::backend::Backend;
use support::conformance::wait_for;
use support::mirror::{drain, listing, listing_at, mirrored, Comparable};
use support::namespace;

/// Creates `/{job}` and `/{job}/config` for each job.
async fn jobs(s: &dyn Registry, names: &[&str]) {
    for job in names {
        s.create(&format!("/{job}"), b"", CreateMode::Persistent)
            .await
            .unwrap();
        s.create(
            &format!("/{job}/config"),
            job.as_bytes(),
            CreateMode::Persistent,
        )
        .await
        .unwrap();
    }
}

/// The registry's subtrees at `roots`, together.
async fn listings(s: &dyn Registry, roots: &[&str]) -> Comparable {
    let mut all = BTreeMap::new();
    for root in roots {
        all.extend(listing_at(s, root).await);
    }
    all
}

/// Writes `path` and waits for its `Created`, collecting every event before it.
async fn barrier_at(s: &dyn Registry, feed: &mut MirrorFeed, path: &str) -> Vec<MirrorEvent> {
    s.create(path, b"", CreateMode::Persistent).await.unwrap();
    let mut seen = Vec::new();
    let is_marker = |e: &MirrorEvent| {
        seen.push(e.clone());
        matches!(e, MirrorEvent::Created { path: p } if p == path)
    };
    wait_for(
        feed.events(),
        is_marker,
        &format!("the mirror to apply {path}"),
    )
    .await;
    seen
}

/// Whether any event names a path at or below `root`.
fn touches(events: &[MirrorEvent], root: &str) -> bool {
    events.iter().any(|e| match e {
        MirrorEvent::Created { path }
        | MirrorEvent::Changed { path }
        | MirrorEvent::Deleted { path } => path == root || path.starts_with(&format!("{root}/")),
        _ => false,
    })
}

async fn fed(s: &Arc<dyn Registry>, roots: &[&str]) -> (Mirror, MirrorFeed, FeedRoots) {
    let mirror = Mirror::new();
    let roots = roots.iter().map(|r| r.to_string()).collect();
    let (feed, handle) = mirror
        .feed_roots(s.clone(), roots, FeedOptions::default())
        .await
        .expect("starting the feed");
    assert!(mirror.is_synced());
    (mirror, feed, handle)
}

/// Runs `request` on the feed and waits for its callback.
async fn done(request: impl FnOnce(Box<dyn FnOnce() + Send>)) {
    let (tx, rx) = tokio::sync::oneshot::channel();
    request(Box::new(move || {
        let _ = tx.send(());
    }));
    rx.await.expect("the feed runs the callback");
}

/// Two job roots of three: the mirror holds those two, and the third's changes never arrive.
async fn a_feed_on_job_roots_mirrors_those_jobs_and_hears_nothing_else(b: &dyn Backend) {
    let s = b.open(&namespace("conf", "roots-only")).await.registry;
    jobs(s.as_ref(), &["a", "b", "c"]).await;
    let (mirror, mut feed, _roots) = fed(&s, &["/a", "/b"]).await;
    assert_eq!(drain(&mut feed).last(), Some(&MirrorEvent::Resynced));
    assert_eq!(mirrored(&mirror), listings(s.as_ref(), &["/a", "/b"]).await);
    s.set("/c/config", b"c2", None).await.unwrap();
    s.create("/c/x", b"", CreateMode::Persistent).await.unwrap();
    s.set("/a/config", b"a2", None).await.unwrap();
    let seen = barrier_at(s.as_ref(), &mut feed, "/b/barrier").await;
    assert!(
        !touches(&seen, "/c"),
        "no event of an unwatched job: {seen:?}"
    );
    assert!(
        seen.contains(&MirrorEvent::Changed {
            path: "/a/config".into()
        }),
        "{seen:?}"
    );
    assert_eq!(mirrored(&mirror), listings(s.as_ref(), &["/a", "/b"]).await);
}

/// A root added while the feed runs is listed before its callback; a removed one leaves the
/// mirror without a `Deleted` event, and its later changes are not heard.
async fn roots_come_and_go_while_the_feed_runs(b: &dyn Backend) {
    let s = b.open(&namespace("conf", "roots-come-go")).await.registry;
    jobs(s.as_ref(), &["a", "b", "c"]).await;
    let (mirror, mut feed, roots) = fed(&s, &[]).await;
    assert!(mirror.is_empty(), "no root, nothing mirrored");
    assert_eq!(drain(&mut feed), [MirrorEvent::Resynced]);
    done(|d| roots.add(vec!["/a".into(), "/c".into(), "/c/config".into()], d)).await;
    assert_eq!(mirrored(&mirror), listings(s.as_ref(), &["/a", "/c"]).await);
    let listed = drain(&mut feed);
    assert!(
        listed.contains(&MirrorEvent::Created {
            path: "/c/config".into()
        }),
        "{listed:?}"
    );
    assert!(
        !listed.contains(&MirrorEvent::Resynced),
        "an addition is no resync: {listed:?}"
    );

    tracing::info!("--- remove /a: silently");
    done(|d| roots.remove("/a".into(), d)).await;
    assert_eq!(mirrored(&mirror), listings(s.as_ref(), &["/c"]).await);
    s.set("/a/config", b"a2", None).await.unwrap();
    let seen = barrier_at(s.as_ref(), &mut feed, "/c/barrier").await;
    assert!(!touches(&seen, "/a"), "nothing of a removed root: {seen:?}");
    assert!(mirror.is_synced());
}

/// Adding `/` mirrors the whole namespace and hears each change once.
async fn the_namespace_root_replaces_the_job_roots(b: &dyn Backend) {
    let s = b.open(&namespace("conf", "roots-widen")).await.registry;
    jobs(s.as_ref(), &["a", "b"]).await;
    let (mirror, mut feed, roots) = fed(&s, &["/a"]).await;
    done(|d| roots.add(vec!["/".into()], d)).await;
    assert_eq!(mirrored(&mirror), listing(s.as_ref()).await);
    drain(&mut feed);
    s.set("/a/config", b"a2", None).await.unwrap();
    let seen = barrier_at(s.as_ref(), &mut feed, "/b/barrier").await;
    let changed = MirrorEvent::Changed {
        path: "/a/config".into(),
    };
    assert_eq!(
        seen.iter().filter(|e| **e == changed).count(),
        1,
        "{seen:?}"
    );
    done(|d| roots.add(vec!["/b".into()], d)).await;
    assert_eq!(mirrored(&mirror), listing(s.as_ref()).await);
}

/// After a cut, each root re-lists in place: the gap's changes of watched jobs arrive, nothing of
/// the others, and one `Resynced` once every root is listed again.
async fn each_root_re_lists_after_a_disconnect(b: &dyn Backend) {
    let ns = namespace("conf", "roots-gap");
    let fed_session = b.open(&ns).await;
    let other = b.open(&ns).await.registry;
    jobs(other.as_ref(), &["a", "b", "c"]).await;
    let (mirror, mut feed, _roots) = fed(&fed_session.registry, &["/a", "/b"]).await;
    drain(&mut feed);
    fed_session.control.disconnect().await;
    let cut = |e: &MirrorEvent| *e == MirrorEvent::Session(SessionState::Disconnected);
    wait_for(feed.events(), cut, "Session(Disconnected) from the feed").await;
    assert!(!mirror.is_synced());
    for job in ["a", "b", "c"] {
        other
            .set(&format!("/{job}/config"), b"new", None)
            .await
            .unwrap();
    }
    other
        .create("/a/new", b"", CreateMode::Persistent)
        .await
        .unwrap();
    fed_session.control.reconnect().await;
    let mut diffs = Vec::new();
    let resynced = |e: &MirrorEvent| {
        diffs.push(e.clone());
        *e == MirrorEvent::Resynced
    };
    wait_for(feed.events(), resynced, "Resynced after the reconnect").await;
    for path in ["/a/config", "/b/config"] {
        let changed = MirrorEvent::Changed { path: path.into() };
        assert!(
            diffs.contains(&changed),
            "{changed:?} missing from {diffs:?}"
        );
    }
    assert!(
        diffs.contains(&MirrorEvent::Created {
            path: "/a/new".into()
        }),
        "{diffs:?}"
    );
    assert!(
        !touches(&diffs, "/c"),
        "nothing of an unwatched job: {diffs:?}"
    );
    let mut synced = mirror.synced();
    synced.wait_for(|s| *s).await.expect("synced again");
    assert_eq!(
        mirrored(&mirror),
        listings(other.as_ref(), &["/a", "/b"]).await
    );
    let again = barrier_at(other.as_ref(), &mut feed, "/a/barrier").await;
    assert!(
        !again.contains(&MirrorEvent::Resynced),
        "one Resynced for all roots: {again:?}"
    );
}

// The cases, on every backend.
backend_tests!(
    embedded,
    support::embedded::backend(),
    [
        a_feed_on_job_roots_mirrors_those_jobs_and_hears_nothing_else,
        roots_come_and_go_while_the_feed_runs,
        the_namespace_root_replaces_the_job_roots,
        each_root_re_lists_after_a_disconnect
    ]
);
backend_tests!(zookeeper, support::zk::backend(), [a_feed_on_job_roots_mirrors_those_jobs_and_hears_nothing_else, roots_come_and_go_while_the_feed_runs, the_namespace_root_replaces_the_job_roots, each_root_re_lists_after_a_disconnect], requires support::Peer::ZooKeeper);
