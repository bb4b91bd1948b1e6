//! The registry conformance suite: what every [`Backend`] must do the same way, as async functions
//! over `&dyn Backend`, and [`conformance_tests!`](crate::conformance_tests) that turns them into
//! one `#[tokio::test]` each for a backend.
//!
//! Every case opens its own namespace ([`unique_namespace`]) so cases can share one server.
//! Nothing sleeps: waits go through [`wait_for`], which fails naming what it expected.

use std::fmt::Debug;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use shardcron::registry::{
    CreateMode, NodeEventKind, Op, OpKind, OpResult, RegistryError, SessionState, WatchEvent,
};
use tokio::sync::mpsc::UnboundedReceiver;

use super::backend::Backend;

/// How long a wait may take before the test fails; generous for a real ZooKeeper's session expiry.
pub const WAIT: Duration = Duration::from_secs(30);

/// A namespace no other case of this process (or a concurrent test binary) uses.
pub fn unique_namespace(tag: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("conf-{}-{n}-{tag}", std::process::id())
}

/// Receives until an item matches `pred`, failing with `what` and everything seen on a timeout or
/// when the channel ends.
pub async fn wait_for<T: Debug>(
    rx: &mut UnboundedReceiver<T>,
    mut pred: impl FnMut(&T) -> bool,
    what: &str,
) -> T {
    let deadline = tokio::time::Instant::now() + WAIT;
    let mut seen = Vec::new();
    loop {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Some(item)) if pred(&item) => return item,
            Ok(Some(item)) => seen.push(format!("{item:?}")),
            Ok(None) => panic!("channel ended while waiting for {what}; saw {seen:?}"),
            Err(_) => panic!("timed out after {WAIT:?} waiting for {what}; saw {seen:?}"),
        }
    }
}

/// The next `n` node events (session events skipped), as `(kind, path)`.
pub async fn node_events(
    rx: &mut UnboundedReceiver<WatchEvent>,
    n: usize,
    what: &str,
) -> Vec<(NodeEventKind, String)> {
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let what = format!("{what} (node event {} of {n})", out.len() + 1);
        if let WatchEvent::Node { kind, path } =
            wait_for(rx, |e| matches!(e, WatchEvent::Node { .. }), &what).await
        {
            out.push((kind, path));
        }
    }
    out
}

/// `(kind, path)` shorthand for expected event lists.
fn ev(kind: NodeEventKind, path: &str) -> (NodeEventKind, String) {
    (kind, path.to_owned())
}

fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// create, get, set (data version and mzxid move on), exists, delete.
pub async fn create_get_set_delete_round_trip(b: &dyn Backend) {
    let s = b.open(&unique_namespace("roundtrip")).await.registry;
    let before = now_millis();
    assert_eq!(
        s.create("/job", b"v0", CreateMode::Persistent)
            .await
            .unwrap(),
        "/job"
    );
    let (data, created) = s.get("/job").await.unwrap();
    assert_eq!(
        (data.as_slice(), created.version, created.ephemeral_owner),
        (&b"v0"[..], 0, 0)
    );
    assert!(
        (created.ctime - before).abs() < 60_000,
        "ctime {} is near {before}",
        created.ctime
    );
    let set = s.set("/job", b"v1", Some(0)).await.unwrap();
    assert_eq!(set.version, 1);
    assert!(set.mzxid > created.mzxid && set.czxid == created.czxid);
    assert_eq!(s.get("/job").await.unwrap(), (b"v1".to_vec(), set));
    assert_eq!(s.exists("/job").await.unwrap(), Some(set));
    s.delete("/job", Some(1)).await.unwrap();
    assert_eq!(s.exists("/job").await.unwrap(), None);
    assert!(s.get("/job").await.unwrap_err().is_no_node());
}

