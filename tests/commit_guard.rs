//! The sharding commit's guard on running items, against every backend: a leader whose mirror
//! does not show a `running` marker yet (the old owner's start write went before it heard the
//! flag) commits a plan that moves that item; the commit must fail with nothing written, and
//! succeed once the marker is gone, leaving no marker of its own behind. Without the guard, the
//! item ran on its old owner and then on its new one for the same fire (a soak seed, and
//! `tests/catch_up_and_triggers.rs`, under the write batcher in flight).

#[macro_use]
extern crate support;

use std::collections::BTreeMap;
use std::sync::Arc;

use shardcron::decide::answer::Answer;
use shardcron::decide::commit::{Commit, CommitEnd, CommitStep};
use shardcron::decide::resharding::{self, Facts, Rules, ShardingStep};
use shardcron::registry::mirror::{FeedOptions, Mirror};
use shardcron::registry::{CreateMode, Registry};
use shardcron::sharding::StrategyRegistry;
use shardcron::view::JobView;
use shardcron::{InstanceId, JobName, ShardItem};
use support::backend::Backend;
use support::namespace;

const A: &str = "10.0.0.1@-@1";
const B: &str = "10.0.0.2@-@1";

/// A job of two items both owned by `A`, `B` just joined, `A` leads and raised the flag.
async fn job_wanting_a_reshard(s: &dyn Registry) {
    let persistent = |path: &'static str, data: &'static str| async move {
        s.create(path, data.as_bytes(), CreateMode::Persistent)
            .await
            .unwrap_or_else(|e| panic!("creating {path}: {e}"));
    };
    for path in [
        "/orders",
        "/orders/instances",
        "/orders/leader",
        "/orders/leader/election",
        "/orders/leader/sharding",
        "/orders/sharding",
        "/orders/sharding/0",
        "/orders/sharding/1",
    ] {
        persistent(path, "").await;
    }
    persistent("/orders/instances/10.0.0.1@-@1", "").await;
    persistent("/orders/instances/10.0.0.2@-@1", "").await;
    persistent("/orders/leader/election/instance", A).await;
    persistent("/orders/sharding/0/instance", A).await;
    persistent("/orders/sharding/1/instance", A).await;
    persistent("/orders/leader/sharding/necessary", "").await;
}

/// The leader's view of the job, from a mirror of it.
async fn leaders_view(s: &Arc<dyn Registry>) -> JobView {
    let mirror = Mirror::new();
    let (_feed, _roots) = mirror
        .feed_roots(s.clone(), vec!["/orders".into()], FeedOptions::default())
        .await
        .expect("starting the feed");
    JobView::read(&mirror, &JobName::new("orders").unwrap())
}

/// Runs a commit of `step` to its end on `s`.
async fn commit(s: &dyn Registry, step: &ShardingStep) -> CommitEnd {
    let ShardingStep::Commit { processing, commit } = step.clone() else {
        panic!("expected a commit, got {step:?}")
    };
    let (mut machine, mut next) = Commit::start(processing, commit);
    loop {
        next = match next {
            CommitStep::Write(ops) | CommitStep::WriteAfter(_, ops) => {
                machine.written(Answer::of(&s.multi(&ops).await))
            }
            CommitStep::Ended(end) => return end,
        };
    }
}

async fn owners(s: &dyn Registry) -> Vec<String> {
    let mut out = Vec::new();
    for item in 0..2 {
        let path = format!("/orders/sharding/{item}/instance");
        let (data, _) = s.get(&path).await.unwrap();
        out.push(String::from_utf8(data).unwrap());
    }
    out
}

async fn exists(s: &dyn Registry, path: &str) -> bool {
    s.exists(path).await.unwrap().is_some()
}

/// The commit of a plan moving item 0 from `A` to `B`, beside item 0's marker the leader's
/// mirror does not show, fails whole; once the run ends the same commit goes through.
async fn a_commit_moving_an_item_whose_marker_the_mirror_missed_fails_and_writes_nothing(
    b: &dyn Backend,
) {
    let s = b.open(&namespace("guard", "missed-marker")).await.registry;
    job_wanting_a_reshard(s.as_ref()).await;
    let view = leaders_view(&s).await;
    assert!(view.items.values().all(|v| v.running.is_none()));
    let held = BTreeMap::new();
    let facts = Facts {
        now_millis: 0,
        held: &held,
    };
    let strategy = StrategyRegistry::new().get(None).unwrap();
    let job = JobName::new("orders").unwrap();
    let step = resharding::step(&view, &job, Rules::items(2), &*strategy, facts, true);
    let ShardingStep::Commit { commit: ops, .. } = &step else {
        panic!("expected a commit, got {step:?}")
    };
    let moved: Vec<ShardItem> = shardcron::decide::commit::assignment_of(ops)
        .into_iter()
        .filter(|(_, owner)| owner == &InstanceId::parse(B).unwrap())
        .map(|(item, _)| item)
        .collect();
    assert_eq!(moved, vec![ShardItem(0)], "the plan moves item 0 to B");

    // The old owner's start write lands after the leader's mirror was read.
    let marker = "/orders/sharding/0/running";
    s.create(marker, A.as_bytes(), CreateMode::Persistent)
        .await
        .unwrap();
    let end = commit(s.as_ref(), &step).await;
    assert!(
        matches!(&end, CommitEnd::Failed(why) if why.contains("exists")),
        "the guard refuses the commit: {end:?}"
    );
    assert_eq!(owners(s.as_ref()).await, [A, A], "no owner written");
    assert!(exists(s.as_ref(), "/orders/leader/sharding/necessary").await);
    assert!(!exists(s.as_ref(), "/orders/leader/sharding/processing").await);
    let (data, _) = s.get(marker).await.unwrap();
    assert_eq!(data, A.as_bytes(), "the run's marker untouched");

    // The run ends: the same commit now goes through, and leaves no marker of its own.
    s.delete(marker, None).await.unwrap();
    let end = commit(s.as_ref(), &step).await;
    assert!(matches!(end, CommitEnd::Committed(_)), "{end:?}");
    assert_eq!(owners(s.as_ref()).await, [B, A]);
    for gone in [
        marker,
        "/orders/sharding/1/running",
        "/orders/leader/sharding/necessary",
        "/orders/leader/sharding/processing",
    ] {
        assert!(!exists(s.as_ref(), gone).await, "{gone} is gone");
    }
}

backend_tests!(
    embedded,
    support::embedded::backend(),
    [a_commit_moving_an_item_whose_marker_the_mirror_missed_fails_and_writes_nothing]
);
backend_tests!(
    zookeeper,
    support::zk::backend(),
    [a_commit_moving_an_item_whose_marker_the_mirror_missed_fails_and_writes_nothing],
    requires support::Peer::ZooKeeper
);
