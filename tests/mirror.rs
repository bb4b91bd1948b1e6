//! The mirror against every backend: after any sequence of changes, a gap in the connection, or a
//! new session after an expiry, the mirror equals a fresh listing and says what changed.
//!
//! Waits are barriers, not sleeps: a test writes a marker node after its changes and waits for the
//! mirror's `Created` event of the marker; the feed applies events in order, so everything before
//! it has been applied.

#[macro_use]
extern crate support;

use shardcron::registry::mirror::{Mirror, MirrorEvent};
use shardcron::registry::{CreateMode, Op, OpKind, Registry, RegistryError, SessionState};
use support::backend::{ephemeral_and_other, Backend};
use support::conformance::wait_for;
use support::mirror::{barrier, drain, listing, mirrored};
use support::namespace;

/// A small deterministic generator, so a failing sequence can be replayed from its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self, below: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % below
    }

    fn path(&mut self) -> String {
        let depth = 1 + self.next(4);
        (0..depth)
            .map(|_| ["a", "b", "c"][self.next(3) as usize])
            .fold(String::new(), |p, seg| format!("{p}/{seg}"))
    }

    fn op(&mut self) -> Op {
        let path = self.path();
        let data = format!("d{}", self.next(1000)).into_bytes();
        match self.next(6) {
            0 | 1 => Op::create(path, data, CreateMode::Persistent),
            2 => Op::create(path, data, CreateMode::Ephemeral),
            3 => Op::create(format!("{path}-"), data, CreateMode::PersistentSequential),
            4 => Op::set(path, data),
            _ => Op::delete(path),
        }
    }
}

/// Applies `count` random operations (a quarter of them as multi-ops of up to three); the tree's
/// refusals (missing parent, existing node, children) are part of the game.
async fn random_changes(s: &dyn Registry, rng: &mut Rng, count: usize) {
    for _ in 0..count {
        let result = if rng.next(4) == 0 {
            let ops: Vec<Op> = (0..1 + rng.next(3)).map(|_| rng.op()).collect();
            s.multi(&ops).await.map(drop)
        } else {
            match rng.op() {
                Op::Create { path, data, mode } => s.create(&path, &data, mode).await.map(drop),
                Op::Set { path, data, .. } => s.set(&path, &data, None).await.map(drop),
                Op::Delete { path, .. } => s.delete(&path, None).await,
                Op::Check { .. } => unreachable!("the generator makes no checks"),
            }
        };
        match result.as_ref().map_err(RegistryError::cause) {
            Ok(())
            | Err(RegistryError::NoNode { .. })
            | Err(RegistryError::NodeExists { .. })
            | Err(RegistryError::NotEmpty { .. })
            | Err(RegistryError::NoChildrenForEphemerals { .. }) => {}
            Err(other) => panic!("unexpected registry error {other:?}"),
        }
    }
}

/// Random creates, sets, deletes and multi-ops on a deep tree leave the mirror equal to a listing.
async fn the_mirror_equals_a_listing_after_random_changes(b: &dyn Backend) {
    let s = b.open(&namespace("conf", "mirror-random")).await.registry;
    let mirror = Mirror::new();
    let mut feed = mirror
        .feed(s.clone(), "/")
        .await
        .expect("starting the feed");
    assert!(mirror.is_synced());
    for seed in 1..=4u64 {
        tracing::info!("--- seed {seed}");
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        random_changes(s.as_ref(), &mut rng, 150).await;
        barrier(s.as_ref(), &mut feed, &format!("barrier-{seed}")).await;
        assert_eq!(mirrored(&mirror), listing(s.as_ref()).await, "seed {seed}");
        let kids = s.children("/").await.unwrap();
        assert_eq!(mirror.children("/"), kids, "seed {seed}: the child index");
    }
}