/// Children are names, sorted; `list_subtree` puts parents before children.
pub async fn children_are_sorted_names_and_listings_put_parents_first(b: &dyn Backend) {
    let s = b.open(&unique_namespace("children")).await.registry;
    for p in ["/p", "/p/b", "/p/a", "/p/c", "/p/a/x"] {
        s.create(p, p.as_bytes(), CreateMode::Persistent)
            .await
            .unwrap();
    }
    assert_eq!(s.children("/p").await.unwrap(), ["a", "b", "c"]);
    assert_eq!(s.get("/p").await.unwrap().1.num_children, 3);
    let listed = s.list_subtree("/p").await.unwrap();
    let pos = |p: &str| listed.iter().position(|n| n.path == p).unwrap();
    assert_eq!(listed.len(), 5);
    assert!(pos("/p") < pos("/p/a") && pos("/p/a") < pos("/p/a/x"));
    assert_eq!(listed[pos("/p/a/x")].data, b"/p/a/x");
    assert!(s.children("/missing").await.unwrap_err().is_no_node());
}

/// A create whose parent is missing fails with NoNode.
pub async fn creating_under_a_missing_parent_fails_with_no_node(b: &dyn Backend) {
    let s = b.open(&unique_namespace("noparent")).await.registry;
    let err = s
        .create("/a/b", b"", CreateMode::Persistent)
        .await
        .unwrap_err();
    assert!(matches!(err, RegistryError::NoNode { .. }), "{err:?}");
}

/// A second create of one path fails with NodeExists.
pub async fn creating_an_existing_node_fails_with_node_exists(b: &dyn Backend) {
    let s = b.open(&unique_namespace("exists")).await.registry;
    s.create("/a", b"1", CreateMode::Persistent).await.unwrap();
    let err = s
        .create("/a", b"2", CreateMode::Ephemeral)
        .await
        .unwrap_err();
    assert!(matches!(err, RegistryError::NodeExists { .. }), "{err:?}");
    assert_eq!(s.get("/a").await.unwrap().0, b"1");
}

/// Versioned set and delete with a stale version fail with BadVersion and change nothing.
pub async fn stale_versions_fail_with_bad_version(b: &dyn Backend) {
    let s = b.open(&unique_namespace("badversion")).await.registry;
    s.create("/a", b"1", CreateMode::Persistent).await.unwrap();
    s.set("/a", b"2", None).await.unwrap();
    let err = s.set("/a", b"3", Some(0)).await.unwrap_err();
    assert!(matches!(err, RegistryError::BadVersion { .. }), "{err:?}");
    let err = s.delete("/a", Some(0)).await.unwrap_err();
    assert!(matches!(err, RegistryError::BadVersion { .. }), "{err:?}");
    assert_eq!(s.get("/a").await.unwrap().0, b"2");
}

/// Deleting a node that has children fails with NotEmpty.
pub async fn deleting_a_node_with_children_fails_with_not_empty(b: &dyn Backend) {
    let s = b.open(&unique_namespace("notempty")).await.registry;
    s.create("/a", b"", CreateMode::Persistent).await.unwrap();
    s.create("/a/b", b"", CreateMode::Persistent).await.unwrap();
    let err = s.delete("/a", None).await.unwrap_err();
    assert!(matches!(err, RegistryError::NotEmpty { .. }), "{err:?}");
    s.delete_recursive("/a").await.unwrap();
    assert_eq!(s.exists("/a").await.unwrap(), None);
}

/// Sequential creates append increasing, zero-padded 10-digit numbers.
pub async fn sequential_creates_get_increasing_ten_digit_suffixes(b: &dyn Backend) {
    let s = b.open(&unique_namespace("sequence")).await.registry;
    s.create("/q", b"", CreateMode::Persistent).await.unwrap();
    let mut numbers = Vec::new();
    for mode in [
        CreateMode::PersistentSequential,
        CreateMode::EphemeralSequential,
    ] {
        for _ in 0..2 {
            let path = s.create("/q/item-", b"", mode).await.unwrap();
            let suffix = path
                .strip_prefix("/q/item-")
                .expect("the requested prefix is kept");
            assert_eq!(suffix.len(), 10, "{path}");
            numbers.push(suffix.parse::<u64>().unwrap());
        }
    }
    assert!(numbers.windows(2).all(|w| w[0] < w[1]), "{numbers:?}");
    let names = s.children("/q").await.unwrap();
    assert_eq!(names.len(), 4);
}

