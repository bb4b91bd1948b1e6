//! Table tests of registration: every answer of every step, on the returned steps. Here the fake
//! facts, the fixtures and the one-write path; the step-by-step path in `one_by_one.rs`.

mod one_by_one;

use std::collections::HashMap;

use super::*;
use crate::config::JobConfig;

fn config(f: impl FnOnce(JobConfig) -> JobConfig) -> Arc<ValidatedConfig> {
    f(JobConfig::test("orders").items(2)).validated()
}

fn me() -> InstanceId {
    InstanceId::parse("10.0.0.1@-@1").unwrap()
}

const INSTANCE: &str = "/orders/instances/10.0.0.1@-@1";
const SERVER: &str = "/orders/servers/10.0.0.1";
const STALE: &str = "/orders/sharding/0/running";

/// A mirror of the job's nodes, and what parsing configs answers.
#[derive(Default)]
struct Fake {
    nodes: HashMap<JobNode, Arc<[u8]>>,
    instances: bool,
    stale: bool,
    our_yaml: Option<String>,
    registry_config_invalid: bool,
}

impl Fake {
    fn with(mut self, node: JobNode, data: &str) -> Self {
        self.nodes.insert(node, Arc::from(data.as_bytes()));
        self
    }

    /// A job every instance registered before: root, config, parents, `servers/{ip}`.
    fn registered_before() -> Self {
        let mut f = Self::default()
            .with(JobNode::Root, "SCRIPT")
            .with(JobNode::Config, "theirs")
            .with(JobNode::Server("10.0.0.1".into()), "");
        for p in EVERY_PARENT {
            f = f.with(p, "");
        }
        f
    }

    /// [`Fake::registered_before`] with this instance's node left by an older session of it.
    fn older_session_node() -> Self {
        Self {
            stale: true,
            ..Self::registered_before()
        }
        .with(JobNode::Instance(me()), "")
    }
}

impl RegisterFacts for Fake {
    fn data(&self, node: &JobNode) -> Option<Arc<[u8]>> {
        self.nodes.get(node).cloned()
    }
    fn exists(&self, node: &JobNode) -> bool {
        self.nodes.contains_key(node)
    }
    fn has_instances(&self) -> bool {
        self.instances
    }
    fn stale_records(&self) -> Vec<Op> {
        if self.stale {
            vec![Op::delete(STALE)]
        } else {
            vec![]
        }
    }
    fn our_yaml(&self) -> Result<String, String> {
        self.our_yaml
            .clone()
            .ok_or_else(|| "timeZone: not Java".to_owned())
    }
    fn registry_config(&self, _data: &[u8]) -> Result<Arc<ValidatedConfig>, String> {
        if self.registry_config_invalid {
            Err("/orders/config: cron: bad".to_owned())
        } else {
            Ok(config(|c| c.items(5)))
        }
    }
}

fn register(overwrite: bool) -> Register {
    Register::new(
        crate::decide::fixtures::job(),
        me(),
        "SCRIPT".to_owned(),
        "labels: []".to_owned(),
        overwrite,
        config(|c| c),
    )
}

fn instance_create() -> Op {
    Op::create(INSTANCE, "labels: []", CreateMode::Ephemeral)
}

fn direct(ops: Vec<Op>) -> RegisterStep {
    RegisterStep::Write(ops, WriteMode::Direct)
}

fn tolerant(ops: Vec<Op>) -> RegisterStep {
    RegisterStep::Write(ops, WriteMode::Tolerant)
}

fn failed(step: &'static str) -> RegisterStep {
    RegisterStep::Ended(Err(Failure::Registry { step }))
}

fn ended_ok(step: &RegisterStep) -> &Registered {
    match step {
        RegisterStep::Ended(Ok(r)) => r,
        other => panic!("expected a registration, got {other:?}"),
    }
}

fn lost() -> Answer {
    Answer::Failed("connection lost".to_owned())
}

/// Drives the step-by-step path of a job registered before, through `answers`.
fn step_by_step(facts: &Fake, answers: Vec<Answer>) -> Vec<RegisterStep> {
    let mut r = register(false);
    let mut steps = vec![r.start(facts)];
    for a in answers {
        steps.push(r.written(a, facts));
    }
    steps
}

#[test]
fn a_new_job_is_registered_in_one_multi_op_with_whatever_is_missing() {
    let facts = Fake {
        our_yaml: Some("ours".into()),
        stale: true,
        ..Fake::default()
    };
    let mut r = register(false);
    let first = r.start(&facts);
    let RegisterStep::Write(ops, WriteMode::Direct) = &first else {
        panic!("{first:?}")
    };
    assert_eq!(
        ops[0],
        Op::create("/orders", "SCRIPT", CreateMode::Persistent)
    );
    assert_eq!(
        ops[1],
        Op::create("/orders/config", "ours", CreateMode::Persistent)
    );
    assert_eq!(ops.len(), 2 + 6 + 3);
    assert_eq!(
        ops[8],
        Op::create(SERVER, "ENABLED", CreateMode::Persistent)
    );
    assert_eq!(ops[9], instance_create());
    assert_eq!(ops[10], Op::delete(STALE));
    let done = r.written(Answer::Done, &facts);
    let registered = ended_ok(&done);
    assert_eq!(registered.config, config(|c| c));
    assert_eq!(registered.yaml.as_deref(), Some(&b"ours"[..]));
}

#[test]
fn a_job_registered_before_keeps_the_registry_config_and_sets_its_server() {
    let facts = Fake::registered_before();
    let mut r = register(false);
    assert_eq!(
        r.start(&facts),
        direct(vec![Op::set(SERVER, "ENABLED"), instance_create()])
    );
    let done = r.written(Answer::Done, &facts);
    assert_eq!(ended_ok(&done).config, config(|c| c.items(5)));
    assert_eq!(ended_ok(&done).refused_registry_config, None);
}

#[test]
fn an_invalid_registry_config_is_reported_and_the_local_one_used() {
    let facts = Fake {
        registry_config_invalid: true,
        ..Fake::registered_before()
    };
    let steps = step_by_step(&facts, vec![Answer::Done]);
    let registered = ended_ok(&steps[1]);
    assert_eq!(registered.config, config(|c| c));
    assert!(registered.refused_registry_config.is_some());
}

#[test]
fn our_config_that_java_could_not_load_is_refused_before_any_write() {
    let facts = Fake::default();
    assert_eq!(
        register(false).start(&facts),
        RegisterStep::Ended(Err(Failure::InvalidConfig("timeZone: not Java".into())))
    );
}

#[test]
fn every_answer_to_the_one_write_picks_its_branch() {
    let facts = Fake::registered_before();
    let cases = [
        (Answer::Exists { at: Some(1) }, true),
        (Answer::Missing { at: Some(0) }, true),
        (Answer::BadVersion { at: None }, true),
        (lost(), false),
    ];
    for (answer, step_by_step) in cases {
        let mut r = register(false);
        r.start(&facts);
        let next = r.written(answer.clone(), &facts);
        if step_by_step {
            // The root matches and the config is the registry's: the parents come first.
            assert!(matches!(next, RegisterStep::EnsurePaths(_)), "{answer:?}");
        } else {
            assert_eq!(next, failed("registering in one write"));
        }
    }
}
