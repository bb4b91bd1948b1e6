//! Jobs created at runtime (SCRIPT and HTTP, ElasticJob's type-based jobs): the one check of
//! their config and the one way their handler is built from it, shared by the operations API
//! that writes them ([`crate::ops::Ops::create`]) and the nodes that adopt them.
//!
//! A SCRIPT job runs `props.script.command.line`; an HTTP job sends the request its `http.*`
//! props describe ([`super::http`]). Both read their props again at each run, so a config change
//! applies from the next run.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::http::{self, HttpJob, HttpJobError};
use super::script::ScriptJob;
use super::SharedHandler;
use crate::config::{ConfigError, ConfigErrors, JobConfig, JobKind, ValidationContext};
use crate::decide::adopt::RuntimeType;

/// The kind the config validation asks for: only SCRIPT needs a command line there; HTTP's
/// props are checked by building the job.
fn kind_of(t: RuntimeType) -> JobKind {
    match t {
        RuntimeType::Script => JobKind::Script,
        RuntimeType::Http => JobKind::Simple,
    }
}

/// Every problem of `config` as a job of type `t`, each naming its field: the engine's
/// validation, what a Java ElasticJob 3.0.x instance cannot load
/// ([`JobConfig::check_java_readable`]), and the handler's own props.
///
/// ```
/// use shardcron::config::JobConfig;
/// use shardcron::decide::adopt::RuntimeType;
/// use shardcron::job::runtime::check;
/// let ok = JobConfig::new("nightly", 2).cron("0 0 3 * * ?").script_command_line("/bin/true");
/// assert!(check(RuntimeType::Script, &ok).is_ok());
/// let no_uri = JobConfig::new("ping", 1).cron("0/5 * * * * ?");
/// assert_eq!(check(RuntimeType::Http, &no_uri).unwrap_err().fields(), ["props.http.uri"]);
/// ```
pub fn check(t: RuntimeType, config: &JobConfig) -> Result<(), ConfigErrors> {
    let mut problems = match config.validate(&ValidationContext::builtin(kind_of(t))) {
        Ok(_) => Vec::new(),
        Err(ConfigErrors(problems)) => problems,
    };
    if let Err(ConfigErrors(java)) = config.check_java_readable() {
        problems.extend(java);
    }
    // A SCRIPT job without a command line was reported by the validation already.
    let reported = |field| problems.iter().any(|p: &ConfigError| p.field == field);
    if t == RuntimeType::Http || !reported("props.script.command.line") {
        if let Err(e) = handler(t, &config.props) {
            problems.push(e);
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(ConfigErrors(problems))
    }
}

/// The handler of a job of type `t` configured by `props`, or the problem naming the prop.
pub fn handler(
    t: RuntimeType,
    props: &BTreeMap<String, String>,
) -> Result<SharedHandler, ConfigError> {
    match t {
        RuntimeType::Script => match ScriptJob::from_props(props) {
            Ok(job) => Ok(Arc::new(job)),
            Err(e) => Err(ConfigError {
                field: "props.script.command.line",
                problem: e.to_string(),
            }),
        },
        RuntimeType::Http => match HttpJob::from_props(props) {
            Ok(job) => Ok(Arc::new(job)),
            Err(e) => Err(ConfigError {
                field: http_field(&e),
                problem: e.to_string(),
            }),
        },
    }
}

/// The field an HTTP job's error is about.
fn http_field(e: &HttpJobError) -> &'static str {
    let key = match e {
        HttpJobError::MissingProp { key }
        | HttpJobError::InvalidUri { key, .. }
        | HttpJobError::InvalidMethod { key, .. }
        | HttpJobError::InvalidTimeout { key, .. }
        | HttpJobError::InvalidRedirect { key, .. }
        | HttpJobError::InvalidContentType { key, .. } => *key,
        HttpJobError::BuildClient { .. } => return "props",
    };
    match key {
        http::URI_PROP => "props.http.uri",
        http::METHOD_PROP => "props.http.method",
        http::CONNECT_TIMEOUT_PROP => "props.http.connect.timeout.milliseconds",
        http::READ_TIMEOUT_PROP => "props.http.read.timeout.milliseconds",
        http::CONTENT_TYPE_PROP => "props.http.content.type",
        http::TOTAL_TIMEOUT_PROP => "props.shardcron.http.timeout.milliseconds",
        http::REDIRECT_PROP => "props.shardcron.http.redirect",
        _ => "props",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_valid_job_of_each_type_passes_and_builds_its_handler() {
        let script = JobConfig::new("a", 1)
            .cron("0/5 * * * * ?")
            .script_command_line("/bin/echo hi");
        assert!(check(RuntimeType::Script, &script).is_ok());
        let http = JobConfig::new("b", 1)
            .cron("0/5 * * * * ?")
            .prop(http::URI_PROP, "http://127.0.0.1:9/x")
            .prop(http::METHOD_PROP, "GET");
        assert!(check(RuntimeType::Http, &http).is_ok());
        assert!(handler(RuntimeType::Http, &http.props).is_ok());
    }

    #[test]
    fn every_bad_field_is_named_once() {
        let cases: Vec<(RuntimeType, JobConfig, Vec<&str>)> = vec![
            (
                RuntimeType::Script,
                JobConfig::new("a", 1).cron("0/5 * * * * ?"),
                vec!["props.script.command.line"],
            ),
            (
                RuntimeType::Script,
                JobConfig::new("a", 1)
                    .cron("not a cron")
                    .script_command_line("'unclosed"),
                vec!["cron", "props.script.command.line"],
            ),
            (
                RuntimeType::Http,
                JobConfig::new("b", 1)
                    .cron("0/5 * * * * ?")
                    .prop(http::URI_PROP, "ftp://x")
                    .prop(http::METHOD_PROP, "GET"),
                vec!["props.http.uri"],
            ),
            (
                RuntimeType::Http,
                JobConfig::new("b", 1)
                    .cron("0/5 * * * * ?")
                    .time_zone("Asia/Shanghai")
                    .prop(http::URI_PROP, "http://x/")
                    .prop(http::METHOD_PROP, "GET"),
                vec!["timeZone"],
            ),
        ];
        for (t, config, fields) in cases {
            let err = check(t, &config).unwrap_err();
            assert_eq!(err.fields(), fields, "{err}");
        }
    }
}