/// An ephemeral node belongs to its session and goes when that session closes.
pub async fn ephemeral_nodes_vanish_when_their_session_closes(b: &dyn Backend) {
    let ns = unique_namespace("close");
    let owner = b.open(&ns).await.registry;
    let other = b.open(&ns).await.registry;
    let path = owner
        .create("/e", b"", CreateMode::Ephemeral)
        .await
        .unwrap();
    let stat = other
        .exists(&path)
        .await
        .unwrap()
        .expect("another session sees it");
    assert_eq!(stat.ephemeral_owner, owner.session_info().id);
    let mut watch = other.watch_recursive("/").await.unwrap();
    owner.close().await;
    let gone = |e: &WatchEvent| matches!(e, WatchEvent::Node { kind: NodeEventKind::Deleted, path } if path == "/e");
    wait_for(
        &mut watch,
        gone,
        "the closed session's ephemeral to be deleted",
    )
    .await;
    assert_eq!(other.exists("/e").await.unwrap(), None);
    assert!(owner.get("/").await.unwrap_err().is_fatal());
}

/// An ephemeral node goes when its session expires, and the expired session is dead for good.
pub async fn ephemeral_nodes_vanish_when_their_session_expires(b: &dyn Backend) {
    let ns = unique_namespace("expire");
    let doomed = b.open(&ns).await;
    let other = b.open(&ns).await.registry;
    doomed
        .registry
        .create("/eph", b"", CreateMode::Ephemeral)
        .await
        .unwrap();
    doomed
        .registry
        .create("/kept", b"", CreateMode::Persistent)
        .await
        .unwrap();
    let mut others_watch = other.watch_recursive("/").await.unwrap();
    let mut own_watch = doomed.registry.watch_recursive("/").await.unwrap();
    doomed.control.expire().await;
    let gone = |e: &WatchEvent| matches!(e, WatchEvent::Node { kind: NodeEventKind::Deleted, path } if path == "/eph");
    wait_for(
        &mut others_watch,
        gone,
        "the expired session's ephemeral to be deleted",
    )
    .await;
    let expired = |e: &WatchEvent| *e == WatchEvent::Session(SessionState::Expired);
    wait_for(
        &mut own_watch,
        expired,
        "Session(Expired) on the expired session's watch",
    )
    .await;
    let end = tokio::time::timeout(WAIT, own_watch.recv()).await;
    assert!(
        matches!(end, Ok(None)),
        "the expired session's watch stream ends: {end:?}"
    );
    let err = doomed.registry.get("/kept").await.unwrap_err();
    assert!(matches!(err, RegistryError::SessionExpired), "{err:?}");
    assert!(other.exists("/kept").await.unwrap().is_some());
    assert_eq!(other.exists("/eph").await.unwrap(), None);
}

/// A create under an ephemeral fails with NoChildrenForEphemerals.
pub async fn ephemeral_nodes_cannot_have_children(b: &dyn Backend) {
    let s = b.open(&unique_namespace("ephkids")).await.registry;
    s.create("/e", b"", CreateMode::Ephemeral).await.unwrap();
    let err = s
        .create("/e/c", b"", CreateMode::Persistent)
        .await
        .unwrap_err();
    assert!(
        matches!(err, RegistryError::NoChildrenForEphemerals { .. }),
        "{err:?}"
    );
}

/// A multi-op with a failing operation applies nothing and names the first failing one.
pub async fn a_failing_multi_applies_nothing_and_names_the_failing_op(b: &dyn Backend) {
    let s = b.open(&unique_namespace("multifail")).await.registry;
    s.create("/m", b"orig", CreateMode::Persistent)
        .await
        .unwrap();
    let ops = [
        Op::create("/m/a", b"".to_vec(), CreateMode::Persistent),
        Op::set("/m", b"changed".to_vec()),
        Op::Check {
            path: "/m".into(),
            version: 7,
        },
        Op::create("/m/b", b"".to_vec(), CreateMode::Persistent),
    ];
    match s.multi(&ops).await.unwrap_err() {
        RegistryError::MultiFailed {
            index,
            kind,
            path,
            source,
        } => {
            assert_eq!((index, kind, path.as_str()), (2, OpKind::Check, "/m"));
            assert!(source.is_bad_version(), "{source:?}");
        }
        other => panic!("expected MultiFailed, got {other:?}"),
    }
    let ops = [
        Op::create("/m/a", b"".to_vec(), CreateMode::Persistent),
        Op::delete("/m/missing"),
    ];
    let err = s.multi(&ops).await.unwrap_err();
    assert!(
        matches!(err, RegistryError::MultiFailed { index: 1, .. }),
        "{err:?}"
    );
    assert!(err.is_no_node());
    assert_eq!(s.get("/m").await.unwrap().0, b"orig");
    assert_eq!(s.get("/m").await.unwrap().1.version, 0);
    assert!(s.children("/m").await.unwrap().is_empty());
}

