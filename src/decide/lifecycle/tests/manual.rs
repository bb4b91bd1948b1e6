//! Triggers with parameters: the trigger node and its parameters taken together, the run limited
//! to the items named and carrying the job parameter, bad parameters reported.

use super::*;
use crate::decide::trigger_params::TriggerParams;

fn triggered(params: Option<&[u8]>) -> Fake {
    Fake {
        params: params.map(<[u8]>::to_vec),
        ..fake()
    }
}

fn trigger_created() -> Input {
    Input::Event {
        node: JobNode::TriggerInstance(me()),
        kind: NodeEventKind::Created,
    }
}

fn take(with_params: bool) -> Command {
    let mut ops = vec![Op::delete(format!("/orders/trigger/{}", me()))];
    if with_params {
        ops.push(Op::delete(format!("/orders/shardcron/trigger/{}", me())));
    }
    Command::Write {
        ops,
        mode: if with_params {
            WriteMode::Tolerant
        } else {
            WriteMode::Direct
        },
        then: Purpose::TakeTrigger,
    }
}

#[test]
fn a_trigger_with_parameters_runs_the_items_named_with_its_job_parameter() {
    let params = TriggerParams {
        job_parameter: Some("date=2026-11-25".into()),
        items: Some([1].into()),
        workflow_run: None,
    };
    let data = params.encode();
    // (case, parameters record, commands of the trigger, the launch)
    type Case<'a> = (&'a str, Option<&'a [u8]>, Vec<Command>, Command);
    let cases: [Case; 3] = [
        (
            "with parameters",
            Some(&data),
            vec![take(true), start(begins(&[1]))],
            manual(1, &[1], Some("date=2026-11-25")),
        ),
        (
            "a plain trigger (a Java instance's, or no parameters)",
            None,
            vec![take(false), start(begins(&[0, 1]))],
            manual(1, &[0, 1], None),
        ),
        (
            "bad parameters: reported, and the trigger runs plain",
            Some(b"{\"jobParameter\": 3}"),
            vec![take(true), start(begins(&[0, 1]))],
            manual(1, &[0, 1], None),
        ),
    ];
    for (case, params, commands, launched) in cases {
        let (mut m, f) = (machine(Registration::Confirmed), triggered(params));
        let mut got = m.step(trigger_created(), &f);
        if let Some(Command::Warn(w)) = got.first() {
            let path = format!("/orders/shardcron/trigger/{}", me());
            assert!(
                w.starts_with(&format!("{path}: not trigger parameters: invalid type"))
                    && w.ends_with("the trigger runs without parameters"),
                "{case}: {w}"
            );
            got.remove(0);
        }
        assert_eq!(got, commands, "{case}");
        assert_eq!(
            m.step(written(Purpose::Start), &f),
            vec![launched],
            "{case}"
        );
    }
}

#[test]
fn a_trigger_queued_behind_a_run_keeps_its_parameters_and_the_next_cron_fire_has_none() {
    let params = TriggerParams {
        job_parameter: Some("rerun".into()),
        items: None,
        workflow_run: None,
    };
    let data = params.encode();
    let (mut m, mut f) = (machine(Registration::Confirmed), triggered(Some(&data)));
    started(&mut m, t(0), &f);
    // Queued: run 1 still runs.
    assert_eq!(m.step(trigger_created(), &f), vec![take(true)]);
    f.params = None;
    m.step(finished(1, &[]), &f);
    let ended = m.step(run_done(1), &f);
    assert_eq!(ended, vec![start(begins(&[0, 1]))]);
    let launched = m.step(written(Purpose::Start), &f);
    assert_eq!(launched, vec![manual(2, &[0, 1], Some("rerun"))]);
    m.step(finished(2, &[]), &f);
    m.step(run_done(2), &f);
    assert_eq!(
        started(&mut m, t(5), &f),
        vec![launch(3, ExecutionSource::Normal, Some(t(5)), &[0, 1])]
    );
}

#[test]
fn parameters_of_a_trigger_that_ran_nothing_here_do_not_ride_on_the_next_plain_trigger() {
    let params = TriggerParams {
        job_parameter: Some("only item 7".into()),
        items: Some([7].into()),
        workflow_run: None,
    };
    let data = params.encode();
    let (mut m, mut f) = (machine(Registration::Confirmed), triggered(Some(&data)));
    // Item 7 is not this instance's: nothing is written or launched for it.
    let got = m.step(trigger_created(), &f);
    assert_eq!(got.first(), Some(&take(true)), "{got:?}");
    assert!(
        !got.iter().any(|c| matches!(c, Command::Launch { .. })),
        "{got:?}"
    );
    m.step(written(Purpose::TakeTrigger), &f);
    // A plain trigger later runs every owned item, without the earlier job parameter.
    f.params = None;
    assert_eq!(
        m.step(trigger_created(), &f),
        vec![take(false), start(begins(&[0, 1]))]
    );
    assert_eq!(
        m.step(written(Purpose::Start), &f),
        vec![manual(1, &[0, 1], None)]
    );
}
