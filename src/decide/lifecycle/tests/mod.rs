//! Table tests of the job state machine: inputs in, the exact commands out. The fault cases of
//! issue 17 are here; the ordinary transitions in `transitions.rs`.

mod backfill;
mod catchup;
mod heeded;
mod manual;
mod marked;
mod missed;
mod overlap;
mod policies;
mod reconfigured;
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
fn a_deletion_of_this_instance_node_is_an_operator_shutdown_only_when_the_mirror_showed_it_ours() {
    let leave = |leader_ops: bool| {
        let mut ops = vec![Op::delete(format!("/orders/instances/{}", me()))];
        if leader_ops {
            ops.push(Op::delete("/orders/leader/election/instance"));
        }
        vec![
            Command::Unschedule,
            Command::Write {
                ops,
                mode: WriteMode::Tolerant,
                then: Purpose::Leave,
            },
            Command::Stop,
        ]
    };
    // (case, registration, session state, owner of instances/{me} in the mirror, owner of the
    // removed node, commands)
    type Case = (
        &'static str,
        Registration,
        Option<SessionState>,
        Option<i64>,
        Option<i64>,
        Vec<Command>,
    );
    let cases: Vec<Case> = vec![
        (
            "stale deletion of the old session's node, reported by a re-list after ours was written",
            Registration::Unconfirmed,
            None,
            None,
            Some(OLD_SESSION),
            vec![register_again()],
        ),
        (
            "the old session's node expired after a quick restart: ours is created",
            Registration::Older(OLD_SESSION),
            None,
            None,
            Some(OLD_SESSION),
            vec![register_again()],
        ),
        (
            "ours already stands in the mirror: the event was about an older incarnation",
            Registration::Confirmed,
            None,
            Some(SESSION),
            Some(OLD_SESSION),
            vec![],
        ),
        (
            "deleted while the registry does not answer: in doubt, re-register and keep running",
            Registration::Confirmed,
            Some(SessionState::Disconnected),
            None,
            Some(SESSION),
            vec![register_again()],
        ),
        (
            "ours was confirmed, but the node removed was the older session's (its deletion reached \
             the job after ours was seen, a restart under the same id): re-register",
            Registration::Confirmed,
            None,
            None,
            Some(OLD_SESSION),
            vec![register_again()],
        ),
        (
            "confirmed, but the removed node's owner was never read: in doubt, re-register",
            Registration::Confirmed,
            None,
            None,
            None,
            vec![register_again()],
        ),
    ];
    for (name, registration, session, owner, removed, expected) in cases {
        let mut m = machine(registration);
        let f = Fake {
            owner,
            removed,
            ..fake()
        };
        if let Some(s) = session {
            m.step(Input::Session(s), &f);
        }
        assert_eq!(m.step(deleted_me(), &f), expected, "{name}");
    }
    // Confirmed by the mirror, connected, and the node removed was this session's: an
    // operator's shutdown, logged at WARN.
    let mut m = machine(Registration::Confirmed);
    let out = m.step(
        deleted_me(),
        &Fake {
            owner: None,
            removed: Some(SESSION),
            ..fake()
        },
    );
    assert!(
        matches!(&out[0], Command::Warn(w) if w.contains("operator")),
        "{out:?}"
    );
    assert_eq!(out[1..], leave(true)[..]);
}

#[test]
fn the_deletion_a_take_over_made_of_this_sessions_own_node_is_not_an_operator_shutdown() {
    // A re-list after a quick restart still shows the older session's node; registration had
    // already replaced it with ours, so the machine's take-over deletes ours and creates it again.
    let mut m = machine(Registration::Unconfirmed);
    let older = held_by_old_session();
    m.step(Input::Resynced, &older);
    m.step(written(Purpose::TakeOver), &older);
    // Registration's creation event arrives late and confirms ours...
    let ours = fake();
    m.step(created_me(), &ours);
    // ...then the take-over's deletion, seen before its creation is read: no shutdown, a create
    // that the take-over's own creation makes harmless.
    let deleted = Fake {
        owner: None,
        removed: Some(SESSION),
        ..fake()
    };
    assert_eq!(m.step(deleted_me(), &deleted), vec![register_again()]);
    m.step(created_me(), &ours);
    // A later deletion of our node is an operator's again.
    let out = m.step(deleted_me(), &deleted);
    assert!(
        matches!(&out[0], Command::Warn(w) if w.contains("operator")),
        "{out:?}"
    );
}

