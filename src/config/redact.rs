//! A config as it may be shown to a person: its secrets redacted ([`crate::secret`]), and an edit
//! of that redacted text turned back into the config it means (the secrets the person did not
//! touch keep their stored values).

use std::fmt;

use serde_yaml_ng::Value;

use super::JobConfig;
use crate::secret::{is_secret_key, keep_unchanged_secrets, redact_props, redact_text, REDACTED};

impl JobConfig {
    /// A copy with every secret redacted: the values of secret `props` keys become `***`, and URLs
    /// in other props, the job parameter and the item parameters lose their password and query
    /// values.
    pub fn redacted(&self) -> JobConfig {
        let mut copy = self.clone();
        redact_props(&mut copy.props);
        for text in [
            &mut copy.job_parameter,
            &mut copy.sharding_item_parameters,
            &mut copy.description,
        ]
        .into_iter()
        .flatten()
        {
            *text = redact_text(text);
        }
        for (key, value) in copy.unknown_fields.iter_mut() {
            *value = redacted_unknown(key, value);
        }
        copy
    }

    /// After an edit of the text [`JobConfig::redacted`] showed: every value still exactly as it
    /// was shown redacted takes back its stored value from `before`, so saving a form never
    /// writes `***` over a password.
    pub fn keep_unchanged_secrets(&mut self, before: &JobConfig) {
        keep_unchanged_secrets(&before.props, &mut self.props);
        for (edited, old) in [
            (&mut self.job_parameter, &before.job_parameter),
            (
                &mut self.sharding_item_parameters,
                &before.sharding_item_parameters,
            ),
            (&mut self.description, &before.description),
        ] {
            if let (Some(edited), Some(old)) = (edited, old) {
                let shown = redact_text(old);
                if shown != *old && *edited == shown {
                    edited.clone_from(old);
                }
            }
        }
        for (key, edited) in self.unknown_fields.iter_mut() {
            if let Some(old) = before.unknown_fields.get(key) {
                let shown = redacted_unknown(key, old);
                if shown != *old && *edited == shown {
                    edited.clone_from(old);
                }
            }
        }
    }
}

/// A top-level field this crate does not know, as it may be shown: `***` when its key names a
/// secret, URLs in its text redacted, anything that is not text shown as written (a newer writer's
/// nested value is not guessed at).
fn redacted_unknown(key: &str, value: &Value) -> Value {
    match value {
        Value::String(text) if !text.is_empty() && is_secret_key(key) => {
            Value::String(REDACTED.to_owned())
        }
        Value::String(text) => Value::String(redact_text(text)),
        Value::Null => Value::Null,
        _ if is_secret_key(key) => Value::String(REDACTED.to_owned()),
        other => other.clone(),
    }
}

/// Written by hand so that a config in a log line or a panic message never shows a secret: the
/// fields are those of [`JobConfig::redacted`].
impl fmt::Debug for JobConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let JobConfig {
            job_name,
            cron,
            time_zone,
            sharding_total_count,
            sharding_item_parameters,
            job_parameter,
            monitor_execution,
            failover,
            misfire,
            max_time_diff_seconds,
            reconcile_interval_minutes,
            job_sharding_strategy_type,
            job_executor_thread_pool_size_provider_type,
            job_error_handler_type,
            job_listener_types,
            description,
            props,
            disabled,
            overwrite,
            label,
            static_sharding,
            instance_labels,
            unknown_fields,
        } = &self.redacted();
        f.debug_struct("JobConfig")
            .field("job_name", job_name)
            .field("cron", cron)
            .field("time_zone", time_zone)
            .field("sharding_total_count", sharding_total_count)
            .field("sharding_item_parameters", sharding_item_parameters)
            .field("job_parameter", job_parameter)
            .field("monitor_execution", monitor_execution)
            .field("failover", failover)
            .field("misfire", misfire)
            .field("max_time_diff_seconds", max_time_diff_seconds)
            .field("reconcile_interval_minutes", reconcile_interval_minutes)
            .field("job_sharding_strategy_type", job_sharding_strategy_type)
            .field(
                "job_executor_thread_pool_size_provider_type",
                job_executor_thread_pool_size_provider_type,
            )
            .field("job_error_handler_type", job_error_handler_type)
            .field("job_listener_types", job_listener_types)
            .field("description", description)
            .field("props", props)
            .field("disabled", disabled)
            .field("overwrite", overwrite)
            .field("label", label)
            .field("static_sharding", static_sharding)
            .field("instance_labels", instance_labels)
            .field("unknown_fields", unknown_fields)
            .finish()
    }
}

