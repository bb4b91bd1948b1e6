//! Tests of the YAML layout and of validation.

use super::*;
use crate::ShardItem;

/// The config a live ElasticJob-Lite 3.x instance wrote (registry-layout.md).
const JAVA_WRITTEN: &str = "\
cron: '* * * * * ?'
description: ''
disabled: false
failover: true
jobName: orders
jobParameter: ''
maxTimeDiffSeconds: -1
misfire: true
monitorExecution: true
overwrite: true
reconcileIntervalMinutes: 10
shardingItemParameters: 0=Beijing,1=Shanghai,2=Guangzhou
shardingTotalCount: 3
staticSharding: false
";

fn simple() -> ValidationContext<'static> {
    ValidationContext::builtin(JobKind::Simple)
}

#[test]
fn the_java_written_config_reads_and_writes_back_byte_for_byte() {
    let config = JobConfig::from_yaml(JAVA_WRITTEN).unwrap();
    assert_eq!(config.to_yaml().unwrap(), JAVA_WRITTEN);
    let expected = JobConfig::new("orders", 3)
        .cron("* * * * * ?")
        .description("")
        .job_parameter("")
        .failover(true)
        .overwrite(true)
        .item_parameters("0=Beijing,1=Shanghai,2=Guangzhou");
    assert_eq!(config, expected);
    assert_eq!(expected.to_yaml().unwrap(), JAVA_WRITTEN);
}

#[test]
fn a_minimal_config_gets_elasticjob_defaults() {
    let config = JobConfig::from_yaml("jobName: orders\nshardingTotalCount: 2\n").unwrap();
    assert_eq!(config, JobConfig::new("orders", 2));
    assert!(config.monitor_execution && config.misfire);
    assert!(!config.failover && !config.disabled && !config.overwrite && !config.static_sharding);
    assert_eq!(
        (
            config.max_time_diff_seconds,
            config.reconcile_interval_minutes
        ),
        (-1, 10)
    );
    assert_eq!(
        (config.strategy_name(), config.error_handler_name()),
        ("AVG_ALLOCATION", "LOG")
    );
}

#[test]
fn unknown_fields_survive_a_rewrite_in_key_order() {
    let text = "\
jobName: orders
shardingTotalCount: 1
zExtra:
  nested: [1, 2]
aNewerField: 7
";
    let mut config = JobConfig::from_yaml(text).unwrap();
    assert_eq!(config.unknown_fields.len(), 2);
    config.failover = true;
    let written = config.to_yaml().unwrap();
    let keys: Vec<&str> = written
        .lines()
        .filter(|l| !l.starts_with(' ') && !l.starts_with('-'))
        .filter_map(|l| l.split(':').next())
        .collect();
    let mut sorted = keys.clone();
    sorted.sort_unstable();
    assert_eq!(keys, sorted, "{written}");
    let reread = JobConfig::from_yaml(&written).unwrap();
    assert_eq!(reread, config);
    assert!(written.contains("aNewerField: 7"), "{written}");
}

#[test]
fn props_read_any_scalar_as_text_and_empty_collections_are_left_out() {
    let text = "jobName: s\nshardingTotalCount: 1\nprops:\n  timeout: 30\n  verbose: true\n  ratio: 0.5\n  script.command.line: echo hi\njobListenerTypes: []\n";
    let config = JobConfig::from_yaml(text).unwrap();
    let props: Vec<(&str, &str)> = config
        .props
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(
        props,
        [
            ("ratio", "0.5"),
            ("script.command.line", "echo hi"),
            ("timeout", "30"),
            ("verbose", "true")
        ]
    );
    let written = config.to_yaml().unwrap();
    assert!(
        written.contains("  timeout: '30'\n"),
        "written back as strings: {written}"
    );
    assert!(!written.contains("jobListenerTypes"), "{written}");
    assert!(!JobConfig::new("x", 1).to_yaml().unwrap().contains("props"));
}

#[test]
fn read_errors_name_the_field_and_the_line() {
    let table: &[(&str, &[&str])] = &[
        (
            "jobName: a\nshardingTotalCount: many\n",
            &["shardingTotalCount", "line 2"],
        ),
        (
            "jobName: a\nshardingTotalCount: 1\nfailover: maybe\n",
            &["failover", "line 3"],
        ),
        ("jobName: a\nprops:\n  k: [1]\n", &["props.k"]),
        ("shardingTotalCount: 1\n", &["jobName"]),
        ("jobName: [a\n", &["line"]),
    ];
    for &(text, wanted) in table {
        let err = JobConfig::from_yaml(text).expect_err(text).to_string();
        for w in wanted {
            assert!(err.contains(w), "{text:?}: {err}");
        }
    }
}

