//! Session-level behaviour of the embedded registry that the cross-backend conformance suite
//! cannot drive the same way on ZooKeeper: timeouts on paused time, fault injection, counters.

use std::time::Duration;

use super::EmbeddedServer;
use crate::registry::{
    CreateMode, NodeEventKind, Op, OpKind, Registry, RegistryError, SessionState, WatchEvent,
};

#[tokio::test(start_paused = true)]
async fn a_disconnected_session_expires_after_its_timeout_unless_it_reconnects() {
    let server = EmbeddedServer::new();
    let connector = server
        .connector("ns")
        .with_session_timeout(Duration::from_secs(4));
    let healed = connector.open();
    let lost = connector.open();
    lost.create("/lost", b"", CreateMode::Ephemeral)
        .await
        .unwrap();
    let mut state = lost.session_state();

    let start = tokio::time::Instant::now();
    healed.disconnect();
    lost.disconnect();
    let err = lost.get("/").await.unwrap_err();
    assert!(
        matches!(err, RegistryError::ConnectionLoss { .. }),
        "{err:?}"
    );
    tokio::time::sleep(Duration::from_secs(3)).await;
    healed.reconnect();
    state
        .wait_for(|s| *s == SessionState::Expired)
        .await
        .expect("the state channel stays open");

    assert_eq!(
        start.elapsed(),
        Duration::from_secs(4),
        "expiry waits for the timeout"
    );
    assert!(matches!(
        lost.get("/").await,
        Err(RegistryError::SessionExpired)
    ));
    assert_eq!(healed.exists("/lost").await.unwrap(), None);
    // The healed session outlives the timeout its earlier disconnect armed.
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(
        server.session_state(healed.id()),
        Some(SessionState::Connected)
    );
}

#[tokio::test]
async fn events_during_a_disconnect_are_lost_and_later_ones_delivered() {
    let server = EmbeddedServer::new();
    let watcher = server.connector("ns").open();
    let writer = server.connector("ns").open();
    let mut watch = watcher.watch_recursive("/").await.unwrap();
    watcher.disconnect();
    writer
        .create("/missed", b"", CreateMode::Persistent)
        .await
        .unwrap();
    watcher.reconnect();
    writer
        .create("/seen", b"", CreateMode::Persistent)
        .await
        .unwrap();
    let mut got = Vec::new();
    while let Ok(e) = watch.try_recv() {
        got.push(e);
    }
    let node = |path: &str| WatchEvent::Node {
        kind: NodeEventKind::Created,
        path: path.into(),
    };
    assert_eq!(
        got,
        [
            WatchEvent::Session(SessionState::Disconnected),
            WatchEvent::Session(SessionState::Connected),
            node("/seen"),
        ]
    );
}

#[tokio::test]
async fn injected_faults_hit_only_the_matching_call_and_fire_once() {
    let server = EmbeddedServer::new();
    let s = server.connector("ns").open();
    s.create("/a", b"", CreateMode::Persistent).await.unwrap();
    s.fail_next(Some(OpKind::Set), Some("/a"));
    s.get("/a").await.unwrap();
    let err = s.set("/a", b"1", None).await.unwrap_err();
    assert!(
        matches!(
            err,
            RegistryError::Injected {
                op: OpKind::Set,
                ..
            }
        ),
        "{err:?}"
    );
    s.set("/a", b"1", None).await.unwrap();

    // An operation-kind fault fails a multi-op at that operation and applies nothing.
    s.fail_next(Some(OpKind::Create), Some("/a/y"));
    let ops = [
        Op::create("/a/x", Vec::new(), CreateMode::Persistent),
        Op::create("/a/y", Vec::new(), CreateMode::Persistent),
    ];
    let err = s.multi(&ops).await.unwrap_err();
    assert!(
        matches!(&err, RegistryError::MultiFailed { index: 1, source, .. }
            if matches!(**source, RegistryError::Injected { .. }))
    );
    assert!(s.children("/a").await.unwrap().is_empty());
    server.fail_next_any(Some(OpKind::Multi), None);
    let err = s.multi(&ops).await.unwrap_err();
    assert!(
        matches!(
            err,
            RegistryError::Injected {
                op: OpKind::Multi,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(s.multi(&ops).await.unwrap().len(), 2);

    let counts = server.op_counts();
    assert_eq!(counts[&OpKind::Multi], 3);
    assert_eq!(counts[&OpKind::Set], 2);
    assert_eq!(counts.get(&OpKind::List), None);
}

#[tokio::test]
async fn namespaces_are_chroots_and_errors_name_namespace_paths() {
    let server = EmbeddedServer::new();
    let s = server.connector("/deep/ns/").open();
    let created = s
        .create("/q-", b"", CreateMode::PersistentSequential)
        .await
        .unwrap();
    assert_eq!(created, "/q-0000000000");
    let whole = server.connector("").open();
    assert!(whole
        .exists("/deep/ns/q-0000000000")
        .await
        .unwrap()
        .is_some());
    match s.create("/x/y", b"", CreateMode::Persistent).await {
        Err(RegistryError::NoNode { path }) => assert_eq!(path, "/x"),
        other => panic!("expected NoNode, got {other:?}"),
    }
    let listed: Vec<_> = s
        .list_subtree("/")
        .await
        .unwrap()
        .into_iter()
        .map(|n| n.path)
        .collect();
    assert_eq!(listed, ["/", "/q-0000000000"]);
}

#[tokio::test]
async fn a_dropped_session_keeps_its_ephemerals_until_its_timeout() {
    let server = EmbeddedServer::new();
    let connector = server
        .connector("ns")
        .with_session_timeout(Duration::from_millis(50));
    let observer = connector.open();
    let mut watch = observer.watch_recursive("/").await.unwrap();
    let crashed = connector.open();
    crashed
        .create("/e", b"", CreateMode::Ephemeral)
        .await
        .unwrap();
    drop(crashed);
    assert!(observer.exists("/e").await.unwrap().is_some());
    loop {
        match watch.recv().await {
            Some(WatchEvent::Node {
                kind: NodeEventKind::Deleted,
                path,
            }) if path == "/e" => break,
            Some(_) => continue,
            None => panic!("the observer's watch ended before the ephemeral was deleted"),
        }
    }
}
