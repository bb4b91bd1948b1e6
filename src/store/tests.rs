use super::*;

fn stat(czxid: i64, mzxid: i64, version: i32) -> Stat {
    Stat {
        czxid,
        mzxid,
        version,
        ..Stat::default()
    }
}

#[test]
fn upserts_ignore_older_reads_and_spot_new_incarnations() {
    let m = Mirror::new();
    // (data, czxid, mzxid, version, what the upsert makes of it), in the order they are read.
    let reads: [(&[u8], i64, i64, i32, Upserted); 5] = [
        (b"1", 5, 5, 0, Upserted::Created),
        (b"2", 5, 7, 1, Upserted::Changed),
        (b"1", 5, 5, 0, Upserted::Stale),
        (b"2", 5, 7, 1, Upserted::Unchanged),
        (b"3", 9, 9, 0, Upserted::Replaced),
    ];
    for (i, (data, czxid, mzxid, version, expected)) in reads.into_iter().enumerate() {
        let got = m.upsert("/a", data.to_vec(), stat(czxid, mzxid, version));
        assert_eq!(got, expected, "read {i} ({data:?})");
        if expected == Upserted::Stale {
            assert_eq!(
                &*m.data("/a").unwrap(),
                b"2",
                "a stale read changes nothing"
            );
        }
    }
}

fn owned(czxid: i64, owner: i64) -> Stat {
    Stat {
        ephemeral_owner: owner,
        ..stat(czxid, czxid, 0)
    }
}

#[test]
fn the_owner_of_a_removed_ephemeral_node_is_kept_whichever_way_it_went() {
    let m = Mirror::new();
    m.upsert("/j/instances/a", Vec::new(), owned(5, 0x10));
    assert_eq!(m.removed_owner("/j/instances/a"), None);
    // Deleted and created again, seen as one read of the new incarnation.
    m.upsert("/j/instances/a", Vec::new(), owned(9, 0x20));
    assert_eq!(m.removed_owner("/j/instances/a"), Some(0x10));
    // Deleted by an event.
    assert!(m.remove("/j/instances/a"));
    assert_eq!(m.removed_owner("/j/instances/a"), Some(0x20));
    // Missing from a re-list.
    m.upsert("/j/instances/b", Vec::new(), owned(11, 0x30));
    m.replace_subtree("/", Vec::new());
    assert_eq!(m.removed_owner("/j/instances/b"), Some(0x30));
    // A persistent node has no owner to keep.
    m.upsert("/j/config", Vec::new(), owned(12, 0));
    assert!(m.remove("/j/config"));
    assert_eq!(m.removed_owner("/j/config"), None);
}

fn listed(path: &str, czxid: i64, mzxid: i64) -> ListedNode {
    ListedNode {
        path: path.to_owned(),
        data: path.as_bytes().to_vec(),
        stat: stat(czxid, mzxid, 0),
    }
}

#[test]
fn a_relist_swaps_in_the_whole_new_subtree_and_reports_each_difference() {
    let m = Mirror::new();
    for (p, z) in [("/", 1), ("/a", 2), ("/a/x", 3), ("/b", 4), ("/c", 5)] {
        m.upsert(p, p.as_bytes().to_vec(), stat(z, z, 0));
    }
    let changes = m.replace_subtree(
        "/",
        vec![
            listed("/", 1, 1),
            listed("/b", 4, 9),
            listed("/c", 7, 7),
            listed("/d", 8, 8),
        ],
    );
    assert_eq!(
        changes,
        [
            ("/a/x".to_owned(), Upserted::Stale),
            ("/a".to_owned(), Upserted::Stale),
            ("/".to_owned(), Upserted::Unchanged),
            ("/b".to_owned(), Upserted::Changed),
            ("/c".to_owned(), Upserted::Replaced),
            ("/d".to_owned(), Upserted::Created),
        ],
        "removals deepest first (Stale marks a removal), then the listing's changes"
    );
    assert_eq!(
        m.snapshot("/").keys().collect::<Vec<_>>(),
        ["/", "/b", "/c", "/d"]
    );
    tracing::info!("--- a subtree's relist keeps what lies outside it");
    m.replace_subtree("/c", vec![listed("/c", 7, 7), listed("/c/z", 9, 9)]);
    assert_eq!(
        m.snapshot("/").keys().collect::<Vec<_>>(),
        ["/", "/b", "/c", "/c/z", "/d"]
    );
}

#[test]
fn readers_during_relists_see_the_old_namespace_or_the_new_one_never_a_mix() {
    let m = Mirror::new();
    m.replace_subtree("/", vec![listed("/", 1, 1), listed("/old", 2, 2)]);
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let (m, stop) = (m.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut reads = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let seen = m.children("/");
                assert!(
                    seen == ["old"] || seen == ["new"],
                    "a reader saw a half-swapped namespace: {seen:?}"
                );
                reads += 1;
            }
            reads
        })
    };
    for round in 0..2000i64 {
        let name = if round % 2 == 0 { "/new" } else { "/old" };
        m.replace_subtree(
            "/",
            vec![listed("/", 1, 1), listed(name, round + 3, round + 3)],
        );
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let reads = reader.join().expect("the reader saw no mix");
    assert!(reads > 0, "the reader read while the relists ran");
}

#[test]
fn the_child_index_follows_inserts_and_removals() {
    let m = Mirror::new();
    for p in ["/", "/a", "/a/c", "/a/b", "/z"] {
        m.upsert(p, Vec::new(), stat(1, 1, 0));
    }
    assert_eq!(m.children("/a"), ["b", "c"]);
    assert_eq!(m.children("/"), ["a", "z"]);
    assert_eq!(m.subtree("/a"), ["/a", "/a/b", "/a/c"]);
    assert!(m.remove("/a/b"));
    assert!(!m.remove("/a/b"));
    assert_eq!(m.children("/a"), ["c"]);
    assert!(m.has_children("/a") && !m.has_children("/a/c") && !m.has_children("/absent"));
    assert!(m.remove("/a/c"));
    assert!(m.children("/a").is_empty() && !m.has_children("/a"));
    assert_eq!(
        m.snapshot("/").keys().collect::<Vec<_>>(),
        ["/", "/a", "/z"]
    );
    assert_eq!(m.len(), 3);
}
