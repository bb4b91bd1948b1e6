//! Workflows in the machine: an upstream's item records at start and end, a downstream's
//! `{run}@start` created once when its upstreams ended the run (fan-in, failure policy), its own
//! items run once per run, and a job outside any workflow unchanged.

use super::*;
use crate::decide::workflow::graph::RunWhen;

mod count;
mod disabled;
mod manual;
mod recovery;
mod unsharded;

/// The fake's workflow records, built up.
impl Fake {
    fn record(mut self, job: &str, name: &str, data: &str) -> Self {
        let list = self.workflow.entry(job.into()).or_default();
        list.push((name.into(), data.as_bytes().to_vec(), 20));
        self
    }
    fn under(mut self, job: &str) -> Self {
        self.registered_under.push(job.into());
        self
    }
}

/// The workflow run of the root fire at `t(0)`.
const RUN: &str = "1767225600000";

/// A launch of a step of workflow run [`RUN`].
fn launch_in(
    run_id: u64,
    source: ExecutionSource,
    at: Option<DateTime<Utc>>,
    items: &[u32],
) -> Command {
    let mut launch = launch(run_id, source, at, items);
    if let Command::Launch { workflow, .. } = &mut launch {
        *workflow = crate::decide::workflow::run::RunId::parse(RUN);
    }
    launch
}

fn record_create(item: u32, data: &str) -> Op {
    Op::create(
        format!("/orders/shardcron/workflow/{RUN}@{item}"),
        data,
        CreateMode::Persistent,
    )
}

fn record_end(item: u32, end: &str) -> Op {
    Op::Set {
        path: format!("/orders/shardcron/workflow/{RUN}@{item}"),
        data: end.into(),
        version: None,
    }
}

fn running_record(item: u32) -> Op {
    record_create(item, &format!("running:{}", me()))
}

fn record_event() -> Input {
    Input::Event {
        node: JobNode::WorkflowRecord(format!("{RUN}@1")),
        kind: NodeEventKind::DataChanged,
    }
}

fn create_start(data: &str) -> Command {
    Command::Write {
        ops: vec![Op::create(
            format!("/orders/shardcron/workflow/{RUN}@start"),
            data,
            CreateMode::Persistent,
        )],
        mode: WriteMode::Direct,
        then: Purpose::WorkflowStart,
    }
}

fn skip_records() -> Command {
    Command::Write {
        ops: vec![record_create(0, "skipped"), record_create(1, "skipped")],
        mode: WriteMode::Tolerant,
        then: Purpose::WorkflowSkip,
    }
}

/// The tolerant write that registers `orders` under its upstream `up`.
fn register_under_up() -> Command {
    let create = |path: &str| Op::create(path, Vec::new(), CreateMode::Persistent);
    Command::Write {
        ops: vec![
            create("/up/shardcron"),
            create("/up/shardcron/workflow"),
            create("/up/shardcron/downstream"),
            create("/up/shardcron/downstream/orders"),
            create("/orders/shardcron"),
            create("/orders/shardcron/workflow"),
        ],
        mode: WriteMode::Tolerant,
        then: Purpose::WorkflowEnsure,
    }
}

fn downstream_of(upstreams: &[&str], on: RunWhen) -> JobMachine {
    machine_with(
        Registration::Confirmed,
        config(|c| c.after(upstreams).after_on(on)),
    )
}

#[test]
fn a_root_with_a_downstream_records_each_item_running_at_its_start_and_its_end_at_its_end() {
    let f = fake();
    let mut m = machine(Registration::Confirmed);
    let seen = Input::Event {
        node: JobNode::DownstreamJob(JobName::new("report").unwrap()),
        kind: NodeEventKind::Created,
    };
    assert_eq!(m.step(seen, &f), vec![]);
    let mut ops = begins(&[0, 1]);
    ops.extend([running_record(0), running_record(1)]);
    assert_eq!(
        m.step(Input::Fire { scheduled: t(0) }, &f),
        vec![start(ops)]
    );
    assert_eq!(
        m.step(written(Purpose::Start), &f),
        vec![launch_in(1, ExecutionSource::Normal, Some(t(0)), &[0, 1])]
    );
    let mut end = unmark(&[0, 1]);
    end.extend([record_end(0, "success"), record_end(1, "failed")]);
    assert_eq!(m.step(finished(1, &[1]), &f), vec![submit_end(1, end)]);
}

