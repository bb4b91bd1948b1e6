use std::num::NonZeroU32;
use std::time::Duration;

use super::*;
use crate::config::{JobKind, ValidationContext};

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

/// Props set, and the keys the problems name.
type Case = (
    &'static [(&'static str, &'static str)],
    &'static [&'static str],
);

fn with(props: &[(&str, &str)]) -> JobConfig {
    props
        .iter()
        .fold(JobConfig::test("j"), |c, (k, v)| c.prop(*k, *v))
}

fn fields(props: &[(&str, &str)]) -> Vec<&'static str> {
    match RunPolicy::from_config(&with(props)) {
        Ok(_) => Vec::new(),
        Err(errors) => errors.into_iter().map(|e| e.field).collect(),
    }
}

#[test]
fn a_job_that_sets_no_key_keeps_elasticjobs_meaning_of_misfire() {
    let on = RunPolicy::from_config(&JobConfig::test("j")).unwrap();
    assert_eq!(on, RunPolicy::from_misfire(true));
    assert_eq!(on.overlap, Overlap::BufferOne);
    assert!(on.is_default());
    let off = RunPolicy::from_config(&JobConfig::test("j").misfire(false)).unwrap();
    assert_eq!(off.overlap, Overlap::Skip);
    let only = RunPolicy::from_config(&JobConfig::test("j").prop("shardcron.only", "true"));
    assert_eq!(
        only,
        Ok(RunPolicy::from_misfire(true)),
        "other shardcron keys are not policy"
    );
}

#[test]
fn every_key_reads_into_the_typed_policy() {
    let config = JobConfig::test("j")
        .timeout(secs(30))
        .timeout_grace(Duration::from_millis(500))
        .retry(3)
        .retry_backoff(secs(2), secs(60))
        .retry_backoff_factor(3.0)
        .retry_jitter(0.25)
        .retry_notify(Notify::Every)
        .overlap(Overlap::BufferAll(NonZeroU32::new(7).unwrap()))
        .catchup_window(secs(600));
    let policy = RunPolicy::from_config(&config).unwrap();
    assert_eq!(
        policy,
        RunPolicy {
            timeout: Some(Timeout {
                after: secs(30),
                grace: Duration::from_millis(500),
            }),
            retry: Some(Retry {
                max: 3,
                initial: secs(2),
                factor: 3.0,
                max_backoff: secs(60),
                jitter: 0.25,
                notify: Notify::Every,
            }),
            overlap: Overlap::BufferAll(NonZeroU32::new(7).unwrap()),
            catchup_window: secs(600),
            after: None,
        }
    );
    assert!(!policy.is_default());
    assert_eq!(config.props["shardcron.timeout.grace"], "500ms");
    assert_eq!(config.props["shardcron.catchup.window"], "10m");
}

#[test]
fn defaults_fill_what_a_key_leaves_out() {
    let policy = RunPolicy::from_config(&with(&[(TIMEOUT, "2s"), (RETRY_MAX, "1")])).unwrap();
    assert_eq!(
        policy.timeout,
        Some(Timeout {
            after: secs(2),
            grace: DEFAULT_GRACE,
        })
    );
    let retry = policy.retry.unwrap();
    assert_eq!(
        (retry.initial, retry.factor, retry.max_backoff, retry.jitter),
        (secs(1), 2.0, secs(300), 0.0)
    );
    assert_eq!(retry.notify, Notify::Final);
    let long = RunPolicy::from_config(&with(&[(RETRY_MAX, "1"), (RETRY_BACKOFF, "1h")])).unwrap();
    assert_eq!(
        long.retry.unwrap().max_backoff,
        secs(3600),
        "max grows to the initial"
    );
    let buffered = RunPolicy::from_config(&with(&[(OVERLAP, "buffer_all")])).unwrap();
    assert_eq!(
        buffered.overlap,
        Overlap::BufferAll(NonZeroU32::new(DEFAULT_BUFFER).unwrap())
    );
}

#[test]
fn a_bad_value_is_refused_naming_its_key() {
    let cases: [Case; 14] = [
        (&[(TIMEOUT, "2")], &[TIMEOUT]),
        (&[(TIMEOUT, "0s")], &[TIMEOUT]),
        (
            &[(TIMEOUT, "1s"), (TIMEOUT_GRACE, "soon")],
            &[TIMEOUT_GRACE],
        ),
        (&[(RETRY_MAX, "-1")], &[RETRY_MAX]),
        (&[(RETRY_MAX, "101")], &[RETRY_MAX]),
        (&[(RETRY_MAX, "2"), (RETRY_FACTOR, "0.5")], &[RETRY_FACTOR]),
        (&[(RETRY_MAX, "2"), (RETRY_FACTOR, "NaN")], &[RETRY_FACTOR]),
        (&[(RETRY_MAX, "2"), (RETRY_JITTER, "1.5")], &[RETRY_JITTER]),
        (&[(RETRY_MAX, "2"), (RETRY_NOTIFY, "all")], &[RETRY_NOTIFY]),
        (&[(OVERLAP, "replace")], &[OVERLAP]),
        (
            &[(OVERLAP, "buffer_all"), (OVERLAP_BUFFER, "0")],
            &[OVERLAP_BUFFER],
        ),
        (
            &[(OVERLAP, "buffer_all"), (OVERLAP_BUFFER, "1001")],
            &[OVERLAP_BUFFER],
        ),
        (&[(CATCHUP_WINDOW, "forever")], &[CATCHUP_WINDOW]),
        (&[("shardcron.retry.maxx", "2")], &["props"]),
    ];
    for (props, want) in cases {
        assert_eq!(fields(props), want, "{props:?}");
    }
}

