//! Registering a job on a session (ElasticJob's `registerStartUpInfo`) as a step machine: the job
//! root, the config (ours when absent or `overwrite`, otherwise the registry's), the parents,
//! `servers/{ip}`, the ephemeral `instances/{id}`, and the removal of this instance's stale
//! `running` markers. Each write's [`Answer`] is the next input; the facts come from the mirror.
//!
//! ```text
//!  the mirror allows it ──▶ OneWrite (whatever is missing, in one multi-op) ──Done──▶ Registered
//!         │ no (a root of another type, instances/{me} there)  │ a node there or gone: the mirror
//!         ▼                                                   ▼ lagged           └ else: failed
//!  Root: create | set (a root of another type nobody runs; refused while it runs) | nothing
//!  Config: create ours (there meanwhile: another's, read as a change) | overwrite | the registry's
//!  Parents ─▶ servers/{ip}: set, or create when missing
//!  instances/{me}: create ─Done─▶ stale markers, op by op ─▶ Registered
//!                  └ there: an older session of this instance holds it ─▶ TakeOver: delete it,
//!                    the stale markers and create ours in one multi-op (op by op when a node went
//!                    or came meanwhile) ─▶ Registered
//! ```
//!
//! Every other answer ends registration with [`Failure::Registry`] naming the step; the
//! interpreter attaches the registry's error to it.

mod steps;

use std::sync::Arc;

use crate::config::ValidatedConfig;
use crate::model::{CreateMode, Op};
use crate::paths::JobNode;
use crate::types::{InstanceId, JobName};
use crate::view::ServerStatus;

use super::answer::Answer;
use super::lifecycle::WriteMode;

/// What registration reads: the mirror, and the parsing of configs (ours and the registry's).
pub trait RegisterFacts {
    /// The mirrored data of one of the job's nodes; `None` when absent.
    fn data(&self, node: &JobNode) -> Option<Arc<[u8]>>;
    /// Whether one of the job's nodes is mirrored.
    fn exists(&self, node: &JobNode) -> bool;
    /// Whether any instance runs the job (`instances/` has children).
    fn has_instances(&self) -> bool;
    /// The records this instance left in an earlier session (stale `running` markers).
    fn stale_records(&self) -> Vec<Op>;
    /// Our config as YAML, to write; the reason when a Java instance could not load it.
    fn our_yaml(&self) -> Result<String, String>;
    /// The registry's config `data`, parsed and validated; the reason when invalid.
    fn registry_config(&self, data: &[u8]) -> Result<Arc<ValidatedConfig>, String>;
}

/// What the interpreter does next.
#[derive(Debug, Clone, PartialEq)]
pub enum RegisterStep {
    /// Apply these operations ([`WriteMode::Direct`]: one call or one multi-op;
    /// [`WriteMode::Tolerant`]: op by op, nodes already as wanted ignored); hand back the answer.
    Write(Vec<Op>, WriteMode),
    /// Create these paths and their missing ancestors; hand back the answer.
    EnsurePaths(Vec<String>),
    /// Registration is over.
    Ended(Result<Registered, Failure>),
}

/// What registration found.
#[derive(Debug, Clone, PartialEq)]
pub struct Registered {
    /// The config to run with.
    pub config: Arc<ValidatedConfig>,
    /// The config node's bytes `config` stands for (written here, or read), when known.
    pub yaml: Option<Arc<[u8]>>,
    /// The registry's config was invalid and the local one is used: why (for an ERROR log).
    pub refused_registry_config: Option<String>,
}

/// Why registration failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// Our config cannot be written: the reason.
    InvalidConfig(String),
    /// The job root names another type, and an instance runs it.
    JobTypeConflict {
        /// The type the root names.
        running: String,
    },
    /// The write of this step failed: the interpreter has the registry's error.
    Registry {
        /// The step, for the error message.
        step: &'static str,
    },
}

