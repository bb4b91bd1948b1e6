//! Fault cases of issue 17 about what this instance owns: its instance node (deleted by an
//! operator, by its own take-over, or left by an older session of it) and its items under a new
//! plan.

use super::*;

#[test]
fn a_deletion_of_this_instance_node_is_an_operator_shutdown_only_when_the_mirror_showed_it_ours() {
    let leave = |leader_ops: bool| {
        let mut ops = vec![Op::delete(format!("/orders/instances/{}", me()))];
        if leader_ops {
            ops.push(Op::delete("/orders/leader/election/instance"));
        }
        vec![
            Command::Unschedule,
            Command::Write {
                ops,
                mode: WriteMode::Tolerant,
                then: Purpose::Leave,
            },
            Command::Stop,
        ]
    };
    // (case, registration, session state, owner of instances/{me} in the mirror, owner of the
    // removed node, commands)
    type Case = (
        &'static str,
        Registration,
        Option<SessionState>,
        Option<i64>,
        Option<i64>,
        Vec<Command>,
    );
    let cases: Vec<Case> = vec![
        (
            "stale deletion of the old session's node, reported by a re-list after ours was written",
            Registration::Unconfirmed,
            None,
            None,
            Some(OLD_SESSION),
            vec![register_again()],
        ),
        (
            "the old session's node expired after a quick restart: ours is created",
            Registration::Older(OLD_SESSION),
            None,
            None,
            Some(OLD_SESSION),
            vec![register_again()],
        ),
        (
            "ours already stands in the mirror: the event was about an older incarnation",
            Registration::Confirmed,
            None,
            Some(SESSION),
            Some(OLD_SESSION),
            vec![],
        ),
        (
            "deleted while the registry does not answer: in doubt, re-register and keep running",
            Registration::Confirmed,
            Some(SessionState::Disconnected),
            None,
            Some(SESSION),
            vec![register_again()],
        ),
        (
            "ours was confirmed, but the node removed was the older session's (its deletion reached \
             the job after ours was seen, a restart under the same id): re-register",
            Registration::Confirmed,
            None,
            None,
            Some(OLD_SESSION),
            vec![register_again()],
        ),
        (
            "confirmed, but the removed node's owner was never read: in doubt, re-register",
            Registration::Confirmed,
            None,
            None,
            None,
            vec![register_again()],
        ),
    ];
    for (name, registration, session, owner, removed, expected) in cases {
        let mut m = machine(registration);
        let f = Fake {
            owner,
            removed,
            ..fake()
        };
        if let Some(s) = session {
            m.step(Input::Session(s), &f);
        }
        assert_eq!(m.step(deleted_me(), &f), expected, "{name}");
    }
    // Confirmed by the mirror, connected, and the node removed was this session's: an
    // operator's shutdown, logged at WARN.
    let mut m = machine(Registration::Confirmed);
    let out = m.step(
        deleted_me(),
        &Fake {
            owner: None,
            removed: Some(SESSION),
            ..fake()
        },
    );
    assert!(
        matches!(&out[0], Command::Warn(w) if w.contains("operator")),
        "{out:?}"
    );
    assert_eq!(out[1..], leave(true)[..]);
}

#[test]
fn the_deletion_a_take_over_made_of_this_sessions_own_node_is_not_an_operator_shutdown() {
    // A re-list after a quick restart still shows the older session's node; registration had
    // already replaced it with ours, so the machine's take-over deletes ours and creates it again.
    let mut m = machine(Registration::Unconfirmed);
    let older = held_by_old_session();
    m.step(Input::Resynced, &older);
    m.step(written(Purpose::TakeOver), &older);
    // Registration's creation event arrives late and confirms ours...
    let ours = fake();
    m.step(created_me(), &ours);
    // ...then the take-over's deletion, seen before its creation is read: no shutdown, a create
    // that the take-over's own creation makes harmless.
    let deleted = Fake {
        owner: None,
        removed: Some(SESSION),
        ..fake()
    };
    assert_eq!(m.step(deleted_me(), &deleted), vec![register_again()]);
    m.step(created_me(), &ours);
    // A later deletion of our node is an operator's again.
    let out = m.step(deleted_me(), &deleted);
    assert!(
        matches!(&out[0], Command::Warn(w) if w.contains("operator")),
        "{out:?}"
    );
}

