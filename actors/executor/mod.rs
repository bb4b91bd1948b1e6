//! ExecutorActor: one per job, the interpreter of the job's [`JobMachine`]. It registers the job,
//! turns each message into an [`Input`], and carries out the [`Command`]s the machine returns:
//! writes (their outcome fed back as `Written`), run tasks and their tokens, messages to the peers
//! it was handed; a job's distribute-once rounds go to its [`OnceSlot`] (actors/once.rs), runs
//! to its [`RunKit`] (actors/run/kit.rs). It decides nothing itself and no registry answer picks a
//! branch here: the machine reads the mirror through [`crate::view::MirrorFacts`].
//!
//! Here the actor's protocol, state and handlers: each message turned into an input, and the
//! registration, its first step; in `commands.rs` the machine stepped and each command carried out.
//!
//! [`Command`]: crate::decide::lifecycle::Command

mod commands;

use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};

use crate::decide::lifecycle::{Input, JobMachine};
use crate::paths::JobNode;

use super::context::{JobEvent, SessionCtx};
use super::decisions::DecisionsSeen;
use super::error::EngineError;
use super::mail::{ExecutorMsg, FailoverMsg, LeaderMsg, Peers, TriggerMsg};
use super::once::OnceSlot;
use super::register::{config_input, register, registration_ended};
use super::run::RunKit;
use super::spec::JobSpec;

/// The stop reason of an executor whose job was removed (API, operator shutdown of this instance,
/// job deleted from the registry): its supervisor forgets the job instead of restarting it.
pub(crate) const JOB_REMOVED: &str = "job removed";

/// The ExecutorActor.
#[derive(Debug)]
pub(crate) struct ExecutorActor;

/// Arguments of the ExecutorActor.
#[derive(Debug)]
pub(crate) struct ExecutorArgs {
    pub(crate) ctx: Arc<SessionCtx>,
    pub(crate) spec: Arc<JobSpec>,
    pub(crate) peers: Arc<Peers>,
    /// The `AddJob` that started it, answered once the job registered (or failed to).
    pub(crate) reply: Option<RpcReplyPort<Result<(), EngineError>>>,
}

/// Who waits for a job to drain.
#[derive(Debug, Default)]
pub(super) struct Drains(pub(super) Vec<RpcReplyPort<()>>);

/// State of the ExecutorActor: the machine, and what only the IO needs.
#[derive(Debug)]
pub(crate) struct ExecutorState {
    ctx: Arc<SessionCtx>,
    peers: Arc<Peers>,
    machine: JobMachine,
    kit: RunKit,
    /// The distribute-once coordination (a no-op for a job naming no such listener).
    once: OnceSlot,
    /// Who waits for the job to drain (boxed: rare, and one pointer a job otherwise).
    drains: Option<Box<Drains>>,
    /// The config node's bytes last read or written (see [`config_input`]).
    config_seen: Option<Arc<[u8]>>,
    /// When this job's workflow decisions appeared, for the step-wait metric.
    decisions: DecisionsSeen,
}

