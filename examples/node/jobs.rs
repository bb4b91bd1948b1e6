//! The jobs a node runs: the built-in demo set, or a jobs file.
//!
//! A jobs file is YAML with a `jobs:` list of ElasticJob job configurations (the fields of the
//! registry's `config` node), each with one extra field, `type:`, that says what runs its items:
//! `SCRIPT` (the command line in `props: {script.command.line: ...}`) or the name of a job compiled
//! into the example ([`COMPILED_TYPES`]), and optionally `javaClass:`, the class name of the Java
//! ElasticJob job it shares (the job root's data; see `JobType::Java`).
//!
//! Every ElasticJob field is read with its ElasticJob name, among them those of ElasticJob's
//! features beyond the schedule:
//!
//! - `jobExecutorThreadPoolSizeProviderType: SINGLE_THREAD` (or `CPU`, or a number of items, a
//!   shardcron extension): how many of the job's items run at once on one process;
//! - `jobListenerTypes: [ONCE_LOG]`: the example's distribute-once listener
//!   ([`crate::report::OnceLog`]), which prints `once hook=before|after` exactly once per fire
//!   across every process of the job.
//!
//! The file is read twice: first as typed configs, so that a wrong value is reported with its path
//! and line (`jobs[1].shardingTotalCount: invalid type ... at line 9 column 25`), then as plain
//! mappings for `type:` and for fields no config knows, which are reported as warnings since a typo
//! there would otherwise be ignored without a word.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use serde_yaml_ng::{Mapping, Value};
use shardcron::config::{JobConfig, JobKind, ValidationContext};
use shardcron::job::dataflow::Dataflow;
use shardcron::job::script::ScriptJob;
use shardcron::job::{SharedHandler, Simple};
use shardcron::{JobSpec, JobType};

use crate::demo::{Inventory, Orders, PrintContext, COMPILED_TYPES};

/// The `type:` of script jobs, as ElasticJob writes it in the job root.
const SCRIPT: &str = "SCRIPT";

/// The field naming the Java ElasticJob class a job shares with Java instances (its job root).
const JAVA_CLASS: &str = "javaClass";

/// Why a jobs file was refused; every variant names the file, and the job, field or line.
#[derive(Debug, thiserror::Error)]
pub(crate) enum JobsFileError {
    /// Reading the file failed.
    #[error("{}: cannot read the jobs file: {source}", file.display())]
    Read {
        /// The file.
        file: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The YAML is malformed or a field has the wrong type (the message names the path and line).
    #[error("{}: {source}", file.display())]
    Parse {
        /// The file.
        file: PathBuf,
        /// The parser's error, with the field's path and its line.
        #[source]
        source: serde_yaml_ng::Error,
    },
    /// The `jobs:` list is empty.
    #[error("{}: jobs: the list is empty; nothing to run", file.display())]
    NoJobs {
        /// The file.
        file: PathBuf,
    },
    /// One job is wrong: a missing or unknown `type:`, an invalid config, a duplicate name.
    #[error("{}: jobs[{index}] (jobName {job:?}): {problem}", file.display())]
    Job {
        /// The file.
        file: PathBuf,
        /// The job's position in the list.
        index: usize,
        /// The job's name as written.
        job: String,
        /// What is wrong, naming the field.
        problem: String,
    },
}

/// The built-in demo set: `orders` (simple, 8 items every 2 s, with item parameters), `inventory`
/// (dataflow, 3 items every 3 s), and `greeting` (SCRIPT running `echo`) when `echo` is on the PATH.
pub(crate) fn demo() -> Vec<JobSpec> {
    let orders = JobConfig::new("orders", 8)
        .cron("0/2 * * * * ?")
        .item_parameters(
            "0=Beijing,1=Shanghai,2=Guangzhou,3=Shenzhen,4=Hangzhou,5=Chengdu,6=Wuhan,7=Atlantis",
        )
        .job_parameter("express")
        .description("ships the orders of one city per item; Atlantis always fails");
    let inventory = JobConfig::new("inventory", 3)
        .cron("0/3 * * * * ?")
        .description("counts the stock of one warehouse per item");
    let mut specs = vec![
        spec(orders, "orders", Arc::new(Simple(Orders))),
        spec(inventory, "inventory", Arc::new(Dataflow::new(Inventory))),
    ];
    if let Some(echo) = find_on_path("echo") {
        let line = format!(
            "{} hello from shardcron, context:",
            shell_words::quote(&echo)
        );
        let greeting = JobConfig::new("greeting", 2)
            .cron("0/2 * * * * ?")
            .script_command_line(line.clone())
            .description("echoes its context");
        if let Ok(job) = ScriptJob::new(&line) {
            specs.push(JobSpec {
                config: std::sync::Arc::new(demo_config(greeting)),
                job_type: JobType::Script,
                handler: Arc::new(job),
            });
        }
    }
    specs
}

fn spec(config: JobConfig, type_name: &str, handler: SharedHandler) -> JobSpec {
    JobSpec {
        config: std::sync::Arc::new(demo_config(config)),
        job_type: JobType::Named(type_name.to_owned()),
        handler,
    }
}

/// Demo jobs run in GMT (UTC, in the spelling Java ElasticJob accepts) and replace a config left in the namespace by an earlier, other version.
fn demo_config(config: JobConfig) -> JobConfig {
    config.time_zone("GMT").overwrite(true)
}

fn find_on_path(program: &str) -> Option<String> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
        .map(|found| found.to_string_lossy().into_owned())
}

