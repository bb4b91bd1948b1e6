//! Table tests of the job state machine: inputs in, the exact commands out. Here the fake facts
//! and the fixtures every test file shares; the fault cases of issue 17 in `own_node.rs` and
//! `sessions.rs`, the ordinary transitions in `transitions.rs`.

mod ahead;
mod backfill;
mod catchup;
mod gated;
mod heeded;
mod manual;
mod marked;
mod missed;
mod overlap;
mod own_node;
mod policies;
mod reconfigured;
mod sessions;
mod stale;
mod transitions;
mod workflow;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, TimeDelta, TimeZone, Utc};

use super::*;
use crate::config::JobConfig;
use crate::decide::fixtures::*;
use crate::model::{CreateMode, NodeEventKind, SessionState};
use crate::paths::JobNode;

const SESSION: i64 = 0x20;
const OLD_SESSION: i64 = 0x10;

struct Fake {
    view: JobView,
    now: DateTime<Utc>,
    owner: Option<i64>,
    removed: Option<i64>,
    mirrored: BTreeSet<ShardItem>,
    /// `shardcron/fired/{i}` (catch-up tests).
    fired: crate::decide::catchup::FiredRecord,
    /// `shardcron/trigger/{me}` (trigger-with-parameters tests).
    params: Option<Vec<u8>>,
    /// `shardcron/backfill` (backfill tests).
    request: Option<Vec<u8>>,
    /// `shardcron/backfill/{i}` (backfill tests).
    progress: std::collections::BTreeMap<ShardItem, Vec<u8>>,
    /// `/{job}/shardcron/workflow/*` per job as (name, data, czxid) (workflow tests).
    workflow: std::collections::BTreeMap<String, Vec<(String, Vec<u8>, i64)>>,
    /// The upstream jobs `downstream/orders` is registered under, at czxid 10 (workflow tests).
    registered_under: Vec<String>,
    /// Jobs that do not exist (workflow tests).
    gone: Vec<String>,
    /// How long the registry has answered nothing while a call waits.
    silent: Duration,
}

impl Facts for Fake {
    fn view(&self) -> std::rc::Rc<JobView> {
        std::rc::Rc::new(self.view.clone())
    }
    fn owns(&self, item: ShardItem) -> bool {
        self.view.items.get(&item).and_then(|v| v.owner.as_ref()) == Some(&me())
    }
    fn marker_mirrored(&self, item: ShardItem) -> bool {
        self.mirrored.contains(&item)
    }
    fn instance_owner(&self) -> Option<i64> {
        self.owner
    }
    fn removed_instance_owner(&self) -> Option<i64> {
        self.removed
    }
    fn has_failover_marks(&self) -> bool {
        !self.view.failover_marks.is_empty()
    }
    fn now(&self) -> DateTime<Utc> {
        self.now
    }
    fn registry_silent_for(&self) -> Duration {
        self.silent
    }

    fn clock_skew(&self) -> Option<Duration> {
        None
    }
    fn fired(&self) -> crate::decide::catchup::FiredRecord {
        self.fired.clone()
    }
    fn trigger_params(&self) -> Option<Vec<u8>> {
        self.params.clone()
    }
    fn backfill_request(&self) -> Option<Vec<u8>> {
        self.request.clone()
    }
    fn backfill_progress(&self) -> std::collections::BTreeMap<ShardItem, Vec<u8>> {
        self.progress.clone()
    }
    fn workflow_records(&self, job: &JobName) -> Vec<(String, Vec<u8>, i64)> {
        self.workflow.get(job.as_str()).cloned().unwrap_or_default()
    }
    fn item_total(&self, _job: &JobName) -> u32 {
        2
    }
    fn job_exists(&self, job: &JobName) -> bool {
        !self.gone.iter().any(|g| g == job.as_str())
    }
    fn downstream_since(&self, upstream: &JobName, _downstream: &JobName) -> Option<i64> {
        let under = self.registered_under.iter().any(|j| j == upstream.as_str());
        under.then_some(10)
    }
}

