//! Fires launched ahead and withdrawn before their instant by whatever could have changed their
//! decision: each such input, what it answers, and what the fire at the instant then decides.

use super::ahead::{before, fire, launched_ahead};
use super::*;

const SECOND: Duration = Duration::from_secs(1);

/// The markers written ahead, released.
fn release(items: &[u32]) -> Command {
    Command::Write {
        ops: unmark(items),
        mode: WriteMode::Tolerant,
        then: Purpose::Release,
    }
}

/// A table row: what happens 100 ms before the instant, the facts it and the fire see, what it
/// answers, and what the fire at the instant answers then (`None`: no fire comes).
type Case = (
    &'static str,
    Input,
    Fake,
    Vec<Command>,
    Option<Vec<Command>>,
);

#[test]
fn whatever_could_change_the_fires_decision_withdraws_the_run_launched_ahead() {
    let withdraw = Command::Withdraw(1);
    let params = config(|c| c.item_parameters("0=a,1=b"));
    let cron = config(|c| c.cron("0/7 * * * * ?"));
    let moved = Fake {
        view: committed(owned(
            view(&[&me(), &other()], Some(&me())),
            &[(0, &me()), (1, &other())],
        )),
        ..before(100)
    };
    let item_off = Fake {
        view: with_item(two_items(), 0, |i| i.disabled = true),
        ..before(100)
    };
    let server_off = Fake {
        view: disabled(two_items(), "10.0.0.1"),
        ..before(100)
    };
    let mut resharding = two_items();
    resharding.sharding_necessary = true;
    let resharding = Fake {
        view: resharding,
        ..before(100)
    };
    let event = |node: JobNode, kind: NodeEventKind| Input::Event { node, kind };
    let leave = |mut ops: Vec<Op>| {
        ops.extend([
            Op::delete(format!("/orders/instances/{}", me())),
            Op::delete("/orders/leader/election/instance"),
        ]);
        [vec![withdraw.clone()], leaves(ops)].concat()
    };
    let lost = || {
        Some(vec![skip(
            SkipReason::Disconnected,
            0,
            Some(MissReason::CannotStart),
            true,
        )])
    };
    let cases: Vec<Case> = vec![
        (
            "a config change: the fire runs the marked items under the new config",
            Input::Config(params.clone()),
            before(100),
            vec![
                withdraw.clone(),
                Command::ConfigApplied(params),
                Command::Evaluate,
            ],
            Some(vec![launch(
                2,
                ExecutionSource::Normal,
                Some(t(0)),
                &[0, 1],
            )]),
        ),
        (
            "a new cron: the markers go and the job is scheduled again",
            Input::Config(cron.clone()),
            before(100),
            vec![
                withdraw.clone(),
                release(&[0, 1]),
                Command::ConfigApplied(cron),
                Command::Schedule,
                Command::Evaluate,
            ],
            None,
        ),
        (
            "a new plan moving an item away: the fire runs the other and deletes its marker",
            event(
                JobNode::ShardingInstance(ShardItem(1)),
                NodeEventKind::DataChanged,
            ),
            moved,
            vec![withdraw.clone()],
            Some(vec![start(unmark(&[1]))]),
        ),
        (
            "an item disabled: the fire runs the other and deletes its marker",
            event(
                JobNode::ShardingDisabled(ShardItem(0)),
                NodeEventKind::Created,
            ),
            item_off,
            vec![withdraw.clone()],
            Some(vec![start(unmark(&[0]))]),
        ),
        (
            "this server disabled: the fire releases the markers",
            event(
                JobNode::Server("10.0.0.1".into()),
                NodeEventKind::DataChanged,
            ),
            server_off,
            vec![withdraw.clone()],
            Some(vec![release(&[0, 1])]),
        ),
        (
            "a reshard asked for: the fire parks behind it",
            event(JobNode::LeaderShardingNecessary, NodeEventKind::Created),
            resharding,
            vec![withdraw.clone(), Command::SetResharding(true)],
            Some(vec![
                release(&[0, 1]),
                Command::SetResharding(true),
                Command::AskReshard,
            ]),
        ),
        (
            "a drain: the markers go and the drain is done at once",
            Input::Drain,
            before(100),
            vec![
                withdraw.clone(),
                release(&[0, 1]),
                Command::Unschedule,
                Command::DrainDone,
            ],
            None,
        ),
        (
            "the job removed here: it leaves with the markers",
            Input::Remove,
            before(100),
            leave(unmark(&[0, 1])),
            None,
        ),
        (
            "the job removed from the registry: it leaves with the markers",
            event(JobNode::Root, NodeEventKind::Deleted),
            before(100),
            {
                let mut c = leave(unmark(&[0, 1]));
                c.insert(
                    1,
                    Command::Warn("job removed from the registry: stopping it here".into()),
                );
                c
            },
            None,
        ),
        (
            "the link lost: the fire is skipped",
            Input::Session(SessionState::Disconnected),
            before(100),
            vec![withdraw.clone()],
            lost(),
        ),
        (
            "the session expired: the fire is skipped",
            Input::Session(SessionState::Expired),
            before(100),
            vec![withdraw.clone()],
            lost(),
        ),
        (
            "a pause past the late bound: the fire waits for the session check",
            Input::Paused(10 * SECOND),
            before(100),
            vec![withdraw.clone(), Command::CheckSession],
            Some(vec![Command::CheckSession]),
        ),
        (
            "a session check unanswered: the fire waits for the next check",
            Input::SessionChecked { alive: false },
            before(100),
            vec![withdraw.clone()],
            Some(vec![Command::CheckSession]),
        ),
        (
            "a manual trigger: it runs the items now and the fire finds them running",
            Input::Trigger,
            before(100),
            vec![
                withdraw.clone(),
                launch(2, ExecutionSource::Manual, None, &[0, 1]),
            ],
            Some(vec![
                skip(SkipReason::StillRunning, 2, None, true),
                start(vec![
                    Op::create("/orders/sharding/0/misfire", "", CreateMode::Persistent),
                    Op::create("/orders/sharding/1/misfire", "", CreateMode::Persistent),
                ]),
            ]),
        ),
        (
            "a re-list: the fire decides on what it shows",
            Input::Resynced,
            before(100),
            vec![withdraw.clone()],
            Some(vec![launch(
                2,
                ExecutionSource::Normal,
                Some(t(0)),
                &[0, 1],
            )]),
        ),
        (
            "refused markers: the fire writes them again, guarded",
            answered(
                Purpose::Prepare(vec![ShardItem(0), ShardItem(1)]),
                Outcome::Conflict,
            ),
            before(100),
            vec![withdraw.clone()],
            Some(vec![start(begins(&[0, 1]))]),
        ),
    ];
    for (name, input, f, expected, then) in cases {
        let mut m = launched_ahead();
        assert_eq!(m.step(input, &f), expected, "{name}");
        if let Some(then) = then {
            let at = Fake { now: t(0), ..f };
            assert_eq!(m.step(fire(), &at), then, "{name}: the fire");
        }
    }
}

#[test]
fn a_withdrawn_runs_report_is_ignored() {
    let mut m = launched_ahead();
    m.step(
        Input::Config(config(|c| c.item_parameters("0=a"))),
        &before(100),
    );
    assert_eq!(m.step(finished(1, &[0, 1]), &before(99)), vec![]);
    assert_eq!(
        m.step(fire(), &before(0)),
        vec![launch(2, ExecutionSource::Normal, Some(t(0)), &[0, 1])]
    );
}