#[test]
fn an_older_sessions_node_of_this_instance_is_taken_over_at_once_and_nothing_starts_meanwhile() {
    // A re-list shows instances/{me} still held by the session before a quick restart.
    let mut m = machine(Registration::Unconfirmed);
    let f = held_by_old_session();
    let path = format!("/orders/instances/{}", me());
    let take_over = Command::Write {
        ops: vec![
            Op::delete(path.clone()),
            Op::create(
                path,
                format!("jobInstanceId: {}\nserverIp: 10.0.0.1\n", me()),
                CreateMode::Ephemeral,
            ),
        ],
        mode: WriteMode::Direct,
        then: Purpose::TakeOver,
    };
    assert_eq!(m.step(Input::Resynced, &f), vec![take_over]);
    assert_eq!(m.registration(), Registration::Older(OLD_SESSION));
    let skipped = skip(
        SkipReason::NotRegistered,
        0,
        Some(MissReason::CannotStart),
        true,
    );
    assert_eq!(m.step(Input::Fire { scheduled: t(0) }, &f), vec![skipped]);
    assert_eq!(m.step(Input::Prepare { scheduled: t(1) }, &f), vec![]);
    // The old node went in between: ours is created plainly.
    let conflict = answered(Purpose::TakeOver, Outcome::Conflict);
    assert_eq!(m.step(conflict, &f), vec![register_again()]);
    let f = Fake {
        owner: Some(SESSION),
        now: t(1),
        ..f
    };
    let created = Input::Event {
        node: JobNode::Instance(me()),
        kind: NodeEventKind::Created,
    };
    assert_eq!(m.step(created, &f), vec![]);
    assert_eq!(m.registration(), Registration::Confirmed);
    assert_eq!(
        m.step(Input::Fire { scheduled: t(1) }, &f),
        vec![start(begins(&[0, 1]))]
    );
}

#[test]
fn a_fire_racing_a_reshard_leaves_out_the_items_the_old_owner_ran_for_it() {
    let mut m = machine(Registration::Confirmed);
    // This instance just joined: under the old plan `other` owns both items, and the leader
    // has raised the flag.
    let old_plan = committed(owned(
        view(&[&me(), &other()], Some(&other())),
        &[(0, &other()), (1, &other())],
    ));
    let mut f = Fake {
        view: old_plan.clone(),
        ..fake()
    };
    f.view.sharding_necessary = true;
    assert_eq!(
        m.step(Input::Fire { scheduled: t(0) }, &f),
        vec![Command::SetResharding(true)]
    );
    // The old owner, whose mirror had not seen the flag yet, runs item 1 of this fire.
    let running = Input::Event {
        node: JobNode::ShardingRunning(ShardItem(1)),
        kind: NodeEventKind::Created,
    };
    assert_eq!(m.step(running, &f), vec![]);
    // The leader waited for it and committed: both items are this instance's now.
    let f = Fake {
        view: two_items(),
        now: at_ms(300),
        ..fake()
    };
    let done = Input::Event {
        node: JobNode::LeaderShardingNecessary,
        kind: NodeEventKind::Deleted,
    };
    assert_eq!(
        m.step(done, &f),
        vec![Command::SetResharding(false), start(begins(&[0]))],
        "item 1 of this fire ran under the old plan: only item 0 runs here"
    );
    assert_eq!(
        m.step(written(Purpose::Start), &f),
        vec![launch(1, ExecutionSource::Normal, Some(t(0)), &[0])]
    );
}

