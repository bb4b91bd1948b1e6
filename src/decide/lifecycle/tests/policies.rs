//! The run policies' transitions (`shardcron.` props): timeout and its grace.

use super::*;

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
    m.step(Input::Fire { scheduled: t(0) }, &f);
    let launched = m.step(written(Purpose::Start), &f);
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
            vec![Command::TimeOut { run_id: 1 }, timer(Timer::Grace, SECOND)],
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
                Input::RunFinished { run_id: 1 },
                Input::RunEnded {
                    run_id: 1,
                    outcome: Outcome::Done,
                },
                fired(Timer::Timeout),
            ],
            vec![],
        ),
        (
            "a run that ends in its grace is over as any run",
            vec![
                written(Purpose::Start),
                fired(Timer::Timeout),
                Input::RunFinished { run_id: 1 },
                Input::RunEnded {
                    run_id: 1,
                    outcome: Outcome::Done,
                },
                fired(Timer::Grace),
            ],
            vec![],
        ),
    ];
    for (what, inputs, want) in cases {
        let mut m = timed(&f);
        let mut last = Vec::new();
        for input in inputs {
            last = m.step(input, &f);
        }
        assert_eq!(last, want, "{what}");
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
