//! No panic is reachable from input: property tests over every parser that reads outside input
//! (cron expressions, time zones, item parameters, config YAML, registry paths and node data,
//! command-line values, history `--since`, workflow records and their views), plus the ctl
//! binary's argument parsing.
//!
//! Case counts are bounded for CI (`PROPTEST_CASES` raises them for a longer local run); a
//! failure prints the shrunk input that panicked.

use support::example_bin;

use chrono::{DateTime, Utc};
use proptest::prelude::*;
use shardcron::config::{parse_item_parameters, JobConfig, JobKind, ValidationContext};
use shardcron::cron::next::{cron_next, CronNextArgs};
use shardcron::cron::CronSchedule;
use shardcron::decide::workflow::records::parse_records;
use shardcron::decide::workflow::view::{self, JobFacts};
use shardcron::history::{parse_item, parse_since, HistoryTarget};
use shardcron::ops::{parse_config_version, render_graph, render_runs};
use shardcron::paths::JobNode;
use shardcron::timezone::JobTimeZone;
use shardcron::view::ServerStatus;
use shardcron::{InstanceId, JobName, ShardItem};

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(cases),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

fn now() -> DateTime<Utc> {
    "2026-03-07T12:00:00Z".parse().unwrap()
}

/// Text made of the characters a parser reacts to, with now and then any character at all.
fn tokens(alphabet: &'static str, max: usize) -> impl Strategy<Value = String> {
    let chars: Vec<char> = alphabet.chars().collect();
    prop::collection::vec(
        prop_oneof![
            8 => prop::sample::select(chars),
            1 => any::<char>(),
        ],
        0..max,
    )
    .prop_map(|c| c.into_iter().collect())
}