/// An event arrives after the mirror holds the change it announces.
async fn an_event_arrives_after_the_mirror_holds_its_change(b: &dyn Backend) {
    let s = b.open(&namespace("conf", "mirror-order")).await.registry;
    let mirror = Mirror::new();
    let mut feed = mirror
        .feed(s.clone(), "/")
        .await
        .expect("starting the feed");
    s.create("/job", b"v1", CreateMode::Persistent)
        .await
        .unwrap();
    let created = |e: &MirrorEvent| matches!(e, MirrorEvent::Created { path } if path == "/job");
    wait_for(feed.events(), created, "Created for /job").await;
    assert_eq!(mirror.data("/job").as_deref(), Some(&b"v1"[..]));
    s.set("/job", b"v2", None).await.unwrap();
    let changed = |e: &MirrorEvent| matches!(e, MirrorEvent::Changed { path } if path == "/job");
    wait_for(feed.events(), changed, "Changed for /job").await;
    assert_eq!(mirror.data("/job").as_deref(), Some(&b"v2"[..]));
    s.delete("/job", None).await.unwrap();
    let deleted = |e: &MirrorEvent| matches!(e, MirrorEvent::Deleted { path } if path == "/job");
    wait_for(feed.events(), deleted, "Deleted for /job").await;
    assert!(!mirror.exists("/job"));
}

/// Changes another session makes while the feed's session is cut are found by the re-list.
async fn the_mirror_converges_after_a_disconnect(b: &dyn Backend) {
    let ns = namespace("conf", "mirror-gap");
    let fed = b.open(&ns).await;
    let other = b.open(&ns).await.registry;
    for p in ["/keep", "/change", "/drop", "/drop/child"] {
        other
            .create(p, b"old", CreateMode::Persistent)
            .await
            .unwrap();
    }
    let mirror = Mirror::new();
    let mut feed = mirror
        .feed(fed.registry.clone(), "/")
        .await
        .expect("starting the feed");
    let mut synced = mirror.synced();

    tracing::info!("--- cut the feed's connection and change the tree meanwhile");
    fed.control.disconnect().await;
    let cut = |e: &MirrorEvent| *e == MirrorEvent::Session(SessionState::Disconnected);
    wait_for(feed.events(), cut, "Session(Disconnected) from the feed").await;
    assert!(!mirror.is_synced());
    other
        .create("/new", b"n", CreateMode::Persistent)
        .await
        .unwrap();
    other.set("/change", b"new", None).await.unwrap();
    other.delete_recursive("/drop").await.unwrap();

    tracing::info!("--- reconnect: the re-list reports the gap's changes, then Resynced");
    fed.control.reconnect().await;
    let mut diffs = Vec::new();
    let resynced = |e: &MirrorEvent| {
        diffs.push(e.clone());
        *e == MirrorEvent::Resynced
    };
    wait_for(feed.events(), resynced, "Resynced after the reconnect").await;
    for expected in [
        MirrorEvent::Created {
            path: "/new".into(),
        },
        MirrorEvent::Changed {
            path: "/change".into(),
        },
        MirrorEvent::Deleted {
            path: "/drop/child".into(),
        },
        MirrorEvent::Deleted {
            path: "/drop".into(),
        },
    ] {
        assert!(
            diffs.contains(&expected),
            "{expected:?} missing from {diffs:?}"
        );
    }
    let child_first = diffs
        .iter()
        .position(|e| matches!(e, MirrorEvent::Deleted { path } if path == "/drop/child"));
    let parent = diffs
        .iter()
        .position(|e| matches!(e, MirrorEvent::Deleted { path } if path == "/drop"));
    assert!(
        child_first < parent,
        "children are deleted before parents: {diffs:?}"
    );
    synced
        .wait_for(|s| *s)
        .await
        .expect("the mirror marks itself synced");
    assert_eq!(mirrored(&mirror), listing(other.as_ref()).await);
}