#[test]
fn fires_queued_behind_a_registry_freeze_collapse_and_a_missed_fire_is_made_up_once() {
    let mut m = machine(Registration::Confirmed);
    let mut f = fake();
    assert_eq!(
        m.step(Input::Fire { scheduled: t(0) }, &f),
        vec![start(begins(&[0, 1]))]
    );
    // The registry froze for 3 s: the start write answers late, fires queued meanwhile.
    f.now = at_ms(3_050);
    m.step(written(Purpose::Start), &f);
    let coalesced = |warn| skip(SkipReason::Coalesced, 0, Some(MissReason::Coalesced), warn);
    f.now = at_ms(3_060);
    assert_eq!(
        m.step(Input::Fire { scheduled: t(1) }, &f),
        vec![coalesced(true)]
    );
    assert_eq!(
        m.step(Input::Fire { scheduled: t(2) }, &f),
        vec![coalesced(false)]
    );
    assert_eq!(
        m.step(Input::Fire { scheduled: t(3) }, &f),
        vec![coalesced(false)]
    );
    // A fire on time while the items still run: flagged misfire once.
    f.now = at_ms(4_001);
    let misfires = vec![
        Op::create("/orders/sharding/0/misfire", "", CreateMode::Persistent),
        Op::create("/orders/sharding/1/misfire", "", CreateMode::Persistent),
    ];
    let out = m.step(Input::Fire { scheduled: t(4) }, &f);
    assert_eq!(out[1], start(misfires));
    let items = vec![ShardItem(0), ShardItem(1)];
    assert_eq!(
        m.step(written(Purpose::Start), &f),
        vec![Command::Misfired(items)]
    );
    // The run ends: exactly one catch-up.
    m.step(
        Input::RunFinished {
            run_id: 1,
            failed: vec![],
        },
        &f,
    );
    let ended = run_done(1);
    let out = m.step(ended, &f);
    assert!(
        matches!(
            &out[..],
            [Command::Write {
                then: Purpose::Start,
                ..
            }]
        ),
        "{out:?}"
    );
    assert_eq!(
        m.step(written(Purpose::Start), &f),
        vec![launch(2, ExecutionSource::Misfire, None, &[0, 1])]
    );
}

#[test]
fn a_late_fire_waits_for_a_session_check_and_runs_only_if_the_session_lives() {
    let cases = [
        (true, "the session lives: the fire runs"),
        (false, "the session is gone: the fire is skipped"),
    ];
    for (alive, name) in cases {
        let mut m = machine(Registration::Confirmed);
        let f = Fake {
            now: at_ms(2_000),
            ..fake()
        };
        assert_eq!(
            m.step(Input::Fire { scheduled: t(0) }, &f),
            vec![Command::CheckSession],
            "{name}"
        );
        assert_eq!(m.link(), Link::Suspect);
        let out = m.step(Input::SessionChecked { alive }, &f);
        let expected = if alive {
            vec![start(begins(&[0, 1]))]
        } else {
            vec![skip(
                SkipReason::SessionLost,
                0,
                Some(MissReason::CannotStart),
                true,
            )]
        };
        assert_eq!(out, expected, "{name}");
    }
}

#[test]
fn a_session_check_whose_answer_never_comes_is_asked_again_by_a_later_fire() {
    let mut m = machine(Registration::Confirmed);
    let now = |ms| Fake {
        now: at_ms(ms),
        ..fake()
    };
    let held = |out: &[Command]| {
        out.iter()
            .filter(|c| {
                matches!(
                    c,
                    Command::Skipped {
                        reason: SkipReason::AlreadyHeld,
                        ..
                    }
                )
            })
            .count()
    };
    // A late fire is held and asks; its answer is lost.
    let out = m.step(Input::Fire { scheduled: t(0) }, &now(2_000));
    assert_eq!(out, vec![Command::CheckSession]);
    // Fires while the check may still answer join the held one: no second check.
    let out = m.step(Input::Fire { scheduled: t(10) }, &now(10_000));
    assert_eq!((held(&out), out.len()), (1, 1), "{out:?}");
    // Past the bound the latest fire takes the held one's place and asks again.
    let lost = 2_000 + SESSION_CHECK_LOST_AFTER.as_millis() as i64;
    let out = m.step(
        Input::Fire {
            scheduled: at_ms(lost),
        },
        &now(lost),
    );
    assert_eq!(held(&out), 1, "{out:?}");
    assert!(out.iter().any(|c| matches!(c, Command::Warn(_))), "{out:?}");
    assert_eq!(out.last(), Some(&Command::CheckSession), "{out:?}");
    // Its answer runs that fire.
    let out = m.step(Input::SessionChecked { alive: true }, &now(lost + 100));
    assert_eq!(out, vec![start(begins(&[0, 1]))]);
    assert_eq!(m.link(), Link::Connected);
}