#[derive(Deserialize)]
struct TypedFile {
    jobs: Vec<JobConfig>,
}

#[derive(Deserialize)]
struct PlainFile {
    jobs: Vec<Mapping>,
}

/// Reads, checks and builds the jobs of `file`. Warnings (unknown fields) go to stderr.
pub(crate) fn from_file(file: &Path) -> Result<Vec<JobSpec>, JobsFileError> {
    let text = std::fs::read_to_string(file).map_err(|source| JobsFileError::Read {
        file: file.to_owned(),
        source,
    })?;
    let parse = |source| JobsFileError::Parse {
        file: file.to_owned(),
        source,
    };
    let typed: TypedFile = serde_yaml_ng::from_str(&text).map_err(parse)?;
    let plain: PlainFile = serde_yaml_ng::from_str(&text).map_err(parse)?;
    if typed.jobs.is_empty() {
        return Err(JobsFileError::NoJobs {
            file: file.to_owned(),
        });
    }
    let mut names = BTreeSet::new();
    let mut specs = Vec::new();
    for (index, (mut config, mut fields)) in typed.jobs.into_iter().zip(plain.jobs).enumerate() {
        // `UTC` and `+08:00` are written as Java spells them (`GMT`, `GMT+08:00`).
        config.spell_time_zone_for_java();
        let wrong = |problem: String| JobsFileError::Job {
            file: file.to_owned(),
            index,
            job: config.job_name.clone(),
            problem,
        };
        let type_name = match fields.remove("type") {
            Some(Value::String(t)) => t,
            Some(other) => return Err(wrong(format!("type: {other:?} is not a string"))),
            None => return Err(wrong(format!("type: missing; {}", expected_types()))),
        };
        let java_class = match fields.remove(JAVA_CLASS) {
            Some(Value::String(c)) if !c.trim().is_empty() => Some(c),
            Some(other) => {
                return Err(wrong(format!(
                    "{JAVA_CLASS}: {other:?} is not a class name (com.acme.OrdersJob)"
                )))
            }
            None => None,
        };
        warn_unknown_fields(file, index, &config.job_name, fields);
        let (kind, job_type) = match type_name.as_str() {
            SCRIPT => (JobKind::Script, JobType::Script),
            "inventory" => (JobKind::Dataflow, JobType::Named(type_name.clone())),
            _ => (JobKind::Simple, JobType::Named(type_name.clone())),
        };
        let job_type = match java_class {
            Some(class) => JobType::Java { class, kind },
            None => job_type,
        };
        if let Err(errors) = config.validate(&ValidationContext::builtin(kind)) {
            return Err(wrong(errors.to_string()));
        }
        if let Err(errors) = config.check_java_readable() {
            return Err(wrong(errors.to_string()));
        }
        if !names.insert(config.job_name.clone()) {
            return Err(wrong(
                "jobName: another job of this file has this name".into(),
            ));
        }
        let handler: SharedHandler = match type_name.as_str() {
            SCRIPT => Arc::new(
                ScriptJob::from_props(&config.props)
                    .map_err(|e| wrong(format!("props.script.command.line: {e}")))?,
            ),
            "demo" => Arc::new(PrintContext),
            "orders" => Arc::new(Simple(Orders)),
            "inventory" => Arc::new(
                Dataflow::from_props(Inventory, &config.props)
                    .map_err(|e| wrong(format!("props.streaming.process: {e}")))?,
            ),
            other => {
                return Err(wrong(format!(
                    "type: unknown type {other:?}; {}",
                    expected_types()
                )))
            }
        };
        specs.push(JobSpec {
            config: config.into(),
            job_type,
            handler,
        });
    }
    Ok(specs)
}

fn expected_types() -> String {
    format!("expected {SCRIPT} or one of {}", COMPILED_TYPES.join(", "))
}

/// Warns about fields of a job entry that no job configuration knows (after `type:` was taken out).
fn warn_unknown_fields(file: &Path, index: usize, job: &str, fields: Mapping) {
    // Round-tripping through the config's own reader is what decides which fields are unknown.
    let Ok(text) = serde_yaml_ng::to_string(&fields) else {
        return;
    };
    if let Ok(config) = JobConfig::from_yaml(&text) {
        for field in config.unknown_fields.keys() {
            eprintln!(
                "node: warning: {}: jobs[{index}] (jobName {job:?}): unknown field {field:?} is ignored",
                file.display()
            );
        }
    }
}