/// After an expiry the feed ends; a feed on a new session re-lists into the same mirror and
/// reports what changed, including the expired session's vanished ephemerals.
async fn a_new_session_after_expiry_re_lists_into_the_same_mirror(b: &dyn Backend) {
    let ns = namespace("conf", "mirror-expiry");
    let (first, other) = ephemeral_and_other(b, &ns, "/mine").await;
    other
        .create("/shared", b"1", CreateMode::Persistent)
        .await
        .unwrap();
    let mirror = Mirror::new();
    let mut feed = mirror
        .feed(first.registry.clone(), "/")
        .await
        .expect("starting the feed");
    assert!(mirror.exists("/mine"));

    tracing::info!("--- expire the feed's session; change the tree before the new session");
    first.control.expire().await;
    let expired = |e: &MirrorEvent| *e == MirrorEvent::Session(SessionState::Expired);
    wait_for(feed.events(), expired, "Session(Expired) from the feed").await;
    assert!(!mirror.is_synced());
    assert!(
        feed.recv().await.is_none(),
        "the feed ends after its session expired"
    );
    other.set("/shared", b"2", None).await.unwrap();
    other
        .create("/later", b"", CreateMode::Persistent)
        .await
        .unwrap();

    tracing::info!("--- feed again from a new session");
    let second = b.open(&ns).await.registry;
    let mut feed = mirror
        .feed(second.clone(), "/")
        .await
        .expect("restarting the feed");
    assert!(mirror.is_synced());
    let diffs = drain(&mut feed);
    assert_eq!(diffs.last(), Some(&MirrorEvent::Resynced));
    for expected in [
        MirrorEvent::Deleted {
            path: "/mine".into(),
        },
        MirrorEvent::Changed {
            path: "/shared".into(),
        },
        MirrorEvent::Created {
            path: "/later".into(),
        },
    ] {
        assert!(
            diffs.contains(&expected),
            "{expected:?} missing from {diffs:?}"
        );
    }
    assert_eq!(mirrored(&mirror), listing(second.as_ref()).await);
}

// The cases, on every backend.
backend_tests!(
    embedded,
    support::embedded::backend(),
    [
        the_mirror_equals_a_listing_after_random_changes,
        an_event_arrives_after_the_mirror_holds_its_change,
        the_mirror_converges_after_a_disconnect,
        a_new_session_after_expiry_re_lists_into_the_same_mirror
    ]
);
backend_tests!(zookeeper, support::zk::backend(), [the_mirror_equals_a_listing_after_random_changes, an_event_arrives_after_the_mirror_holds_its_change, the_mirror_converges_after_a_disconnect, a_new_session_after_expiry_re_lists_into_the_same_mirror], requires support::Peer::ZooKeeper);

/// A read that fails while connected (no reconnect will come) leaves a gap that the next event
/// closes with a re-list.
#[tokio::test]
async fn a_failed_read_is_repaired_by_a_re_list_on_the_next_event() {
    let backend = support::embedded::backend();
    let session = std::sync::Arc::new(backend.open_embedded(&namespace("conf", "mirror-fault")));
    let mirror = Mirror::new();
    let mut feed = mirror
        .feed(session.clone(), "/")
        .await
        .expect("starting the feed");
    assert_eq!(drain(&mut feed).last(), Some(&MirrorEvent::Resynced));
    session.fail_next(Some(OpKind::Get), Some("/lost"));
    session
        .create("/lost", b"x", CreateMode::Persistent)
        .await
        .unwrap();
    session
        .create("/next", b"", CreateMode::Persistent)
        .await
        .unwrap();
    let resynced = |e: &MirrorEvent| *e == MirrorEvent::Resynced;
    wait_for(feed.events(), resynced, "the re-list after the failed read").await;
    assert!(mirror.exists("/lost") && mirror.exists("/next"));
    assert!(mirror.is_synced());
    assert_eq!(mirrored(&mirror), listing(session.as_ref()).await);
}
