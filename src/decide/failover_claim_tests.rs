//! Table tests of the failover actor's and the leader's decisions.

use std::collections::HashMap;

use super::*;
use crate::decide::fixtures::*;

fn marked(mut v: JobView, items: &[u32]) -> JobView {
    v.failover_marks = items.iter().map(|i| ShardItem(*i)).collect();
    v
}

#[test]
fn an_instance_claims_its_share_of_the_marks_only_when_eligible() {
    let a = inst("10.0.0.1@-@1");
    let b = inst("10.0.0.2@-@1");
    let c = inst("10.0.0.3@-@1");
    let two = || view(&[&a, &b], None);
    let cases: Vec<(&str, JobView, Option<&str>, Option<usize>)> = vec![
        ("no marks", two(), None, None),
        (
            "three marks, two instances",
            marked(two(), &[0, 1, 2]),
            None,
            Some(2),
        ),
        (
            "one mark, two instances",
            marked(two(), &[0]),
            None,
            Some(1),
        ),
        (
            "alone",
            marked(view(&[&a], None), &[0, 1, 2]),
            None,
            Some(3),
        ),
        (
            "not registered",
            marked(view(&[&b, &c], None), &[0]),
            None,
            None,
        ),
        (
            "its server disabled",
            marked(disabled(two(), a.ip()), &[0]),
            None,
            None,
        ),
        (
            "without the job's label",
            marked(labelled(two(), &b, &["gpu"]), &[0]),
            Some("gpu"),
            None,
        ),
        (
            "with the label, the only one",
            marked(labelled(two(), &a, &["gpu"]), &[0, 1]),
            Some("gpu"),
            Some(2),
        ),
    ];
    for (what, v, label, want) in cases {
        assert_eq!(eligible_share(&v, &a, label), want, "{what}");
    }
}

#[test]
fn every_answer_to_a_claim_and_to_a_mark_picks_its_branch() {
    let lost = Answer::Failed("connection lost".into());
    let cases = [
        (Answer::Done, ClaimEnd::HandOver, MarkEnd::Marked),
        (
            Answer::Exists { at: Some(2) },
            ClaimEnd::LostRace,
            MarkEnd::NotNeeded,
        ),
        (
            Answer::Missing { at: Some(0) },
            ClaimEnd::LostRace,
            MarkEnd::NotNeeded,
        ),
        (
            Answer::BadVersion { at: Some(1) },
            ClaimEnd::Failed(Answer::BadVersion { at: Some(1) }.describe()),
            MarkEnd::NotNeeded,
        ),
        (
            lost.clone(),
            ClaimEnd::Failed("connection lost".into()),
            MarkEnd::Stop("connection lost".into()),
        ),
    ];
    for (answer, claim, mark) in cases {
        assert_eq!(claim_answered(&answer), claim, "{answer:?}");
        assert_eq!(mark_answered(&answer), mark, "{answer:?}");
    }
}

#[test]
fn turning_failover_off_clears_every_record_on_the_leader_only() {
    let a = inst("10.0.0.1@-@1");
    let b = inst("10.0.0.2@-@1");
    let mut v = marked(view(&[&a, &b], Some(&a)), &[2]);
    v = with_item(v, 0, |i| i.failover = Some(b.clone()));
    v = with_item(v, 1, |i| i.failovering = Some(b.clone()));
    assert_eq!(
        clear_when_off(&v, &job(), &a),
        vec![
            Op::delete("/orders/sharding/0/failover"),
            Op::delete("/orders/sharding/1/failovering"),
            Op::delete("/orders/leader/failover/items/2"),
        ]
    );
    assert_eq!(clear_when_off(&v, &job(), &b), vec![]);
}

#[derive(Default)]
struct Nodes(HashMap<JobNode, Arc<[u8]>>);

impl Nodes {
    fn with(mut self, node: JobNode, data: &str) -> Self {
        self.0.insert(node, Arc::from(data.as_bytes()));
        self
    }
}

impl NodeData for Nodes {
    fn data(&self, node: &JobNode) -> Option<Arc<[u8]>> {
        self.0.get(node).cloned()
    }
}

#[test]
fn the_leader_reshards_when_an_item_s_owner_cannot_run_it() {
    let me = inst("10.0.0.1@-@1");
    let other = inst("10.0.0.2@-@1");
    let item = ShardItem(0);
    let leading = || {
        Nodes::default()
            .with(JobNode::LeaderElectionInstance, me.as_str())
            .with(JobNode::ShardingInstance(item), other.as_str())
            .with(JobNode::Instance(other.clone()), "")
    };
    let o = other.as_str().to_owned();
    let cases: Vec<(&str, Nodes, Option<&str>, Option<String>)> = vec![
        ("the owner is live", leading(), None, None),
        (
            "not the leader",
            leading().with(JobNode::LeaderElectionInstance, other.as_str()),
            None,
            None,
        ),
        (
            "a reshard is flagged",
            leading().with(JobNode::LeaderShardingNecessary, ""),
            None,
            None,
        ),
        (
            "a reshard is committing",
            leading().with(JobNode::LeaderShardingProcessing, ""),
            None,
            None,
        ),
        (
            "no owner node",
            Nodes::default().with(JobNode::LeaderElectionInstance, me.as_str()),
            None,
            None,
        ),
        (
            "the owner is gone",
            Nodes::default()
                .with(JobNode::LeaderElectionInstance, me.as_str())
                .with(JobNode::ShardingInstance(item), other.as_str()),
            None,
            Some(o.clone()),
        ),
        (
            "the owner's server is disabled",
            leading().with(JobNode::Server(other.ip().to_owned()), "DISABLED"),
            None,
            Some(o.clone()),
        ),
        (
            "the owner lacks the label",
            leading(),
            Some("gpu"),
            Some(o.clone()),
        ),
        ("an empty label is none", leading(), Some(""), None),
        (
            "the owner is no instance id",
            leading().with(JobNode::ShardingInstance(item), "nonsense"),
            None,
            Some("nonsense".to_owned()),
        ),
    ];
    for (what, nodes, label, want) in cases {
        assert_eq!(unavailable_owner(&nodes, &me, item, label), want, "{what}");
    }
}
