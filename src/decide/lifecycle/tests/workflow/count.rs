//! The leader's report of each workflow run of its job once it ended: once per run, with its
//! outcome; the runs ended before it led are not reported again.

use super::*;
use crate::decide::workflow::records::WorkflowOutcome;
use crate::decide::workflow::run::RunId;

fn ended(run: &str, outcome: WorkflowOutcome) -> Command {
    Command::WorkflowRunEnded {
        run: RunId::parse(run).unwrap(),
        outcome,
    }
}

/// Both items of `run` ended with `end`.
fn both(f: Fake, run: &str, end: &str) -> Fake {
    f.record("orders", &format!("{run}@0"), end)
        .record("orders", &format!("{run}@1"), end)
}

#[test]
fn the_leader_reports_each_run_of_its_job_once_when_it_ended_and_not_those_ended_before_it_led() {
    let f = both(fake().under("up"), "1000", "success");
    let mut m = downstream_of(&["up"], RunWhen::Success);
    // Ended before this instance looked as leader: noted, not reported.
    assert_eq!(m.step(record_event(), &f), vec![]);

    let f = both(f, "1001", "success").record("orders", "1002@0", "success");
    let f = f.record("orders", "1002@1", "running:10.0.0.1@-@1");
    assert_eq!(
        m.step(record_event(), &f),
        vec![ended("1001", WorkflowOutcome::Completed)],
        "1002 still runs"
    );
    assert_eq!(m.step(record_event(), &f), vec![], "reported once");

    let f = both(f, "1003", "timeout").record("orders", "1004@start", "skip:up:failed");
    assert_eq!(
        m.step(record_event(), &f),
        vec![
            Command::Write {
                ops: (0..2)
                    .map(|i| {
                        let path = format!("/orders/shardcron/workflow/1004@{i}");
                        Op::create(path, "skipped", CreateMode::Persistent)
                    })
                    .collect(),
                mode: WriteMode::Tolerant,
                then: Purpose::WorkflowSkip,
            },
            ended("1003", WorkflowOutcome::Failed),
            ended("1004", WorkflowOutcome::Skipped),
        ],
        "a skip decision is reported at once, as this instance records its items skipped"
    );
}

#[test]
fn an_instance_that_is_not_the_leader_reports_nothing_and_notes_afresh_when_it_leads_again() {
    let mut led = both(fake().under("up"), "1000", "success");
    led.view.leader = Some(other());
    let mut m = downstream_of(&["up"], RunWhen::Success);
    assert_eq!(m.step(record_event(), &led), vec![]);
    let led = both(led, "1001", "failed");
    assert_eq!(
        m.step(record_event(), &led),
        vec![],
        "the leader reports it"
    );

    let mut leads = led;
    leads.view.leader = Some(me());
    assert_eq!(
        m.step(record_event(), &leads),
        vec![],
        "ended before it led"
    );
    let leads = both(leads, "1002", "skipped");
    assert_eq!(
        m.step(record_event(), &leads),
        vec![ended("1002", WorkflowOutcome::Skipped)]
    );
}