/// A cron-like line: seven fields of Quartz's characters, names and digits.
fn cron_like() -> impl Strategy<Value = String> {
    let field = prop_oneof![
        tokens("0123456789*/?,-LW#", 8),
        prop::sample::select(vec![
            "MON",
            "FRI-MON",
            "NOV-FEB",
            "L-3",
            "L-2W",
            "LW",
            "6#3",
            "5L",
            "JAN",
            "2026",
            "99",
            "98",
            "22-6",
            "*/0",
            "0/0",
            "MONDAY",
            "15W",
            "L-30W",
            "2147483648",
            "-1",
        ])
        .prop_map(str::to_owned),
    ];
    prop::collection::vec(field, 0..9).prop_map(|f| f.join(" "))
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn cron_parsing_and_searching_never_panic(expr in prop_oneof![cron_like(), any::<String>()]) {
        if let Ok(schedule) = CronSchedule::parse(&expr) {
            for zone in ["UTC", "America/New_York", "Australia/Lord_Howe", "GMT+08:00"] {
                let tz = JobTimeZone::parse(zone).unwrap();
                let fires: Vec<_> = schedule.fires_after(now(), &tz).take(3).collect();
                prop_assert!(fires.windows(2).all(|w| w[0] < w[1]), "{expr}: {fires:?}");
            }
        }
    }

    #[test]
    fn time_zone_parsing_never_panics(
        zone in prop_oneof![
            tokens("GMT+-0123456789:€é/AsiaShnghUTC", 12),
            "GMT[+-].{0,6}",
            any::<String>(),
        ]
    ) {
        let _ = JobTimeZone::parse(&zone);
    }

    #[test]
    fn item_parameter_parsing_never_panics(
        text in prop_oneof![tokens("0123456789=,ab \u{3000}-", 24), any::<String>()],
        total in 0u32..20,
    ) {
        let _ = parse_item_parameters(&text, total);
    }

    #[test]
    fn config_yaml_parsing_and_validation_never_panic(
        yaml in prop_oneof![
            any::<String>(),
            (
                tokens("abc: \n-\"'{}[]0123456789", 20),
                "[a-z ]{0,8}",
                any::<i64>(),
                cron_like(),
                tokens("GMT+-08:€/", 8),
                tokens("0123456789=,ab", 16),
            )
                .prop_map(|(extra, name, total, cron, zone, items)| format!(
                    "jobName: {name:?}\nshardingTotalCount: {total}\ncron: {cron:?}\n\
                     timeZone: {zone:?}\nshardingItemParameters: {items:?}\n{extra}"
                )),
        ]
    ) {
        if let Ok(config) = JobConfig::from_yaml(&yaml) {
            let _ = config.validate(&ValidationContext::builtin(JobKind::Simple));
            let _ = config.validate(&ValidationContext::builtin(JobKind::Script));
            let _ = config.to_yaml();
        }
    }

    #[test]
    fn registry_paths_and_node_data_never_panic(
        path in prop_oneof![
            tokens("/orderssharding0123456789leaderfailoveritemsinstances@-.", 40),
            any::<String>(),
        ],
        data in prop::collection::vec(any::<u8>(), 0..32),
    ) {
        if let Ok((job, node)) = JobNode::parse(&path) {
            // What parses prints back to a path that parses to the same node.
            let again = JobNode::parse(&node.to_path(&job));
            prop_assert_eq!(again.ok(), Some((job, node)));
        }
        let _ = ServerStatus::from_data(&data);
        let text = String::from_utf8_lossy(&data).into_owned();
        let _ = InstanceId::parse(text.clone());
        let _ = JobName::new(text.clone());
        let _ = text.parse::<ShardItem>();
    }

    #[test]
    fn workflow_records_and_their_views_never_panic(
        records in prop::collection::vec(
            (
                prop_oneof![tokens("0123456789m@start", 24), any::<String>()],
                prop_oneof![
                    tokens("runigskp:successfailedtimeoutrunning0123456789@-.", 24),
                    any::<String>(),
                ],
            ),
            0..12,
        ),
        total in 0u32..5,
    ) {
        let runs = parse_records(records.iter().map(|(n, d)| (n.as_str(), d.as_bytes(), 1)));
        let job = JobName::new("steps").unwrap();
        let facts = JobFacts { dependency: Ok(Default::default()), total, runs };
        let jobs = std::collections::BTreeMap::from([(job.clone(), facts)]);
        let members = view::members(&jobs, Some(&job));
        let graph = view::graph(&jobs, &members);
        let runs = view::runs(&jobs, &members, 20);
        let _ = (render_graph(&graph), render_runs(&runs));
    }

    #[test]
    fn command_line_values_never_panic(
        value in prop_oneof![tokens("0123456789-+smhdTZ:.", 16), any::<String>()],
        expr in cron_like(),
    ) {
        let _ = parse_since(&value, now());
        let _ = parse_item(&value);
        let _ = parse_config_version(&value);
        let _ = HistoryTarget::parse(&value).require_existing();
        let args = CronNextArgs {
            expr,
            zone: Some(value.clone()),
            from: Some(value.clone()),
            count: Some(value),
            json: true,
        };
        let _ = cron_next(&args, now());
    }
}

proptest! {
    #![proptest_config(config(24))]

    /// The ctl binary itself: any words and flags exit with a code (0, 1 or 2), never a panic
    /// (101). No `--zk` is generated, so nothing connects.
    #[test]
    fn ctl_argument_parsing_never_panics(
        args in prop::collection::vec(
            prop_oneof![
                prop::sample::select(vec![
                    "jobs", "job", "config", "set", "get", "cron", "next", "history", "trigger",
                    "--json", "--zone", "--from", "--count", "--version", "--item", "--since",
                    "--db", "--server", "--namespace", "-h", "0 0 12 * * ?", "GMT+1€", "99999999999",
                    "my job", "--item=", "--json=1",
                ]).prop_map(str::to_owned),
                any::<String>().prop_filter("no NUL in argv", |s| !s.contains('\0')),
            ],
            0..6,
        )
    ) {
        let output = std::process::Command::new(example_bin::ctl_binary())
            .args(&args)
            .output()
            .expect("ctl runs");
        let code = output.status.code();
        prop_assert!(
            matches!(code, Some(0..=2)),
            "ctl {args:?} exited with {code:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}