#[derive(Debug, Clone, PartialEq)]
enum Phase {
    OneWrite(Found),
    Root,
    Config,
    Parents,
    Server,
    ServerCreate,
    Instance,
    Stale,
    TakeOver(Vec<Op>),
    TakeOverEach,
    Ended,
}

/// The config registration settled on, before the instance is written.
#[derive(Debug, Clone, PartialEq)]
struct Found {
    config: Arc<ValidatedConfig>,
    yaml: Option<Arc<[u8]>>,
    refused: Option<String>,
}

/// One registration of one job.
#[derive(Debug)]
pub struct Register {
    job: JobName,
    me: InstanceId,
    /// What the job root names (the job's type).
    root_data: String,
    /// `instances/{me}`'s data.
    instance_data: String,
    /// Whether our config replaces the registry's.
    overwrite: bool,
    local: Arc<ValidatedConfig>,
    found: Option<Found>,
    phase: Phase,
}

/// Every parent node of a registered job, each before its children: the one-write path creates
/// those the mirror lacks.
const EVERY_PARENT: [JobNode; 6] = [
    JobNode::Servers,
    JobNode::Instances,
    JobNode::Sharding,
    JobNode::Leader,
    JobNode::LeaderElection,
    JobNode::LeaderSharding,
];

impl Register {
    /// A registration of `job` for `me` with the local config `local`.
    pub fn new(
        job: JobName,
        me: InstanceId,
        root_data: String,
        instance_data: String,
        overwrite: bool,
        local: Arc<ValidatedConfig>,
    ) -> Self {
        Self {
            job,
            me,
            root_data,
            instance_data,
            overwrite,
            local,
            found: None,
            phase: Phase::Ended,
        }
    }

    fn path(&self, node: JobNode) -> String {
        node.to_path(&self.job)
    }

    /// The first step: the common case in one multi-op when the mirror allows it (whatever is
    /// missing is created), otherwise the step-by-step path.
    pub fn start(&mut self, facts: &dyn RegisterFacts) -> RegisterStep {
        let mut ops = Vec::new();
        match facts.data(&JobNode::Root) {
            None => ops.push(Op::create(
                self.path(JobNode::Root),
                self.root_data.as_str(),
                CreateMode::Persistent,
            )),
            Some(d) if *d == *self.root_data.as_bytes() => {}
            Some(_) => return self.root(facts),
        }
        let found = match facts.data(&JobNode::Config) {
            None => match facts.our_yaml() {
                Ok(text) => {
                    let found = self.ours(&text);
                    ops.push(Op::create(
                        self.path(JobNode::Config),
                        text,
                        CreateMode::Persistent,
                    ));
                    found
                }
                Err(e) => return self.end(Err(Failure::InvalidConfig(e))),
            },
            Some(_) if self.overwrite => match facts.our_yaml() {
                Ok(text) => {
                    let found = self.ours(&text);
                    ops.push(Op::set(self.path(JobNode::Config), text));
                    found
                }
                Err(e) => return self.end(Err(Failure::InvalidConfig(e))),
            },
            Some(data) => self.theirs(facts, data),
        };
        for parent in EVERY_PARENT {
            if !facts.exists(&parent) {
                ops.push(Op::create(self.path(parent), "", CreateMode::Persistent));
            }
        }
        ops.push(self.server_op(&found.config, facts));
        let instance = JobNode::Instance(self.me.clone());
        if facts.exists(&instance) {
            return self.root(facts);
        }
        ops.push(self.instance_create());
        ops.extend(facts.stale_records());
        self.phase = Phase::OneWrite(found);
        RegisterStep::Write(ops, WriteMode::Direct)
    }

