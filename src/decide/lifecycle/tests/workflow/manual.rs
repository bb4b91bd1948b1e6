//! Workflow runs started by hand: a trigger of a whole root job that names a run
//! (`shardcron/trigger/{me}`, as `Ops::trigger` writes for a job with downstreams) starts it,
//! and the downstream's steps of it run without an instant.

use super::*;
use crate::decide::trigger_params::TriggerParams;
use crate::decide::workflow::run::RunId;

const BY_HAND: &str = "m42";

fn in_run(item: u32, data: &str) -> Op {
    Op::create(
        format!("/orders/shardcron/workflow/{BY_HAND}@{item}"),
        data,
        CreateMode::Persistent,
    )
}

fn step_launch(source: ExecutionSource, items: &[u32], workflow: Option<&str>) -> Command {
    Command::Launch {
        run_id: 1,
        source,
        scheduled: None,
        items: items.iter().map(|i| ShardItem(*i)).collect(),
        attempt: 1,
        parameter: None,
        workflow: workflow.and_then(RunId::parse),
    }
}

/// A root that has seen its downstream, triggered with `params`: its start write's ops and the
/// launch after it.
fn triggered_root(params: TriggerParams) -> (Vec<Command>, Vec<Command>) {
    let f = Fake {
        params: Some(params.encode()),
        ..fake()
    };
    let mut m = machine(Registration::Confirmed);
    let seen = Input::Event {
        node: JobNode::DownstreamJob(JobName::new("report").unwrap()),
        kind: NodeEventKind::Created,
    };
    m.step(seen, &f);
    let trigger = Input::Event {
        node: JobNode::TriggerInstance(me()),
        kind: NodeEventKind::Created,
    };
    let started = m.step(trigger, &f);
    let launched = m.step(written(Purpose::Start), &f);
    (started, launched)
}

#[test]
fn a_trigger_of_a_whole_root_starts_the_workflow_run_it_names_and_one_of_some_items_does_not() {
    let whole = TriggerParams {
        workflow_run: Some(BY_HAND.into()),
        ..TriggerParams::default()
    };
    let (started, launched) = triggered_root(whole);
    let mut ops = begins(&[0, 1]);
    let running = format!("running:{}", me());
    ops.extend([in_run(0, &running), in_run(1, &running)]);
    assert_eq!(started.last(), Some(&start(ops)), "{started:?}");
    assert_eq!(
        launched,
        vec![step_launch(ExecutionSource::Manual, &[0, 1], Some(BY_HAND))]
    );

    let some = TriggerParams {
        items: Some([1].into()),
        workflow_run: Some(BY_HAND.into()),
        ..TriggerParams::default()
    };
    let (started, launched) = triggered_root(some);
    assert_eq!(started.last(), Some(&start(begins(&[1]))), "{started:?}");
    assert_eq!(
        launched,
        vec![step_launch(ExecutionSource::Manual, &[1], None)]
    );
}

#[test]
fn a_downstream_runs_its_step_of_a_run_started_by_hand_without_an_instant() {
    let f = fake()
        .under("up")
        .record("orders", &format!("{BY_HAND}@start"), "run");
    let mut m = downstream_of(&["up"], RunWhen::Success);
    let mut ops = begins(&[0, 1]);
    let running = format!("running:{}", me());
    ops.extend([in_run(0, &running), in_run(1, &running)]);
    let event = Input::Event {
        node: JobNode::WorkflowRecord(format!("{BY_HAND}@start")),
        kind: NodeEventKind::Created,
    };
    assert_eq!(m.step(event, &f), vec![start(ops)]);
    assert_eq!(
        m.step(written(Purpose::Start), &f),
        vec![step_launch(
            ExecutionSource::Workflow,
            &[0, 1],
            Some(BY_HAND)
        )]
    );
}
