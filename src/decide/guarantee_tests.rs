use std::collections::BTreeSet;
use std::time::Duration;

use super::*;
use crate::decide::fixtures::{inst, job, owned, view};
use GuaranteeCommand::*;
use GuaranteeInput::*;

const T: Duration = Duration::from_secs(60);

fn machine() -> DistributeOnce {
    DistributeOnce::new(job(), inst("10.0.0.1@-@1"), T, T)
}

/// A machine that began the started phase for item 0, before any round (item 1's owner
/// `crashed` or not).
fn begun(crashed: bool) -> DistributeOnce {
    let mut m = machine();
    m.step(
        Begin(Phase::Started, vec![ShardItem(0)]),
        &facts(None, &[], crashed),
    );
    m
}

/// Two items: 0 on `10.0.0.1@-@1` (this instance), 1 on `10.0.0.2@-@2`, both live unless
/// `crashed`.
fn facts(
    root: Option<(i32, &str)>,
    registered: &[u32],
    crashed: bool,
) -> impl Fn(Phase) -> PhaseFacts {
    let (a, b) = (inst("10.0.0.1@-@1"), inst("10.0.0.2@-@2"));
    let live: Vec<&InstanceId> = if crashed { vec![&a] } else { vec![&a, &b] };
    let v = owned(view(&live, None), &[(0, &a), (1, &b)]);
    let registered: BTreeSet<ShardItem> = registered.iter().map(|i| ShardItem(*i)).collect();
    let root = root.map(|(v, c)| (v, c.to_owned()));
    move |_| PhaseFacts::read(&v, 2, root.clone(), registered.clone(), true)
}

fn path(n: JobNode) -> String {
    n.to_path(&job())
}

fn claim(version: i32) -> GuaranteeCommand {
    Write(
        Phase::Started,
        Step::Claim,
        vec![Op::Set {
            path: path(JobNode::GuaranteeStarted),
            data: b"10.0.0.1@-@1".to_vec(),
            version: Some(version),
        }],
    )
}

fn clear() -> GuaranteeCommand {
    Write(
        Phase::Started,
        Step::Clear,
        vec![
            Op::delete(path(JobNode::GuaranteeStartedItem(ShardItem(0)))),
            Op::delete(path(JobNode::GuaranteeStartedItem(ShardItem(1)))),
            Op::delete(path(JobNode::GuaranteeStarted)),
        ],
    )
}

#[test]
fn the_instance_that_completes_the_round_claims_it_calls_the_hook_once_and_lets_everyone_go() {
    let mut m = machine();
    let started = |items| Begin(Phase::Started, items);
    assert_eq!(
        m.step(started(vec![ShardItem(0)]), &facts(None, &[], false)),
        [
            Timer(Phase::Started, 1, T),
            Write(
                Phase::Started,
                Step::Register,
                vec![
                    Op::create(path(JobNode::GuaranteeStarted), "", CreateMode::Persistent),
                    Op::create(
                        path(JobNode::GuaranteeStartedItem(ShardItem(0))),
                        "",
                        CreateMode::Persistent
                    ),
                ]
            ),
        ]
    );
    let written = Written(Phase::Started, Step::Register, Outcome::Done);
    assert_eq!(m.step(written, &facts(Some((0, "")), &[0], false)), []);
    // Item 1's instance registers: every item is accounted for.
    let all = facts(Some((0, "")), &[0, 1], false);
    assert_eq!(m.step(Changed(Phase::Started), &all), [claim(0)]);
    let won = Written(Phase::Started, Step::Claim, Outcome::Done);
    assert_eq!(m.step(won, &all), [Call(Phase::Started, vec![])]);
    assert_eq!(m.step(Called(Phase::Started), &all), [clear()]);
    let cleared = Written(Phase::Started, Step::Clear, Outcome::Done);
    assert_eq!(m.step(cleared, &facts(None, &[], false)), [Go]);
    assert!(!m.waiting(Phase::Started));
}

#[test]
fn an_instance_that_loses_the_claim_goes_when_the_winner_deletes_the_round() {
    let mut m = machine();
    let none = facts(None, &[], false);
    m.step(Begin(Phase::Started, vec![ShardItem(0)]), &none);
    let all = facts(Some((0, "")), &[0, 1], false);
    assert_eq!(
        m.step(Written(Phase::Started, Step::Register, Outcome::Done), &all),
        [claim(0)]
    );
    let lost = Written(Phase::Started, Step::Claim, Outcome::Conflict);
    assert_eq!(
        m.step(lost, &facts(Some((1, "10.0.0.2@-@2")), &[0, 1], false)),
        []
    );
    assert_eq!(
        m.step(Changed(Phase::Started), &all),
        [],
        "claimed: no second claim"
    );
    assert_eq!(m.step(RootDeleted(Phase::Started), &none), [Go]);
}

