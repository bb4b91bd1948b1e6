//! The node's requests at the RegistryActor (and an adopted job's drop): the jobs a node runs are
//! kept here for every session, and the requests' reply ports go on to the SessionActor, so the
//! RegistryActor waits for no registration.

use std::sync::Arc;

use ractor::ActorRef;

use crate::actors::context::lock_jobs;
use crate::actors::error::EngineError;
use crate::actors::mail::{NodeMsg, RegistryMsg};
use crate::actors::session::SessionMsg;
use crate::actors::spec::{job_name, JobSpec};
use crate::decide::scope;

use super::RegistryState;

/// Sends a request carrying its reply port to the session; a session already gone answers it
/// with an error here.
fn forward_to_session(session: &ActorRef<SessionMsg>, msg: SessionMsg) {
    if let Err(ractor::MessagingErr::SendErr(msg)) = session.send_message(msg) {
        let gone = || Err(EngineError::Actor("the session actor is gone".to_owned()));
        match msg {
            SessionMsg::AddJob(_, reply) | SessionMsg::RemoveJob(_, reply) => {
                let _ = reply.send(gone());
            }
            _ => {}
        }
    }
}

/// The node's requests (and an adopted job's drop): their reply ports go on to the SessionActor,
/// so this waits for no registration; with no session, a job is kept for the next one.
pub(super) fn on_request(
    state: &mut RegistryState,
    myself: &ActorRef<RegistryMsg>,
    msg: RegistryMsg,
) {
    match msg {
        RegistryMsg::Request(NodeMsg::AddJob(spec, reply)) => match job_name(&spec.config) {
            Err(e) => drop(reply.send(Err(e))),
            Ok(name) => {
                let spec: Arc<JobSpec> = Arc::from(spec);
                let jobs_here = {
                    let mut jobs = lock_jobs(&state.node);
                    jobs.insert(name.clone(), spec.clone());
                    jobs.len()
                };
                match &state.active {
                    Some(a) => {
                        // The job's subtree is watched and listed before its executor registers
                        // (registration decides from the mirror).
                        let roots = scope::roots_added(&name, &spec.config, jobs_here);
                        let session = a.session.clone();
                        a.ctx.roots.add(roots, move || {
                            forward_to_session(&session, SessionMsg::AddJob(spec, reply))
                        });
                    }
                    None => drop(reply.send(Ok(()))),
                }
            }
        },
        RegistryMsg::Request(NodeMsg::RemoveJob(job, reply)) => {
            lock_jobs(&state.node).remove(&job);
            match &state.active {
                // Behind any addition still being watched (nothing to add: the request keeps
                // its place). The job's subtree stays watched until the session ends.
                Some(a) => {
                    let session = a.session.clone();
                    a.ctx.roots.add(Vec::new(), move || {
                        forward_to_session(&session, SessionMsg::RemoveJob(job, reply))
                    });
                }
                None => drop(reply.send(Ok(()))),
            }
        }
        RegistryMsg::Dropped(job) => crate::actors::adopt::dropped(&state.node, myself, &job),
        RegistryMsg::Request(NodeMsg::Trigger(job, reply)) => match &state.active {
            Some(a) => {
                let _ = a.session.send_message(SessionMsg::Trigger(job, reply));
            }
            None => {
                let _ = reply.send(Err(EngineError::NoSession));
            }
        },
        RegistryMsg::Request(NodeMsg::Executor(job, reply)) => match &state.active {
            Some(a) => {
                let _ = a.session.send_message(SessionMsg::Executor(job, reply));
            }
            None => {
                let _ = reply.send(Err(EngineError::NoSession));
            }
        },
        other => tracing::debug!(?other, "not a request"),
    }
}