#[test]
fn a_job_outside_any_workflow_writes_no_workflow_record() {
    let f = fake();
    let mut m = machine(Registration::Confirmed);
    assert_eq!(
        m.step(Input::Fire { scheduled: t(0) }, &f),
        vec![start(begins(&[0, 1]))]
    );
    m.step(written(Purpose::Start), &f);
    assert_eq!(
        m.step(finished(1, &[]), &f),
        vec![submit_end(1, unmark(&[0, 1]))]
    );
}

/// A table row: name, upstreams, policy, facts, the commands expected.
type Case = (
    &'static str,
    &'static [&'static str],
    RunWhen,
    Fake,
    Vec<Command>,
);

#[test]
fn a_downstream_creates_the_runs_start_once_its_upstreams_ended_it_as_its_policy_reads() {
    let ended = |f: Fake, job: &str, a: &str, b: &str| {
        f.record(job, &format!("{RUN}@0"), a)
            .record(job, &format!("{RUN}@1"), b)
    };
    let success = RunWhen::Success;
    let completed = RunWhen::Completed;
    let cases: Vec<Case> =
        vec![
        (
            "every upstream item succeeded: run",
            &["up"],
            success,
            ended(fake().under("up"), "up", "success", "success"),
            vec![create_start("run")],
        ),
        (
            "an item failed and the dependency asks for success: skip, naming it",
            &["up"],
            success,
            ended(fake().under("up"), "up", "success", "failed"),
            vec![create_start("skip:up:failed")],
        ),
        (
            "an item timed out and the dependency asks for completion: run",
            &["up"],
            completed,
            ended(fake().under("up"), "up", "timeout", "success"),
            vec![create_start("run")],
        ),
        (
            "an item still runs: wait",
            &["up"],
            success,
            ended(fake().under("up"), "up", "success", "running:x@-@1"),
            vec![],
        ),
        (
            "fan-in: one upstream ended, the other has not: wait",
            &["a", "b"],
            success,
            ended(fake().under("a").under("b"), "a", "success", "success")
                .record("b", &format!("{RUN}@0"), "success"),
            vec![],
        ),
        (
            "fan-in: both upstreams ended: run",
            &["a", "b"],
            success,
            ended(
                ended(fake().under("a").under("b"), "a", "success", "success"),
                "b",
                "success",
                "success",
            ),
            vec![create_start("run")],
        ),
        (
            "the start exists (another instance decided): not created again, its decision holds",
            &["up"],
            success,
            ended(fake().under("up"), "up", "success", "success").record(
                "orders",
                &format!("{RUN}@start"),
                "skip:up:failed",
            ),
            vec![skip_records()],
        ),
        (
            "runs the upstream recorded before this job registered under it are not its own",
            &["up"],
            success,
            Fake {
                workflow: [(
                    "up".to_string(),
                    vec![
                        (format!("{RUN}@0"), b"success".to_vec(), 5),
                        (format!("{RUN}@1"), b"success".to_vec(), 5),
                    ],
                )]
                .into(),
                ..fake().under("up")
            },
            vec![],
        ),
    ];
    for (name, upstreams, on, facts, expected) in cases {
        let mut m = downstream_of(upstreams, on);
        assert_eq!(m.step(record_event(), &facts), expected, "{name}");
        // Asked once: the next look waits for the record (or the event of another's).
        assert_eq!(m.step(record_event(), &facts), vec![], "{name}, again");
    }
}