#[test]
fn a_crashed_owners_item_is_accounted_for_and_does_not_hold_the_round() {
    let mut m = begun(true);
    let mine_only = facts(Some((0, "")), &[0], true);
    let written = Written(Phase::Started, Step::Register, Outcome::Done);
    assert_eq!(m.step(written, &mine_only), [claim(0)]);
}

#[test]
fn a_timed_out_wait_claims_the_round_itself_names_the_missing_items_and_goes() {
    let mut m = begun(false);
    let mine_only = facts(Some((0, "")), &[0], false);
    m.step(
        Written(Phase::Started, Step::Register, Outcome::Done),
        &mine_only,
    );
    assert_eq!(
        m.step(TimedOut(Phase::Started, 7), &mine_only),
        [],
        "another round's timer"
    );
    let out = m.step(TimedOut(Phase::Started, 1), &mine_only);
    assert!(
        matches!(&out[0], Warn(w) if w.contains("[ShardItem(1)]")),
        "{out:?}"
    );
    assert_eq!(out[1..], [claim(0)]);
    let won = Written(Phase::Started, Step::Claim, Outcome::Done);
    assert_eq!(
        m.step(won, &mine_only),
        [Call(Phase::Started, vec![ShardItem(1)])]
    );
}

#[test]
fn a_timed_out_wait_on_a_round_claimed_by_a_vanished_instance_clears_it_and_goes() {
    let mut m = begun(false);
    let claimed = facts(Some((1, "10.0.0.9@-@9")), &[0, 1], false);
    m.step(
        Written(Phase::Started, Step::Register, Outcome::Done),
        &claimed,
    );
    let out = m.step(TimedOut(Phase::Started, 1), &claimed);
    assert_eq!(out[1..], [clear()]);
    let cleared = Written(Phase::Started, Step::Clear, Outcome::Done);
    assert_eq!(m.step(cleared, &facts(None, &[], false)), [Go]);
}

#[test]
fn the_completed_round_calls_the_after_hook_once_and_releases_nothing() {
    let mut m = machine();
    let all = facts(Some((0, "")), &[0, 1], false);
    let out = m.step(Begin(Phase::Completed, vec![ShardItem(0)]), &all);
    assert_eq!(out[0], Timer(Phase::Completed, 1, T));
    m.step(
        Written(Phase::Completed, Step::Register, Outcome::Done),
        &all,
    );
    let won = Written(Phase::Completed, Step::Claim, Outcome::Done);
    assert_eq!(m.step(won, &all), [Call(Phase::Completed, vec![])]);
    m.step(Called(Phase::Completed), &all);
    let cleared = Written(Phase::Completed, Step::Clear, Outcome::Done);
    assert_eq!(
        m.step(cleared, &all),
        [],
        "no run waits on the completed round"
    );
    assert!(!m.waiting(Phase::Completed));
}

#[test]
fn items_without_a_live_enabled_owner_are_excused_and_the_rest_are_missing() {
    use crate::decide::fixtures::{disabled, with_item};
    let (a, b, c) = (
        inst("10.0.0.1@-@1"),
        inst("10.0.0.2@-@2"),
        inst("10.0.0.3@-@3"),
    );
    // Items: 0 a (live), 1 b (server disabled), 2 c (crashed), 3 a but item disabled, 4 no owner.
    let v = owned(view(&[&a, &b], None), &[(0, &a), (1, &b), (2, &c), (3, &a)]);
    let v = with_item(disabled(v, "10.0.0.2"), 3, |i| i.disabled = true);
    let f = PhaseFacts::read(&v, 5, None, BTreeSet::new(), false);
    let items = |s: &[u32]| s.iter().map(|i| ShardItem(*i)).collect::<BTreeSet<_>>();
    assert_eq!(f.excused, items(&[1, 2, 3, 4]));
    assert_eq!(f.missing(), [ShardItem(0)]);
    let registered = PhaseFacts::read(&v, 5, None, items(&[0]), false);
    assert!(registered.missing().is_empty());
}