#[test]
fn an_older_sessions_node_a_lagging_mirror_still_shows_after_registration_replaced_it_is_left_alone(
) {
    // A quick restart: registration found the older session's node and replaced it with ours in
    // one multi-op (the executor starts the machine `Written`); the mirror's listing, read before
    // that write, still shows the older node. A take-over now would delete ours, and that
    // deletion, arriving after the older node's own, would read as an operator's shutdown.
    let mut m = machine(Registration::Written);
    let older = held_by_old_session();
    assert_eq!(m.step(Input::Resynced, &older), vec![]);
    assert_eq!(m.step(created_me(), &older), vec![]);
    assert_eq!(m.registration(), Registration::Written);
    // The older node's deletion reaches the machine: ours stands, nothing is written.
    let gone = Fake {
        owner: None,
        removed: Some(OLD_SESSION),
        ..fake()
    };
    assert_eq!(m.step(deleted_me(), &gone), vec![]);
    // Ours shows: confirmed, and a later deletion of it is an operator's.
    m.step(created_me(), &fake());
    assert_eq!(m.registration(), Registration::Confirmed);
    let deleted = Fake {
        owner: None,
        removed: Some(SESSION),
        ..fake()
    };
    let out = m.step(deleted_me(), &deleted);
    assert!(
        matches!(&out[0], Command::Warn(w) if w.contains("operator")),
        "{out:?}"
    );
}

#[test]
fn an_older_sessions_node_of_this_instance_is_taken_over_at_once_and_nothing_starts_meanwhile() {
    // A re-list shows instances/{me} still held by the session before a quick restart.
    let mut m = machine(Registration::Unconfirmed);
    let f = held_by_old_session();
    let path = format!("/orders/instances/{}", me());
    let take_over = Command::Write {
        ops: vec![
            Op::delete(path.clone()),
            Op::create(
                path,
                format!("jobInstanceId: {}\nserverIp: 10.0.0.1\n", me()),
                CreateMode::Ephemeral,
            ),
        ],
        mode: WriteMode::Direct,
        then: Purpose::TakeOver,
    };
    assert_eq!(m.step(Input::Resynced, &f), vec![take_over]);
    assert_eq!(m.registration(), Registration::Older(OLD_SESSION));
    let skipped = skip(
        SkipReason::NotRegistered,
        0,
        Some(MissReason::CannotStart),
        true,
    );
    assert_eq!(m.step(Input::Fire { scheduled: t(0) }, &f), vec![skipped]);
    assert_eq!(m.step(Input::Prepare { scheduled: t(1) }, &f), vec![]);
    // The old node went in between: ours is created plainly.
    let conflict = answered(Purpose::TakeOver, Outcome::Conflict);
    assert_eq!(m.step(conflict, &f), vec![register_again()]);
    let f = Fake {
        owner: Some(SESSION),
        now: t(1),
        ..f
    };
    let created = Input::Event {
        node: JobNode::Instance(me()),
        kind: NodeEventKind::Created,
    };
    assert_eq!(m.step(created, &f), vec![]);
    assert_eq!(m.registration(), Registration::Confirmed);
    assert_eq!(
        m.step(Input::Fire { scheduled: t(1) }, &f),
        vec![start(begins(&[0, 1]))]
    );
}

/// This instance just joined: under the old plan `other` owns both items, the leader has raised
/// the flag, and the fire of `t(0)` parks. The machine and the facts it parked on.
fn parked_under_the_old_plan() -> (JobMachine, Fake) {
    let mut m = machine(Registration::Confirmed);
    let old_plan = committed(owned(
        view(&[&me(), &other()], Some(&other())),
        &[(0, &other()), (1, &other())],
    ));
    let mut f = Fake {
        view: old_plan,
        ..fake()
    };
    f.view.sharding_necessary = true;
    assert_eq!(
        m.step(Input::Fire { scheduled: t(0) }, &f),
        vec![Command::SetResharding(true)]
    );
    (m, f)
}

