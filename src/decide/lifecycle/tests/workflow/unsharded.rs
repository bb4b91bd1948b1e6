//! A downstream without a cron has no fire to reshard at: when a started workflow run waits on a
//! plan (never sharded, or an instance lost), its leader asks for one, every time a run needs it.

use super::*;

fn unsharded(mut f: Fake) -> Fake {
    for v in f.view.items.values_mut() {
        v.has_owner_node = false;
        v.owner = None;
    }
    f
}

#[test]
fn the_leader_asks_for_a_plan_each_time_a_started_run_waits_on_one() {
    let started = || {
        fake()
            .under("up")
            .record("orders", &format!("{RUN}@start"), "run")
    };
    let mut m = downstream_of(&["up"], RunWhen::Success);
    let ask = vec![Command::SetResharding(true), Command::AskReshard];
    assert_eq!(m.step(record_event(), &unsharded(started())), ask.clone());
    assert_eq!(
        m.step(record_event(), &unsharded(started())),
        vec![],
        "asked once while the reshard is under way"
    );
    // The plan is committed: the run's items run.
    let committed = Input::Event {
        node: JobNode::ShardingInstance(ShardItem(0)),
        kind: NodeEventKind::Created,
    };
    let mut ops = begins(&[0, 1]);
    ops.extend([running_record(0), running_record(1)]);
    assert_eq!(
        m.step(committed, &started()),
        vec![Command::SetResharding(false), start(ops)]
    );
    m.step(written(Purpose::Start), &started());
    m.step(finished(1, &[]), &started());
    let ended = run_done(1);
    m.step(ended, &started());

    // An instance lost later: the same run's records do not stop the leader asking again for
    // a run that still waits (item 1's record only, say item 0 ran elsewhere and is lost).
    let mut lost = fake()
        .under("up")
        .record("orders", &format!("{RUN}@start"), "run")
        .record("orders", &format!("{RUN}@1"), "success");
    lost.view.sharding_necessary = true;
    assert_eq!(m.step(record_event(), &lost), ask);

    // Not the leader: it waits for the leader's ask.
    let mut other_leads = unsharded(started());
    other_leads.view.leader = Some(other());
    let mut m = downstream_of(&["up"], RunWhen::Success);
    assert_eq!(m.step(record_event(), &other_leads), vec![]);
    // Every item of the run has a record: nothing waits on a plan.
    let done = unsharded(
        started()
            .record("orders", &format!("{RUN}@0"), "success")
            .record("orders", &format!("{RUN}@1"), "success"),
    );
    let mut m = downstream_of(&["up"], RunWhen::Success);
    assert_eq!(m.step(record_event(), &done), vec![]);
}
