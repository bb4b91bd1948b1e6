//! Tests of the path trie: the size of a slot, children's order in either storage, wide slots'
//! hash index, deep paths, and the reuse of freed slots.

use super::*;

#[test]
fn a_slot_costs_32_bytes_beside_its_value() {
    // Ten thousand jobs are about 150,000 slots: each byte here is 150 KB.
    assert_eq!(Trie::<Box<u8>>::slot_bytes(), 32 + 8);
}

#[test]
fn a_long_name_is_held_once_however_many_slots_hold_it_and_freed_with_the_last() {
    let mut t = Trie::new(Some(0));
    let id = "192.168.100.200@-@12345";
    let mut jobs = Vec::new();
    for job in ["a", "b", "c"] {
        let at = t.search(ROOT, job).unwrap_err();
        let slot = t.add_child(ROOT, at, job, Some(1));
        let at = t.search(slot, id).unwrap_err();
        t.add_child(slot, at, id, Some(2));
        jobs.push(slot);
    }
    assert_eq!(t.shared_names(), 1);
    assert_eq!(
        t.find(&format!("/b/{id}")).and_then(|s| t.value(s)),
        Some(&2)
    );
    assert_eq!(t.kid_names(jobs[2]).collect::<Vec<_>>(), [id]);
    for slot in &jobs[..2] {
        assert_eq!(t.remove_child(*slot, 0), Some(2));
    }
    assert_eq!(t.shared_names(), 1, "the third job still holds it");
    assert_eq!(
        t.find(&format!("/c/{id}")).and_then(|s| t.value(s)),
        Some(&2)
    );
    assert_eq!(t.remove_child(jobs[2], 0), Some(2));
    assert_eq!(t.shared_names(), 0);
    let other = "another-name-of-more-than-15-bytes";
    let at = t.search(jobs[0], other).unwrap_err();
    t.add_child(jobs[0], at, other, None);
    assert_eq!(t.shared_names(), 1);
    assert_eq!(t.kid_names(jobs[0]).collect::<Vec<_>>(), [other]);
}

#[test]
fn children_sort_bytewise_whatever_their_length_and_freed_slots_are_reused() {
    let mut t = Trie::new(Some(0));
    let long = "a-job-name-longer-than-twenty-two-bytes";
    for name in ["b", long, "a", "c", "é"] {
        let at = t.search(ROOT, name).unwrap_err();
        t.add_child(ROOT, at, name, Some(1));
    }
    assert_eq!(
        t.kid_names(ROOT).collect::<Vec<_>>(),
        ["a", long, "b", "c", "é"]
    );
    let allocated = t.slots_allocated();
    let at = t.search(ROOT, long).unwrap();
    assert_eq!(t.remove_child(ROOT, at), Some(1));
    assert!(t.find(&format!("/{long}")).is_none());
    let at = t.search(ROOT, "d").unwrap_err();
    let d = t.add_child(ROOT, at, "d", None);
    assert_eq!(t.slots_allocated(), allocated, "the freed slot holds /d");
    assert_eq!(t.find("/d"), Some(d));
    assert_eq!(t.value(d), None);
    assert_eq!(t.slots_in_use(), 6);
}

#[test]
fn children_stay_sorted_as_they_move_between_inline_and_boxed_storage() {
    let mut t = Trie::new(Some(0));
    let add = |t: &mut Trie<i32>, name: &str| {
        let at = t.search(ROOT, name).unwrap_err();
        t.add_child(ROOT, at, name, Some(0));
    };
    let listed = |t: &Trie<i32>| t.kid_names(ROOT).collect::<Vec<_>>().join(",");
    add(&mut t, "m");
    add(&mut t, "c");
    assert_eq!(listed(&t), "c,m");
    add(&mut t, "x");
    add(&mut t, "a");
    assert_eq!(listed(&t), "a,c,m,x");
    for (gone, left) in [("c", "a,m,x"), ("x", "a,m"), ("a", "m"), ("m", "")] {
        let at = t.search(ROOT, gone).unwrap();
        t.remove_child(ROOT, at);
        assert_eq!(listed(&t), left);
    }
    assert_eq!(t.slots_in_use(), 1);
}

#[test]
fn a_wide_slot_finds_its_children_by_hash_through_growth_removal_and_slot_reuse() {
    let mut t = Trie::new(None);
    let name = |i: usize| format!("job-{}", (i * 7919) % 1000);
    let add = |t: &mut Trie<usize>, n: &str, v: usize| {
        let at = t.search(ROOT, n).unwrap_err();
        t.add_child(ROOT, at, n, Some(v))
    };
    for i in 0..300 {
        add(&mut t, &name(i), i);
    }
    assert!(t.wide.contains_key(&ROOT), "300 children are indexed");
    for i in 0..300 {
        let slot = t.child(ROOT, &name(i)).expect("every child is found");
        assert_eq!(t.value(slot), Some(&i));
    }
    assert_eq!(t.child(ROOT, "job-absent"), None);
    // Removing most of them reuses nothing yet; the index follows, then goes.
    for i in 0..280 {
        let at = t.search(ROOT, &name(i)).unwrap();
        assert_eq!(t.remove_child(ROOT, at), Some(i));
        assert_eq!(t.child(ROOT, &name(i)), None, "{} is gone", name(i));
    }
    assert!(
        !t.wide.contains_key(&ROOT),
        "20 children are searched, not indexed"
    );
    for i in 280..300 {
        assert_eq!(t.child(ROOT, &name(i)).and_then(|s| t.value(s)), Some(&i));
    }
    // Freed slots come back under new names, past the threshold again.
    for i in 0..100 {
        add(&mut t, &format!("again-{i}"), 1000 + i);
    }
    assert!(t.wide.contains_key(&ROOT));
    for i in 0..100 {
        let found = t
            .child(ROOT, &format!("again-{i}"))
            .and_then(|s| t.value(s));
        assert_eq!(found, Some(&(1000 + i)));
    }
    for i in 0..280 {
        assert_eq!(
            t.child(ROOT, &name(i)),
            None,
            "a reused slot answers to its new name only"
        );
    }
    assert_eq!(t.kids(ROOT).len(), 120);
}

#[test]
fn a_deep_path_is_walked_and_listed_parents_first() {
    let mut t = Trie::new(None);
    let mut at = ROOT;
    for seg in ["a", "b", "c", "d", "e", "f", "g", "h"] {
        at = t.add_child(at, 0, seg, Some(seg.len()));
    }
    assert_eq!(t.find("/a/b/c/d/e/f/g/h"), Some(at));
    assert_eq!(t.chain("/a/b/c").map(|c| c.len()), Some(4));
    assert!(t.chain("/a/x").is_none());
    let below: Vec<_> = t.below(t.find("/a/b/c/d/e/f").unwrap(), "/a/b/c/d/e/f");
    let paths: Vec<_> = below.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        paths,
        ["/a/b/c/d/e/f", "/a/b/c/d/e/f/g", "/a/b/c/d/e/f/g/h"]
    );
    assert_eq!(t.below(ROOT, "/")[1].0, "/a");
}
