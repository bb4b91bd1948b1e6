//! Leader election: the first available instance to create the ephemeral
//! `leader/election/instance` leads; a disabled leader steps down.

use crate::decide::answer::Answer;
use crate::model::{CreateMode, Op};
use crate::paths::JobNode;
use crate::types::{InstanceId, JobName};
use crate::view::{JobView, ServerStatus};

/// What an instance should do about a job's leadership.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ElectionDecision {
    /// Nothing to do (someone leads, or this instance may not lead).
    Nothing,
    /// No leader: stand by creating the election node (loses harmlessly with `NodeExists`).
    Stand(Op),
    /// This instance leads but its server is disabled: step down.
    Abdicate(Op),
}

/// Decides for `me`. An instance stands only while its own `instances/` node is visible (it is
/// registered) and its server is enabled.
pub fn decide(view: &JobView, job: &JobName, me: &InstanceId) -> ElectionDecision {
    let enabled = view.server_status(me.ip()) == ServerStatus::Enabled;
    match &view.leader {
        Some(leader) if leader == me && !enabled => ElectionDecision::Abdicate(Op::Delete {
            path: JobNode::LeaderElectionInstance.to_path(job),
            version: None,
        }),
        Some(_) => ElectionDecision::Nothing,
        None if enabled && view.instances.contains(me) => ElectionDecision::Stand(Op::create(
            JobNode::LeaderElectionInstance.to_path(job),
            me.as_str(),
            CreateMode::Ephemeral,
        )),
        None => ElectionDecision::Nothing,
    }
}

/// What standing for leadership came to, from the create's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stood {
    /// The node is ours: the rest of this evaluation runs as leader (the mirror shows the win
    /// only a moment later).
    Won,
    /// Somebody stood first, or the mirror does not show yet that this instance won a moment
    /// ago: the node's event brings the answer (and another evaluation).
    Lost,
    /// The registry failed: say so; the next evaluation stands again.
    Failed(String),
}

/// Reads the answer to [`ElectionDecision::Stand`]'s create.
pub fn stood(answer: &Answer) -> Stood {
    match answer {
        Answer::Done => Stood::Won,
        Answer::Exists { .. } => Stood::Lost,
        other => Stood::Failed(other.describe()),
    }
}

/// Whether stepping down's delete failed in a way worth a warning (a node already gone is not),
/// with what to say.
pub fn abdication_failed(answer: &Answer) -> Option<String> {
    match answer {
        Answer::Done | Answer::Missing { .. } => None,
        other => Some(other.describe()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::fixtures::*;

    #[test]
    fn election_table() {
        let a = inst("10.0.0.1@-@1");
        let b = inst("10.0.0.2@-@1");
        let stand = ElectionDecision::Stand(Op::create(
            "/orders/leader/election/instance",
            a.as_str(),
            CreateMode::Ephemeral,
        ));
        let abdicate = ElectionDecision::Abdicate(Op::delete("/orders/leader/election/instance"));
        let cases: Vec<(&str, JobView, ElectionDecision)> = vec![
            (
                "no leader, registered and enabled: stand",
                view(&[&a, &b], None),
                stand,
            ),
            (
                "someone else leads: nothing",
                view(&[&a, &b], Some(&b)),
                ElectionDecision::Nothing,
            ),
            (
                "I lead and am enabled: nothing",
                view(&[&a], Some(&a)),
                ElectionDecision::Nothing,
            ),
            (
                "not registered yet: nothing",
                view(&[&b], None),
                ElectionDecision::Nothing,
            ),
            (
                "disabled server never stands",
                disabled(view(&[&a, &b], None), "10.0.0.1"),
                ElectionDecision::Nothing,
            ),
            (
                "disabled leader abdicates",
                disabled(view(&[&a], Some(&a)), "10.0.0.1"),
                abdicate,
            ),
        ];
        for (name, v, want) in cases {
            assert_eq!(decide(&v, &job(), &a), want, "{name}");
        }
    }

    #[test]
    fn standing_is_won_on_success_lost_to_an_existing_node_and_failed_otherwise() {
        let cases = [
            (Answer::Done, Stood::Won),
            (Answer::Exists { at: None }, Stood::Lost),
            (
                Answer::Failed("connection loss".into()),
                Stood::Failed(Answer::Failed("connection loss".into()).describe()),
            ),
            (
                Answer::Missing { at: None },
                Stood::Failed(Answer::Missing { at: None }.describe()),
            ),
        ];
        for (answer, want) in cases {
            assert_eq!(stood(&answer), want, "{answer:?}");
        }
    }

    #[test]
    fn stepping_down_warns_only_when_the_delete_failed_for_another_reason_than_a_missing_node() {
        assert_eq!(abdication_failed(&Answer::Done), None);
        assert_eq!(abdication_failed(&Answer::Missing { at: None }), None);
        let failed = Answer::Failed("timeout".into());
        assert_eq!(abdication_failed(&failed), Some(failed.describe()));
        let version = Answer::BadVersion { at: None };
        assert_eq!(abdication_failed(&version), Some(version.describe()));
    }
}
