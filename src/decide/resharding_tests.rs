//! Table tests of the resharding decisions: when a job needs it (the reasons, labels, static
//! sharding, a drifted balanced job) and each sharding step (waiting, the commit).

use super::*;
use crate::decide::fixtures::*;
use crate::sharding::StrategyRegistry;

fn avg() -> std::sync::Arc<dyn ShardingStrategy> {
    StrategyRegistry::new().get(None).unwrap()
}

static NO_LOAD: BTreeMap<InstanceId, usize> = BTreeMap::new();

fn facts() -> Facts<'static> {
    Facts {
        now_millis: 0,
        held: &NO_LOAD,
    }
}

#[test]
fn no_flag_or_not_leader_means_nothing_to_do() {
    let a = inst("10.0.0.1@-@1");
    let v = view(&[&a], Some(&a));
    assert_eq!(
        step(&v, &job(), Rules::items(2), &*avg(), facts(), true),
        ShardingStep::Nothing
    );
    let mut flagged = v.clone();
    flagged.sharding_necessary = true;
    assert_eq!(
        step(&flagged, &job(), Rules::items(2), &*avg(), facts(), false),
        ShardingStep::Nothing
    );
}

#[test]
fn sharding_waits_for_running_items() {
    let a = inst("10.0.0.1@-@1");
    let mut v = with_item(view(&[&a], Some(&a)), 1, |i| {
        i.running = Some(a.to_string())
    });
    v.sharding_necessary = true;
    assert_eq!(
        step(&v, &job(), Rules::items(2), &*avg(), facts(), true),
        ShardingStep::WaitForRunningItems(vec![ShardItem(1)])
    );
}

#[test]
fn commit_assigns_every_item_and_removes_items_past_the_count_and_both_flags() {
    let a = inst("10.0.0.1@-@1");
    let b = inst("10.0.0.2@-@1");
    let mut v = owned(view(&[&a, &b], Some(&a)), &[(0, &a), (1, &a), (2, &a)]);
    for i in 0..3 {
        v.items.get_mut(&ShardItem(i)).unwrap().has_owner_node = true;
    }
    v = with_item(v, 2, |i| i.misfire = true);
    v.sharding_necessary = true;
    let ShardingStep::Commit { processing, commit } =
        step(&v, &job(), Rules::items(2), &*avg(), facts(), true)
    else {
        panic!("expected a commit")
    };
    assert_eq!(
        processing,
        Op::create(
            "/orders/leader/sharding/processing",
            "",
            CreateMode::Ephemeral
        )
    );
    // Descending order: 10.0.0.2 first, so it gets item 0; moved from a, it is guarded.
    assert_eq!(
        commit,
        vec![
            Op::set("/orders/sharding/1/instance", a.as_str()),
            Op::set("/orders/sharding/0/instance", b.as_str()),
            Op::create("/orders/sharding/0/running", "", CreateMode::Ephemeral),
            Op::delete("/orders/sharding/0/running"),
            Op::delete("/orders/sharding/2/instance"),
            Op::delete("/orders/sharding/2/misfire"),
            Op::delete("/orders/sharding/2"),
            Op::delete("/orders/leader/sharding/necessary"),
            Op::delete("/orders/leader/sharding/processing"),
        ]
    );
}

#[test]
fn reconcile_reasons_table() {
    let a = inst("10.0.0.1@-@1");
    let b = inst("10.0.0.2@-@1");
    let gone = inst("10.0.0.9@-@1");
    let cases: Vec<(&str, JobView, bool)> = vec![
        (
            "balanced",
            owned(view(&[&a, &b], None), &[(0, &a), (1, &b)]),
            false,
        ),
        (
            "unassigned item",
            owned(view(&[&a], None), &[(0, &a)]),
            true,
        ),
        (
            "offline owner",
            owned(view(&[&a], None), &[(0, &a), (1, &gone)]),
            true,
        ),
        (
            "disabled owner",
            disabled(
                owned(view(&[&a, &b], None), &[(0, &a), (1, &b)]),
                "10.0.0.2",
            ),
            true,
        ),
        (
            "idle instance",
            owned(view(&[&a, &b], None), &[(0, &a), (1, &a)]),
            true,
        ),
        ("no instance at all", view(&[], None), false),
    ];
    for (name, v, want) in cases {
        assert_eq!(
            reconcile_reason(&v, Rules::items(2)).is_some(),
            want,
            "{name}"
        );
    }
}

fn rules(total: u32, static_sharding: bool, label: Option<&str>) -> Rules<'_> {
    Rules {
        total,
        static_sharding,
        label,
    }
}

/// The owners a commit writes, as (item, owner) pairs, and the owners it deletes.
fn written(step: ShardingStep) -> (Vec<(String, String)>, Vec<String>) {
    let ShardingStep::Commit { commit, .. } = step else {
        panic!("expected a commit, got {step:?}")
    };
    let mut set = Vec::new();
    let mut deleted = Vec::new();
    for op in commit {
        match op {
            Op::Create { path, data, .. } | Op::Set { path, data, .. }
                if path.ends_with("/instance") =>
            {
                set.push((path, String::from_utf8(data.to_vec()).unwrap()))
            }
            Op::Delete { path, .. } if path.ends_with("/instance") => deleted.push(path),
            _ => {}
        }
    }
    (set, deleted)
}

