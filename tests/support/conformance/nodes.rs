//! Conformance cases on node semantics: round trips, typed refusals, sequences, multi-ops.

use crate::namespace;
use shardcron::registry::{CreateMode, Op, OpKind, OpResult, Registry, RegistryError, ANY_VERSION};

use super::now_millis;
use crate::backend::Backend;

/// The error of a create that must fail.
async fn refused_create(
    s: &dyn Registry,
    path: &str,
    data: &[u8],
    mode: CreateMode,
) -> RegistryError {
    s.create(path, data, mode).await.unwrap_err()
}

/// create, get, set (data version and mzxid move on), exists, delete.
pub async fn create_get_set_delete_round_trip(b: &dyn Backend) {
    let s = b.open(&namespace("conf", "roundtrip")).await.registry;
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
    let s = b.open(&namespace("conf", "children")).await.registry;
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

/// `get_many` returns one result per path, in order, across request batches; a missing node is
/// that path's NoNode only.
pub async fn get_many_reads_every_path_in_order_and_a_missing_one_is_its_own_no_node(
    b: &dyn Backend,
) {
    let s = b.open(&namespace("conf", "getmany")).await.registry;
    s.create("/m", b"", CreateMode::Persistent).await.unwrap();
    // More paths than one multi-read request holds.
    let mut paths = Vec::new();
    for i in 0..300 {
        let path = format!("/m/n{i:03}");
        if i % 100 != 7 {
            s.create(&path, path.as_bytes(), CreateMode::Persistent)
                .await
                .unwrap();
        }
        paths.push(path);
    }
    let results = s.get_many(&paths).await.unwrap();
    assert_eq!(results.len(), paths.len());
    for (i, (path, result)) in paths.iter().zip(&results).enumerate() {
        if i % 100 == 7 {
            assert!(
                result.as_ref().is_err_and(|e| e.is_no_node()),
                "{path}: {result:?}"
            );
        } else {
            let (data, stat) = result.as_ref().unwrap_or_else(|e| panic!("{path}: {e}"));
            assert_eq!(data, path.as_bytes());
            assert_eq!(stat.version, 0);
        }
    }
    assert!(s.get_many(&[]).await.unwrap().is_empty());
}

/// A create whose parent is missing fails with NoNode.
pub async fn creating_under_a_missing_parent_fails_with_no_node(b: &dyn Backend) {
    let s = b.open(&namespace("conf", "noparent")).await.registry;
    let err = refused_create(&*s, "/a/b", b"", CreateMode::Persistent).await;
    assert!(matches!(err, RegistryError::NoNode { .. }), "{err:?}");
}

/// A second create of one path fails with NodeExists.
pub async fn creating_an_existing_node_fails_with_node_exists(b: &dyn Backend) {
    let s = b.open(&namespace("conf", "exists")).await.registry;
    s.create("/a", b"1", CreateMode::Persistent).await.unwrap();
    let err = refused_create(&*s, "/a", b"2", CreateMode::Ephemeral).await;
    assert!(matches!(err, RegistryError::NodeExists { .. }), "{err:?}");
    assert_eq!(s.get("/a").await.unwrap().0, b"1");
}

/// Versioned set and delete with a stale version fail with BadVersion and change nothing.
pub async fn stale_versions_fail_with_bad_version(b: &dyn Backend) {
    let s = b.open(&namespace("conf", "badversion")).await.registry;
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
    let s = b.open(&namespace("conf", "notempty")).await.registry;
    s.create("/a", b"", CreateMode::Persistent).await.unwrap();
    s.create("/a/b", b"", CreateMode::Persistent).await.unwrap();
    let err = s.delete("/a", None).await.unwrap_err();
    assert!(matches!(err, RegistryError::NotEmpty { .. }), "{err:?}");
    s.delete_recursive("/a").await.unwrap();
    assert_eq!(s.exists("/a").await.unwrap(), None);
}

/// Sequential creates append increasing, zero-padded 10-digit numbers.
pub async fn sequential_creates_get_increasing_ten_digit_suffixes(b: &dyn Backend) {
    let s = b.open(&namespace("conf", "sequence")).await.registry;
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

/// A create under an ephemeral fails with NoChildrenForEphemerals.
pub async fn ephemeral_nodes_cannot_have_children(b: &dyn Backend) {
    let s = b.open(&namespace("conf", "ephkids")).await.registry;
    s.create("/e", b"", CreateMode::Ephemeral).await.unwrap();
    let err = refused_create(&*s, "/e/c", b"", CreateMode::Persistent).await;
    assert!(
        matches!(err, RegistryError::NoChildrenForEphemerals { .. }),
        "{err:?}"
    );
}

/// `Check` at [`ANY_VERSION`] passes for an existing node whatever its version and fails with
/// NoNode for a missing one; creating and deleting a node in one multi-op fails when it exists
/// (the guard of a failover mark).
pub async fn a_check_at_any_version_needs_only_the_node_and_a_create_delete_pair_asserts_absence(
    b: &dyn Backend,
) {
    let s = b.open(&namespace("conf", "anyversion")).await.registry;
    s.create("/r", b"", CreateMode::Persistent).await.unwrap();
    s.set("/r", b"v1", None).await.unwrap();
    let guarded = |proof: &str| {
        vec![
            Op::Check {
                path: proof.into(),
                version: ANY_VERSION,
            },
            Op::create("/mark", b"".to_vec(), CreateMode::Persistent),
            Op::create("/taken", b"".to_vec(), CreateMode::Ephemeral),
            Op::delete("/taken"),
        ]
    };
    let err = s.multi(&guarded("/missing")).await.unwrap_err();
    assert!(err.is_no_node(), "{err:?}");
    s.create("/taken", b"", CreateMode::Ephemeral)
        .await
        .unwrap();
    let err = s.multi(&guarded("/r")).await.unwrap_err();
    assert!(err.is_node_exists(), "{err:?}");
    assert_eq!(s.exists("/mark").await.unwrap(), None, "nothing applied");
    s.delete("/taken", None).await.unwrap();
    s.multi(&guarded("/r")).await.unwrap();
    assert!(s.exists("/mark").await.unwrap().is_some());
    assert_eq!(s.exists("/taken").await.unwrap(), None);
}

/// A multi-op with a failing operation applies nothing and names the first failing one.
pub async fn a_failing_multi_applies_nothing_and_names_the_failing_op(b: &dyn Backend) {
    let s = b.open(&namespace("conf", "multifail")).await.registry;
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
    let s = b.open(&namespace("conf", "multiok")).await.registry;
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
    // Sequence numbers count child creates (one so far); the delete moves only the cversion.
    assert_eq!(results[5], OpResult::Created("/t/s-0000000001".into()));
    assert_eq!(s.children("/t").await.unwrap(), ["s-0000000001"]);
    assert_eq!(s.exists("/t").await.unwrap().unwrap().cversion, 3);
    assert_eq!(s.get("/t").await.unwrap().0, b"1");
}
