//! Whether a node is ready, decided from what its mirror shows: a connected session with a synced
//! mirror, and for every job the node runs, the job's `instances/{id}` node owned by that session.
//!
//! The second condition catches what a live session alone does not: a job whose registration
//! failed (a config in the registry that does not validate, a registry error mid-registration),
//! and the window after a reconnect in which the previous session's ephemeral `instances/{id}`
//! still exists (ZooKeeper deletes it only when that session expires) and ours is not created yet.
//! In both cases the leader shards the job without this instance, or with an instance that no
//! longer exists, so a load balancer or an orchestrator should not count the node as serving.

use std::fmt;

use crate::paths::JobNode;
use crate::registry::mirror::Mirror;
use crate::types::{InstanceId, JobName};

/// The answer of `/readyz`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Readiness {
    /// Ready: serving every job it runs.
    Ready,
    /// No registry session is connected, or the mirror has not re-listed since it connected.
    NoSession,
    /// A job this node runs has no instance node of the current session.
    NotRegistered {
        /// The job.
        job: JobName,
        /// Its `instances/{id}` path.
        path: String,
        /// The session that owns the node instead, when it exists.
        owner: Option<i64>,
    },
}

impl Readiness {
    /// Whether the node is ready.
    pub fn is_ready(&self) -> bool {
        matches!(self, Self::Ready)
    }
}

impl fmt::Display for Readiness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Ready => write!(f, "ready"),
            Self::NoSession => write!(
                f,
                "not ready: no connected registry session with a synced mirror"
            ),
            Self::NotRegistered {
                job,
                path,
                owner: None,
            } => write!(
                f,
                "not ready: job {job} is not registered on this instance ({path} is missing)"
            ),
            Self::NotRegistered {
                job,
                path,
                owner: Some(owner),
            } => write!(
                f,
                "not ready: job {job} is not registered on this instance's session \
                 ({path} belongs to an earlier session, 0x{owner:x})"
            ),
        }
    }
}

/// Decides readiness. `session` is the id of the connected session whose mirror is synced (none
/// when there is no such session); `registrations` gives, for each job the node runs, the
/// ephemeral owner of its `instances/{id}` node in the mirror (none when the node is absent).
/// The first job not registered on the session is named, so the answer is stable.
pub fn decide<'a>(
    me: &InstanceId,
    session: Option<i64>,
    registrations: impl IntoIterator<Item = (&'a JobName, Option<i64>)>,
) -> Readiness {
    let Some(session) = session else {
        return Readiness::NoSession;
    };
    for (job, owner) in registrations {
        if owner != Some(session) {
            return Readiness::NotRegistered {
                job: job.clone(),
                path: JobNode::Instance(me.clone()).to_path(job),
                owner,
            };
        }
    }
    Readiness::Ready
}

/// [`decide`] over `mirror`, for `jobs`.
pub fn read(mirror: &Mirror, me: &InstanceId, session: Option<i64>, jobs: &[JobName]) -> Readiness {
    let registrations = jobs.iter().map(|job| {
        let path = JobNode::Instance(me.clone()).to_path(job);
        (job, mirror.get(&path).map(|n| n.stat.ephemeral_owner))
    });
    decide(me, session, registrations)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::fixtures::{inst, job};

    #[test]
    fn readiness_needs_a_session_and_every_job_registered_on_it() {
        let (me, orders) = (inst("10.0.0.1@-@7"), job());
        let mail = JobName::new("mail").unwrap();
        let not_registered = |job: &JobName, owner| Readiness::NotRegistered {
            job: job.clone(),
            path: format!("/{job}/instances/10.0.0.1@-@7"),
            owner,
        };
        type Case<'a> = (Option<i64>, Vec<(&'a JobName, Option<i64>)>, Readiness);
        let cases: Vec<Case> = vec![
            (None, vec![(&orders, Some(5))], Readiness::NoSession),
            (Some(5), vec![], Readiness::Ready),
            (
                Some(5),
                vec![(&orders, Some(5)), (&mail, Some(5))],
                Readiness::Ready,
            ),
            (
                Some(5),
                vec![(&orders, Some(5)), (&mail, None)],
                not_registered(&mail, None),
            ),
            (
                Some(6),
                vec![(&orders, Some(5)), (&mail, None)],
                not_registered(&orders, Some(5)),
            ),
        ];
        for (session, registrations, want) in cases {
            let got = decide(&me, session, registrations.clone());
            assert_eq!(got, want, "session {session:?}, {registrations:?}");
        }
    }

    #[test]
    fn the_answer_names_the_job_and_its_path() {
        let (me, orders) = (inst("10.0.0.1@-@7"), job());
        let text = decide(&me, Some(6), [(&orders, Some(0x5a))]).to_string();
        assert_eq!(
            text,
            "not ready: job orders is not registered on this instance's session \
             (/orders/instances/10.0.0.1@-@7 belongs to an earlier session, 0x5a)"
        );
        let text = decide(&me, Some(6), [(&orders, None)]).to_string();
        assert!(text.contains("job orders is not registered"), "{text}");
        assert!(decide(&me, None, []).to_string().starts_with("not ready"));
    }
}