#[test]
fn a_resumed_node_cancels_what_it_may_have_lost_before_anything_else() {
    // Budget for a 4 s session: cancel after 1.8 s, check after 0.6 s.
    let cases: [(u64, Vec<Command>); 3] = [
        (100, vec![]),
        (700, vec![Command::CheckSession]),
        (3_000, vec![Command::CancelAll, Command::CheckSession]),
    ];
    for (pause_ms, expected) in cases {
        let (mut m, f) = (machine(Registration::Confirmed), fake());
        started(&mut m, t(0), &f);
        let out = m.step(Input::Paused(Duration::from_millis(pause_ms)), &f);
        assert_eq!(out, expected, "paused {pause_ms} ms");
    }
}

#[test]
fn a_disconnected_node_starts_nothing_and_cancels_its_items_at_the_fencing_deadline() {
    let (mut m, f) = (machine(Registration::Confirmed), fake());
    started(&mut m, t(0), &f);
    assert_eq!(
        m.step(Input::Session(SessionState::Disconnected), &f),
        vec![]
    );
    let f = Fake {
        now: t(1),
        ..fake()
    };
    assert_eq!(
        m.step(Input::Fire { scheduled: t(1) }, &f),
        vec![skip(
            SkipReason::Disconnected,
            0,
            Some(MissReason::CannotStart),
            true
        )]
    );
    assert_eq!(m.step(Input::Prepare { scheduled: t(2) }, &f), vec![]);
    assert_eq!(m.step(Input::Fenced, &f), vec![Command::CancelAll]);
    assert!(!m.is_idle());
    m.step(Input::Session(SessionState::Connected), &f);
    assert_eq!(m.link(), Link::Connected);
}

#[test]
fn a_job_that_cannot_keep_up_warns_once_per_streak_and_counts_every_skip() {
    let (mut m, mut f) = (machine(Registration::Confirmed), fake());
    started(&mut m, t(0), &f);
    let mut warns = Vec::new();
    for s in 1..4 {
        f.now = t(s);
        let out = m.step(Input::Fire { scheduled: t(s) }, &f);
        for c in out {
            if let Command::Skipped {
                reason,
                items,
                missed,
                warn,
            } = c
            {
                assert_eq!((reason, items, missed), (SkipReason::StillRunning, 2, None));
                warns.push(warn);
            }
        }
    }
    assert_eq!(warns, vec![true, false, false]);
}

#[test]
fn an_item_moved_away_by_a_new_plan_is_cancelled_here() {
    let (mut m, f) = (machine(Registration::Confirmed), fake());
    started(&mut m, t(0), &f);
    let f = Fake {
        view: owned(two_items(), &[(1, &other())]),
        ..fake()
    };
    let moved = |i| Input::Event {
        node: JobNode::ShardingInstance(ShardItem(i)),
        kind: NodeEventKind::DataChanged,
    };
    assert_eq!(m.step(moved(0), &f), vec![]);
    assert_eq!(
        m.step(moved(1), &f),
        vec![Command::Cancel(vec![ShardItem(1)])]
    );
}

#[test]
fn a_jobs_machine_stays_small_for_ten_thousand_jobs() {
    // Every job holds one: its idle state must stay a few hundred bytes (344: the set of markers
    // written ahead whose answer has not come, 24 bytes, empty and allocating nothing when idle).
    let size = std::mem::size_of::<JobMachine>();
    println!("JobMachine: {size} bytes");
    assert!(size <= 344, "{size}");
}
