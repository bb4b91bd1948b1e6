//! ZooKeeper-only behaviour of the backend, against a real server: namespaces and chroot, digest
//! ACLs, several hosts, call bounds, expiry, big listings. What every backend must do alike lives in
//! the conformance suite.

#[macro_use]
extern crate support;

use support::namespace;
use support::Peer;

use std::time::{Duration, Instant};

use shardcron::registry::zookeeper::{ZkConfig, ZkConnector};
use shardcron::registry::{
    Connector, CreateMode, NodeEventKind, Op, OpKind, Registry, RegistryError, SessionState,
    WatchEvent, WatchStream,
};
use support::backend::SessionControl;
use support::{wait, zk};

/// An address nobody listens on (a port bound, then freed).
fn dead_address() -> std::net::SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap()
}

/// A session of `backend` on a namespace of its own (`tag`), its connection cut, once the client
/// has seen `state`.
async fn cut_off(backend: zk::ZkBackend, tag: &str, state: SessionState) -> zk::ZkTestSession {
    let t = backend.open_zk(&namespace("zk", tag)).await;
    t.control.disconnect().await;
    t.control.wait_state(state).await;
    t
}

#[tokio::test]
async fn connecting_creates_a_nested_namespace_and_chroots_into_it() {
    require!(Peer::ZooKeeper);
    let backend = zk::backend();
    let parent = namespace("zk", "chroot");
    let nested = format!("{parent}/inner");
    tracing::info!("--- a session on a namespace whose parents do not exist yet");
    let s = ZkConnector::new(backend.config(&nested))
        .connect()
        .await
        .unwrap();
    assert_eq!(s.children("/").await.unwrap(), Vec::<String>::new());
    s.create("/job", b"x", CreateMode::Persistent)
        .await
        .unwrap();
    tracing::info!("--- the parent namespace sees it one level down");
    let outer = ZkConnector::new(backend.config(&parent))
        .connect()
        .await
        .unwrap();
    assert_eq!(outer.children("/inner").await.unwrap(), ["job"]);
    assert_eq!(outer.get("/inner/job").await.unwrap().0, b"x");
}

#[tokio::test]
async fn digest_auth_refuses_another_identity_with_no_auth() {
    require!(Peer::ZooKeeper);
    let backend = zk::backend();
    let ns = namespace("zk", "digest");
    let as_user = |who: &str| ZkConnector::new(backend.config(&ns).with_digest(who).unwrap());
    tracing::info!("--- alice creates the namespace and a node, creator-only");
    let alice = as_user("alice:secret").connect().await.unwrap();
    alice
        .create("/job", b"mine", CreateMode::Persistent)
        .await
        .unwrap();
    tracing::info!(
        "--- bob and an anonymous session are refused at connect, alice's other session is not"
    );
    // A connector reads the namespace node as it connects, so a wrong identity is told at once.
    for (who, connector) in [
        ("bob", as_user("bob:secret")),
        (
            "an anonymous session",
            ZkConnector::new(backend.config(&ns)),
        ),
    ] {
        match connector.connect().await {
            Err(e) => assert!(
                format!("{e}").contains("NoAuth") || format!("{e:?}").contains("NoAuth"),
                "{who} connecting to alice's namespace: expected NoAuth, got {e}"
            ),
            Ok(_) => panic!("{who} connected to alice's creator-only namespace"),
        }
    }
    let alice_again = as_user("alice:secret").connect().await.unwrap();
    assert_eq!(alice_again.get("/job").await.unwrap().0, b"mine");
}

#[tokio::test]
async fn a_dead_host_in_the_connect_string_is_skipped() {
    require!(Peer::ZooKeeper);
    let backend = zk::backend();
    let dead = dead_address();
    let live = backend.server().connect_string();
    // The client shuffles its hosts, so a few sessions try both orders.
    for (i, connect) in [format!("{dead},{live}"), format!("{live},{dead}")]
        .iter()
        .enumerate()
    {
        for _ in 0..2 {
            let config = backend.config_via(connect, &namespace("zk", "hosts"));
            let s = ZkConnector::new(config)
                .connect()
                .await
                .unwrap_or_else(|e| panic!("connect string {i} {connect} with one dead host: {e}"));
            assert_eq!(s.session_state().borrow().clone(), SessionState::Connected);
        }
    }
}

#[tokio::test]
async fn connecting_to_dead_hosts_fails_with_a_connect_error_naming_them() {
    require!(Peer::ZooKeeper);
    let backend = zk::backend();
    let dead = dead_address();
    let connector = ZkConnector::new(backend.config_via(&dead.to_string(), "dead"));
    match connector.connect().await {
        Err(RegistryError::Connect { target, .. }) => assert!(target.contains(&dead.to_string())),
        other => panic!("expected a Connect error, got {other:?}"),
    }
}

