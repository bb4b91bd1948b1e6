//! The tree's own rules, without sessions: sequence numbers, rollback of a failed transaction,
//! one zxid per transaction, ephemeral and non-empty refusals.

use super::tree::Tree;
use crate::registry::{CreateMode, NodeEventKind, Op, OpResult, RegistryError, Result};

fn create(tree: &mut Tree, path: &str, mode: CreateMode) -> Result<String> {
    let op = Op::create(path, b"x".to_vec(), mode);
    match tree.apply(&[op], 7, 1_000) {
        Ok((mut r, _)) => match r.pop() {
            Some(OpResult::Created(p)) => Ok(p),
            other => panic!("unexpected result {other:?}"),
        },
        Err((_, e)) => Err(e),
    }
}

#[test]
fn sequence_numbers_count_child_creates_while_cversion_also_counts_deletes() {
    let mut tree = Tree::new();
    create(&mut tree, "/q", CreateMode::Persistent).unwrap();
    let a = create(&mut tree, "/q/n-", CreateMode::PersistentSequential).unwrap();
    create(&mut tree, "/q/plain", CreateMode::Persistent).unwrap();
    tree.apply(&[Op::delete(a.clone())], 7, 1).unwrap();
    let b = create(&mut tree, "/q/n-", CreateMode::EphemeralSequential).unwrap();
    assert_eq!(a, "/q/n-0000000000");
    // Two children were created before it (as ZooKeeper 3.8 numbers them); the delete bumped only
    // the cversion.
    assert_eq!(b, "/q/n-0000000002");
    assert_eq!(tree.node("/q").unwrap().stat.cversion, 4);
    assert_eq!(tree.node(&b).unwrap().stat.ephemeral_owner, 7);
}

#[test]
fn a_failed_transaction_restores_every_node_and_counter() {
    let mut tree = Tree::new();
    create(&mut tree, "/a", CreateMode::Persistent).unwrap();
    create(&mut tree, "/a/old", CreateMode::Persistent).unwrap();
    let before_parent = tree.node("/a").unwrap().stat;
    let zxid = tree.zxid();
    let ops = [
        Op::create("/a/new", b"n".to_vec(), CreateMode::PersistentSequential),
        Op::set("/a/old", b"changed".to_vec()),
        Op::delete("/a/old"),
        Op::Check {
            path: "/a".into(),
            version: 5,
        },
    ];
    let (index, err) = tree.apply(&ops, 7, 2_000).unwrap_err();
    assert_eq!(index, 3);
    assert!(matches!(err, RegistryError::BadVersion { expected: 5, .. }));
    assert_eq!(tree.node("/a").unwrap().stat, before_parent);
    assert_eq!(tree.node("/a/old").unwrap().data, b"x");
    assert_eq!(tree.node("/a/old").unwrap().stat.version, 0);
    assert!(tree.node("/a/new0000000001").is_none());
    assert_eq!(tree.zxid(), zxid);
    let names: Vec<_> = tree
        .node("/a")
        .unwrap()
        .children
        .iter()
        .map(str::to_owned)
        .collect();
    assert_eq!(names, ["old"]);
    let next = create(&mut tree, "/a/new", CreateMode::PersistentSequential).unwrap();
    assert_eq!(
        next, "/a/new0000000001",
        "the rolled-back create used no number"
    );
}

#[test]
fn one_transaction_shares_one_zxid_and_reports_changes_in_op_order() {
    let mut tree = Tree::new();
    let ops = [
        Op::create("/a", Vec::new(), CreateMode::Persistent),
        Op::create("/a/b", Vec::new(), CreateMode::Ephemeral),
        Op::set("/a", b"1".to_vec()),
    ];
    let (_, changes) = tree.apply(&ops, 9, 5).unwrap();
    let kinds: Vec<_> = changes.iter().map(|c| (c.kind, c.path.as_str())).collect();
    assert_eq!(
        kinds,
        [
            (NodeEventKind::Created, "/a"),
            (NodeEventKind::Created, "/a/b"),
            (NodeEventKind::DataChanged, "/a"),
        ]
    );
    assert_eq!(changes[1].ephemeral_owner, 9);
    let a = tree.node("/a").unwrap().stat;
    assert_eq!((a.czxid, a.mzxid, a.version, a.num_children), (1, 1, 1, 1));
}

#[test]
fn ephemerals_refuse_children_and_non_empty_nodes_refuse_deletion() {
    let mut tree = Tree::new();
    create(&mut tree, "/e", CreateMode::Ephemeral).unwrap();
    let err = create(&mut tree, "/e/c", CreateMode::Persistent).unwrap_err();
    assert!(matches!(err, RegistryError::NoChildrenForEphemerals { .. }));
    create(&mut tree, "/p", CreateMode::Persistent).unwrap();
    create(&mut tree, "/p/c", CreateMode::Persistent).unwrap();
    let (_, err) = tree.apply(&[Op::delete("/p")], 7, 1).unwrap_err();
    assert!(matches!(err, RegistryError::NotEmpty { .. }));
    let listed: Vec<_> = tree
        .subtree("/")
        .unwrap()
        .into_iter()
        .map(|(p, _)| p)
        .collect();
    assert_eq!(listed, ["/", "/e", "/p", "/p/c"]);
}
