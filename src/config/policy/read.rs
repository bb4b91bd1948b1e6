//! Reading a job's policy keys: each `shardcron.` value parsed and checked against its range,
//! unknown keys refused, every problem collected naming its key.

use super::*;

/// Reads the policy keys of one config, collecting problems.
pub(super) struct Reader<'a> {
    pub(super) config: &'a JobConfig,
    pub(super) errors: &'a mut Vec<ConfigError>,
}

impl Reader<'_> {
    pub(super) fn get(&self, key: &str) -> Option<&str> {
        self.config.props.get(key).map(|v| v.trim())
    }

    pub(super) fn absent(&self, key: &str) -> bool {
        self.get(key).is_none()
    }

    pub(super) fn refuse(&mut self, key: &'static str, problem: String) {
        self.errors.push(ConfigError {
            field: key,
            problem,
        });
    }

    pub(super) fn unknown_keys(&mut self) {
        let unknown: Vec<String> = self
            .config
            .props
            .keys()
            .filter(|k| {
                POLICY_PREFIXES.iter().any(|p| k.starts_with(p))
                    && !POLICY_KEYS.contains(&k.as_str())
            })
            .cloned()
            .collect();
        for key in unknown {
            self.refuse(
                "props",
                format!(
                    "unknown run policy key {key:?}; known: {}",
                    POLICY_KEYS.join(", ")
                ),
            );
        }
    }

    /// `shardcron.after` and `shardcron.after.on`, refusing a job that names itself.
    pub(super) fn after(&mut self) -> Option<std::sync::Arc<Dependency>> {
        let dependency = match dependency_from_props(&self.config.props) {
            Ok(d) => d,
            Err(e) => {
                let key = match e {
                    DependencyError::BadOn { .. } | DependencyError::OnWithoutAfter => AFTER_ON_KEY,
                    _ => AFTER_KEY,
                };
                let text = e.to_string();
                let problem = match text.split_once(": ") {
                    Some((field, problem)) if field.starts_with("props.") => problem.to_owned(),
                    _ => text,
                };
                self.refuse(key, problem);
                return None;
            }
        };
        if dependency.after.is_empty() {
            return None;
        }
        if dependency
            .after
            .iter()
            .any(|up| up.as_str() == self.config.job_name)
        {
            let problem = format!("job {} lists itself", self.config.job_name);
            self.refuse(AFTER_KEY, problem);
            return None;
        }
        Some(std::sync::Arc::new(dependency))
    }

    pub(super) fn duration(&mut self, key: &'static str) -> Option<Duration> {
        let text = self.get(key)?;
        match parse_duration(text) {
            Ok(d) => Some(d),
            Err(problem) => {
                self.refuse(key, problem);
                None
            }
        }
    }

    pub(super) fn number<T: std::str::FromStr + PartialOrd + Copy + std::fmt::Display>(
        &mut self,
        key: &'static str,
        low: T,
        high: T,
    ) -> Option<T> {
        let text = self.get(key)?;
        match text.parse::<T>() {
            Ok(n) if n >= low && n <= high => Some(n),
            _ => {
                self.refuse(
                    key,
                    format!("{text:?} is not a number from {low} to {high}"),
                );
                None
            }
        }
    }

    pub(super) fn retry(&mut self) -> Option<Retry> {
        let max = self.number(RETRY_MAX, 0, MAX_RETRIES).unwrap_or(0);
        let initial = self.duration(RETRY_BACKOFF);
        let factor = self.number(RETRY_FACTOR, 1.0, 100.0);
        let max_backoff = self.duration(RETRY_BACKOFF_MAX);
        let jitter = self.number(RETRY_JITTER, 0.0, 1.0);
        let notify = match self.get(RETRY_NOTIFY) {
            None | Some("final") => Notify::Final,
            Some("every") => Notify::Every,
            Some(other) => {
                let problem = format!("{other:?} is not final or every");
                self.refuse(RETRY_NOTIFY, problem);
                Notify::Final
            }
        };
        if max == 0 {
            for key in [
                RETRY_BACKOFF,
                RETRY_FACTOR,
                RETRY_BACKOFF_MAX,
                RETRY_JITTER,
                RETRY_NOTIFY,
            ] {
                if !self.absent(key) {
                    self.refuse(key, format!("needs {RETRY_MAX} of 1 or more"));
                }
            }
            return None;
        }
        let initial = initial.unwrap_or(Duration::from_secs(1));
        let max_backoff = max_backoff.unwrap_or(Duration::from_secs(300).max(initial));
        if max_backoff < initial {
            self.refuse(
                RETRY_BACKOFF_MAX,
                format!("is shorter than {RETRY_BACKOFF} ({initial:?})"),
            );
        }
        Some(Retry {
            max,
            initial,
            factor: factor.unwrap_or(2.0),
            max_backoff,
            jitter: jitter.unwrap_or(0.0),
            notify,
        })
    }

    pub(super) fn overlap(&mut self, default: Overlap) -> Overlap {
        let buffer = self.number(OVERLAP_BUFFER, 1, MAX_BUFFER);
        let overlap = match self.get(OVERLAP) {
            None => default,
            Some("skip") => Overlap::Skip,
            Some("buffer_one") => Overlap::BufferOne,
            Some("buffer_all") => Overlap::BufferAll(
                NonZeroU32::new(buffer.unwrap_or(DEFAULT_BUFFER)).unwrap_or(NonZeroU32::MIN),
            ),
            Some("cancel_other") => Overlap::CancelOther,
            Some("allow_all") => Overlap::AllowAll,
            Some(other) => {
                let problem = format!(
                    "{other:?} is not skip, buffer_one, buffer_all, cancel_other or allow_all"
                );
                self.refuse(OVERLAP, problem);
                default
            }
        };
        if !self.absent(OVERLAP_BUFFER) && !matches!(overlap, Overlap::BufferAll(_)) {
            self.refuse(OVERLAP_BUFFER, format!("needs {OVERLAP}: buffer_all"));
        }
        if overlap == Overlap::AllowAll && self.config.monitor_execution {
            self.refuse(
                OVERLAP,
                "allow_all needs monitorExecution: false (an item's running marker records one run)"
                    .into(),
            );
        }
        if overlap == Overlap::AllowAll && self.config.failover {
            self.refuse(
                OVERLAP,
                "allow_all needs failover: false (failover re-runs the items a crashed instance \
                 was running, which only running markers record)"
                    .into(),
            );
        }
        overlap
    }
}
