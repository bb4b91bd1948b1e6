//! The ExecutorActor's interpretation of its job's machine: the machine stepped with an input
//! (the one loop of [`interpret::drive`]) and each command it returns carried out: a write whose
//! outcome is the next input, a run launched or cancelled, a timer, a message to a peer.

use ractor::ActorRef;

use crate::actors::interpret::{self, Interpret};
use crate::actors::mail::{ExecutorMsg, FailoverMsg, LeaderMsg, ShardingMsg, TriggerMsg};
use crate::actors::register::check_session;
use crate::actors::run::report;
use crate::decide::lifecycle::{Command, Input, Outcome, Purpose, WriteMode};
use crate::job::ExecutionSource;

use super::{ExecutorState, JOB_REMOVED};

impl ExecutorState {
    /// Steps the machine and carries out its commands (the one loop: [`interpret::drive`]).
    pub(super) async fn drive(&mut self, myself: &ActorRef<ExecutorMsg>, input: Input) {
        interpret::drive(
            &mut Driving {
                state: self,
                myself,
            },
            input,
        )
        .await;
    }

    /// One command; a write returns the input its outcome makes.
    async fn carry_out(
        &mut self,
        myself: &ActorRef<ExecutorMsg>,
        command: Command,
    ) -> Option<Input> {
        let job = self.machine.job().clone();
        let peers = &self.peers;
        match command {
            Command::Write {
                ops,
                mode: WriteMode::Submitted,
                then,
            } => {
                let me = myself.clone();
                self.ctx.writes.submit_then(ops, move |result| {
                    let outcome = Outcome::of(&result);
                    // The executor may be gone (job removed, node stopping): nobody to tell.
                    let _ = me.send_message(ExecutorMsg::Step(Input::Written {
                        purpose: then,
                        outcome,
                    }));
                });
            }
            Command::Write { ops, mode, then } => {
                if then == Purpose::WorkflowStart {
                    self.decisions.deciding(&ops, self.ctx.node.clock.now());
                }
                let outcome = Outcome::of(&self.ctx.write(ops, mode).await);
                return Some(Input::Written {
                    purpose: then,
                    outcome,
                });
            }
            Command::SubmitEnd { run_id, ops } => {
                let me = myself.clone();
                self.ctx.writes.submit_then(ops, move |result| {
                    let outcome = Outcome::of(&result);
                    // The executor may be gone (job removed, node stopping): nobody to tell.
                    let _ = me.send_message(ExecutorMsg::Step(Input::RunEnded { run_id, outcome }));
                });
            }
            Command::Launch {
                run_id,
                source,
                scheduled,
                items,
                attempt,
                parameter,
                workflow,
            } => {
                let go = (self.once)
                    .launching(&self.ctx, myself, run_id, source, &items)
                    .await;
                let config = self.machine.config();
                let decided_at = match (&workflow, source) {
                    (Some(run), ExecutionSource::Workflow) => self.decisions.take(run),
                    _ => None,
                };
                let run = crate::actors::run::Launch {
                    run_id,
                    source,
                    scheduled,
                    attempt,
                    parameter,
                    workflow,
                    decided_at,
                };
                let held = self.kit.launch(&self.ctx, config, myself, run, &items, go);
                if let Some((at, held)) = held {
                    // Its fire was decided ahead: the trigger starts it at its instant (at once
                    // should the trigger be gone).
                    if let Err(ractor::MessagingErr::SendErr(TriggerMsg::Hold(_, held))) =
                        peers.trigger.send_message(TriggerMsg::Hold(at, held))
                    {
                        crate::actors::run::start(held);
                    }
                }
            }
            Command::Go(run_id) => self.kit.open(run_id),
            Command::FiredAhead(at) => {
                drop(peers.trigger.send_message(TriggerMsg::FiredAhead(job, at)));
            }
            Command::Cancel(items) => {
                // Thousands at once when a lowered count removes them: a set, not a scan each.
                let items: std::collections::BTreeSet<_> = items.into_iter().collect();
                self.kit.cancel(|i| items.contains(&i))
            }
            Command::CancelAll => self.kit.cancel(|_| true),
            Command::Schedule => {
                let config = self.machine.config().clone();
                let _ =
                    peers
                        .trigger
                        .send_message(TriggerMsg::Schedule(job, config, myself.clone()));
            }
            Command::Unschedule => drop(peers.trigger.send_message(TriggerMsg::Unschedule(job))),
            Command::AskReshard => drop(
                peers
                    .sharding
                    .send_message(ShardingMsg::ShardIfNecessary(job)),
            ),
            Command::CheckSession => check_session(&self.ctx, &job, myself),
            Command::SetResharding(raised) => self.kit.resharding.set(raised),
            Command::FailoverIdle => drop(peers.failover.send_message(FailoverMsg::RunEnded(job))),
            Command::Evaluate => {
                let _ = peers.leader.send_message(LeaderMsg::Evaluate(job.clone()));
                let _ = peers.failover.send_message(FailoverMsg::ConfigChanged(job));
            }
            Command::ConfigApplied(config) => {
                watch_what_it_needs(&self.ctx, &config);
                self.kit.reconfigure(&self.ctx.node, &config);
                self.once.reconfigure(&self.ctx, &config);
                self.ctx.configs.insert(job, config);
            }
            Command::StartTimer {
                run_id,
                timer,
                after,
            } => drop(myself.send_after(after, move || {
                ExecutorMsg::Step(Input::TimerFired { run_id, timer })
            })),
            Command::TimeOut { run_id, grace } => self.kit.time_out(run_id, grace),
            Command::Abandon { run_id } => self.kit.abandon(run_id),
            Command::FailureStands(items) => self.kit.failure_stands(&job, &items),
            Command::DrainDone => {
                let drains = self.drains.take().map(|d| d.0).unwrap_or_default();
                drains.into_iter().for_each(|r| drop(r.send(())));
            }
            Command::Stop => myself.stop(Some(JOB_REMOVED.into())),
            c @ (Command::Misfired(_)
            | Command::Skipped { .. }
            | Command::Refuse(_)
            | Command::Warn(_)
            | Command::WorkflowRunEnded { .. }) => {
                report(&self.kit, &self.ctx.node.events, self.ctx.me(), &job, c)
            }
        }
        None
    }
}

/// A job's machine with the executor that carries out its commands.
struct Driving<'a> {
    state: &'a mut ExecutorState,
    myself: &'a ActorRef<ExecutorMsg>,
}

impl Interpret for Driving<'_> {
    type Input = Input;
    type Command = Command;

    fn step(&mut self, input: Input) -> Vec<Command> {
        let state = &mut *self.state;
        let job = state.machine.job().clone();
        state.machine.step(input, &state.ctx.facts(&job))
    }

    fn carry_out(
        &mut self,
        command: Command,
    ) -> impl std::future::Future<Output = Option<Input>> + Send {
        // Boxed: see the handler.
        Box::pin(self.state.carry_out(self.myself, command))
    }
}

/// Widens what the mirror watches to what the job's config (as registered, or as changed in the
/// registry) needs: its upstreams' subtrees, or the namespace to balance over. Roots watched
/// already cost nothing more.
pub(super) fn watch_what_it_needs(
    ctx: &crate::actors::context::SessionCtx,
    config: &crate::config::ValidatedConfig,
) {
    let roots = crate::decide::scope::roots_of(config.job_name(), config.config());
    ctx.roots.add(roots, || {});
}
