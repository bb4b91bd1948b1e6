//! Adoption: which jobs created at runtime (`shardcronctl create`, the console's form,
//! [`crate::ops::Ops::create`]) a node that opted in ([`AdoptPolicy`]) runs, and when it stops
//! running them.
//!
//! A job created at runtime carries the `adoptable` record ([`crate::paths::JobNode::Adoptable`],
//! data [`Marker`]). [`Adoption::step`] takes what the mirror shows of one job ([`JobFacts`]) and
//! returns at most one [`AdoptCommand`]: adopt it (its type is one this node adopts, its label
//! fits, its config is valid, the node does not run it already), drop it (its record is gone or
//! says `removing`), or say once why it is left alone. The interpreter (`actors/adopt.rs`) adds
//! and removes the job through the node's own `AddJob` / `RemoveJob`.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use crate::types::JobName;

/// The types of job a node can adopt: ElasticJob's type-based jobs, whose handler comes from the
/// config's `props` alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RuntimeType {
    /// `SCRIPT`: `props.script.command.line`, run without a shell.
    Script,
    /// `HTTP`: one request per item from the `http.*` props.
    Http,
}

impl RuntimeType {
    /// The job root's data, as ElasticJob writes it for a type-based job.
    pub fn root_data(self) -> &'static str {
        match self {
            Self::Script => "SCRIPT",
            Self::Http => "HTTP",
        }
    }

    /// The type a job root's data names, if it is one of these.
    pub fn from_root_data(data: &str) -> Option<Self> {
        match data.trim() {
            "SCRIPT" => Some(Self::Script),
            "HTTP" => Some(Self::Http),
            _ => None,
        }
    }
}

impl fmt::Display for RuntimeType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.root_data())
    }
}

impl FromStr for RuntimeType {
    type Err = AdoptPolicyError;

    /// `script` or `http`, in any case.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_uppercase().as_str() {
            "SCRIPT" => Ok(Self::Script),
            "HTTP" => Ok(Self::Http),
            _ => Err(AdoptPolicyError::UnknownType {
                given: s.to_owned(),
            }),
        }
    }
}

/// Why an adoption policy (`--adopt script,http[:label]`) was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AdoptPolicyError {
    /// A type that is neither `script` nor `http`.
    #[error("unknown job type {given:?}; expected script, http or both (script,http)")]
    UnknownType {
        /// What was given.
        given: String,
    },
    /// No type at all.
    #[error(
        "names no job type; expected script, http or both (script,http), then :LABEL optionally"
    )]
    NoType,
    /// The label after `:` is not a label.
    #[error("label {label:?}: {reason}")]
    BadLabel {
        /// What was given.
        label: String,
        /// Why it is refused.
        reason: String,
    },
}

/// What a node adopts: the types, and optionally only jobs whose `label` is one label.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdoptPolicy {
    script: bool,
    http: bool,
    label: Option<String>,
}

impl AdoptPolicy {
    /// Adopts jobs of `types`, whatever their label (a labelled job only on an instance carrying
    /// its label).
    pub fn new(types: impl IntoIterator<Item = RuntimeType>) -> Self {
        let mut policy = Self {
            script: false,
            http: false,
            label: None,
        };
        for t in types {
            match t {
                RuntimeType::Script => policy.script = true,
                RuntimeType::Http => policy.http = true,
            }
        }
        policy
    }

    /// Adopts only jobs whose `label` is `label`.
    pub fn only_labelled(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    /// Whether jobs of type `t` are adopted.
    pub fn adopts(&self, t: RuntimeType) -> bool {
        match t {
            RuntimeType::Script => self.script,
            RuntimeType::Http => self.http,
        }
    }

    /// The label an adopted job must carry, if limited.
    pub fn label(&self) -> Option<&str> {
        self.label.as_deref()
    }

    fn types(&self) -> String {
        let mut names = Vec::new();
        if self.script {
            names.push("SCRIPT");
        }
        if self.http {
            names.push("HTTP");
        }
        names.join(" and ")
    }
}

impl FromStr for AdoptPolicy {
    type Err = AdoptPolicyError;

    /// `script`, `http`, `script,http`, each optionally followed by `:LABEL`.
    ///
    /// ```
    /// use shardcron::decide::adopt::{AdoptPolicy, RuntimeType};
    /// let p: AdoptPolicy = "script,http:gpu".parse().unwrap();
    /// assert!(p.adopts(RuntimeType::Http) && p.label() == Some("gpu"));
    /// assert!("ftp".parse::<AdoptPolicy>().is_err());
    /// ```
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (types, label) = match s.split_once(':') {
            Some((types, label)) => (types, Some(label.trim())),
            None => (s, None),
        };
        let types = types
            .split(',')
            .filter(|t| !t.trim().is_empty())
            .map(str::parse)
            .collect::<Result<Vec<RuntimeType>, _>>()?;
        if types.is_empty() {
            return Err(AdoptPolicyError::NoType);
        }
        let policy = Self::new(types);
        match label {
            None => Ok(policy),
            Some(label) => match crate::sharding::check_label(label) {
                Ok(()) => Ok(policy.only_labelled(label)),
                Err(e) => Err(AdoptPolicyError::BadLabel {
                    label: label.to_owned(),
                    reason: e.to_string(),
                }),
            },
        }
    }
}

/// The data of a job's `adoptable` record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    /// The job was created at runtime; adopting nodes run it.
    Created,
    /// A removal asked the adopting nodes to stop it; the namespace is cleaned after them.
    Removing,
}

