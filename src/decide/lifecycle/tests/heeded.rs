//! The session forwards to an executor only the events [`heeded`] names: every other event must
//! leave the machine as it was and ask for nothing, whatever its state.

use super::*;
use crate::decide::lifecycle::heed::heeded;
use crate::model::SessionState;

/// Every kind of job node, for both instances and two items. The match makes a new kind of node
/// a compile error here until it is listed.
fn every_node() -> Vec<JobNode> {
    let listed = |n: &JobNode| match n {
        JobNode::Root
        | JobNode::Config
        | JobNode::Servers
        | JobNode::Server(_)
        | JobNode::Instances
        | JobNode::Instance(_)
        | JobNode::Trigger
        | JobNode::TriggerInstance(_)
        | JobNode::Sharding
        | JobNode::ShardingItem(_)
        | JobNode::ShardingInstance(_)
        | JobNode::ShardingRunning(_)
        | JobNode::ShardingMisfire(_)
        | JobNode::ShardingDisabled(_)
        | JobNode::ShardingFailover(_)
        | JobNode::ShardingFailovering(_)
        | JobNode::Leader
        | JobNode::LeaderElection
        | JobNode::LeaderElectionInstance
        | JobNode::LeaderSharding
        | JobNode::LeaderShardingNecessary
        | JobNode::LeaderShardingProcessing
        | JobNode::LeaderFailover
        | JobNode::LeaderFailoverItems
        | JobNode::LeaderFailoverItem(_)
        | JobNode::Guarantee
        | JobNode::GuaranteeStarted
        | JobNode::GuaranteeStartedItem(_)
        | JobNode::GuaranteeCompleted
        | JobNode::GuaranteeCompletedItem(_)
        | JobNode::SystemTime
        | JobNode::SystemTimeCurrent
        | JobNode::Extensions
        | JobNode::Fired
        | JobNode::FiredItem(_)
        | JobNode::TriggerParams
        | JobNode::TriggerParamsFor(_)
        | JobNode::Backfill
        | JobNode::BackfillItem(_) => true,
        JobNode::Adoptable
        | JobNode::Workflow
        | JobNode::WorkflowRecord(_)
        | JobNode::Downstream
        | JobNode::DownstreamJob(_) => true,
    };
    let mut nodes = vec![
        JobNode::Root,
        JobNode::Config,
        JobNode::Servers,
        JobNode::Server("10.0.0.1".into()),
        JobNode::Server("10.0.0.2".into()),
        JobNode::Instances,
        JobNode::Trigger,
        JobNode::Sharding,
        JobNode::Leader,
        JobNode::LeaderElection,
        JobNode::LeaderElectionInstance,
        JobNode::LeaderSharding,
        JobNode::LeaderShardingNecessary,
        JobNode::LeaderShardingProcessing,
        JobNode::LeaderFailover,
        JobNode::LeaderFailoverItems,
        JobNode::Guarantee,
        JobNode::GuaranteeStarted,
        JobNode::GuaranteeCompleted,
        JobNode::SystemTime,
        JobNode::SystemTimeCurrent,
        JobNode::Extensions,
        JobNode::Fired,
        JobNode::TriggerParams,
        JobNode::Backfill,
        JobNode::Adoptable,
        JobNode::Workflow,
        JobNode::WorkflowRecord("100@0".into()),
        JobNode::Downstream,
        JobNode::DownstreamJob(JobName::new("report").unwrap()),
    ];
    for id in [me(), other()] {
        nodes.push(JobNode::Instance(id.clone()));
        nodes.push(JobNode::TriggerParamsFor(id.clone()));
        nodes.push(JobNode::TriggerInstance(id));
    }
    for i in [ShardItem(0), ShardItem(1)] {
        nodes.extend([
            JobNode::ShardingItem(i),
            JobNode::ShardingInstance(i),
            JobNode::ShardingRunning(i),
            JobNode::ShardingMisfire(i),
            JobNode::ShardingDisabled(i),
            JobNode::ShardingFailover(i),
            JobNode::ShardingFailovering(i),
            JobNode::LeaderFailoverItem(i),
            JobNode::GuaranteeStartedItem(i),
            JobNode::GuaranteeCompletedItem(i),
            JobNode::FiredItem(i),
            JobNode::BackfillItem(i),
        ]);
    }
    assert!(nodes.iter().all(listed));
    nodes
}

/// Makes a machine in one state.
type Make = fn(&Fake) -> JobMachine;

/// Machines in the states an event can find them in, each made afresh for every event.
fn states() -> Vec<(&'static str, Make)> {
    vec![
        ("registered, idle", |_| machine(Registration::Confirmed)),
        ("registration unconfirmed", |_| {
            machine(Registration::Unconfirmed)
        }),
        ("node of an older session", |_| {
            machine(Registration::Older(OLD_SESSION))
        }),
        ("running items 0 and 1", |f| {
            let mut m = machine(Registration::Confirmed);
            m.step(Input::Fire { scheduled: t(0) }, f);
            m.step(written(Purpose::Start), f);
            m
        }),
        ("a run ended, its markers not yet seen gone", |f| {
            let mut m = machine(Registration::Confirmed);
            m.step(Input::Fire { scheduled: t(0) }, f);
            m.step(written(Purpose::Start), f);
            m.step(
                Input::RunFinished {
                    run_id: 1,
                    failed: vec![],
                },
                f,
            );
            m
        }),
        ("a fire parked behind a reshard", |f| {
            let mut m = machine(Registration::Confirmed);
            let mut flagged = Fake {
                view: f.view.clone(),
                ..fake()
            };
            flagged.view.sharding_necessary = true;
            m.step(Input::Fire { scheduled: t(0) }, &flagged);
            m
        }),
        ("disconnected while running", |f| {
            let mut m = machine(Registration::Confirmed);
            m.step(Input::Fire { scheduled: t(0) }, f);
            m.step(written(Purpose::Start), f);
            m.step(Input::Session(SessionState::Disconnected), f);
            m
        }),
    ]
}

#[test]
fn events_the_session_drops_leave_every_machine_unchanged() {
    use NodeEventKind::{Created, DataChanged, Deleted};
    let f = fake();
    let mut dropped = 0;
    for node in every_node() {
        for kind in [Created, DataChanged, Deleted] {
            if heeded(&node, kind, &me()) {
                continue;
            }
            dropped += 1;
            for (state, make) in states() {
                let mut m = make(&f);
                let before = format!("{m:?}");
                let input = Input::Event {
                    node: node.clone(),
                    kind,
                };
                assert_eq!(m.step(input, &f), vec![], "{node:?} {kind:?} when {state}");
                assert_eq!(format!("{m:?}"), before, "{node:?} {kind:?} when {state}");
            }
        }
    }
    assert!(dropped > 60, "most events are dropped ({dropped})");
}
