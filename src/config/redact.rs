//! A config as it may be shown to a person: its secrets redacted ([`crate::secret`]), and an edit
//! of that redacted text turned back into the config it means (the secrets the person did not
//! touch keep their stored values).

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
}