#[test]
fn a_start_another_instance_created_first_is_no_error() {
    let f = fake();
    let mut m = downstream_of(&["up"], RunWhen::Success);
    let lost = answered(Purpose::WorkflowStart, Outcome::Conflict);
    assert_eq!(m.step(lost, &f), vec![]);
}

#[test]
fn a_started_run_runs_this_instances_items_once_each_as_a_workflow_step_at_the_roots_instant() {
    let f = fake()
        .under("up")
        .record("orders", &format!("{RUN}@start"), "run");
    let mut m = downstream_of(&["up"], RunWhen::Success);
    let mut ops = begins(&[0, 1]);
    ops.extend([running_record(0), running_record(1)]);
    assert_eq!(m.step(record_event(), &f), vec![start(ops)]);
    assert_eq!(
        m.step(written(Purpose::Start), &f),
        vec![launch_in(1, ExecutionSource::Workflow, Some(t(0)), &[0, 1])]
    );
    // While it runs, another look launches nothing.
    assert_eq!(m.step(record_event(), &f), vec![]);
    let mut end = unmark(&[0, 1]);
    end.extend([record_end(0, "success"), record_end(1, "success")]);
    assert_eq!(m.step(finished(1, &[]), &f), vec![submit_end(1, end)]);
    // Ended: the items are launched for this run already (the mirror catches up later).
    let ended = run_done(1);
    assert_eq!(m.step(ended, &f), vec![]);
}

#[test]
fn an_item_with_a_record_of_the_run_ran_elsewhere_and_does_not_run_again() {
    let f = fake()
        .under("up")
        .record("orders", &format!("{RUN}@start"), "run")
        .record("orders", &format!("{RUN}@0"), "success");
    let mut m = downstream_of(&["up"], RunWhen::Success);
    let mut ops = begins(&[1]);
    ops.push(running_record(1));
    assert_eq!(m.step(record_event(), &f), vec![start(ops)]);
}

#[test]
fn a_record_created_first_by_another_instance_fails_the_start_and_nothing_runs() {
    let f = fake()
        .under("up")
        .record("orders", &format!("{RUN}@start"), "run");
    let mut m = downstream_of(&["up"], RunWhen::Success);
    m.step(record_event(), &f);
    let conflict = |purpose| Input::Written {
        purpose,
        outcome: Outcome::Conflict,
    };
    // The record creations stay with the guards: applied in one multi-op, not tolerated.
    let mut guarded = begins(&[0, 1]);
    guarded.extend([running_record(0), running_record(1)]);
    assert_eq!(
        m.step(conflict(Purpose::Start), &f),
        vec![Command::Write {
            ops: guarded,
            mode: WriteMode::Direct,
            then: Purpose::StartTolerant,
        }]
    );
    assert_eq!(
        m.step(conflict(Purpose::StartTolerant), &f),
        vec![Command::Warn(
            "fire skipped: writing running markers failed".into()
        )]
    );
}

#[test]
fn a_skipped_run_records_this_instances_items_skipped_so_the_skip_travels_down() {
    let f = fake()
        .under("up")
        .record("orders", &format!("{RUN}@start"), "skip:up:failed");
    let mut m = downstream_of(&["up"], RunWhen::Success);
    assert_eq!(m.step(record_event(), &f), vec![skip_records()]);
}

#[test]
fn a_downstream_registers_under_each_upstream_once_and_reports_a_missing_one() {
    let mut m = downstream_of(&["up", "gone", "done"], RunWhen::Success);
    let f = Fake {
        gone: vec!["gone".into()],
        ..fake().under("done")
    };
    let out = m.step(Input::Resynced, &f);
    assert!(out.contains(&Command::Warn(
        "shardcron.after names job gone, which does not exist: this job waits for it".into()
    )));
    assert!(out.contains(&register_under_up()), "{out:?}");
}