impl ExecutorState {
    /// One message, as [`ExecutorActor::handle`] gets it.
    async fn on_message(&mut self, myself: &ActorRef<ExecutorMsg>, msg: ExecutorMsg) {
        let input = match msg {
            // The machine decides; the executor tells it whether the job takes part in
            // distribute-once rounds (whose "before" hook runs as the run launches).
            ExecutorMsg::Step(Input::Arm { scheduled, early }) => Input::Arm {
                scheduled,
                early: early && !self.once.is_active(),
            },
            ExecutorMsg::Step(input) => input,
            ExecutorMsg::RunFinished(report) => {
                self.kit.finished(self.machine.job(), &report);
                self.once.run_ended(&self.ctx, myself, report.run_id).await;
                Input::RunFinished {
                    run_id: report.run_id,
                    failed: report.outcome.failures().map(|(item, _)| item).collect(),
                }
            }
            ExecutorMsg::Job(JobEvent {
                node: JobNode::Config,
                ..
            }) => {
                let Some(input) = config_input(
                    &self.ctx,
                    self.machine.job(),
                    &self.kit.spec.job_type,
                    &mut self.config_seen,
                ) else {
                    return;
                };
                input
            }
            ExecutorMsg::Job(ev) => {
                if let JobNode::WorkflowRecord(name) = &ev.node {
                    if ev.job == *self.machine.job() {
                        let now = self.ctx.node.clock.now();
                        self.decisions.record_changed(name, ev.kind, now);
                    }
                }
                self.once.node_changed(&self.ctx, myself, &ev).await;
                Input::Event {
                    node: ev.node,
                    kind: ev.kind,
                }
            }
            ExecutorMsg::Resynced => {
                if let Some(input) = config_input(
                    &self.ctx,
                    self.machine.job(),
                    &self.kit.spec.job_type,
                    &mut self.config_seen,
                ) {
                    Box::pin(self.drive(myself, input)).await;
                }
                Input::Resynced
            }
            ExecutorMsg::Drain(reply) => {
                self.drains.get_or_insert_with(Box::default).0.push(reply);
                self.once.release_waiting();
                Input::Drain
            }
            ExecutorMsg::IsIdle(reply) => return drop(reply.send(self.machine.is_idle())),
            ExecutorMsg::Once(input) => {
                return self.once.step(&self.ctx, myself, input).await;
            }
            ExecutorMsg::FailoverFences(fences) => return self.kit.failover_fences(fences),
            ExecutorMsg::Peers(peers) => {
                self.peers = peers;
                return;
            }
            ExecutorMsg::HeldBack(run) => {
                let run_id = run.req.run_id;
                self.kit.start_gated(run);
                Input::HeldBack { run_id }
            }
        };
        self.drive(myself, input).await;
    }
}

/// State of the ExecutorActor: its arguments until its first step registers the job, then the
/// running job.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // one per job for its whole life; `Registering` is brief, and a
                                     // boxed `Running` would cost every job an allocation and every message an indirection
pub(crate) enum ExecutorPhase {
    /// Spawned; `None` once a registration failed and the actor is stopping.
    Registering(Option<ExecutorArgs>),
    /// Registered: the machine runs.
    Running(ExecutorState),
}

/// The stop reason of an executor whose registration failed; `retry` when the registry failed
/// (the session registers the job again later), not when the job itself was refused.
pub(crate) fn registration_failed(retry: bool) -> &'static str {
    if retry {
        "registration failed: registry"
    } else {
        "registration failed: refused"
    }
}

impl ExecutorState {
    /// The executor's first step (once it holds one of the session's
    /// [`REGISTERING_AT_ONCE`](super::context::REGISTERING_AT_ONCE) permits): registers the job,
    /// then schedules it and announces it to its peers. The reply port of
    /// the `AddJob` that started it, if any, hears the outcome.
    async fn register(
        myself: &ActorRef<ExecutorMsg>,
        args: ExecutorArgs,
    ) -> Result<Option<Self>, ActorProcessingErr> {
        let ExecutorArgs {
            ctx,
            spec,
            peers,
            reply,
        } = args;
        let registered = match register(&ctx, &spec).await {
            Ok(r) => r,
            Err(e) => {
                let job = spec.config.job_name.clone();
                tracing::error!(%job, error = %e, "job not started on this session");
                let retry = matches!(e, EngineError::Registry { .. });
                reply.map(|r| r.send(Err(e)));
                myself.stop(Some(registration_failed(retry).into()));
                return Ok(None);
            }
        };
        let machine = registered.machine(&ctx, spec.config.instance_labels.clone());
        let config = registered.config;
        let job = config.job_name().clone();
        let kit = RunKit::new(&ctx.node, spec, &config)?;
        let once = OnceSlot::for_config(&ctx, &config);
        commands::watch_what_it_needs(&ctx, &config);
        ctx.configs.insert(job.clone(), config.clone());
        let schedule = TriggerMsg::Schedule(job.clone(), config.clone(), myself.clone());
        peers.trigger.send_message(schedule)?;
        peers
            .leader
            .send_message(LeaderMsg::Evaluate(job.clone()))?;
        peers
            .failover
            .send_message(FailoverMsg::Executor(job.clone(), myself.clone()))?;
        tracing::info!(%job, instance = %ctx.me(), "job registered");
        reply.map(|r| r.send(Ok(())));
        Ok(Some(ExecutorState {
            ctx,
            peers,
            machine,
            kit,
            once,
            drains: None,
            config_seen: registered.yaml,
            decisions: DecisionsSeen::default(),
        }))
    }
}