/// A successful multi-op applies every operation in order and reports each result.
pub async fn a_successful_multi_applies_every_op_in_order(b: &dyn Backend) {
    let s = b.open(&unique_namespace("multiok")).await.registry;
    let ops = [
        Op::create("/t", b"".to_vec(), CreateMode::Persistent),
        Op::create("/t/a", b"".to_vec(), CreateMode::Persistent),
        Op::set("/t", b"1".to_vec()),
        Op::Check {
            path: "/t".into(),
            version: 1,
        },
        Op::delete("/t/a"),
        Op::create("/t/s-", b"".to_vec(), CreateMode::PersistentSequential),
    ];
    let results = s.multi(&ops).await.unwrap();
    assert_eq!(results.len(), 6);
    assert_eq!(results[0], OpResult::Created("/t".into()));
    assert!(matches!(results[2], OpResult::Set(stat) if stat.version == 1));
    assert_eq!(results[3..5], [OpResult::Checked, OpResult::Deleted]);
    // One child create and one delete moved the parent's cversion to 2.
    assert_eq!(results[5], OpResult::Created("/t/s-0000000002".into()));
    assert_eq!(s.children("/t").await.unwrap(), ["s-0000000002"]);
    assert_eq!(s.get("/t").await.unwrap().0, b"1");
}

/// A recursive watch reports creates, changes and deletes of nested nodes and of multi-ops, in
/// the order they were applied.
pub async fn recursive_watches_see_every_change_below_them_in_order(b: &dyn Backend) {
    let s = b.open(&unique_namespace("watchorder")).await.registry;
    let mut watch = s.watch_recursive("/w").await.unwrap();
    s.create("/w", b"", CreateMode::Persistent).await.unwrap();
    s.create("/w/a", b"", CreateMode::Persistent).await.unwrap();
    s.create("/w/a/deep", b"", CreateMode::Ephemeral)
        .await
        .unwrap();
    s.set("/w/a/deep", b"x", None).await.unwrap();
    s.multi(&[
        Op::delete("/w/a/deep"),
        Op::set("/w/a", b"y".to_vec()),
        Op::create("/w/b", b"".to_vec(), CreateMode::Persistent),
    ])
    .await
    .unwrap();
    use NodeEventKind::{Created, DataChanged, Deleted};
    let expected = [
        ev(Created, "/w"),
        ev(Created, "/w/a"),
        ev(Created, "/w/a/deep"),
        ev(DataChanged, "/w/a/deep"),
        ev(Deleted, "/w/a/deep"),
        ev(DataChanged, "/w/a"),
        ev(Created, "/w/b"),
    ];
    assert_eq!(
        node_events(&mut watch, 7, "the watched changes").await,
        expected
    );
}

/// Changes outside the watched subtree, including siblings sharing a name prefix, are not seen.
pub async fn recursive_watches_do_not_see_changes_outside_their_subtree(b: &dyn Backend) {
    let s = b.open(&unique_namespace("watchscope")).await.registry;
    s.create("/a", b"", CreateMode::Persistent).await.unwrap();
    let mut watch = s.watch_recursive("/a").await.unwrap();
    s.create("/ab", b"", CreateMode::Persistent).await.unwrap();
    s.create("/b", b"", CreateMode::Persistent).await.unwrap();
    s.set("/", b"root", None).await.unwrap();
    s.create("/a/marker", b"", CreateMode::Persistent)
        .await
        .unwrap();
    let first = node_events(&mut watch, 1, "the marker inside the subtree").await;
    assert_eq!(first, [ev(NodeEventKind::Created, "/a/marker")]);
}

