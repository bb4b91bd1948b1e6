//! Workflows in the machine when things go wrong or change: a failover claim of a crashed
//! instance's workflow item (or its end, without failover), a config that comes to name an
//! upstream, old runs' records pruned.

use super::*;

#[test]
fn a_failover_claim_of_an_item_a_dead_instance_ran_in_a_workflow_run_ends_its_record() {
    // The record names 10.0.0.9, which has no `instances/` node: it crashed mid-item.
    let f = fake()
        .under("up")
        .record("orders", &format!("{RUN}@start"), "run")
        .record("orders", &format!("{RUN}@0"), "success")
        .record("orders", &format!("{RUN}@1"), "running:10.0.0.9@-@9");
    let mut m = machine_with(
        Registration::Confirmed,
        config(|c| c.after(&["up"]).failover(true)),
    );
    assert_eq!(
        m.step(Input::FailoverClaimed(vec![ShardItem(1)]), &f),
        vec![launch_in(1, ExecutionSource::Failover, Some(t(0)), &[1])]
    );
    let mut end = crate::decide::failover::finish_ops(&job(), &[ShardItem(1)]);
    end.push(record_end(1, "success"));
    assert_eq!(m.step(finished(1, &[]), &f), vec![submit_end(1, end)]);
    // A record naming a live instance is not taken over: the claim runs outside the workflow.
    let live = fake().record(
        "orders",
        &format!("{RUN}@1"),
        &format!("running:{}", other()),
    );
    let mut m = downstream_of(&["up"], RunWhen::Success);
    assert_eq!(
        m.step(Input::FailoverClaimed(vec![ShardItem(1)]), &live),
        vec![launch(1, ExecutionSource::Failover, None, &[1])]
    );
}

#[test]
fn a_config_that_comes_to_name_an_upstream_registers_under_it() {
    let f = fake();
    let mut m = machine(Registration::Confirmed);
    let out = m.step(Input::Config(config(|c| c.after(&["up"]))), &f);
    assert!(out.contains(&register_under_up()), "{out:?}");
}

#[test]
fn the_leader_deletes_the_records_of_all_but_the_newest_fifty_runs_once() {
    let mut f = fake().under("up");
    for n in 0..51 {
        f = f.record("orders", &format!("{}@0", 1_000 + n), "success");
    }
    let mut m = downstream_of(&["up"], RunWhen::Success);
    let prune = Command::Write {
        ops: vec![Op::delete("/orders/shardcron/workflow/1000@0")],
        mode: WriteMode::Tolerant,
        then: Purpose::WorkflowPrune,
    };
    assert_eq!(m.step(record_event(), &f), vec![prune.clone()]);
    // Under way: not asked again until it ends.
    assert_eq!(m.step(record_event(), &f), vec![]);
    assert_eq!(m.step(written(Purpose::WorkflowPrune), &f), vec![prune]);
    // Not the leader: nothing.
    let mut led = fake().under("up");
    led.view.leader = Some(other());
    led.workflow = f.workflow.clone();
    let mut m = downstream_of(&["up"], RunWhen::Success);
    assert_eq!(m.step(record_event(), &led), vec![]);
}

