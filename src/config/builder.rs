//! The fluent builder over [`JobConfig`], for the API and for tests.
//!
//! Each method names the YAML field it sets; flags take a `bool` because the method name already
//! says which flag (`.failover(true)`), so the call site stays readable.

use std::time::Duration;

use super::duration::format_duration;
use super::policy::{
    Notify, Overlap, CATCHUP_WINDOW, OVERLAP, OVERLAP_BUFFER, RETRY_BACKOFF, RETRY_BACKOFF_MAX,
    RETRY_FACTOR, RETRY_JITTER, RETRY_MAX, RETRY_NOTIFY, TIMEOUT, TIMEOUT_GRACE,
};
use super::{JobConfig, SCRIPT_COMMAND_LINE};

/// Setters that store their argument as given in one field of [`JobConfig`].
macro_rules! value_setters {
    ($($(#[$doc:meta])* $name:ident($arg:ident: $ty:ty) => $field:ident;)*) => {$(
        $(#[$doc])*
        pub fn $name(mut self, $arg: $ty) -> Self {
            self.$field = $arg;
            self
        }
    )*};
}

/// Setters that store their text argument in one optional field of [`JobConfig`].
macro_rules! text_setters {
    ($($(#[$doc:meta])* $name:ident($arg:ident) => $field:ident;)*) => {$(
        $(#[$doc])*
        pub fn $name(mut self, $arg: impl Into<String>) -> Self {
            self.$field = Some($arg.into());
            self
        }
    )*};
}

impl JobConfig {
    /// A fixture for tests: `name` with 3 items, firing every 5 seconds in UTC.
    ///
    /// ```
    /// use shardcron::config::JobConfig;
    /// let config = JobConfig::test("orders").items(4).failover(true);
    /// assert_eq!(config.sharding_total_count, 4);
    /// ```
    pub fn test(job_name: impl Into<String>) -> Self {
        Self::new(job_name, 3)
            .cron("0/5 * * * * ?")
            .time_zone("GMT")
    }

    value_setters! {
        /// Sets `shardingTotalCount`.
        items(sharding_total_count: i32) => sharding_total_count;
        /// Sets `monitorExecution`.
        monitor_execution(on: bool) => monitor_execution;
        /// Sets `failover`.
        failover(on: bool) => failover;
        /// Sets `misfire`.
        misfire(on: bool) => misfire;
        /// Sets `maxTimeDiffSeconds` (-1 = off).
        max_time_diff_seconds(seconds: i32) => max_time_diff_seconds;
        /// Sets `reconcileIntervalMinutes` (0 or -1 = off).
        reconcile_interval_minutes(minutes: i32) => reconcile_interval_minutes;
        /// Sets `disabled`.
        disabled(on: bool) => disabled;
        /// Sets `overwrite`.
        overwrite(on: bool) => overwrite;
        /// Sets `staticSharding`.
        static_sharding(on: bool) => static_sharding;
    }

    text_setters! {
        /// Sets `cron`.
        cron(expr) => cron;
        /// Sets `timeZone`.
        time_zone(zone) => time_zone;
        /// Sets `shardingItemParameters` (`0=a,1=b`).
        item_parameters(parameters) => sharding_item_parameters;
        /// Sets `jobParameter`.
        job_parameter(parameter) => job_parameter;
        /// Sets `jobShardingStrategyType`.
        sharding_strategy(name) => job_sharding_strategy_type;
        /// Sets `jobExecutorThreadPoolSizeProviderType` (`CPU` or `SINGLE_THREAD` on the Java side).
        executor_service_handler(name) => job_executor_thread_pool_size_provider_type;
        /// Sets `jobErrorHandlerType`.
        error_handler(name) => job_error_handler_type;
        /// Sets `description`.
        description(text) => description;
        /// Sets `label`.
        label(label) => label;
    }

    /// Removes `cron`: a one-off job that runs only when triggered.
    pub fn one_off(mut self) -> Self {
        self.cron = None;
        self
    }

    /// Appends one name to `jobListenerTypes`.
    pub fn listener(mut self, name: impl Into<String>) -> Self {
        self.job_listener_types.push(name.into());
        self
    }

    /// Sets one entry of `props`.
    pub fn prop(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.props.insert(key.into(), value.into());
        self
    }

    /// Sets `props.script.command.line`, the command of a SCRIPT job.
    pub fn script_command_line(self, command: impl Into<String>) -> Self {
        self.prop(SCRIPT_COMMAND_LINE, command)
    }
}

/// The run policies (`shardcron.` props, see [`super::RunPolicy`]).
impl JobConfig {
    /// Sets `shardcron.timeout`: an item run longer is cancelled, then ended after the grace.
    pub fn timeout(self, after: Duration) -> Self {
        self.prop(TIMEOUT, format_duration(after))
    }

    /// Sets `shardcron.timeout.grace`.
    pub fn timeout_grace(self, grace: Duration) -> Self {
        self.prop(TIMEOUT_GRACE, format_duration(grace))
    }

    /// Sets `shardcron.retry.max`: attempts after the first.
    pub fn retry(self, max: u32) -> Self {
        self.prop(RETRY_MAX, max.to_string())
    }

    /// Sets `shardcron.retry.backoff` (the first delay) and `shardcron.retry.backoff.max`.
    pub fn retry_backoff(self, initial: Duration, max: Duration) -> Self {
        self.prop(RETRY_BACKOFF, format_duration(initial))
            .prop(RETRY_BACKOFF_MAX, format_duration(max))
    }

    /// Sets `shardcron.retry.backoff.factor`.
    pub fn retry_backoff_factor(self, factor: f64) -> Self {
        self.prop(RETRY_FACTOR, factor.to_string())
    }

    /// Sets `shardcron.retry.backoff.jitter` (a fraction 0-1).
    pub fn retry_jitter(self, jitter: f64) -> Self {
        self.prop(RETRY_JITTER, jitter.to_string())
    }

    /// Sets `shardcron.retry.notify`: whether the error handler hears every failed attempt.
    pub fn retry_notify(self, notify: Notify) -> Self {
        let word = match notify {
            Notify::Final => "final",
            Notify::Every => "every",
        };
        self.prop(RETRY_NOTIFY, word)
    }

    /// Sets `shardcron.overlap` (and `shardcron.overlap.buffer` for `buffer_all`).
    pub fn overlap(self, overlap: Overlap) -> Self {
        let set = self.prop(OVERLAP, overlap.as_str());
        match overlap {
            Overlap::BufferAll(n) => set.prop(OVERLAP_BUFFER, n.to_string()),
            _ => set,
        }
    }

    /// Sets `shardcron.catchup.window`.
    pub fn catchup_window(self, window: Duration) -> Self {
        self.prop(CATCHUP_WINDOW, format_duration(window))
    }

    /// Sets `shardcron.after`: the job runs once per workflow run after every job in `upstreams`
    /// ([`crate::decide::workflow`]).
    pub fn after<S: AsRef<str>>(self, upstreams: &[S]) -> Self {
        let list: Vec<&str> = upstreams.iter().map(AsRef::as_ref).collect();
        self.prop(super::after::AFTER_KEY, list.join(","))
    }

    /// Sets `shardcron.after.on`: whether the job runs after its upstreams' runs that all
    /// succeeded (the default) or after every ended run.
    pub fn after_on(self, on: super::after::RunWhen) -> Self {
        self.prop(super::after::AFTER_ON_KEY, on.as_str())
    }
}
