//! What a Java ElasticJob-Lite 3.0.x instance can load, checked before shardcron writes a config.
//!
//! A config node is read by every instance of the job, Java ones included, and a Java instance
//! that cannot load it fails after it has registered (the leader then hands items to an instance
//! that never runs them), or, for an unknown field, makes the lifecycle API's
//! `getAllJobsBriefInfo` throw for the whole namespace. So shardcron refuses to write:
//!
//! - a `timeZone` ElasticJob refuses: `JobScheduleController.parseTimeZoneString` accepts only
//!   spellings that start with `GMT`, and then Java's `TimeZone.getTimeZone` silently reads GMT for
//!   one it cannot parse; so only `GMT`, `GMT0` and Java's custom ids (`GMT+08:00`, `GMT-5`,
//!   `GMT+0530`) are Java-readable. IANA names (`UTC`, `Asia/Shanghai`) are a shardcron extension.
//! - a field ElasticJob's YAML loader does not know: SnakeYAML refuses unknown properties
//!   (`jobExecutorServiceHandlerType`, the pre-3.0.5 name, is read here and written under its new
//!   name, `jobExecutorThreadPoolSizeProviderType`).
//!
//! A job no Java instance will ever run may use the extensions: `props: {shardcron.only: 'true'}`
//! says so, in the config itself, where every writer (nodes, `ctl`) sees it.

use super::{ConfigError, ConfigErrors, JobConfig};

/// The `props` key that marks a job as shardcron-only: its config may use extensions a Java
/// ElasticJob instance cannot load (IANA time zones, fields Java does not know).
pub const SHARDCRON_ONLY: &str = "shardcron.only";

/// The fields of ElasticJob 3.0.x's `JobConfigurationPOJO` that shardcron keeps without a field of
/// its own: written back as read.
const JAVA_ONLY_FIELDS: [&str; 1] = ["jobExtraConfigurations"];

/// Built-in values that are shardcron's own: a Java instance that reads them fails to look them up
/// (`jobShardingStrategyType` when it leads the sharding, `jobErrorHandlerType` when it starts).
const SHARDCRON_ONLY_VALUES: [(&str, &str); 2] = [
    ("jobShardingStrategyType", "NAMESPACE_BALANCE"),
    ("jobErrorHandlerType", "WEBHOOK"),
];

/// Whether ElasticJob 3.0.x schedules a job in `zone` as the zone it names: `GMT` or `GMT0`, or a
/// Java custom id, `GMT` sign hours [`:`] minutes, parsed as `TimeZone.parseCustomTimeZone` does
/// (hours 0-23 in one or two digits, minutes 00-59 in two; `GMT+800` is 8 hours).
///
/// ```
/// use shardcron::config::java_accepts_time_zone;
/// assert!(java_accepts_time_zone("GMT+08:00"));
/// assert!(java_accepts_time_zone("GMT-5"));
/// assert!(!java_accepts_time_zone("UTC"));
/// assert!(!java_accepts_time_zone("GMT+24"));
/// ```
pub fn java_accepts_time_zone(zone: &str) -> bool {
    if zone == "GMT" || zone == "GMT0" {
        return true;
    }
    let Some(rest) = zone.strip_prefix("GMT") else {
        return false;
    };
    let Some(digits) = rest.strip_prefix(['+', '-']) else {
        return false;
    };
    let (hours, minutes) = match digits.split_once(':') {
        Some((h, m)) if (1..=2).contains(&h.len()) && m.len() == 2 => (h, m),
        Some(_) => return false,
        None if (1..=2).contains(&digits.len()) => (digits, "0"),
        None if (3..=4).contains(&digits.len()) => digits.split_at(digits.len() - 2),
        None => return false,
    };
    let number = |s: &str| {
        s.bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| s.parse::<u32>().ok())
            .flatten()
    };
    matches!((number(hours), number(minutes)), (Some(h), Some(m)) if h <= 23 && m <= 59)
}

impl JobConfig {
    /// Whether `props` mark the job shardcron-only ([`SHARDCRON_ONLY`] is `true`).
    pub fn is_shardcron_only(&self) -> bool {
        self.props
            .get(SHARDCRON_ONLY)
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
    }