#[test]
fn the_leader_of_a_job_without_failover_ends_failed_the_record_of_an_item_whose_instance_died() {
    let dead = "running:10.0.0.9@-@9";
    let f = fake()
        .record("orders", &format!("{RUN}@0"), "success")
        .record("orders", &format!("{RUN}@1"), dead);
    let seen = || Input::Event {
        node: JobNode::DownstreamJob(JobName::new("report").unwrap()),
        kind: NodeEventKind::Created,
    };
    let end_dead = Command::Write {
        ops: vec![Op::Set {
            path: format!("/orders/shardcron/workflow/{RUN}@1"),
            data: "failed".into(),
            version: Some(0),
        }],
        mode: WriteMode::Tolerant,
        then: Purpose::WorkflowEnd,
    };
    let mut m = machine(Registration::Confirmed);
    assert_eq!(m.step(seen(), &f), vec![]);
    assert_eq!(m.step(record_event(), &f), vec![end_dead.clone()]);
    assert_eq!(m.step(record_event(), &f), vec![], "one write per record");
    assert_eq!(
        m.step(written(Purpose::WorkflowEnd), &f),
        vec![],
        "written once, though the mirror does not show the end yet"
    );
    assert_eq!(
        m.step(Input::Resynced, &f),
        vec![end_dead],
        "after a re-list, what it shows"
    );

    // (case, machine, facts): none of these ends the record.
    let live = fake().record(
        "orders",
        &format!("{RUN}@1"),
        &format!("running:{}", other()),
    );
    let mut not_leader = fake().record("orders", &format!("{RUN}@1"), dead);
    not_leader.view.leader = Some(other());
    let failover = machine_with(Registration::Confirmed, config(|c| c.failover(true)));
    let cases = [
        (
            "its instance is alive",
            machine(Registration::Confirmed),
            live,
        ),
        (
            "not the leader",
            machine(Registration::Confirmed),
            not_leader,
        ),
        ("with failover the claim takes it over", failover, f),
    ];
    for (case, mut m, f) in cases {
        assert_eq!(m.step(seen(), &f), vec![], "{case}");
        assert_eq!(m.step(record_event(), &f), vec![], "{case}");
    }
}

/// A table row: name, the facts when the refusal comes, the items started again (none: nothing).
type Refused = (&'static str, Fake, &'static [u32]);

#[test]
fn a_workflow_steps_start_refused_by_a_new_plan_is_launched_again_under_the_plan_the_mirror_shows()
{
    let started = || (fake().under("up")).record("orders", &format!("{RUN}@start"), "run");
    // Owners under a plan: the old one (version 0) or the new one (version 1).
    let plan = |owners: &[(u32, &InstanceId)], version: i32, f: Fake| {
        let mut v = committed(owned(view(&[&me(), &other()], Some(&me())), owners));
        for item in v.items.values_mut() {
            item.owner_version = version;
        }
        Fake { view: v, ..f }
    };
    // The start of `items` under the plan of `version`: guards and markers, then records.
    let start_under = |items: &[u32], version: i32| {
        let guards = items.iter().flat_map(|i| {
            let path = format!("/orders/sharding/{i}/instance");
            [Op::Check { path, version }, marker(*i)]
        });
        let records = items.iter().map(|i| running_record(*i));
        start(guards.chain(records).collect())
    };
    let (mine, theirs) = (&me(), &other());
    let cases: Vec<Refused> = vec![
        (
            "the new plan gives both items here: both start, guarded by it",
            plan(&[(0, mine), (1, mine)], 1, started()),
            &[0, 1],
        ),
        (
            "the mirror does not show the new plan yet: the start is written again",
            plan(&[(0, theirs), (1, mine)], 0, started()),
            &[1],
        ),
        (
            "the new plan gives both items to the other instance: it runs them, not this one",
            plan(&[(0, theirs), (1, theirs)], 1, started()),
            &[],
        ),
        (
            "an item ran elsewhere under the new plan (its record): only the other starts here",
            plan(
                &[(0, mine), (1, mine)],
                1,
                started().record("orders", &format!("{RUN}@1"), "success"),
            ),
            &[0],
        ),
    ];
    for (name, facts, again) in cases {
        let mut m = downstream_of(&["up"], RunWhen::Success);
        let before = plan(&[(0, theirs), (1, mine)], 0, started());
        assert_eq!(m.step(record_event(), &before), vec![start_under(&[1], 0)]);
        // Owed to the workflow run: launched again, not counted as a missed fire.
        let expected: Vec<Command> = match again {
            [] => vec![],
            items => vec![start_under(
                items,
                facts.view.items[&ShardItem(items[0])].owner_version,
            )],
        };
        let refused = answered(Purpose::Start, Outcome::Stale);
        assert_eq!(m.step(refused, &facts), expected, "{name}");
        if !again.is_empty() {
            let launched = launch_in(1, ExecutionSource::Workflow, Some(t(0)), again);
            assert_eq!(
                m.step(written(Purpose::Start), &facts),
                vec![launched],
                "{name}"
            );
            assert_eq!(m.step(record_event(), &facts), vec![], "{name}: once");
        }
    }
}