impl Marker {
    /// The record's data.
    pub fn as_data(self) -> &'static [u8] {
        match self {
            Self::Created => b"created",
            Self::Removing => b"removing",
        }
    }

    /// Reads the record's data; anything but `removing` reads as created (the record's presence
    /// is what says the job was created at runtime).
    pub fn from_data(data: &[u8]) -> Self {
        if data.trim_ascii() == b"removing" {
            Self::Removing
        } else {
            Self::Created
        }
    }
}

/// What the mirror shows of one job, as [`Adoption::step`] reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobFacts<'a> {
    /// The job.
    pub job: &'a JobName,
    /// The job root's data (its type); `None` without a root.
    pub root: Option<&'a str>,
    /// The `adoptable` record; `None` for a job not created at runtime.
    pub marker: Option<Marker>,
    /// The config's `label`, when it has one.
    pub label: Option<&'a str>,
    /// Why the config cannot be run (missing, not valid, a handler that cannot be built).
    pub config_problem: Option<String>,
    /// The node runs the job already, not as an adoption (compiled in, or from a jobs file).
    pub runs_otherwise: bool,
}

/// What the interpreter does for one job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdoptCommand {
    /// Build the job's handler from its config and add it to the node.
    Adopt {
        /// The job.
        job: JobName,
        /// Its type.
        kind: RuntimeType,
    },
    /// Let its running items end (bounded by the shutdown timeout), then remove it from the node.
    Drop {
        /// The job.
        job: JobName,
    },
    /// Log once that the job is left alone, and why.
    LeaveAlone {
        /// The job.
        job: JobName,
        /// Why, as a sentence.
        why: String,
    },
}

/// Where a job stands with this node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Held {
    /// Adopted: the node runs it.
    Adopted,
    /// Being dropped: its items end, then it is removed.
    Dropping,
    /// Left alone, and said so.
    Said,
}

/// The adoption state of one node: its policy and labels, and what it did with each job.
#[derive(Debug, Clone)]
pub struct Adoption {
    policy: AdoptPolicy,
    node_labels: Vec<String>,
    jobs: BTreeMap<JobName, Held>,
}

impl Adoption {
    /// A node adopting by `policy`, carrying `node_labels`.
    pub fn new(policy: AdoptPolicy, node_labels: Vec<String>) -> Self {
        Self {
            policy,
            node_labels,
            jobs: BTreeMap::new(),
        }
    }

    /// The labels of the node (an adopted job's instance labels).
    pub fn node_labels(&self) -> &[String] {
        &self.node_labels
    }

    /// The jobs adopted and not yet dropped.
    pub fn adopted(&self) -> impl Iterator<Item = &JobName> {
        self.jobs
            .iter()
            .filter(|(_, h)| **h != Held::Said)
            .map(|(j, _)| j)
    }

    /// One job's facts in, at most one command out.
    pub fn step(&mut self, facts: &JobFacts<'_>) -> Option<AdoptCommand> {
        let job = facts.job;
        let wanted = facts.root.is_some() && facts.marker == Some(Marker::Created);
        match self.jobs.get(job).copied() {
            Some(Held::Dropping) => None,
            Some(Held::Adopted) if wanted => None,
            Some(Held::Adopted) => {
                self.jobs.insert(job.clone(), Held::Dropping);
                Some(AdoptCommand::Drop { job: job.clone() })
            }
            Some(Held::Said) if !wanted => {
                // Gone or being removed: a job created again under the name is judged afresh.
                self.jobs.remove(job);
                None
            }
            _ if !wanted || facts.runs_otherwise => None,
            held => match self.refusal(facts) {
                None => {
                    // `refusal` found the root's type adoptable.
                    let kind = facts.root.and_then(RuntimeType::from_root_data)?;
                    self.jobs.insert(job.clone(), Held::Adopted);
                    Some(AdoptCommand::Adopt {
                        job: job.clone(),
                        kind,
                    })
                }
                Some(_) if held == Some(Held::Said) => None,
                Some(why) => {
                    self.jobs.insert(job.clone(), Held::Said);
                    Some(AdoptCommand::LeaveAlone {
                        job: job.clone(),
                        why,
                    })
                }
            },
        }
    }

    /// The drop of `job` is done (or its adoption failed): it is no longer held.
    pub fn forget(&mut self, job: &JobName) {
        self.jobs.remove(job);
    }

    /// Why a job created at runtime is not adopted here, if it is not.
    fn refusal(&self, facts: &JobFacts<'_>) -> Option<String> {
        let root = facts.root.unwrap_or_default();
        let Some(kind) = RuntimeType::from_root_data(root) else {
            return Some(format!(
                "its type {:?} is not one a node adopts (SCRIPT or HTTP)",
                root.trim()
            ));
        };
        if !self.policy.adopts(kind) {
            return Some(format!(
                "it is a {kind} job and this node adopts {} jobs only",
                self.policy.types()
            ));
        }
        let label = facts.label.filter(|l| !l.is_empty());
        match (self.policy.label(), label) {
            (Some(wanted), Some(l)) if wanted == l => {}
            (Some(wanted), _) => {
                return Some(format!(
                    "this node adopts only jobs labelled {wanted:?}, and its label is {:?}",
                    label.unwrap_or("")
                ))
            }
            (None, Some(l)) if !self.node_labels.iter().any(|n| n == l) => {
                return Some(format!(
                    "it is labelled {l:?}, which this instance does not carry"
                ))
            }
            (None, _) => {}
        }
        facts
            .config_problem
            .as_ref()
            .map(|p| format!("its config cannot run: {p}"))
    }
}

#[cfg(test)]
#[path = "adopt_tests.rs"]
mod tests;
