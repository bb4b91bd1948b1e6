//! The checks themselves: every field of a [`JobConfig`] against its rules (ranges, names known to
//! the node, the cron expression and zone, the policy keys), each problem collected naming its
//! field, and the parsed pieces kept for the [`ValidatedConfig`].

use super::*;

impl JobConfig {
    pub(super) fn check(
        &self,
        ctx: &ValidationContext<'_>,
        config: impl FnOnce() -> Arc<JobConfig>,
    ) -> Result<ValidatedConfig, ConfigErrors> {
        let mut errors = Vec::new();
        let mut report = |field: &'static str, problem: String| {
            errors.push(ConfigError { field, problem });
        };

        let job_name = JobName::new(self.job_name.as_str())
            .map_err(|e| report("jobName", e.to_string()))
            .ok();
        let total = u32::try_from(self.sharding_total_count)
            .ok()
            .filter(|t| (1..=MAX_SHARDING_TOTAL_COUNT).contains(t));
        if total.is_none() {
            report(
                "shardingTotalCount",
                format!(
                    "must be between 1 and {MAX_SHARDING_TOTAL_COUNT}, is {}",
                    self.sharding_total_count
                ),
            );
        }
        let schedule = match self.cron_expr().map(CronSchedule::parse) {
            Some(Err(e)) => {
                report("cron", e.to_string());
                None
            }
            Some(Ok(schedule)) => Some(schedule),
            None => None,
        };
        let time_zone = JobTimeZone::from_config(self.time_zone.as_deref())
            .map_err(|e| report("timeZone", e.to_string()))
            .ok();
        // Without a valid total every key would be out of range: that problem is reported once,
        // above, instead of once per entry.
        let text = self.sharding_item_parameters.as_deref().unwrap_or("");
        let item_parameters = match parse_item_parameters(text, total.unwrap_or(u32::MAX)) {
            Ok(items) => items,
            Err(entries) => {
                for entry in entries {
                    report("shardingItemParameters", entry.to_string());
                }
                BTreeMap::new()
            }
        };
        let handler = self.error_handler_name();
        let plugins = [
            (
                "jobShardingStrategyType",
                "sharding strategy",
                self.strategy_name(),
                &BUILTIN_STRATEGIES[..],
                ctx.strategies,
            ),
            (
                "jobErrorHandlerType",
                "error handler",
                handler,
                &BUILTIN_ERROR_HANDLERS[..],
                ctx.error_handlers,
            ),
        ];
        for (field, what, name, builtin, registered) in plugins {
            if let Some(problem) = unknown_name(what, name, builtin, registered) {
                report(field, problem);
            }
        }
        let notifier = crate::config::notify::NotifierSettings::from_props(handler, &self.props);
        if let Some(Err(problems)) = notifier {
            for p in problems {
                report(p.field, p.problem);
            }
        }
        let command = self.props.get(SCRIPT_COMMAND_LINE).map(|c| c.trim());
        if ctx.kind == JobKind::Script && command.is_none_or(str::is_empty) {
            report(
                "props.script.command.line",
                "a SCRIPT job needs the command to run".to_owned(),
            );
        }
        if let Some(label) = self.label.as_deref().filter(|l| !l.is_empty()) {
            if let Err(e) = crate::sharding::check_label(label) {
                report("label", e.to_string());
            }
        }
        for label in &self.instance_labels {
            if let Err(e) = crate::sharding::check_label(label) {
                report("instance labels", e.to_string());
            }
        }
        if self.max_time_diff_seconds < -1 {
            report(
                "maxTimeDiffSeconds",
                format!(
                    "must be -1 (off) or at least 0, is {}",
                    self.max_time_diff_seconds
                ),
            );
        }
        if self.reconcile_interval_minutes < -1 {
            report(
                "reconcileIntervalMinutes",
                format!(
                    "must be -1 or 0 (off) or at least 1, is {}",
                    self.reconcile_interval_minutes
                ),
            );
        }
        if let Some(window) = self.props.get(crate::config::retention::RETENTION_PROP) {
            if let Err(e) = crate::config::retention::RetentionWindow::parse(window) {
                report("props.shardcron.history.retention", e.to_string());
            }
        }
        let output = self
            .output_limit()
            .map_err(|e| report(e.field, e.problem))
            .unwrap_or_default();
        let concurrency = self
            .item_concurrency()
            .map_err(|e| report(e.field, e.problem))
            .unwrap_or_default();
        let policy = crate::config::RunPolicy::from_config(self).unwrap_or_else(|problems| {
            for p in problems {
                report(p.field, p.problem);
            }
            crate::config::RunPolicy::from_misfire(self.misfire)
        });
        let policy = (policy != crate::config::RunPolicy::from_misfire(self.misfire))
            .then(|| Box::new(policy));

        match (job_name, total, time_zone) {
            (Some(job_name), Some(total), Some(time_zone)) if errors.is_empty() => {
                Ok(ValidatedConfig {
                    config: config(),
                    job_name,
                    total,
                    schedule,
                    time_zone,
                    item_parameters,
                    concurrency,
                    policy,
                    output,
                })
            }
            _ => Err(ConfigErrors(errors)),
        }
    }
}

/// `None` when `name` is built in or registered; else the problem, listing the known names.
fn unknown_name(what: &str, name: &str, builtin: &[&str], registered: &[&str]) -> Option<String> {
    if builtin.contains(&name) || registered.contains(&name) {
        return None;
    }
    let mut known: Vec<&str> = Vec::new();
    for name in builtin.iter().chain(registered) {
        if !known.contains(name) {
            known.push(name);
        }
    }
    Some(format!(
        "unknown {what} {name:?}; known: {}",
        known.join(", ")
    ))
}
