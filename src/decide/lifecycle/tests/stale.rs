//! A start write refused by a plan committed after the fire planned it (`Outcome::Stale`): a
//! cron fire is dropped (its new owners fire it too), a manual trigger is parked and resumed
//! under the new plan, at once when the mirror shows that plan already.

use super::*;
use crate::decide::trigger_params::TriggerParams;

/// The plan committed under the start write: items owned as `owners` say, every owner node one
/// version on (each commit sets them all).
fn replanned(owners: &[(u32, &InstanceId)]) -> Fake {
    let mut f = fake();
    f.view = committed(owned(view(&[&me(), &other()], Some(&me())), owners));
    for v in f.view.items.values_mut() {
        v.owner_version = 1;
    }
    f
}

/// The starts of `items` guarded at owner node version `version`.
fn begins_at(items: &[u32], version: i32) -> Vec<Op> {
    let mut ops = begins(items);
    for op in &mut ops {
        if let Op::Check { version: v, .. } = op {
            *v = version;
        }
    }
    ops
}

/// The mirror heard the commit's setting of item `i`'s owner node.
fn owner_set(i: u32) -> Input {
    Input::Event {
        node: JobNode::ShardingInstance(ShardItem(i)),
        kind: NodeEventKind::DataChanged,
    }
}

fn refused() -> Input {
    answered(Purpose::Start, Outcome::Stale)
}

fn plan_changed() -> Command {
    skip(
        SkipReason::PlanChanged,
        0,
        Some(MissReason::CannotStart),
        true,
    )
}

#[test]
fn a_trigger_whose_start_a_new_plan_refused_waits_for_that_plan_and_runs_under_it() {
    let (mut m, before) = (machine(Registration::Confirmed), fake());
    assert_eq!(
        m.step(Input::Trigger, &before),
        vec![start(begins(&[0, 1]))]
    );
    // The mirror has not heard of the commit: nothing to plan under yet, and nothing dropped.
    assert_eq!(m.step(refused(), &before), vec![]);
    let after = replanned(&[(0, &me()), (1, &me())]);
    assert_eq!(
        m.step(owner_set(0), &after),
        vec![start(begins_at(&[0, 1], 1))]
    );
    assert_eq!(m.step(owner_set(1), &after), vec![], "resumed once");
    assert_eq!(
        m.step(written(Purpose::Start), &after),
        vec![manual(1, &[0, 1], None)]
    );
}

#[test]
fn a_trigger_refused_by_a_plan_the_mirror_shows_already_runs_under_it_at_once() {
    let (mut m, before) = (machine(Registration::Confirmed), fake());
    m.step(Input::Trigger, &before);
    // The commit reached the mirror while the write was out: its events may have been heard
    // before the answer, so none is waited for.
    let after = replanned(&[(0, &me()), (1, &me())]);
    assert_eq!(
        m.step(refused(), &after),
        vec![start(begins_at(&[0, 1], 1))]
    );
    assert_eq!(
        m.step(written(Purpose::Start), &after),
        vec![manual(1, &[0, 1], None)]
    );
    assert_eq!(m.step(owner_set(0), &after), vec![], "run once");
}

#[test]
fn a_trigger_refused_while_the_mirror_shows_a_reshard_pending_runs_once_it_ends() {
    let (mut m, before) = (machine(Registration::Confirmed), fake());
    m.step(Input::Trigger, &before);
    let mut pending = replanned(&[(0, &me()), (1, &me())]);
    pending.view.sharding_necessary = true;
    assert_eq!(m.step(refused(), &pending), vec![]);
    let after = replanned(&[(0, &me()), (1, &me())]);
    let flag_gone = Input::Event {
        node: JobNode::LeaderShardingNecessary,
        kind: NodeEventKind::Deleted,
    };
    assert_eq!(
        m.step(flag_gone, &after),
        vec![start(begins_at(&[0, 1], 1))]
    );
}

#[test]
fn a_cron_fire_whose_start_a_new_plan_refused_is_dropped_for_its_new_owners_fire_it_too() {
    let after = replanned(&[(0, &me()), (1, &me())]);
    // (case, the mirror when the answer comes)
    let cases = [
        ("the mirror behind the commit", fake()),
        (
            "the mirror showing the commit",
            replanned(&[(0, &me()), (1, &me())]),
        ),
    ];
    for (case, at_answer) in cases {
        let mut m = machine(Registration::Confirmed);
        m.step(Input::Fire { scheduled: t(0) }, &fake());
        assert_eq!(
            m.step(refused(), &at_answer),
            vec![plan_changed()],
            "{case}"
        );
        assert_eq!(m.step(owner_set(0), &after), vec![], "{case}: not resumed");
    }
}

#[test]
fn a_trigger_runs_the_items_the_new_plan_gives_this_instance_and_nothing_when_it_gives_none() {
    // Every instance has a trigger of its own and runs its own items: what the new plan gives
    // the others is theirs to run, and an instance left with none runs nothing, as any
    // instance that owns nothing does with its trigger.
    let cases: [(&str, Fake, Vec<Command>); 2] = [
        (
            "item 0 moved to the other instance",
            replanned(&[(0, &other()), (1, &me())]),
            vec![start(begins_at(&[1], 1))],
        ),
        (
            "both items moved to the other instance",
            replanned(&[(0, &other()), (1, &other())]),
            vec![],
        ),
    ];
    for (case, after, resumed) in cases {
        let (mut m, before) = (machine(Registration::Confirmed), fake());
        m.step(Input::Trigger, &before);
        assert_eq!(m.step(refused(), &before), vec![], "{case}");
        assert_eq!(m.step(owner_set(0), &after), resumed, "{case}");
        assert!(m.parked.is_none(), "{case}: nothing left waiting");
        assert_eq!(m.step(owner_set(1), &after), vec![], "{case}: once");
    }
}

#[test]
fn a_trigger_naming_its_items_runs_those_the_new_plan_leaves_here_with_its_parameter() {
    let params = TriggerParams {
        job_parameter: Some("rerun".into()),
        items: Some([1].into()),
        workflow_run: None,
    }
    .encode();
    let before = Fake {
        params: Some(params),
        ..fake()
    };
    let mut m = machine(Registration::Confirmed);
    let trigger = Input::Event {
        node: JobNode::TriggerInstance(me()),
        kind: NodeEventKind::Created,
    };
    let taken = m.step(trigger, &before);
    assert_eq!(taken.last(), Some(&start(begins(&[1]))), "{taken:?}");
    assert_eq!(m.step(refused(), &before), vec![]);
    // Item 0 is this instance's under the new plan too, but the trigger did not name it.
    let after = replanned(&[(0, &me()), (1, &me())]);
    assert_eq!(
        m.step(owner_set(0), &after),
        vec![start(begins_at(&[1], 1))]
    );
    assert_eq!(
        m.step(written(Purpose::Start), &after),
        vec![manual(1, &[1], Some("rerun"))]
    );
}