#[test]
fn a_fire_racing_a_reshard_leaves_out_the_items_the_old_owner_ran_for_it() {
    let (mut m, mut f) = parked_under_the_old_plan();
    // The old owner, whose mirror had not seen the flag yet, runs item 1 of this fire.
    f.view.items.get_mut(&ShardItem(1)).unwrap().running = Some(other().to_string());
    let running = Input::Event {
        node: JobNode::ShardingRunning(ShardItem(1)),
        kind: NodeEventKind::Created,
    };
    assert_eq!(m.step(running, &f), vec![]);
    // The leader waited for it and committed: both items are this instance's now.
    let f = Fake {
        view: two_items(),
        now: at_ms(300),
        ..fake()
    };
    let done = Input::Event {
        node: JobNode::LeaderShardingNecessary,
        kind: NodeEventKind::Deleted,
    };
    assert_eq!(
        m.step(done, &f),
        vec![Command::SetResharding(false), start(begins(&[0]))],
        "item 1 of this fire ran under the old plan: only item 0 runs here"
    );
    assert_eq!(
        m.step(written(Purpose::Start), &f),
        vec![launch(1, ExecutionSource::Normal, Some(t(0)), &[0])]
    );
}

#[test]
fn an_item_moved_away_by_a_new_plan_is_cancelled_here() {
    let (mut m, f) = (machine(Registration::Confirmed), fake());
    started(&mut m, t(0), &f);
    let f = Fake {
        view: owned(two_items(), &[(1, &other())]),
        ..fake()
    };
    let moved = |i| Input::Event {
        node: JobNode::ShardingInstance(ShardItem(i)),
        kind: NodeEventKind::DataChanged,
    };
    assert_eq!(m.step(moved(0), &f), vec![]);
    assert_eq!(
        m.step(moved(1), &f),
        vec![Command::Cancel(vec![ShardItem(1)])]
    );
}

#[test]
fn the_job_deleted_from_the_registry_stops_here_unless_the_mirror_holds_its_root_again() {
    let root_deleted = || {
        vec![Input::Event {
            node: JobNode::Root,
            kind: NodeEventKind::Deleted,
        }]
    };
    let mut f = fake();
    f.gone = vec!["orders".to_owned()];
    let mut m = machine(Registration::Confirmed);
    assert_eq!(
        last_step(&mut m, root_deleted(), &f),
        vec![
            Command::Warn("job removed from the registry: stopping it here".into()),
            Command::Unschedule,
            Command::Write {
                ops: vec![
                    Op::delete(format!("/orders/instances/{}", me())),
                    Op::delete("/orders/leader/election/instance"),
                ],
                mode: WriteMode::Tolerant,
                then: Purpose::Leave,
            },
            Command::Stop,
        ]
    );
    let mut m = machine(Registration::Confirmed);
    assert_eq!(
        last_step(&mut m, root_deleted(), &fake()),
        vec![],
        "a stale deletion (the mirror holds the root): the job goes on"
    );
}

#[test]
fn a_commits_guard_on_the_markers_does_not_count_as_a_run_of_the_parked_fire() {
    let (mut m, mut f) = parked_under_the_old_plan();
    let created = |item| Input::Event {
        node: JobNode::ShardingRunning(ShardItem(item)),
        kind: NodeEventKind::Created,
    };
    // Item 0's guard heard while the mirror shows the commit under way (`processing` up, the
    // marker there), item 1's heard after the mirror applied the whole commit (no marker).
    f.view.sharding_processing = true;
    f.view.items.get_mut(&ShardItem(0)).unwrap().running = Some(String::new());
    assert_eq!(m.step(created(0), &f), vec![]);
    let f = Fake {
        view: two_items(),
        now: at_ms(300),
        ..fake()
    };
    assert_eq!(m.step(created(1), &f), vec![]);
    let done = Input::Event {
        node: JobNode::LeaderShardingNecessary,
        kind: NodeEventKind::Deleted,
    };
    assert_eq!(
        m.step(done, &f),
        vec![Command::SetResharding(false), start(begins(&[0, 1]))],
        "neither guard was a run: both items run"
    );
}