#[tokio::test]
async fn calls_are_bounded_by_the_call_timeout() {
    require!(Peer::ZooKeeper);
    let backend = zk::backend().with_call_timeout(Duration::from_millis(300));
    // A call sent before the client notices fails fast with ConnectionLoss; one sent while it
    // reconnects waits, and that wait is what the bound is for.
    let t = cut_off(backend, "timeout", SessionState::Disconnected).await;
    let started = Instant::now();
    match t.session.get("/job").await {
        Err(RegistryError::Timeout {
            op: OpKind::Get,
            path,
            after,
        }) => {
            assert_eq!((path.as_str(), after), ("/job", Duration::from_millis(300)));
        }
        other => panic!("a get while cut off: expected Timeout, got {other:?}"),
    }
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(t.session.session.op_counts().err(OpKind::Get), 1);
}

#[tokio::test]
async fn an_expired_session_fails_every_call_with_session_expired() {
    require!(Peer::ZooKeeper);
    let backend = zk::backend();
    let ns = namespace("zk", "expired");
    let t = backend.open_zk(&ns).await;
    t.session
        .create("/mine", b"", CreateMode::Ephemeral)
        .await
        .unwrap();
    tracing::info!("--- the server ends the session");
    t.control.expire().await;
    assert_eq!(*t.session.session_state().borrow(), SessionState::Expired);
    for outcome in [
        t.session.get("/mine").await.map(drop),
        t.session
            .create("/x", b"", CreateMode::Persistent)
            .await
            .map(drop),
        t.session.multi(&[Op::delete("/mine")]).await.map(drop),
    ] {
        assert!(
            matches!(outcome, Err(RegistryError::SessionExpired)),
            "{outcome:?}"
        );
    }
    let other = ZkConnector::new(backend.config(&ns))
        .connect()
        .await
        .unwrap();
    assert_eq!(other.exists("/mine").await.unwrap(), None);
}

#[tokio::test]
async fn a_session_cut_off_longer_than_its_timeout_expires() {
    require!(Peer::ZooKeeper);
    let backend = zk::backend().with_session_timeout(Duration::from_millis(800));
    let t = cut_off(backend, "cutoff", SessionState::Expired).await;
    t.control.reconnect().await;
    assert!(matches!(
        t.session.children("/").await,
        Err(RegistryError::SessionExpired)
    ));
}

#[tokio::test]
async fn closing_ends_the_session_and_later_calls_fail_with_closed() {
    require!(Peer::ZooKeeper);
    let backend = zk::backend();
    let ns = namespace("zk", "close");
    let s = ZkConnector::new(backend.config(&ns))
        .connect()
        .await
        .unwrap();
    s.create("/mine", b"", CreateMode::Ephemeral).await.unwrap();
    s.close().await;
    assert_eq!(*s.session_state().borrow(), SessionState::Closed);
    assert!(matches!(s.get("/mine").await, Err(RegistryError::Closed)));
    let other = ZkConnector::new(backend.config(&ns))
        .connect()
        .await
        .unwrap();
    assert_eq!(
        other.exists("/mine").await.unwrap(),
        None,
        "ephemeral gone at close"
    );
}

#[tokio::test]
async fn session_info_reports_the_negotiated_timeout() {
    require!(Peer::ZooKeeper);
    // The server caps sessions at 60 s; asking for more gets the cap.
    let backend = zk::backend().with_session_timeout(Duration::from_secs(100));
    let s = ZkConnector::new(backend.config(&namespace("zk", "info")))
        .connect()
        .await
        .unwrap();
    let info = s.session_info();
    assert_ne!(info.id, 0);
    assert_eq!(info.timeout, Duration::from_secs(60));
}