fn me() -> InstanceId {
    inst("10.0.0.1@-@1")
}

fn other() -> InstanceId {
    inst("10.0.0.2@-@1")
}

fn t(secs: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap() + TimeDelta::milliseconds(secs * 1000)
}

fn at_ms(ms: i64) -> DateTime<Utc> {
    t(0) + TimeDelta::milliseconds(ms)
}

fn config(f: impl FnOnce(JobConfig) -> JobConfig) -> Arc<ValidatedConfig> {
    f(JobConfig::test("orders").items(2)).validated()
}

/// A committed plan: every item has its owner node.
fn committed(mut v: JobView) -> JobView {
    for item in v.items.values_mut() {
        item.has_owner_node = true;
    }
    v
}

/// Items 0 and 1 owned by `me`, `other` live too, `me` leads.
fn two_items() -> JobView {
    committed(owned(
        view(&[&me(), &other()], Some(&me())),
        &[(0, &me()), (1, &me())],
    ))
}

fn fake() -> Fake {
    Fake {
        view: two_items(),
        now: t(0),
        owner: Some(SESSION),
        removed: None,
        mirrored: BTreeSet::new(),
        fired: Default::default(),
        params: None,
        request: None,
        progress: Default::default(),
        workflow: Default::default(),
        registered_under: Vec::new(),
        gone: Vec::new(),
        silent: Duration::ZERO,
    }
}

fn machine(registration: Registration) -> JobMachine {
    machine_with(registration, config(|c| c))
}

fn machine_with(registration: Registration, config: Arc<ValidatedConfig>) -> JobMachine {
    JobMachine::new(
        job(),
        me(),
        SESSION,
        FenceBudget::for_session(Duration::from_secs(4)),
        config,
        registration,
    )
}

fn marker(i: u32) -> Op {
    Op::create(
        format!("/orders/sharding/{i}/running"),
        me().as_str(),
        CreateMode::Ephemeral,
    )
}

/// An item's start: the guard on its owner node's version (the plan), then its marker.
fn begins(items: &[u32]) -> Vec<Op> {
    items
        .iter()
        .flat_map(|i| {
            [
                Op::Check {
                    path: format!("/orders/sharding/{i}/instance"),
                    version: 0,
                },
                marker(*i),
            ]
        })
        .collect()
}

fn start(ops: Vec<Op>) -> Command {
    Command::Write {
        ops,
        mode: WriteMode::Batched,
        then: Purpose::Start,
    }
}

/// Run `run_id` finished, items `failed` failing.
fn finished(run_id: u64, failed: &[u32]) -> Input {
    Input::RunFinished {
        run_id,
        failed: failed.iter().map(|i| ShardItem(*i)).collect(),
    }
}

/// The facts of a re-list after a quick restart: `instances/{me}` still held by the older session.
/// Markers of items 0 and 1 written ahead.
fn prepared() -> Purpose {
    Purpose::Prepare(vec![ShardItem(0), ShardItem(1)])
}

fn held_by_old_session() -> Fake {
    Fake {
        owner: Some(OLD_SESSION),
        ..fake()
    }
}

/// A skip for `reason` of `items` items (0: the whole fire), `missed` or run later, at WARN when
/// `warn` (the first of a streak).
fn skip(reason: SkipReason, items: usize, missed: Option<MissReason>, warn: bool) -> Command {
    Command::Skipped {
        reason,
        items,
        missed,
        warn,
    }
}

/// Run `run_id`'s end was written.
fn run_done(run_id: u64) -> Input {
    Input::RunEnded {
        run_id,
        outcome: Outcome::Done,
    }
}

/// What `m` answers to the last of `inputs`, stepped in order on `f`.
fn last_step(m: &mut JobMachine, inputs: Vec<Input>, f: &Fake) -> Vec<Command> {
    let mut last = Vec::new();
    for input in inputs {
        last = m.step(input, f);
    }
    last
}