    /// The answer to the write last asked for; the next step.
    pub fn written(&mut self, answer: Answer, facts: &dyn RegisterFacts) -> RegisterStep {
        let phase = std::mem::replace(&mut self.phase, Phase::Ended);
        match (phase, answer) {
            (Phase::OneWrite(found), Answer::Done) => {
                self.found = Some(found);
                self.registered()
            }
            // The mirror was behind (another instance registers the job at this moment).
            (Phase::OneWrite(_), a) if a.already() || matches!(a, Answer::BadVersion { .. }) => {
                self.root(facts)
            }
            (Phase::OneWrite(_), _) => self.failed("registering in one write"),
            (Phase::Root, Answer::Done | Answer::Exists { .. }) => self.config(facts),
            (Phase::Root, _) => self.failed("writing the job root"),
            (Phase::Config, Answer::Exists { .. }) => {
                // Another instance wrote its own first: its event is read as a change.
                if let Some(found) = self.found.as_mut() {
                    found.yaml = None;
                }
                self.parents()
            }
            (Phase::Config, Answer::Done) => self.parents(),
            (Phase::Config, _) => self.failed("writing config"),
            (Phase::Parents, Answer::Done) => self.server(),
            (Phase::Parents, _) => self.failed("creating parents"),
            (Phase::Server, Answer::Done) | (Phase::ServerCreate, Answer::Done) => self.instance(),
            (Phase::Server, Answer::Missing { .. }) => {
                self.phase = Phase::ServerCreate;
                let config = self.found_config();
                let status = status_of(&config);
                let create = Op::create(
                    self.path(JobNode::Server(self.me.ip().to_owned())),
                    status.as_data(),
                    CreateMode::Persistent,
                );
                RegisterStep::Write(vec![create], WriteMode::Tolerant)
            }
            (Phase::Server | Phase::ServerCreate, _) => self.failed("writing servers/{ip}"),
            (Phase::Instance, Answer::Done) => {
                self.phase = Phase::Stale;
                RegisterStep::Write(facts.stale_records(), WriteMode::Tolerant)
            }
            (Phase::Instance, Answer::Exists { .. }) => {
                // An earlier session of this very instance still holds the node (a restart under
                // the same id, a new session after a client-side expiry). It is taken over in one
                // multi-op with the stale markers, as ElasticJob's persistEphemeral replaces an
                // existing node: waiting for the server to expire it would stop the job for up
                // to a session timeout, and running meanwhile would let the survivors fail over
                // this session's runs when the old node goes.
                let mut ops = vec![Op::delete(self.path(JobNode::Instance(self.me.clone())))];
                ops.extend(facts.stale_records());
                ops.push(self.instance_create());
                self.phase = Phase::TakeOver(ops.clone());
                RegisterStep::Write(ops, WriteMode::Direct)
            }
            (Phase::Instance, _) => self.failed("creating instances/{id}"),
            (Phase::Stale, Answer::Done) => self.registered(),
            (Phase::Stale, _) => self.failed("clearing stale running markers"),
            (Phase::TakeOver(_), Answer::Done) | (Phase::TakeOverEach, Answer::Done) => {
                self.registered()
            }
            // The old node or a marker went meanwhile: op by op.
            (Phase::TakeOver(ops), a) if a.already() => {
                self.phase = Phase::TakeOverEach;
                RegisterStep::Write(ops, WriteMode::Tolerant)
            }
            (Phase::TakeOver(_) | Phase::TakeOverEach, _) => {
                self.failed("taking over instances/{id}")
            }
            (Phase::Ended, _) => self.failed("registration (an answer after its end)"),
        }
    }

    fn registered(&mut self) -> RegisterStep {
        let found = self.found.take().unwrap_or_else(|| Found {
            config: self.local.clone(),
            yaml: None,
            refused: None,
        });
        self.end(Ok(Registered {
            config: found.config,
            yaml: found.yaml,
            refused_registry_config: found.refused,
        }))
    }

    fn failed(&mut self, step: &'static str) -> RegisterStep {
        self.end(Err(Failure::Registry { step }))
    }

    fn end(&mut self, result: Result<Registered, Failure>) -> RegisterStep {
        self.phase = Phase::Ended;
        RegisterStep::Ended(result)
    }
}

fn status_of(config: &ValidatedConfig) -> ServerStatus {
    if config.config().disabled {
        ServerStatus::Disabled
    } else {
        ServerStatus::Enabled
    }
}

#[cfg(test)]
mod tests;
