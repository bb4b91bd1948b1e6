//! Items an operator disabled, in workflow runs: they do not run, and are recorded skipped so
//! that the run ends (and the downstreams go on as their policy says).

use super::*;

fn disable(mut f: Fake, item: u32) -> Fake {
    f.view.items.get_mut(&ShardItem(item)).unwrap().disabled = true;
    f
}

#[test]
fn a_roots_fire_records_this_instances_disabled_item_skipped_beside_the_items_it_runs() {
    let f = disable(fake(), 1);
    let mut m = machine(Registration::Confirmed);
    let seen = Input::Event {
        node: JobNode::DownstreamJob(JobName::new("report").unwrap()),
        kind: NodeEventKind::Created,
    };
    m.step(seen, &f);
    let mut ops = begins(&[0]);
    ops.extend([running_record(0), record_create(1, "skipped")]);
    assert_eq!(
        m.step(Input::Fire { scheduled: t(0) }, &f),
        vec![start(ops)]
    );
}

#[test]
fn a_downstream_runs_its_enabled_items_of_a_started_run_and_records_the_disabled_one_skipped() {
    let f = disable(
        fake()
            .under("up")
            .record("orders", &format!("{RUN}@start"), "run"),
        1,
    );
    let mut m = downstream_of(&["up"], RunWhen::Success);
    let mut ops = begins(&[0]);
    ops.push(running_record(0));
    let skip = Command::Write {
        ops: vec![record_create(1, "skipped")],
        mode: WriteMode::Tolerant,
        then: Purpose::WorkflowSkip,
    };
    assert_eq!(m.step(record_event(), &f), vec![start(ops), skip]);
    assert_eq!(
        m.step(written(Purpose::Start), &f),
        vec![launch_in(1, ExecutionSource::Workflow, Some(t(0)), &[0])]
    );
}
