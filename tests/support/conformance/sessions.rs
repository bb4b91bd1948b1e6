//! Conformance cases on sessions and watches: ephemerals dying with their session, recursive
//! watch order and scope, disconnects, expiry, the registry clock, namespaces.

use crate::namespace;
use shardcron::registry::{CreateMode, NodeEventKind, Op, RegistryError, SessionState, WatchEvent};

use super::{ev, node_events, now_millis, wait_for, WAIT};
use crate::backend::{ephemeral_and_other, Backend};

/// An ephemeral node belongs to its session and goes when that session closes.
pub async fn ephemeral_nodes_vanish_when_their_session_closes(b: &dyn Backend) {
    let ns = namespace("conf", "close");
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
    let ns = namespace("conf", "expire");
    let (doomed, other) = ephemeral_and_other(b, &ns, "/eph").await;
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

/// A recursive watch reports creates, changes and deletes of nested nodes and of multi-ops, in
/// the order they were applied.
pub async fn recursive_watches_see_every_change_below_them_in_order(b: &dyn Backend) {
    let s = b.open(&namespace("conf", "watchorder")).await.registry;
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
    let s = b.open(&namespace("conf", "watchscope")).await.registry;
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
    let ns = namespace("conf", "reconnect");
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
    // The state channel and the watch stream are separate channels; either may be told first.
    let mut state = s.session_state();
    let reached = tokio::time::timeout(WAIT, state.wait_for(|s| *s == SessionState::Connected));
    assert!(
        matches!(reached.await, Ok(Ok(_))),
        "session_state() reaches Connected"
    );
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
    let s = b.open(&namespace("conf", "time")).await.registry;
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
    let (ns1, ns2) = (namespace("conf", "ns1"), namespace("conf", "ns2"));
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