    /// Writes a fixed `timeZone` that Java cannot load (`UTC`, `Etc/UTC`, `Z`, `+08:00`) in Java's
    /// spelling (`GMT`, `GMT+08:00`): the same zone, now loadable by a Java instance. Every writer
    /// of a config calls it before [`JobConfig::check_java_readable`], shardcron-only jobs included
    /// (the spelling changes, the zone does not). A zone with daylight saving is left as written.
    /// Returns the spelling it replaced.
    ///
    /// ```
    /// use shardcron::config::JobConfig;
    /// let mut config = JobConfig::new("orders", 2).time_zone("UTC");
    /// assert_eq!(config.spell_time_zone_for_java().as_deref(), Some("UTC"));
    /// assert_eq!(config.time_zone.as_deref(), Some("GMT"));
    /// assert!(config.check_java_readable().is_ok());
    /// ```
    pub fn spell_time_zone_for_java(&mut self) -> Option<String> {
        let java = crate::timezone::java_spelling(self.time_zone.as_deref()?.trim())?;
        self.time_zone.replace(java)
    }

    /// Checks that a Java ElasticJob-Lite 3.0.x instance can load this config (see the module
    /// docs); every problem at once, each naming its field and how to fix it. A shardcron-only job
    /// passes.
    pub fn check_java_readable(&self) -> Result<(), ConfigErrors> {
        if self.is_shardcron_only() {
            return Ok(());
        }
        let opt_in = format!(
            "or, if no Java ElasticJob instance will ever run this job, mark it shardcron-only \
             with props {SHARDCRON_ONLY}: 'true'"
        );
        let mut problems = Vec::new();
        if let Some(zone) = self.time_zone.as_deref().filter(|z| !z.is_empty()) {
            if !java_accepts_time_zone(zone) {
                let instead = crate::timezone::java_spelling(zone).map_or_else(
                    || {
                        "use a GMT offset (GMT+08:00, GMT-5; a fixed offset has no daylight saving)"
                            .to_owned()
                    },
                    |java| format!("write {java:?}, the same zone in Java's spelling"),
                );
                problems.push(ConfigError {
                    field: "timeZone",
                    problem: format!(
                        "{zone:?} cannot be loaded by a Java ElasticJob 3.0.x instance (it accepts \
                         only GMT offsets: GMT, GMT+08:00, GMT-5, GMT+0530); {instead}, {opt_in}"
                    ),
                });
            }
        }
        for (field, value) in SHARDCRON_ONLY_VALUES {
            let set = match field {
                "jobShardingStrategyType" => self.job_sharding_strategy_type.as_deref(),
                _ => self.job_error_handler_type.as_deref(),
            };
            if set.is_some_and(|v| v.trim() == value) {
                problems.push(ConfigError {
                    field,
                    problem: format!(
                        "{value} is a shardcron extension that a Java ElasticJob 3.0.x instance \
                         cannot look up: choose one ElasticJob ships, {opt_in}"
                    ),
                });
            }
        }
        let unknown: Vec<&str> = self
            .unknown_fields
            .keys()
            .map(String::as_str)
            .filter(|f| !JAVA_ONLY_FIELDS.contains(f))
            .collect();
        if !unknown.is_empty() {
            problems.push(ConfigError {
                field: "(unknown fields)",
                problem: format!(
                    "{} unknown to ElasticJob 3.0.x, whose YAML loader refuses the whole config \
                     for one unknown field: remove them, {opt_in}",
                    unknown.join(", ")
                ),
            });
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(ConfigErrors(problems))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shardcron_only_strategy_and_notifier_names_need_the_opt_in() {
        let mut c = JobConfig::new("balanced", 1);
        c.job_sharding_strategy_type = Some("NAMESPACE_BALANCE".into());
        c.job_error_handler_type = Some("WEBHOOK".into());
        let err = c.check_java_readable().expect_err("extensions refused");
        let text = err.to_string();
        assert!(text.contains("jobShardingStrategyType") && text.contains("jobErrorHandlerType"));
        c.props.insert(SHARDCRON_ONLY.into(), "true".into());
        assert!(c.check_java_readable().is_ok());
        let mut java = JobConfig::new("java", 1);
        java.job_sharding_strategy_type = Some("SINGLE_SHARDING_BALANCE".into());
        java.job_error_handler_type = Some("DINGTALK".into());
        assert!(java.check_java_readable().is_ok());
    }

    #[test]
    fn time_zones_are_java_readable_exactly_when_elasticjob_schedules_them_as_written() {
        for zone in [
            "GMT",
            "GMT0",
            "GMT+8",
            "GMT+08",
            "GMT+8:00",
            "GMT+08:00",
            "GMT-5",
            "GMT+0530",
            "GMT+800",
            "GMT-23:59",
            "GMT+0",
        ] {
            assert!(java_accepts_time_zone(zone), "{zone}");
        }
        for zone in [
            "UTC",
            "Asia/Shanghai",
            "Etc/GMT+5",
            "GMT+24",
            "GMT+8:60",
            "GMT+8:0",
            "GMT+123:00",
            "GMT+12345",
            "GMT8",
            "GMT+",
            "GMT+8:",
            "gmt+8",
            "GMT+ 8",
            "GMT+8:00:00",
            "",
        ] {
            assert!(!java_accepts_time_zone(zone), "{zone}");
        }
    }

    #[test]
    fn a_config_java_cannot_load_is_refused_with_the_fix_and_the_opt_in() {
        let utc = JobConfig::new("orders", 2).time_zone("UTC");
        let err = utc.check_java_readable().unwrap_err();
        assert_eq!(err.fields(), vec!["timeZone"]);
        assert!(err.0[0].problem.contains("write \"GMT\""), "{err}");
        assert!(err.0[0].problem.contains("shardcron.only"), "{err}");

        let shanghai = JobConfig::new("orders", 2).time_zone("Asia/Shanghai");
        let err = shanghai.check_java_readable().unwrap_err();
        assert!(err.0[0].problem.contains("GMT+08:00"), "{err}");
        assert!(shanghai
            .clone()
            .prop(SHARDCRON_ONLY, "true")
            .check_java_readable()
            .is_ok());

        assert!(JobConfig::new("orders", 2)
            .time_zone("GMT+08:00")
            .check_java_readable()
            .is_ok());
        assert!(JobConfig::new("orders", 2).check_java_readable().is_ok());
    }

    #[test]
    fn fixed_zones_are_respelled_for_java_and_daylight_saving_zones_still_need_the_opt_in() {
        let table: &[(&str, &str, bool)] = &[
            // written, stored, Java-readable without the opt-in
            ("UTC", "GMT", true),
            ("Etc/UTC", "GMT", true),
            ("Z", "GMT", true),
            ("+08:00", "GMT+08:00", true),
            ("UTC-5", "GMT-05:00", true),
            ("GMT+8", "GMT+8", true),
            ("Europe/Berlin", "Europe/Berlin", false),
            ("Asia/Shanghai", "Asia/Shanghai", false),
        ];
        for &(written, stored, readable) in table {
            let mut config = JobConfig::new("orders", 2).time_zone(written);
            config.spell_time_zone_for_java();
            assert_eq!(config.time_zone.as_deref(), Some(stored), "{written}");
            assert_eq!(config.check_java_readable().is_ok(), readable, "{written}");
            let only = config.prop(SHARDCRON_ONLY, "true");
            assert!(only.check_java_readable().is_ok(), "{written}");
        }
        let mut local = JobConfig::new("orders", 2);
        assert_eq!(local.spell_time_zone_for_java(), None);
        assert_eq!(local.time_zone, None);
    }

    #[test]
    fn unknown_fields_are_refused_but_javas_own_extra_configurations_are_kept() {
        let yaml = "jobName: orders\nshardingTotalCount: 2\ncron: '* * * * * ?'\n\
                    jobExtraConfigurations: []\nretries: 3\n";
        let config = JobConfig::from_yaml(yaml).unwrap();
        let err = config.check_java_readable().unwrap_err();
        assert_eq!(err.fields(), vec!["(unknown fields)"]);
        assert!(err.0[0].problem.starts_with("retries unknown"), "{err}");
    }

    #[test]
    fn the_old_thread_pool_field_name_is_read_and_written_under_the_new_one() {
        let yaml = "jobName: orders\nshardingTotalCount: 2\njobExecutorServiceHandlerType: CPU\n";
        let config = JobConfig::from_yaml(yaml).unwrap();
        assert_eq!(
            config
                .job_executor_thread_pool_size_provider_type
                .as_deref(),
            Some("CPU")
        );
        let written = config.to_yaml().unwrap();
        assert!(
            written.contains("jobExecutorThreadPoolSizeProviderType: CPU"),
            "{written}"
        );
        assert!(!written.contains("ServiceHandler"), "{written}");
        assert!(config.check_java_readable().is_ok());
    }

    #[test]
    fn yaml_as_java_writes_it_is_read_and_written_back_java_readable() {
        // What ElasticJob 3.0.x wrote for a job (registry-layout.md): empty strings as `''`.
        let java = "cron: 0/2 * * * * ?\ndescription: ''\ndisabled: false\nfailover: true\n\
                    jobName: orders\njobParameter: ''\nmaxTimeDiffSeconds: -1\nmisfire: true\n\
                    monitorExecution: true\noverwrite: true\nreconcileIntervalMinutes: 10\n\
                    shardingItemParameters: 0=Beijing,1=Shanghai\nshardingTotalCount: 2\n\
                    staticSharding: false\n";
        let config = JobConfig::from_yaml(java).unwrap();
        assert_eq!(config.description.as_deref(), Some(""));
        assert!(config.check_java_readable().is_ok());
        let again = JobConfig::from_yaml(&config.to_yaml().unwrap()).unwrap();
        assert_eq!(again, config);
    }
}