#[test]
fn static_sharding_ignores_a_joining_instance_and_moves_only_a_gone_owners_items() {
    let a = inst("10.0.0.1@-@1");
    let b = inst("10.0.0.2@-@1");
    let c = inst("10.0.0.3@-@1");
    let gone = inst("10.0.0.9@-@1");
    let static_rules = rules(4, true, None);
    let settled = owned(
        view(&[&a, &b, &c], Some(&a)),
        &[(0, &a), (1, &a), (2, &b), (3, &b)],
    );
    let mut settled = settled;
    settled
        .items
        .values_mut()
        .for_each(|v| v.has_owner_node = true);
    assert_eq!(
        membership_reason(&settled, static_rules),
        None,
        "c joined: nothing moves"
    );
    assert_eq!(reconcile_reason(&settled, static_rules), None);
    assert!(
        membership_reason(&settled, Rules::items(4)).is_some(),
        "without staticSharding every membership change reshards"
    );
    assert!(
        reconcile_reason(&settled, Rules::items(4)).is_some(),
        "without staticSharding an idle instance is a reason"
    );

    let mut lost = owned(settled.clone(), &[(2, &gone), (3, &gone)]);
    assert!(
        membership_reason(&lost, static_rules).is_some(),
        "b's items lost their owner"
    );
    lost.sharding_necessary = true;
    let (set, deleted) = written(step(&lost, &job(), static_rules, &*avg(), facts(), true));
    assert!(deleted.is_empty());
    let expected = [
        ("/orders/sharding/0/instance", &a),
        ("/orders/sharding/1/instance", &a),
        ("/orders/sharding/2/instance", &c),
        ("/orders/sharding/3/instance", &b),
    ];
    let mut set = set;
    set.sort();
    assert_eq!(
        set,
        expected
            .map(|(p, o)| (p.to_owned(), o.to_string()))
            .to_vec(),
        "a keeps 0 and 1; the gone owner's 2 and 3 go to the least loaded, c then b"
    );
}

#[test]
fn a_job_with_a_label_is_sharded_only_over_instances_carrying_it() {
    let a = inst("10.0.0.1@-@1");
    let b = inst("10.0.0.2@-@1");
    let c = inst("10.0.0.3@-@1");
    let mut v = labelled(view(&[&a, &b, &c], Some(&a)), &a, &["gpu", "eu"]);
    v = labelled(v, &c, &["gpu"]);
    v.sharding_necessary = true;
    let (set, _) = written(step(
        &v,
        &job(),
        rules(4, false, Some("gpu")),
        &*avg(),
        facts(),
        true,
    ));
    let owners: BTreeSet<&str> = set.iter().map(|(_, o)| o.as_str()).collect();
    assert_eq!(
        owners,
        BTreeSet::from([a.as_str(), c.as_str()]),
        "b carries no gpu"
    );
    assert_eq!(set.len(), 4);

    let (set, _) = written(step(
        &v,
        &job(),
        rules(2, false, Some("eu")),
        &*avg(),
        facts(),
        true,
    ));
    assert_eq!(
        set.iter().filter(|(_, o)| o == a.as_str()).count(),
        2,
        "only a is in eu"
    );
}

#[test]
fn items_lose_their_owners_when_no_available_instance_carries_the_label() {
    let a = inst("10.0.0.1@-@1");
    let mut v = owned(view(&[&a], Some(&a)), &[(0, &a), (1, &a)]);
    v.items.values_mut().for_each(|i| i.has_owner_node = true);
    let gpu = rules(2, false, Some("gpu"));
    assert!(reconcile_reason(&v, gpu)
        .unwrap()
        .contains("no available instance carries"));
    v.sharding_necessary = true;
    let (set, deleted) = written(step(&v, &job(), gpu, &*avg(), facts(), true));
    assert!(set.is_empty());
    assert_eq!(
        deleted,
        ["/orders/sharding/0/instance", "/orders/sharding/1/instance"]
    );
    // Once nobody owns anything, there is nothing left to do.
    let mut bare = view(&[&a], Some(&a));
    bare = with_item(bare, 0, |_| {});
    assert_eq!(reconcile_reason(&bare, gpu), None);
}

#[test]
fn reconcile_reasons_with_labels_and_static_sharding() {
    let a = inst("10.0.0.1@-@1");
    let b = inst("10.0.0.2@-@1");
    let both = || labelled(view(&[&a, &b], None), &a, &["gpu"]);
    let cases: Vec<(&str, JobView, Rules<'static>, bool)> = vec![
        (
            "owner lacks the label",
            owned(both(), &[(0, &a), (1, &b)]),
            rules(2, false, Some("gpu")),
            true,
        ),
        (
            "owners carry the label",
            owned(both(), &[(0, &a), (1, &a)]),
            rules(2, false, Some("gpu")),
            false,
        ),
        (
            "static: an idle instance is fine",
            owned(both(), &[(0, &a), (1, &a)]),
            rules(2, true, None),
            false,
        ),
        (
            "static: an unowned item is not",
            owned(both(), &[(0, &a)]),
            rules(2, true, None),
            true,
        ),
    ];
    for (name, v, r, want) in cases {
        assert_eq!(reconcile_reason(&v, r).is_some(), want, "{name}");
    }
}

#[test]
fn a_drifted_balanced_job_is_flagged_by_its_leader_only_and_once() {
    let a = inst("10.0.0.1@-@1");
    let b = inst("10.0.0.2@-@1");
    let flagged = |mut v: JobView| {
        v.sharding_necessary = true;
        v
    };
    let cases: Vec<(&str, JobView, bool)> = vec![
        ("this instance leads", view(&[&a, &b], Some(&a)), true),
        ("another instance leads", view(&[&a, &b], Some(&b)), false),
        ("no leader yet", view(&[&a, &b], None), false),
        (
            "the flag is up already",
            flagged(view(&[&a, &b], Some(&a))),
            false,
        ),
    ];
    for (name, v, want) in cases {
        let op = rebalance_flag(&v, &job(), &a);
        assert_eq!(op.is_some(), want, "{name}");
        if let Some(op) = op {
            assert_eq!(op.path(), "/orders/leader/sharding/necessary", "{name}");
        }
    }
}