/// A cut connection is reported as Disconnected then Connected, and the session and its watch
/// work again afterwards.
pub async fn a_disconnected_session_reconnects_and_works_again(b: &dyn Backend) {
    let ns = unique_namespace("reconnect");
    let session = b.open(&ns).await;
    let s = session.registry.clone();
    s.create("/eph", b"", CreateMode::Ephemeral).await.unwrap();
    let mut watch = s.watch_recursive("/").await.unwrap();
    session.control.disconnect().await;
    let disconnected = |e: &WatchEvent| *e == WatchEvent::Session(SessionState::Disconnected);
    wait_for(&mut watch, disconnected, "Session(Disconnected)").await;
    session.control.reconnect().await;
    let connected = |e: &WatchEvent| *e == WatchEvent::Session(SessionState::Connected);
    wait_for(
        &mut watch,
        connected,
        "Session(Connected) after the reconnect",
    )
    .await;
    assert_eq!(*s.session_state().borrow(), SessionState::Connected);
    assert!(
        s.exists("/eph").await.unwrap().is_some(),
        "the session survived the gap"
    );
    s.create("/after", b"", CreateMode::Persistent)
        .await
        .unwrap();
    let after = node_events(&mut watch, 1, "an event after the reconnect").await;
    assert_eq!(after, [ev(NodeEventKind::Created, "/after")]);
}

/// The registry clock read through a node's mtime is close to the wall clock.
pub async fn server_time_is_close_to_the_wall_clock(b: &dyn Backend) {
    let s = b.open(&unique_namespace("time")).await.registry;
    let server = s.server_time_millis("/systemTime/current").await.unwrap();
    let skew = (server - now_millis()).abs();
    assert!(
        skew < 5_000,
        "server time {server} is {skew} ms from the wall clock"
    );
    assert!(s.exists("/systemTime/current").await.unwrap().is_some());
}

/// A connector opens sessions that see its namespace as `/`, created on connect, and namespaces
/// do not see each other.
pub async fn connectors_open_sessions_rooted_at_their_namespace(b: &dyn Backend) {
    let (ns1, ns2) = (unique_namespace("ns1"), unique_namespace("ns2"));
    let one = b.connector(&ns1).await.connect().await.unwrap();
    let two = b.connector(&ns2).await.connect().await.unwrap();
    one.create("/only-in-one", b"", CreateMode::Persistent)
        .await
        .unwrap();
    assert!(one.exists("/").await.unwrap().is_some());
    assert_eq!(two.exists("/only-in-one").await.unwrap(), None);
    let again = b.connector(&ns1).await.connect().await.unwrap();
    assert!(again.exists("/only-in-one").await.unwrap().is_some());
    assert_ne!(one.session_info().id, again.session_info().id);
    for s in [one, two, again] {
        s.close().await;
    }
}

/// Expands to one `#[tokio::test]` per conformance case for `$backend`, in a module `$module`.
#[macro_export]
macro_rules! conformance_tests {
    ($module:ident, $backend:expr) => {
        $crate::conformance_tests!(@cases $module, $backend, [
            create_get_set_delete_round_trip,
            children_are_sorted_names_and_listings_put_parents_first,
            creating_under_a_missing_parent_fails_with_no_node,
            creating_an_existing_node_fails_with_node_exists,
            stale_versions_fail_with_bad_version,
            deleting_a_node_with_children_fails_with_not_empty,
            sequential_creates_get_increasing_ten_digit_suffixes,
            ephemeral_nodes_vanish_when_their_session_closes,
            ephemeral_nodes_vanish_when_their_session_expires,
            ephemeral_nodes_cannot_have_children,
            a_failing_multi_applies_nothing_and_names_the_failing_op,
            a_successful_multi_applies_every_op_in_order,
            recursive_watches_see_every_change_below_them_in_order,
            recursive_watches_do_not_see_changes_outside_their_subtree,
            a_disconnected_session_reconnects_and_works_again,
            server_time_is_close_to_the_wall_clock,
            connectors_open_sessions_rooted_at_their_namespace,
        ]);
    };
    (@cases $module:ident, $backend:expr, [$($case:ident),* $(,)?]) => {
        mod $module {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    let backend = $backend;
                    $crate::support::conformance::$case(&backend).await;
                }
            )*
        }
    };
}
