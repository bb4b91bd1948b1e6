//! The run policies' transitions (`shardcron.` props): timeout and its grace, retries, overlap.

use super::*;
use crate::config::{JobKind, ValidationContext};

const SECOND: Duration = Duration::from_secs(1);

fn timed(f: &Fake) -> JobMachine {
    let config = config(|c| c.timeout(2 * SECOND).timeout_grace(SECOND));
    let mut m = machine_with(Registration::Confirmed, config);
    m.step(Input::Fire { scheduled: t(0) }, f);
    m
}

fn fired(timer: Timer) -> Input {
    Input::TimerFired { run_id: 1, timer }
}

fn timer(timer: Timer, after: Duration) -> Command {
    Command::StartTimer {
        run_id: 1,
        timer,
        after,
    }
}

#[test]
fn a_job_without_a_timeout_launches_with_no_timer() {
    let (mut m, f) = (machine(Registration::Confirmed), fake());
    let launched = started(&mut m, t(0), &f);
    assert_eq!(
        launched,
        vec![launch(1, ExecutionSource::Normal, Some(t(0)), &[0, 1])]
    );
}

#[test]
fn the_timeout_transitions_give_the_commands_the_table_says() {
    let f = fake();
    type Case = (&'static str, Vec<Input>, Vec<Command>);
    let cases: Vec<Case> = vec![
        (
            "a launch starts the run's timeout",
            vec![written(Purpose::Start)],
            vec![
                launch(1, ExecutionSource::Normal, Some(t(0)), &[0, 1]),
                timer(Timer::Timeout, 2 * SECOND),
            ],
        ),
        (
            "the timeout cancels the run as timed out and starts its grace",
            vec![written(Purpose::Start), fired(Timer::Timeout)],
            vec![
                Command::TimeOut {
                    run_id: 1,
                    grace: SECOND,
                },
                timer(Timer::Grace, SECOND),
            ],
        ),
        (
            "the grace's end abandons the run",
            vec![
                written(Purpose::Start),
                fired(Timer::Timeout),
                fired(Timer::Grace),
            ],
            vec![Command::Abandon { run_id: 1 }],
        ),
        (
            "a second timeout of the same run does nothing",
            vec![
                written(Purpose::Start),
                fired(Timer::Timeout),
                fired(Timer::Timeout),
            ],
            vec![],
        ),
        (
            "a timer of a run that ended is ignored",
            vec![
                written(Purpose::Start),
                Input::RunFinished {
                    run_id: 1,
                    failed: vec![],
                },
                run_done(1),
                fired(Timer::Timeout),
            ],
            vec![],
        ),
        (
            "a run that ends in its grace is over as any run",
            vec![
                written(Purpose::Start),
                fired(Timer::Timeout),
                Input::RunFinished {
                    run_id: 1,
                    failed: vec![],
                },
                run_done(1),
                fired(Timer::Grace),
            ],
            vec![],
        ),
    ];
    for (what, inputs, want) in cases {
        let mut m = timed(&f);
        assert_eq!(last_step(&mut m, inputs, &f), want, "{what}");
    }
}

#[test]
fn a_failover_run_and_a_triggered_run_have_the_timeout_too() {
    let f = fake();
    let config = config(|c| c.timeout(2 * SECOND));
    let mut m = machine_with(Registration::Confirmed, config);
    let claimed = m.step(Input::FailoverClaimed(vec![ShardItem(1)]), &f);
    assert_eq!(
        claimed,
        vec![
            launch(1, ExecutionSource::Failover, None, &[1]),
            timer(Timer::Timeout, 2 * SECOND),
        ]
    );
    let mut m = machine_with(
        Registration::Confirmed,
        super::config(|c| c.timeout(2 * SECOND)),
    );
    m.step(Input::Trigger, &f);
    let launched = m.step(written(Purpose::Start), &f);
    assert_eq!(launched[1], timer(Timer::Timeout, 2 * SECOND));
}

fn end(run_id: u64, items: &[u32]) -> Command {
    Command::SubmitEnd {
        run_id,
        ops: items
            .iter()
            .map(|i| Op::delete(format!("/orders/sharding/{i}/running")))
            .collect(),
    }
}

fn retry_timer(run_id: u64, secs: u64) -> Command {
    Command::StartTimer {
        run_id,
        timer: Timer::Retry,
        after: Duration::from_secs(secs),
    }
}

fn retry_fired(run_id: u64) -> Input {
    Input::TimerFired {
        run_id,
        timer: Timer::Retry,
    }
}

fn attempt(run_id: u64, items: &[u32], attempt: u32) -> Command {
    Command::Launch {
        run_id,
        source: ExecutionSource::Normal,
        scheduled: Some(t(0)),
        items: items.iter().map(|i| ShardItem(*i)).collect(),
        attempt,
        parameter: None,
        workflow: None,
    }
}

/// A machine of a job retrying twice after 1 s, then 2 s, with run 1 of items 0 and 1 launched.
fn retrying(f: &Fake) -> JobMachine {
    let config = config(|c| c.retry(2).retry_backoff(SECOND, 10 * SECOND));
    let mut m = machine_with(Registration::Confirmed, config);
    m.step(Input::Fire { scheduled: t(0) }, f);
    m.step(written(Purpose::Start), f);
    m
}

#[test]
fn the_retry_transitions_give_the_commands_the_table_says() {
    let f = fake();
    type Case = (&'static str, Vec<Input>, Vec<Command>);
    let cases: Vec<Case> = vec![
        (
            "a failed item backs off holding its marker; the others end as usual",
            vec![finished(1, &[1])],
            vec![retry_timer(2, 1), end(1, &[0])],
        ),
        (
            "the backoff's end runs the failed item again as attempt 2",
            vec![finished(1, &[1]), retry_fired(2)],
            vec![attempt(2, &[1], 2)],
        ),
        (
            "a second failure backs off twice as long",
            vec![finished(1, &[1]), retry_fired(2), finished(2, &[1])],
            vec![retry_timer(3, 2)],
        ),
        (
            "the third attempt runs",
            vec![
                finished(1, &[1]),
                retry_fired(2),
                finished(2, &[1]),
                retry_fired(3),
            ],
            vec![attempt(3, &[1], 3)],
        ),
        (
            "no attempt left: the failure is final and the marker goes",
            vec![
                finished(1, &[1]),
                retry_fired(2),
                finished(2, &[1]),
                retry_fired(3),
                finished(3, &[1]),
            ],
            vec![end(3, &[1])],
        ),
        (
            "a retry that succeeds ends as any run",
            vec![finished(1, &[1]), retry_fired(2), finished(2, &[])],
            vec![end(2, &[1])],
        ),
        (
            "every item failed: they back off together, run 1 ends with nothing to write",
            vec![finished(1, &[0, 1])],
            vec![retry_timer(2, 1)],
        ),
        (
            "a second fire of the backoff's timer does nothing",
            vec![finished(1, &[1]), retry_fired(2), retry_fired(2)],
            vec![],
        ),
    ];
    for (what, inputs, want) in cases {
        let mut m = retrying(&f);
        assert_eq!(last_step(&mut m, inputs, &f), want, "{what}");
    }
}

#[test]
fn a_retry_that_cannot_run_ends_its_run_and_says_why() {
    let f = fake();
    tracing::info!("--- a drain ends the backoff at once: the marker goes");
    let mut m = retrying(&f);
    m.step(finished(1, &[1]), &f);
    let drained = m.step(Input::Drain, &f);
    assert!(
        matches!(&drained[..], [Command::Unschedule, Command::Warn(w), Command::FailureStands(s), e]
        if w.contains("stops here") && *s == [ShardItem(1)] && *e == end(2, &[1])),
        "the error handler hears the failure that stands: {drained:?}"
    );

    tracing::info!("--- the item moved to another instance during the backoff");
    let mut m = retrying(&f);
    m.step(finished(1, &[1]), &f);
    let mut moved = fake();
    moved.view = committed(owned(
        view(&[&me(), &other()], Some(&me())),
        &[(0, &me()), (1, &other())],
    ));
    let due = m.step(retry_fired(2), &moved);
    assert!(
        matches!(&due[..], [Command::Warn(w), Command::FailureStands(s), e]
        if w.contains("another instance") && *s == [ShardItem(1)] && *e == end(2, &[1])),
        "{due:?}"
    );

    tracing::info!("--- disconnected at the backoff's end: not run");
    let mut m = retrying(&f);
    m.step(finished(1, &[1]), &f);
    m.step(Input::Session(SessionState::Disconnected), &f);
    let due = m.step(retry_fired(2), &f);
    assert!(matches!(due.first(), Some(Command::Warn(_))), "{due:?}");
}

#[test]
fn a_failure_whose_retry_cannot_even_start_stands_at_once_unless_every_failure_was_heard() {
    use crate::config::Notify;
    let f = fake();
    let mut m = retrying(&f);
    m.step(Input::Session(SessionState::Disconnected), &f);
    assert_eq!(
        m.step(finished(1, &[1]), &f),
        vec![Command::FailureStands(vec![ShardItem(1)]), end(1, &[0, 1])]
    );
    let every = config(|c| {
        c.retry(2)
            .retry_backoff(SECOND, 10 * SECOND)
            .retry_notify(Notify::Every)
    });
    let mut m = machine_with(Registration::Confirmed, every);
    started(&mut m, t(0), &f);
    m.step(Input::Session(SessionState::Disconnected), &f);
    assert_eq!(m.step(finished(1, &[1]), &f), vec![end(1, &[0, 1])]);
}

#[test]
fn a_backoff_holds_its_item_so_the_next_fire_finds_it_running() {
    let f = fake();
    let mut m = retrying(&f);
    m.step(finished(1, &[1]), &f);
    m.step(run_done(1), &f);
    assert!(m.running().contains(&ShardItem(1)) && !m.is_idle());
    let launched = started(&mut m, t(5), &f);
    assert!(
        launched.contains(&launch(3, ExecutionSource::Normal, Some(t(5)), &[0])),
        "item 1 is not run beside its retry: {launched:?}"
    );
}

#[test]
fn a_job_without_retries_ends_a_failed_item_at_once() {
    let (mut m, f) = (machine(Registration::Confirmed), fake());
    started(&mut m, t(0), &f);
    assert_eq!(m.step(finished(1, &[1]), &f), vec![end(1, &[0, 1])]);
}

#[test]
fn backoffs_grow_by_the_factor_up_to_the_maximum_and_jitter_only_shortens_them() {
    use crate::config::{Notify, Retry};
    let retry = Retry {
        max: 10,
        initial: SECOND,
        factor: 3.0,
        max_backoff: 20 * SECOND,
        jitter: 0.0,
        notify: Notify::Final,
    };
    let delays: Vec<u64> = (1..=5).map(|n| retry.delay(n, 7).as_secs()).collect();
    assert_eq!(delays, [1, 3, 9, 20, 20]);
    let jittered = Retry {
        jitter: 0.5,
        ..retry
    };
    for seed in [0, 1, u64::MAX, 0x1234_5678_9abc_def0] {
        let d = jittered.delay(2, seed);
        assert!(d <= 3 * SECOND && d >= 3 * SECOND / 2, "{d:?}");
    }
}

/// A second fire while run 1 of items 0 and 1 still runs here: its commands.
fn fire_over_a_run(config: Arc<ValidatedConfig>) -> (JobMachine, Vec<Command>) {
    let f = fake();
    let mut m = machine_with(Registration::Confirmed, config);
    started(&mut m, t(0), &f);
    let commands = m.step(Input::Fire { scheduled: t(5) }, &f);
    (m, commands)
}

#[test]
fn overlap_skip_and_buffer_one_mean_misfire_false_and_true_whatever_misfire_says() {
    use crate::config::Overlap;
    let (_, skip) = fire_over_a_run(config(|c| c.overlap(Overlap::Skip)));
    assert_eq!(skip, fire_over_a_run(config(|c| c.misfire(false))).1);
    let buffered = config(|c| c.misfire(false).overlap(Overlap::BufferOne));
    let (_, one) = fire_over_a_run(buffered);
    assert_eq!(one, fire_over_a_run(config(|c| c.misfire(true))).1);
    assert_ne!(skip, one);
}

#[test]
fn overlap_cancel_other_cancels_the_items_running_here_and_runs_them_once_they_end() {
    use crate::config::Overlap;
    let f = fake();
    let (_, one) = fire_over_a_run(config(|c| c.overlap(Overlap::BufferOne)));
    let (mut m, cancel) = fire_over_a_run(config(|c| c.overlap(Overlap::CancelOther)));
    assert_eq!(cancel[0], Command::Cancel(vec![ShardItem(0), ShardItem(1)]));
    assert_eq!(cancel[1..], one[..], "then as buffer_one");
    m.step(written(Purpose::Start), &f);
    m.step(finished(1, &[0, 1]), &f);
    let ended = m.step(run_done(1), &f);
    assert!(
        matches!(
            ended.first(),
            Some(Command::Write {
                then: Purpose::Start,
                ..
            })
        ),
        "the cancelled items run for the fire: {ended:?}"
    );
}

#[test]
fn policies_not_carried_out_yet_are_refused_naming_the_key() {
    let ctx = ValidationContext::builtin(JobKind::Simple);
    let window = JobConfig::test("j").catchup_window(Duration::from_secs(60));
    assert!(
        window.validate(&ctx).is_ok(),
        "a catch-up window is carried out"
    );
}
