//! The tree's own rules, without sessions: sequence numbers, rollback of a failed transaction,
//! one zxid per transaction, ephemeral and non-empty refusals.

use super::tree::{Node, Tree};
use crate::registry::{CreateMode, NodeEventKind, Op, OpResult, RegistryError, Result};
use crate::store::trie::Trie;

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

fn names(tree: &Tree, path: &str) -> Vec<String> {
    let node = tree.node(path).unwrap();
    node.children.iter().map(str::to_owned).collect()
}

#[test]
fn a_node_costs_one_slot_of_at_most_112_bytes() {
    // Ten thousand jobs are about 150,000 nodes: each byte here is 150 KB.
    assert!(Trie::<Node>::slot_bytes() <= 112);
}

#[test]
fn long_and_short_names_list_sorted_and_deleted_nodes_free_their_slots_for_new_ones() {
    let mut tree = Tree::new();
    create(&mut tree, "/j", CreateMode::Persistent).unwrap();
    let long = "a-job-name-longer-than-the-twenty-two-inline-bytes";
    for name in ["b", long, "a", "10.0.0.2", "10.0.0.10", "c"] {
        create(&mut tree, &format!("/j/{name}"), CreateMode::Persistent).unwrap();
    }
    assert_eq!(
        names(&tree, "/j"),
        ["10.0.0.10", "10.0.0.2", "a", long, "b", "c"]
    );
    assert_eq!(tree.node("/j").unwrap().stat.num_children, 6);
    let err = create(&mut tree, &format!("/j/{long}"), CreateMode::Persistent).unwrap_err();
    assert!(matches!(err, RegistryError::NodeExists { path } if path.ends_with(long)));
    let len = tree.len();
    for name in [long, "a", "c"] {
        tree.apply(&[Op::delete(format!("/j/{name}"))], 7, 2)
            .unwrap();
    }
    assert_eq!(tree.len(), len - 3);
    assert!(tree.node(&format!("/j/{long}")).is_none());
    for name in ["d", "0", "e"] {
        create(&mut tree, &format!("/j/{name}"), CreateMode::Persistent).unwrap();
    }
    assert_eq!(tree.len(), len);
    assert_eq!(
        names(&tree, "/j"),
        ["0", "10.0.0.10", "10.0.0.2", "b", "d", "e"]
    );
    assert_eq!(tree.node("/j/e").unwrap().data, b"x");
    assert_eq!(tree.node("/j").unwrap().stat.num_children, 6);
    assert_eq!(tree.node("/j").unwrap().stat.cversion, 12);
}

#[test]
fn a_deep_path_is_created_listed_and_deleted_level_by_level() {
    let mut tree = Tree::new();
    let mut path = String::new();
    for level in 0..12 {
        path.push_str(&format!("/level-{level}-of-a-deep-path"));
        create(&mut tree, &path, CreateMode::Persistent).unwrap();
    }
    assert_eq!(tree.node(&path).unwrap().stat.num_children, 0);
    let listed = tree.subtree("/level-0-of-a-deep-path").unwrap();
    assert_eq!(listed.len(), 12);
    assert_eq!(listed[11].0, path);
    let (_, err) = tree
        .apply(&[Op::delete("/level-0-of-a-deep-path")], 7, 1)
        .unwrap_err();
    assert!(matches!(err, RegistryError::NotEmpty { .. }));
    while path.len() > 1 {
        tree.apply(&[Op::delete(path.clone())], 7, 1).unwrap();
        path.truncate(path.rfind('/').unwrap());
    }
    assert_eq!(tree.len(), 1);
    assert!(names(&tree, "/").is_empty());
}

#[test]
fn a_rolled_back_delete_puts_the_node_back_in_its_place_with_its_data_and_stat() {
    let mut tree = Tree::new();
    create(&mut tree, "/p", CreateMode::Persistent).unwrap();
    for name in ["a", "b", "c"] {
        create(&mut tree, &format!("/p/{name}"), CreateMode::Ephemeral).unwrap();
    }
    tree.apply(&[Op::set("/p/b", b"before".to_vec())], 7, 3)
        .unwrap();
    let (parent, b) = (
        tree.node("/p").unwrap().stat,
        tree.node("/p/b").unwrap().stat,
    );
    let ops = [
        Op::delete("/p/b"),
        Op::create("/p/b", b"new".to_vec(), CreateMode::Persistent),
        Op::delete("/p/a"),
        Op::set("/p/b", b"changed".to_vec()),
        Op::create("/p/c", Vec::new(), CreateMode::Persistent),
    ];
    let (index, err) = tree.apply(&ops, 7, 4).unwrap_err();
    assert_eq!(index, 4);
    assert!(matches!(err, RegistryError::NodeExists { .. }));
    assert_eq!(names(&tree, "/p"), ["a", "b", "c"]);
    assert_eq!(tree.node("/p").unwrap().stat, parent);
    assert_eq!(tree.node("/p/b").unwrap().stat, b);
    assert_eq!(tree.node("/p/b").unwrap().data, b"before");
    assert_eq!(tree.len(), 5);
}
