//! The command line, parsed by hand: global flags, a command of one or two words with its
//! positional arguments, and the command's own flags. Every refusal names the flag or argument,
//! and exits with code 2 before anything connects.

use std::path::PathBuf;

use shardcron::ops::{RemoveMode, ShutdownScope, Target};
use shardcron::registry::zookeeper::ZkConfig;
use shardcron::{InstanceId, JobName, ShardItem};

/// The usage text printed by `--help` and pointed to by errors.
pub(crate) const USAGE: &str = "\
usage: ctl --zk HOSTS [--namespace NS] [--json] COMMAND

Operates the shardcron (or ElasticJob-Lite 3.x) jobs of one registry namespace.

commands:
  jobs                                    every job: status, cron, instances, items
  job NAME                                one job: servers, instances, leader, every item
  servers                                 every server IP: instances, jobs, disabled jobs
  config get NAME                         the stored config YAML and its version
  config set NAME FILE [--version V]      validate FILE and write it (only at version V if given)
  trigger NAME                            every live instance runs its items once now
  disable NAME [--server IP | --item N]   disable every server, one server, or one item
  enable NAME [--server IP | --item N]    undo disable
  shutdown NAME [--instance ID]           stop the job on every instance, or on one
  remove NAME [--force]                   delete the job (refused while instances run it)
  cron next EXPR [--zone Z] [--from T] [--count N]
                                          the next fire times of a Quartz cron expression
                                          (UTC and local), or the field it refuses; no registry
  history NAME [--db TARGET] [--item N] [--since T] [--failed]
                                          item executions recorded by nodes with a history:
                                          TARGET is a SQLite file (default shardcron-history.db)
                                          or postgres://...; T is RFC 3339, a date, or 90s/15m/2h/7d

flags:
  --zk HOSTS        ZooKeeper connect string (host:port,...)
  --namespace NS    registry namespace (default shardcron-demo)
  --json            print JSON instead of tables
  -h, --help        this text

exit codes: 0 done, 1 refused or failed, 2 bad input (flag, file, job name, config field)
";

/// The namespace when `--namespace` is not given (the example node's default).
const DEFAULT_NAMESPACE: &str = "shardcron-demo";

/// What the command line asks for.
#[derive(Debug)]
pub(crate) enum Parsed {
    /// Run a command on a registry.
    Run(Invocation),
    /// Print the usage and exit.
    Help,
    /// `history`: reads the execution history, no registry needed.
    History(HistoryArgs),
    /// `cron next`: computed locally, no registry needed.
    CronNext(shardcron::cron::next::CronNextArgs),
}

/// What `history` asks for.
#[derive(Debug)]
pub(crate) struct HistoryArgs {
    /// Where the history is (SQLite path or PostgreSQL URL; empty for the default file).
    pub(crate) db: String,
    /// The job.
    pub(crate) job: JobName,
    /// One item only.
    pub(crate) item: Option<String>,
    /// Not before this (as given; parsed against the current time).
    pub(crate) since: Option<String>,
    /// Failures only.
    pub(crate) failed: bool,
    /// Print JSON.
    pub(crate) json: bool,
}

/// A command and where to run it.
#[derive(Debug)]
pub(crate) struct Invocation {
    /// The registry.
    pub(crate) zk: ZkConfig,
    /// Print JSON.
    pub(crate) json: bool,
    /// The command.
    pub(crate) command: Command,
}

/// One command of the CLI.
#[derive(Debug)]
pub(crate) enum Command {
    /// `jobs`.
    Jobs,
    /// `job NAME`.
    Job(JobName),
    /// `servers`.
    Servers,
    /// `config get NAME`.
    ConfigGet(JobName),
    /// `config set NAME FILE [--version V]`.
    ConfigSet {
        /// The job.
        job: JobName,
        /// The file holding the new YAML.
        file: PathBuf,
        /// Write only over this version.
        version: Option<i32>,
    },
    /// `trigger NAME`.
    Trigger(JobName),
    /// `disable NAME ...`.
    Disable(JobName, Target),
    /// `enable NAME ...`.
    Enable(JobName, Target),
    /// `shutdown NAME [--instance ID]`.
    Shutdown(JobName, ShutdownScope),
    /// `remove NAME [--force]`.
    Remove(JobName, RemoveMode),
    /// `history NAME ...`.
    History(HistoryArgs),
}