#[tokio::test]
async fn op_counts_split_calls_by_kind_and_outcome() {
    require!(Peer::ZooKeeper);
    let backend = zk::backend();
    let connector = ZkConnector::new(backend.config(&namespace("zk", "counts")));
    let s = connector.connect_session().await.unwrap();
    s.create("/a", b"", CreateMode::Persistent).await.unwrap();
    s.get("/a").await.unwrap();
    assert!(s.get("/missing").await.unwrap_err().is_no_node());
    let counts = connector.op_counts();
    assert_eq!((counts.ok(OpKind::Get), counts.err(OpKind::Get)), (1, 1));
    assert_eq!(counts.ok(OpKind::Create), 1);
    assert_eq!(s.op_counts(), counts);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_subtree_reads_twenty_thousand_nodes_in_pipelined_batches() {
    require!(Peer::ZooKeeper);
    const PARENTS: usize = 200;
    const CHILDREN: usize = 100;
    let backend = zk::backend();
    let connector = ZkConnector::new(backend.config(&namespace("zk", "list")));
    let s = connector.connect_session().await.unwrap();
    tracing::info!("--- {PARENTS} parents with {CHILDREN} children each, one multi-op per parent");
    s.create("/job", b"root", CreateMode::Persistent)
        .await
        .unwrap();
    for p in 0..PARENTS {
        let parent = format!("/job/p{p:03}");
        let mut ops = vec![Op::create(parent.as_str(), b"", CreateMode::Persistent)];
        ops.extend((0..CHILDREN).map(|c| {
            Op::create(
                format!("{parent}/c{c:03}"),
                c.to_string(),
                CreateMode::Persistent,
            )
        }));
        s.multi(&ops).await.unwrap();
    }
    tracing::info!("--- one listing");
    let before = connector.op_counts();
    let started = Instant::now();
    let nodes = s.list_subtree("/job").await.unwrap();
    let took = started.elapsed();
    assert_eq!(nodes.len(), 1 + PARENTS + PARENTS * CHILDREN);
    assert_eq!(
        (nodes[0].path.as_str(), nodes[0].data.as_slice()),
        ("/job", &b"root"[..])
    );
    assert_eq!(nodes[1].path, "/job/p000");
    assert_eq!(nodes[1 + PARENTS].path, "/job/p000/c000");
    let last = nodes.last().unwrap();
    assert_eq!(
        (last.path.as_str(), last.data.as_slice()),
        ("/job/p199/c099", &b"99"[..])
    );
    assert!(
        took < Duration::from_secs(3),
        "listing {} nodes took {took:?}",
        nodes.len()
    );
    let delta = connector.op_counts().since(&before);
    assert_eq!(delta.iter().collect::<Vec<_>>(), [(OpKind::List, 1, 0)]);
    tracing::info!("--- a missing root is an error, not an empty listing");
    assert!(s.list_subtree("/nope").await.unwrap_err().is_no_node());
}

/// zookeeper-client 0.11.2 forgets persistent watches on reconnect; the backend registers its
/// watch again, once: no event is lost after the `Connected`, none is doubled.
#[tokio::test]
async fn a_recursive_watch_keeps_reporting_after_a_reconnect_without_duplicates() {
    require!(Peer::ZooKeeper);
    let backend = zk::backend();
    let t = backend.open_zk(&namespace("zk", "rewatch")).await;
    let s = t.session.clone();
    let mut watch = s.watch_recursive("/").await.unwrap();
    for round in 0..2 {
        tracing::info!("--- cut and restore, round {round}");
        t.control.disconnect().await;
        let gone = |e: &WatchEvent| *e == WatchEvent::Session(SessionState::Disconnected);
        next_matching(&mut watch, gone, "Session(Disconnected)").await;
        t.control.reconnect().await;
        let back = |e: &WatchEvent| *e == WatchEvent::Session(SessionState::Connected);
        next_matching(&mut watch, back, "Session(Connected)").await;
        let (a, b) = (format!("/a{round}"), format!("/b{round}"));
        s.create(&a, b"", CreateMode::Persistent).await.unwrap();
        s.create(&b, b"", CreateMode::Persistent).await.unwrap();
        for expected in [&a, &b] {
            let event = next_matching(&mut watch, |_| true, "the next node event").await;
            let want = WatchEvent::Node {
                kind: NodeEventKind::Created,
                path: expected.clone(),
            };
            assert_eq!(event, want, "round {round}");
        }
    }
}

/// The next event matching `pred` (others skipped), failing with `what` after 30 s.
async fn next_matching(
    rx: &mut WatchStream,
    pred: impl FnMut(&WatchEvent) -> bool,
    what: &str,
) -> WatchEvent {
    wait::next_matching(
        async || rx.recv().await,
        pred,
        what,
        Duration::from_secs(30),
    )
    .await
}

/// The launcher's stop and resume keep the port and the data, so a session outlives a server crash
/// shorter than its timeout, ephemerals included.
#[tokio::test]
async fn a_session_outlives_a_server_restart_shorter_than_its_timeout() {
    require!(Peer::ZooKeeper);
    let server = zk::ZkServer::start();
    let config = ZkConfig::new(&server.connect_string(), "restart")
        .unwrap()
        .with_session_timeout(Duration::from_secs(20));
    let s = ZkConnector::new(config).connect().await.unwrap();
    s.create("/mine", b"", CreateMode::Ephemeral).await.unwrap();
    let mut state = s.session_state();
    tracing::info!("--- the server crashes and comes back on the same port and data");
    server.stop();
    assert!(!server.is_running());
    wait_state(&mut state, SessionState::Disconnected).await;
    server.resume();
    wait_state(&mut state, SessionState::Connected).await;
    assert!(s.exists("/mine").await.unwrap().is_some());
}

async fn wait_state(rx: &mut tokio::sync::watch::Receiver<SessionState>, want: SessionState) {
    let what = format!("session state {want:?}");
    let check = |s: &SessionState| if *s == want { Ok(()) } else { Err(*s) };
    wait::wait_until_changed(rx, check, &what, Duration::from_secs(30)).await;
}