#[test]
fn each_invalid_config_names_its_field() {
    let base = || JobConfig::test("orders");
    let table: Vec<(JobConfig, &str, &str)> = vec![
        (base().items(3).tap_name(""), "jobName", "empty"),
        (base().tap_name("a/b"), "jobName", "'/'"),
        (
            base().items(0),
            "shardingTotalCount",
            "between 1 and 10000, is 0",
        ),
        (
            base().items(-2),
            "shardingTotalCount",
            "between 1 and 10000, is -2",
        ),
        (
            base().items(100_000),
            "shardingTotalCount",
            "between 1 and 10000, is 100000",
        ),
        (base().cron("* * * * *"), "cron", "needs seconds"),
        (
            base().cron("0 0 12 * * MON"),
            "cron",
            "exactly one of day-of-month and day-of-week",
        ),
        (base().cron("0 0 25 * * ?"), "cron", "hours"),
        (
            base().time_zone("Mars/Olympus"),
            "timeZone",
            "\"Mars/Olympus\"",
        ),
        (base().time_zone("GMT+25"), "timeZone", "out of range"),
        (
            base().item_parameters("0=a,3=d"),
            "shardingItemParameters",
            "outside 0..3",
        ),
        (
            base().item_parameters("0=a,0=b"),
            "shardingItemParameters",
            "already",
        ),
        (
            base().item_parameters("x=a"),
            "shardingItemParameters",
            "not an integer",
        ),
        (
            base().item_parameters("0=a=b"),
            "shardingItemParameters",
            "not item=value",
        ),
        (
            base().sharding_strategy("HASH"),
            "jobShardingStrategyType",
            "unknown sharding strategy \"HASH\"",
        ),
        (
            base().error_handler("PAGER"),
            "jobErrorHandlerType",
            "unknown error handler \"PAGER\"",
        ),
        (
            base().max_time_diff_seconds(-2),
            "maxTimeDiffSeconds",
            "is -2",
        ),
        (
            base().reconcile_interval_minutes(-5),
            "reconcileIntervalMinutes",
            "is -5",
        ),
    ];
    for (config, field, problem) in table {
        let errors = config.validate(&simple()).expect_err(field);
        assert_eq!(errors.fields(), [field], "{errors}");
        assert!(errors.0[0].problem.contains(problem), "{field}: {errors}");
    }
}

impl JobConfig {
    /// Sets the raw name, bypassing nothing: names are checked by validation only.
    fn tap_name(mut self, name: &str) -> Self {
        self.job_name = name.to_owned();
        self
    }
}

#[test]
fn a_script_job_needs_a_command_line() {
    let script = ValidationContext::builtin(JobKind::Script);
    let errors = JobConfig::test("s").validate(&script).unwrap_err();
    assert_eq!(errors.fields(), ["props.script.command.line"]);
    let blank = JobConfig::test("s").script_command_line("  ");
    assert!(blank.validate(&script).is_err());
    let with = JobConfig::test("s").script_command_line("echo hi");
    assert!(with.validate(&script).is_ok());
    assert!(JobConfig::test("s").validate(&simple()).is_ok());
}

#[test]
fn registered_strategies_and_handlers_are_accepted_by_name() {
    let ctx = ValidationContext {
        strategies: &["HASH"],
        error_handlers: &["PAGER"],
        kind: JobKind::Simple,
    };
    let config = JobConfig::test("orders")
        .sharding_strategy("HASH")
        .error_handler("PAGER");
    let valid = config.validate(&ctx).unwrap();
    assert_eq!((valid.strategy(), valid.error_handler()), ("HASH", "PAGER"));
    let errors = config.validate(&simple()).unwrap_err().to_string();
    assert!(
        errors.contains("known: AVG_ALLOCATION, ODEVITY, ROUND_ROBIN, SINGLE_SHARDING_BALANCE, NAMESPACE_BALANCE"),
        "{errors}"
    );
}