/// What `m` answers once the fire at `scheduled` has its start written.
fn started(m: &mut JobMachine, scheduled: DateTime<Utc>, f: &Fake) -> Vec<Command> {
    m.step(Input::Fire { scheduled }, f);
    m.step(written(Purpose::Start), f)
}

/// The deletes of the `running` markers of `items`.
fn unmark(items: &[u32]) -> Vec<Op> {
    items
        .iter()
        .map(|i| Op::delete(format!("/orders/sharding/{i}/running")))
        .collect()
}

/// Run `run_id`'s end, written with `ops`.
fn submit_end(run_id: u64, ops: Vec<Op>) -> Command {
    Command::SubmitEnd { run_id, ops }
}

/// The write for `purpose` answered `outcome`.
fn answered(purpose: Purpose, outcome: Outcome) -> Input {
    Input::Written { purpose, outcome }
}

/// The write for `purpose` is done.
fn written(purpose: Purpose) -> Input {
    answered(purpose, Outcome::Done)
}

fn launch(
    run_id: u64,
    source: ExecutionSource,
    at: Option<DateTime<Utc>>,
    items: &[u32],
) -> Command {
    Command::Launch {
        run_id,
        source,
        scheduled: at,
        items: items.iter().map(|i| ShardItem(*i)).collect(),
        attempt: 1,
        parameter: None,
        workflow: None,
    }
}

/// The launch of a manual run of `items`, with the job parameter its trigger gave.
fn manual(run_id: u64, items: &[u32], parameter: Option<&str>) -> Command {
    Command::Launch {
        run_id,
        source: ExecutionSource::Manual,
        scheduled: None,
        items: items.iter().map(|i| ShardItem(*i)).collect(),
        attempt: 1,
        parameter: parameter.map(Arc::from),
        workflow: None,
    }
}

fn register_again() -> Command {
    Command::Write {
        ops: vec![Op::create(
            format!("/orders/instances/{}", me()),
            format!("jobInstanceId: {}\nserverIp: 10.0.0.1\n", me()),
            CreateMode::Ephemeral,
        )],
        mode: WriteMode::Direct,
        then: Purpose::Register,
    }
}

fn deleted_me() -> Input {
    Input::Event {
        node: JobNode::Instance(me()),
        kind: NodeEventKind::Deleted,
    }
}

fn created_me() -> Input {
    Input::Event {
        node: JobNode::Instance(me()),
        kind: NodeEventKind::Created,
    }
}

#[test]
fn a_fire_writes_its_markers_in_one_batched_write_then_runs_and_ends_with_one_more() {
    let (mut m, f) = (machine(Registration::Confirmed), fake());
    let fire = m.step(Input::Fire { scheduled: t(0) }, &f);
    assert_eq!(fire, vec![start(begins(&[0, 1]))]);
    let launched = m.step(written(Purpose::Start), &f);
    assert_eq!(
        launched,
        vec![launch(1, ExecutionSource::Normal, Some(t(0)), &[0, 1])]
    );
    let ends = vec![
        Op::delete("/orders/sharding/0/running"),
        Op::delete("/orders/sharding/1/running"),
    ];
    assert_eq!(
        m.step(
            Input::RunFinished {
                run_id: 1,
                failed: vec![],
            },
            &f
        ),
        vec![submit_end(1, ends)]
    );
    let ended = run_done(1);
    assert_eq!(m.step(ended, &f), vec![]);
    assert!(m.is_idle());
}

#[test]
fn a_jobs_machine_stays_small_for_ten_thousand_jobs() {
    // Every job holds one: its idle state must stay a few hundred bytes (344: the set of markers
    // written ahead whose answer has not come, 24 bytes, empty and allocating nothing when idle).
    let size = std::mem::size_of::<JobMachine>();
    println!("JobMachine: {size} bytes");
    assert!(size <= 344, "{size}");
}
