//! A config change in the machine: a changed cron reschedules, an unchanged config only
//! re-evaluates, and a lowered `shardingTotalCount` cancels the runs here of the items that are
//! gone (the reshard to the new count waits for every running item), and retries none of them.

use super::*;

const SECOND: Duration = Duration::from_secs(1);

/// Items 0 to 3 owned by `me`, `other` live too, `me` leads.
fn four_items() -> Fake {
    let (me, other) = (me(), other());
    let owners: Vec<(u32, &InstanceId)> = (0..4).map(|i| (i, &me)).collect();
    Fake {
        view: committed(owned(view(&[&me, &other], Some(&me)), &owners)),
        ..fake()
    }
}

/// A machine of a job of four items (and `more` of its config) with run 1 of all four launched.
fn running_four(more: impl FnOnce(JobConfig) -> JobConfig, f: &Fake) -> JobMachine {
    let mut m = machine_with(Registration::Confirmed, config(|c| more(c.items(4))));
    m.step(Input::Fire { scheduled: t(0) }, f);
    let launched = m.step(written(Purpose::Start), f);
    assert_eq!(
        launched,
        vec![launch(
            1,
            ExecutionSource::Normal,
            Some(t(0)),
            &[0, 1, 2, 3]
        )]
    );
    m
}

fn cancel(items: &[u32]) -> Command {
    Command::Cancel(items.iter().map(|i| ShardItem(*i)).collect())
}

#[test]
fn a_changed_cron_reschedules_and_an_unchanged_config_only_re_evaluates() {
    let (mut m, f) = (machine(Registration::Confirmed), fake());
    assert_eq!(
        m.step(Input::Config(config(|c| c)), &f),
        vec![Command::Evaluate]
    );
    let new = config(|c| c.cron("0/7 * * * * ?"));
    assert_eq!(
        m.step(Input::Config(new.clone()), &f),
        vec![
            Command::ConfigApplied(new),
            Command::Schedule,
            Command::Evaluate
        ]
    );
}

/// A table row: name, whether a run of items 0 to 3 is under way, the new count, the commands
/// expected before the config is applied.
type Case = (&'static str, bool, i32, Vec<Command>);

#[test]
fn a_lowered_item_count_cancels_at_once_the_runs_here_of_the_items_that_are_gone() {
    let f = four_items();
    let cases: Vec<Case> = vec![
        (
            "lowered to 2: items 2 and 3 are gone",
            true,
            2,
            vec![cancel(&[2, 3])],
        ),
        ("lowered to 3: item 3 is gone", true, 3, vec![cancel(&[3])]),
        (
            "raised to 6: every running item still exists",
            true,
            6,
            vec![],
        ),
        (
            "lowered with no run here: nothing to cancel",
            false,
            2,
            vec![],
        ),
    ];
    for (name, running, total, before) in cases {
        let mut m = if running {
            running_four(|c| c, &f)
        } else {
            machine_with(Registration::Confirmed, config(|c| c.items(4)))
        };
        let new = config(|c| c.items(total));
        let mut expected = before;
        expected.extend([Command::ConfigApplied(new.clone()), Command::Evaluate]);
        assert_eq!(m.step(Input::Config(new), &f), expected, "{name}");
    }
}

#[test]
fn an_item_cancelled_because_the_count_was_lowered_is_not_retried() {
    let f = four_items();
    let retry = |c: JobConfig| c.retry(2).retry_backoff(SECOND, 10 * SECOND);
    let mut m = running_four(retry, &f);
    let lowered = config(|c| retry(c.items(2)));
    m.step(Input::Config(lowered), &f);
    // Items 2 and 3 (gone) end failed; item 1 failed too, and still exists: only it backs off.
    let out = m.step(finished(1, &[1, 2, 3]), &f);
    let retried: Vec<&Command> = (out.iter())
        .filter(|c| matches!(c, Command::StartTimer { .. }))
        .collect();
    assert_eq!(retried.len(), 1, "{out:?}");
    let end = out.iter().find_map(|c| match c {
        Command::SubmitEnd { ops, .. } => Some(ops.clone()),
        _ => None,
    });
    assert_eq!(end, Some(unmark(&[0, 2, 3])), "{out:?}");
}