/// Answers what asks for an answer while no job runs (a registration that failed, stopping).
fn unregistered(msg: ExecutorMsg) {
    match msg {
        ExecutorMsg::Drain(reply) => drop(reply.send(())),
        ExecutorMsg::IsIdle(reply) => drop(reply.send(true)),
        _ => {}
    }
}

impl Actor for ExecutorActor {
    type Msg = ExecutorMsg;
    type State = ExecutorPhase;
    type Arguments = ExecutorArgs;
    /// One executor per job, each waiting for its next fire almost all the time: its loop keeps
    /// no room for a message's handling (about 400 bytes a job at ten thousand jobs), which is
    /// boxed when the message arrives (our patched ractor, `vendor/ractor/PATCH.md`).
    const BOX_EACH_MESSAGE: bool = true;

    /// Nothing that waits: the spawning SessionActor goes on at once; the job registers in
    /// [`Actor::post_start`], the executor's first step, before any message is handled.
    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        args: ExecutorArgs,
    ) -> Result<Self::State, ActorProcessingErr> {
        Ok(ExecutorPhase::Registering(Some(args)))
    }

    async fn post_start(
        &self,
        myself: ActorRef<Self::Msg>,
        phase: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        let ExecutorPhase::Registering(Some(args)) = phase else {
            return Ok(());
        };
        // The permit first: the registration's future (kilobytes) exists only for the jobs
        // registering now, not for every job of a new session at once.
        let registering = args.ctx.registering.clone();
        let permit = registering.clone().acquire_owned().await;
        let ExecutorPhase::Registering(Some(args)) =
            std::mem::replace(phase, ExecutorPhase::Registering(None))
        else {
            return Ok(());
        };
        // Boxed for the same reason as the handler's future below.
        let registered = Box::pin(ExecutorState::register(&myself, args)).await;
        drop(permit);
        registration_ended(&registering);
        if let Some(running) = registered? {
            *phase = ExecutorPhase::Running(running);
        }
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        phase: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        let ExecutorPhase::Running(state) = phase else {
            unregistered(msg);
            return Ok(());
        };
        // Not boxed here: ractor boxes each message's handling of this actor once it has arrived
        // (`BOX_EACH_MESSAGE`), so a waiting job keeps none of it.
        state.on_message(&myself, msg).await;
        state.machine.release_empty();
        Ok(())
    }

    async fn post_stop(
        &self,
        myself: ActorRef<Self::Msg>,
        phase: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        let ExecutorPhase::Running(state) = phase else {
            return Ok(());
        };
        let job = state.machine.job().clone();
        let _ = state
            .peers
            .trigger
            .send_message(TriggerMsg::Unschedule(job.clone()));
        let _ = state
            .peers
            .failover
            .send_message(FailoverMsg::ExecutorGone(job, myself.get_id()));
        state.kit.cancel(|_| true);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_executors_state_stays_within_448_bytes() {
        // ractor keeps the state in the actor's task: with 448 bytes the executor's task future
        // is 648 (release build), and tokio's task cell, aligned to 128 bytes, stays at 768 bytes
        // up to a future of about 664 (896 past it). Ten thousand jobs: 1.25 MiB a step.
        let size = std::mem::size_of::<super::ExecutorPhase>();
        assert!(size <= 448, "{size}");
    }
}