/// A config node's text as it may be shown: parsed, redacted and written back in the Java layout;
/// a text that does not parse as a config is redacted line by line (a `key: value` line whose key
/// names a secret shows `***`, URLs lose their secrets).
pub fn redact_config_yaml(text: &str) -> String {
    if let Ok(config) = JobConfig::from_yaml(text) {
        if let Ok(yaml) = config.redacted().to_yaml() {
            return yaml;
        }
    }
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        match line.split_once(':') {
            Some((key, value))
                if !value.trim().is_empty()
                    && is_secret_key(key.trim().trim_matches(['"', '\''])) =>
            {
                out.push_str(key);
                out.push_str(": '");
                out.push_str(REDACTED);
                out.push('\'');
            }
            _ => out.push_str(&redact_text(line)),
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const STORED: &str = "jobName: orders\nshardingTotalCount: 2\ncron: 0/5 * * * * ?\n\
        jobParameter: https://h/hook?access_token=t1\n\
        props:\n  email.password: hunter2\n  email.host: smtp.example\n";

    #[test]
    fn a_shown_config_has_no_secret_and_keeps_the_rest() {
        let shown = redact_config_yaml(STORED);
        assert!(
            !shown.contains("hunter2") && !shown.contains("t1"),
            "{shown}"
        );
        assert!(shown.contains("email.host: smtp.example"), "{shown}");
        assert!(shown.contains("access_token=***"), "{shown}");
        let broken = "jobName: [orders\n  email.password: hunter2\nurl: http://u:p@h/x\n";
        let shown = redact_config_yaml(broken);
        assert!(
            !shown.contains("hunter2") && !shown.contains(":p@"),
            "{shown}"
        );
    }

    #[test]
    fn saving_the_shown_config_keeps_the_stored_secrets_and_takes_new_ones() {
        let before = JobConfig::from_yaml(STORED).unwrap();
        let shown = redact_config_yaml(STORED).replace("0/5", "0/10");
        let mut edited = JobConfig::from_yaml(&shown).unwrap();
        edited.keep_unchanged_secrets(&before);
        assert_eq!(edited.props["email.password"], "hunter2");
        assert_eq!(
            edited.job_parameter.as_deref(),
            Some("https://h/hook?access_token=t1")
        );
        assert_eq!(edited.cron.as_deref(), Some("0/10 * * * * ?"));
        let mut changed = edited.clone();
        changed.props.insert("email.password".into(), "new".into());
        changed.keep_unchanged_secrets(&before);
        assert_eq!(changed.props["email.password"], "new");
    }

    #[test]
    fn a_field_this_crate_does_not_know_is_redacted_when_shown_and_kept_when_saved() {
        let stored =
            format!("{STORED}vaultToken: s3cr3t\nnewHook: https://h/x?key=k9\nretries: 3\n");
        let shown = redact_config_yaml(&stored);
        assert!(
            !shown.contains("s3cr3t") && !shown.contains("k9"),
            "{shown}"
        );
        assert!(shown.contains("retries: 3"), "{shown}");
        let before = JobConfig::from_yaml(&stored).unwrap();
        let mut edited = JobConfig::from_yaml(&shown).unwrap();
        edited.keep_unchanged_secrets(&before);
        assert_eq!(edited.unknown_fields, before.unknown_fields);
    }

    #[test]
    fn a_config_printed_with_debug_shows_no_secret() {
        let mut config = JobConfig::from_yaml(STORED).unwrap();
        config
            .unknown_fields
            .insert("apiSecret".into(), Value::String("xyzzy".into()));
        let printed = format!("{config:?}");
        for secret in ["hunter2", "access_token=t1", "xyzzy"] {
            assert!(!printed.contains(secret), "{printed}");
        }
        assert!(printed.contains("email.host"), "{printed}");
    }
}
