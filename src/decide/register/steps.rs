//! The step-by-step path, one write per step, taken when the mirror does not allow the one write
//! (the root, the config, the parents, `servers/{ip}`, `instances/{me}`), and the writes and found
//! configs both paths build.

use super::*;

/// The parents the step-by-step path ensures (ensuring a path creates its ancestors).
const PARENTS: [JobNode; 5] = [
    JobNode::Servers,
    JobNode::Instances,
    JobNode::Sharding,
    JobNode::LeaderElection,
    JobNode::LeaderSharding,
];

impl Register {
    /// The job root: it names the job's type; another type may only take it over when nobody
    /// runs it.
    pub(super) fn root(&mut self, facts: &dyn RegisterFacts) -> RegisterStep {
        self.phase = Phase::Root;
        let root = self.path(JobNode::Root);
        match facts.data(&JobNode::Root) {
            None => RegisterStep::Write(
                vec![Op::create(
                    root,
                    self.root_data.as_str(),
                    CreateMode::Persistent,
                )],
                WriteMode::Direct,
            ),
            Some(d) if *d == *self.root_data.as_bytes() => self.config(facts),
            Some(d) => {
                let other = String::from_utf8_lossy(&d).into_owned();
                if !other.is_empty() && facts.has_instances() {
                    return self.end(Err(Failure::JobTypeConflict { running: other }));
                }
                RegisterStep::Write(
                    vec![Op::set(root, self.root_data.as_str())],
                    WriteMode::Direct,
                )
            }
        }
    }

    /// The config: ours when absent or `overwrite`, otherwise the registry's if it is valid.
    pub(super) fn config(&mut self, facts: &dyn RegisterFacts) -> RegisterStep {
        let path = self.path(JobNode::Config);
        let (found, op) = match facts.data(&JobNode::Config) {
            None => match facts.our_yaml() {
                Ok(text) => (
                    self.ours(&text),
                    Op::create(path, text, CreateMode::Persistent),
                ),
                Err(e) => return self.end(Err(Failure::InvalidConfig(e))),
            },
            Some(_) if self.overwrite => match facts.our_yaml() {
                Ok(text) => (self.ours(&text), Op::set(path, text)),
                Err(e) => return self.end(Err(Failure::InvalidConfig(e))),
            },
            Some(data) => {
                self.found = Some(self.theirs(facts, data));
                return self.parents();
            }
        };
        self.found = Some(found);
        self.phase = Phase::Config;
        RegisterStep::Write(vec![op], WriteMode::Direct)
    }

    pub(super) fn parents(&mut self) -> RegisterStep {
        self.phase = Phase::Parents;
        RegisterStep::EnsurePaths(PARENTS.iter().map(|p| self.path(p.clone())).collect())
    }

    pub(super) fn server(&mut self) -> RegisterStep {
        let config = self.found_config();
        let status = status_of(&config);
        self.phase = Phase::Server;
        RegisterStep::Write(
            vec![Op::set(
                self.path(JobNode::Server(self.me.ip().to_owned())),
                status.as_data(),
            )],
            WriteMode::Direct,
        )
    }

    pub(super) fn instance(&mut self) -> RegisterStep {
        self.phase = Phase::Instance;
        RegisterStep::Write(vec![self.instance_create()], WriteMode::Direct)
    }

    pub(super) fn instance_create(&self) -> Op {
        Op::create(
            self.path(JobNode::Instance(self.me.clone())),
            self.instance_data.as_str(),
            CreateMode::Ephemeral,
        )
    }

    /// `servers/{ip}`: set when mirrored, created otherwise (the one-write path).
    pub(super) fn server_op(&self, config: &ValidatedConfig, facts: &dyn RegisterFacts) -> Op {
        let node = JobNode::Server(self.me.ip().to_owned());
        let status = status_of(config);
        if facts.exists(&node) {
            Op::set(self.path(node), status.as_data())
        } else {
            Op::create(self.path(node), status.as_data(), CreateMode::Persistent)
        }
    }

    pub(super) fn ours(&self, text: &str) -> Found {
        Found {
            config: self.local.clone(),
            yaml: Some(Arc::from(text.as_bytes())),
            refused: None,
        }
    }

    pub(super) fn theirs(&self, facts: &dyn RegisterFacts, data: Arc<[u8]>) -> Found {
        match facts.registry_config(&data) {
            Ok(config) => Found {
                config,
                yaml: Some(data),
                refused: None,
            },
            Err(e) => Found {
                config: self.local.clone(),
                yaml: Some(data),
                refused: Some(e),
            },
        }
    }

    pub(super) fn found_config(&self) -> Arc<ValidatedConfig> {
        self.found
            .as_ref()
            .map_or_else(|| self.local.clone(), |f| f.config.clone())
    }
}