/// Why the command line was refused; every variant names the flag or argument.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ArgsError {
    /// A flag this program does not know.
    #[error("unknown flag {0} (see --help)")]
    UnknownFlag(String),
    /// A command this program does not know.
    #[error("unknown command {0:?} (see --help)")]
    UnknownCommand(String),
    /// No command given.
    #[error("no command given (see --help)")]
    NoCommand,
    /// A flag given without its value.
    #[error("{0} needs a value")]
    MissingValue(&'static str),
    /// A flag given twice, where the second would silently win.
    #[error("{0} is given more than once")]
    Repeated(&'static str),
    /// A required flag is absent.
    #[error("{0} is required")]
    Required(&'static str),
    /// A flag that the command does not take.
    #[error("{flag} does not apply to `{command}`")]
    NotForCommand {
        /// The flag.
        flag: &'static str,
        /// The command.
        command: &'static str,
    },
    /// Two flags that exclude each other.
    #[error("{0} and {1} exclude each other")]
    Conflict(&'static str, &'static str),
    /// A positional argument is missing.
    #[error("`{command}` needs {what}")]
    MissingArgument {
        /// The command.
        command: &'static str,
        /// What it needs (`NAME`, `FILE`).
        what: &'static str,
    },
    /// Extra positional arguments.
    #[error("unexpected argument {0:?} (see --help)")]
    Extra(String),
    /// A value that is refused.
    #[error("{what} {value:?}: {reason}")]
    BadValue {
        /// The flag or argument (`--item`, `NAME`).
        what: &'static str,
        /// The value given.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// Flags, in the order of `Flags::values`; `true` when the flag takes a value.
const FLAGS: [(&str, bool); 14] = [
    ("--zk", true),
    ("--namespace", true),
    ("--json", false),
    ("--server", true),
    ("--item", true),
    ("--instance", true),
    ("--force", false),
    ("--version", true),
    ("--db", true),
    ("--since", true),
    ("--failed", false),
    ("--zone", true),
    ("--from", true),
    ("--count", true),
];

/// The flags given, by position in [`FLAGS`]; a switch holds an empty value.
#[derive(Debug, Default)]
struct Flags {
    values: [Option<String>; FLAGS.len()],
}

impl Flags {
    fn take(&mut self, flag: &str) -> Option<String> {
        let i = FLAGS.iter().position(|(f, _)| *f == flag)?;
        self.values[i].take()
    }

    /// The first command flag still present: every flag the command did not take.
    fn leftover(&self) -> Option<&'static str> {
        FLAGS
            .iter()
            .zip(&self.values)
            .find(|(_, v)| v.is_some())
            .map(|((f, _), _)| *f)
    }
}

/// Parses the arguments after the program name.
pub(crate) fn parse(args: impl IntoIterator<Item = String>) -> Result<Parsed, ArgsError> {
    let mut flags = Flags::default();
    let mut words = Vec::new();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        if arg == "-h" || arg == "--help" {
            return Ok(Parsed::Help);
        }
        if !arg.starts_with("--") {
            words.push(arg);
            continue;
        }
        let (name, inline) = match arg.split_once('=') {
            Some((name, value)) => (name, Some(value.to_owned())),
            None => (arg.as_str(), None),
        };
        let Some(i) = FLAGS.iter().position(|(f, _)| *f == name) else {
            return Err(ArgsError::UnknownFlag(arg));
        };
        let (flag, takes_value) = FLAGS[i];
        let value = match (takes_value, inline) {
            (true, Some(v)) => v,
            // A following flag is a forgotten value, not a value that starts with dashes.
            (true, None) => match args.next() {
                Some(v) if !v.starts_with("--") => v,
                _ => return Err(ArgsError::MissingValue(flag)),
            },
            (false, None) => String::new(),
            (false, Some(v)) => {
                return Err(ArgsError::BadValue {
                    what: flag,
                    value: v,
                    reason: "takes no value".into(),
                })
            }
        };
        if flags.values[i].replace(value).is_some() {
            return Err(ArgsError::Repeated(flag));
        }
    }

    let json = flags.take("--json").is_some();
    let (hosts, namespace) = (flags.take("--zk"), flags.take("--namespace"));
    if words.first().is_some_and(|w| w == "cron") {
        return cron_next(&mut flags, words, json);
    }
    let command = command(&mut flags, words)?;
    if let Command::History(mut history) = command {
        // The history lives in a database, not the registry: --zk and --namespace (often part of
        // an alias) are accepted and unused.
        history.json = json;
        return Ok(Parsed::History(history));
    }
    let zk = zk_config(hosts, namespace)?;
    Ok(Parsed::Run(Invocation { zk, json, command }))
}

/// `cron next EXPR [--zone Z] [--from T] [--count N]`; the values are checked by the library.
fn cron_next(flags: &mut Flags, words: Vec<String>, json: bool) -> Result<Parsed, ArgsError> {
    let mut words = words.into_iter().skip(1);
    match words.next().as_deref() {
        Some("next") => {}
        Some(other) => return Err(ArgsError::UnknownCommand(format!("cron {other}"))),
        None => {
            return Err(ArgsError::MissingArgument {
                command: "cron",
                what: "next",
            })
        }
    }
    let mut pos = Positional {
        command: "cron next",
        words: words.collect::<Vec<_>>().into_iter(),
    };
    let expr = pos.next("EXPR (quote it: \"0 0 12 * * ?\")")?;
    pos.done()?;
    let args = shardcron::cron::next::CronNextArgs {
        expr,
        zone: flags.take("--zone"),
        from: flags.take("--from"),
        count: flags.take("--count"),
        json,
    };
    if let Some(flag) = flags.leftover() {
        return Err(ArgsError::NotForCommand {
            flag,
            command: "cron next",
        });
    }
    Ok(Parsed::CronNext(args))
}

fn zk_config(hosts: Option<String>, namespace: Option<String>) -> Result<ZkConfig, ArgsError> {
    let hosts = hosts.ok_or(ArgsError::Required("--zk"))?;
    let namespace = namespace.unwrap_or_else(|| DEFAULT_NAMESPACE.to_owned());
    // ZkConfig checks both strings; a placeholder stands in for the one not under test, so that
    // the error names the right flag.
    if let Err(e) = ZkConfig::new("127.0.0.1:2181", &namespace) {
        return Err(bad("--namespace", &namespace, e));
    }
    ZkConfig::new(&hosts, &namespace).map_err(|e| bad("--zk", &hosts, e))
}

fn bad(what: &'static str, value: &str, reason: impl ToString) -> ArgsError {
    ArgsError::BadValue {
        what,
        value: value.to_owned(),
        reason: reason.to_string(),
    }
}

/// Positional arguments of one command, taken in order.
struct Positional {
    command: &'static str,
    words: std::vec::IntoIter<String>,
}

impl Positional {
    fn next(&mut self, what: &'static str) -> Result<String, ArgsError> {
        self.words.next().ok_or(ArgsError::MissingArgument {
            command: self.command,
            what,
        })
    }

    fn job(&mut self) -> Result<JobName, ArgsError> {
        let name = self.next("NAME")?;
        JobName::new(name.clone()).map_err(|e| bad("NAME", &name, e))
    }

    fn done(mut self) -> Result<(), ArgsError> {
        match self.words.next() {
            Some(extra) => Err(ArgsError::Extra(extra)),
            None => Ok(()),
        }
    }
}

fn command(flags: &mut Flags, words: Vec<String>) -> Result<Command, ArgsError> {
    let mut words = words.into_iter();
    let first = words.next().ok_or(ArgsError::NoCommand)?;
    let (name, words): (&'static str, Vec<String>) = match first.as_str() {
        "config" => match words.next().as_deref() {
            Some("get") => ("config get", words.collect()),
            Some("set") => ("config set", words.collect()),
            Some(other) => return Err(ArgsError::UnknownCommand(format!("config {other}"))),
            None => {
                return Err(ArgsError::MissingArgument {
                    command: "config",
                    what: "get or set",
                })
            }
        },
        "jobs" => ("jobs", words.collect()),
        "job" => ("job", words.collect()),
        "servers" => ("servers", words.collect()),
        "trigger" => ("trigger", words.collect()),
        "disable" => ("disable", words.collect()),
        "enable" => ("enable", words.collect()),
        "shutdown" => ("shutdown", words.collect()),
        "remove" => ("remove", words.collect()),
        "history" => ("history", words.collect()),
        _ => return Err(ArgsError::UnknownCommand(first)),
    };
    let mut pos = Positional {
        command: name,
        words: words.into_iter(),
    };
    let command = match name {
        "jobs" => Command::Jobs,
        "servers" => Command::Servers,
        "job" => Command::Job(pos.job()?),
        "trigger" => Command::Trigger(pos.job()?),
        "history" => Command::History(HistoryArgs {
            db: flags.take("--db").unwrap_or_default(),
            job: pos.job()?,
            item: flags.take("--item"),
            since: flags.take("--since"),
            failed: flags.take("--failed").is_some(),
            json: false,
        }),
        "config get" => Command::ConfigGet(pos.job()?),
        "config set" => {
            let job = pos.job()?;
            let file = PathBuf::from(pos.next("FILE")?);
            let version = match flags.take("--version") {
                None => None,
                Some(v) => Some(
                    shardcron::ops::parse_config_version(&v)
                        .map_err(|e| bad("--version", &v, e))?,
                ),
            };
            Command::ConfigSet { job, file, version }
        }
        "disable" | "enable" => {
            let job = pos.job()?;
            let target = target(flags)?;
            if name == "disable" {
                Command::Disable(job, target)
            } else {
                Command::Enable(job, target)
            }
        }
        "shutdown" => {
            let job = pos.job()?;
            let scope = match flags.take("--instance") {
                None => ShutdownScope::AllInstances,
                Some(id) => ShutdownScope::Instance(
                    InstanceId::parse(id.clone())
                        .map_err(|e| bad("--instance", &id, format!("{e}")))?,
                ),
            };
            Command::Shutdown(job, scope)
        }
        "remove" => {
            let job = pos.job()?;
            let mode = match flags.take("--force") {
                Some(_) => RemoveMode::Force,
                None => RemoveMode::RefuseWhileRunning,
            };
            Command::Remove(job, mode)
        }
        _ => unreachable!("every command name is matched above"),
    };
    pos.done()?;
    if let Some(flag) = flags.leftover() {
        return Err(ArgsError::NotForCommand {
            flag,
            command: name,
        });
    }
    Ok(command)
}

fn target(flags: &mut Flags) -> Result<Target, ArgsError> {
    match (flags.take("--server"), flags.take("--item")) {
        (Some(_), Some(_)) => Err(ArgsError::Conflict("--server", "--item")),
        (Some(ip), None) if ip.is_empty() || ip.contains('/') => {
            Err(bad("--server", &ip, "expected an IP address"))
        }
        (Some(ip), None) => Ok(Target::Server(ip)),
        (None, Some(n)) => n
            .parse::<ShardItem>()
            .map(Target::Item)
            .map_err(|e| bad("--item", &n, e)),
        (None, None) => Ok(Target::AllServers),
    }
}