#[test]
fn incoherent_combinations_are_refused_naming_the_key_that_makes_them_so() {
    let cases: [Case; 6] = [
        (&[(TIMEOUT_GRACE, "1s")], &[TIMEOUT_GRACE]),
        (&[(RETRY_BACKOFF, "1s")], &[RETRY_BACKOFF]),
        (
            &[(RETRY_MAX, "0"), (RETRY_NOTIFY, "every")],
            &[RETRY_NOTIFY],
        ),
        (
            &[
                (RETRY_MAX, "1"),
                (RETRY_BACKOFF, "1m"),
                (RETRY_BACKOFF_MAX, "2s"),
            ],
            &[RETRY_BACKOFF_MAX],
        ),
        (
            &[(OVERLAP, "skip"), (OVERLAP_BUFFER, "5")],
            &[OVERLAP_BUFFER],
        ),
        (&[(OVERLAP, "allow_all")], &[OVERLAP]),
    ];
    for (props, want) in cases {
        assert_eq!(fields(props), want, "{props:?}");
    }
    let allowed = with(&[(OVERLAP, "allow_all")]).monitor_execution(false);
    assert_eq!(
        RunPolicy::from_config(&allowed).map(|p| p.overlap),
        Ok(Overlap::AllowAll)
    );
    let failing_over = allowed.failover(true);
    let errors = RunPolicy::from_config(&failing_over).unwrap_err();
    assert_eq!(errors[0].field, OVERLAP);
    assert!(errors[0].problem.contains("failover"), "{errors:?}");
    let one_off = JobConfig::test("j").one_off().catchup_window(secs(60));
    let errors = RunPolicy::from_config(&one_off).unwrap_err();
    assert_eq!(errors[0].field, CATCHUP_WINDOW);
}

#[test]
fn a_config_with_a_bad_policy_is_refused_by_validation_and_its_yaml_round_trips() {
    let ctx = ValidationContext::builtin(JobKind::Simple);
    let bad = with(&[(TIMEOUT, "2 minutes"), (OVERLAP, "sometimes")]);
    let errors = bad.validate(&ctx).unwrap_err();
    assert_eq!(errors.fields(), [TIMEOUT, OVERLAP]);
    assert!(errors.to_string().contains("shardcron.timeout"), "{errors}");
    let yaml = "jobName: j\ncron: 0/5 * * * * ?\nshardingTotalCount: 2\nprops:\n  shardcron.timeout: 5s\n  shardcron.retry.max: 2\n  shardcron.overlap: skip\n";
    let config = JobConfig::from_yaml(yaml).unwrap();
    let valid = config.validate(&ctx).unwrap();
    assert_eq!(valid.policy().timeout.map(|t| t.after), Some(secs(5)));
    assert_eq!(valid.policy().overlap, Overlap::Skip);
    assert!(
        config.check_java_readable().is_ok(),
        "policy keys are plain props to Java"
    );
}

#[test]
fn the_error_handler_hears_the_last_attempts_failure_or_every_one_when_asked() {
    let heard = |config: JobConfig| {
        let policy = RunPolicy::from_config(&config).unwrap();
        (1..=3).map(|n| policy.notifies(n)).collect::<Vec<_>>()
    };
    assert_eq!(heard(JobConfig::test("j")), [true, true, true], "no retry");
    assert_eq!(
        heard(JobConfig::test("j").retry(2)),
        [false, false, true],
        "final: attempt 3 of 1 + 2"
    );
    let every = JobConfig::test("j").retry(2).retry_notify(Notify::Every);
    assert_eq!(heard(every), [true, true, true]);
}

#[test]
fn buffer_all_keeps_its_bound_and_allow_all_is_refused_with_failover_naming_the_overlap() {
    let all = RunPolicy::from_config(&with(&[(OVERLAP, "buffer_all")])).unwrap();
    assert_eq!(
        all.overlap,
        Overlap::BufferAll(NonZeroU32::new(DEFAULT_BUFFER).unwrap())
    );
    let bounded = with(&[(OVERLAP, "buffer_all"), (OVERLAP_BUFFER, "7")]);
    let overlap = RunPolicy::from_config(&bounded).unwrap().overlap;
    assert_eq!(overlap, Overlap::BufferAll(NonZeroU32::new(7).unwrap()));
    assert_eq!(
        fields(&[(OVERLAP, "buffer_all"), (OVERLAP_BUFFER, "1001")]),
        [OVERLAP_BUFFER]
    );
    let ctx = ValidationContext::builtin(JobKind::Simple);
    for config in [
        bounded,
        with(&[(OVERLAP, "allow_all")]).monitor_execution(false),
    ] {
        assert!(config.validate(&ctx).is_ok(), "carried out: {config:?}");
    }
}