#[test]
fn several_problems_are_reported_at_once() {
    let config = JobConfig::new("a/b", 0)
        .cron("0 0 12 * * MON")
        .time_zone("Nowhere")
        .item_parameters("x=1,0=")
        .sharding_strategy("NOPE")
        .error_handler("NOPE")
        .max_time_diff_seconds(-9)
        .reconcile_interval_minutes(-9);
    let errors = config
        .validate(&ValidationContext::builtin(JobKind::Script))
        .unwrap_err();
    assert_eq!(
        errors.fields(),
        [
            "jobName",
            "shardingTotalCount",
            "cron",
            "timeZone",
            "shardingItemParameters",
            "shardingItemParameters",
            "jobShardingStrategyType",
            "jobErrorHandlerType",
            "props.script.command.line",
            "maxTimeDiffSeconds",
            "reconcileIntervalMinutes",
        ]
    );
    let text = errors.to_string();
    assert!(
        text.starts_with("invalid job config (11 problems):\n  - jobName: "),
        "{text}"
    );
}

#[test]
fn a_valid_config_carries_its_parsed_pieces() {
    let config = JobConfig::new("orders", 3)
        .cron("0 0 12 ? * WED")
        .time_zone("Asia/Shanghai")
        .item_parameters("0=Beijing,2=Guangzhou")
        .reconcile_interval_minutes(0)
        .max_time_diff_seconds(5);
    let valid = config.validate(&simple()).unwrap();
    assert_eq!(valid.job_name().as_str(), "orders");
    assert_eq!(
        valid.items().collect::<Vec<_>>(),
        [ShardItem(0), ShardItem(1), ShardItem(2)]
    );
    assert_eq!(valid.item_parameter(ShardItem(2)), Some("Guangzhou"));
    assert_eq!(valid.item_parameter(ShardItem(1)), None);
    assert_eq!(valid.schedule().map(|s| s.as_str()), Some("0 0 12 ? * WED"));
    assert_eq!(valid.time_zone().to_string(), "Asia/Shanghai");
    assert_eq!(
        (valid.strategy(), valid.error_handler()),
        ("AVG_ALLOCATION", "LOG")
    );
    assert_eq!(valid.reconcile_interval(), None);
    assert_eq!(
        valid.max_time_diff(),
        Some(std::time::Duration::from_secs(5))
    );
    let now = "2025-01-01T00:00:00Z".parse().unwrap();
    assert_eq!(
        valid.next_fire_after(now),
        Some("2025-01-01T04:00:00Z".parse().unwrap()),
        "noon in Shanghai"
    );
    assert_eq!(valid.config(), &config);
}

#[test]
fn a_config_without_cron_is_a_one_off_job() {
    for config in [
        JobConfig::test("once").one_off(),
        JobConfig::test("once").cron(" "),
    ] {
        let valid = config.validate(&simple()).unwrap();
        assert!(valid.schedule().is_none());
        assert_eq!(
            valid.next_fire_after("2025-01-01T00:00:00Z".parse().unwrap()),
            None
        );
    }
    let defaults = JobConfig::new("x", 1).validate(&simple()).unwrap();
    assert_eq!(
        defaults.reconcile_interval(),
        Some(std::time::Duration::from_secs(600))
    );
    assert_eq!(defaults.max_time_diff(), None);
    assert!(defaults.time_zone().is_local());
}

#[test]
fn the_unknown_strategy_message_lists_each_known_strategy_once() {
    let ctx = ValidationContext {
        strategies: &["ODEVITY", "HASH", "HASH"],
        error_handlers: &[],
        kind: JobKind::Simple,
    };
    let errors = JobConfig::test("orders")
        .sharding_strategy("NOPE")
        .validate(&ctx)
        .unwrap_err()
        .to_string();
    assert!(
        errors.contains("known: AVG_ALLOCATION, ODEVITY, ROUND_ROBIN, SINGLE_SHARDING_BALANCE, NAMESPACE_BALANCE, HASH"),
        "{errors}"
    );
    assert_eq!(errors.matches("ODEVITY").count(), 1, "{errors}");
}

#[test]
fn a_config_stored_under_another_jobs_path_names_the_mismatch() {
    let orders = crate::JobName::new("orders").unwrap();
    let err = JobConfig::new("billing", 1)
        .job_name_mismatch(&orders)
        .unwrap();
    assert_eq!(err.field, "jobName");
    assert!(err.problem.contains("\"billing\""), "{}", err.problem);
    assert!(JobConfig::new("orders", 1)
        .job_name_mismatch(&orders)
        .is_none());
}
