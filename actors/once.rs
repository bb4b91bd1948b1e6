//! The ExecutorActor's interpreter of a job's distribute-once coordination
//! ([`DistributeOnce`]): it holds the runs waiting for the "before" round, turns the machine's
//! commands into writes, hook calls on a task of their own, and timers, and reads the machine's
//! facts from the mirror. Present only for a job that names a distribute-once listener: the
//! executor holds a [`OnceSlot`], which does nothing for any other job.

use std::collections::{BTreeSet, HashMap};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use ractor::ActorRef;
use tokio::sync::oneshot;

use crate::config::ValidatedConfig;
use crate::decide::guarantee::{
    DistributeOnce, GuaranteeCommand, GuaranteeInput, Phase, PhaseFacts, Step,
};
use crate::decide::lifecycle::{Outcome, WriteMode};
use crate::job::handlers::{DistributeOnceListener, GuaranteeInfo};
use crate::job::ExecutionSource;
use crate::paths::JobNode;
use crate::types::{JobName, ShardItem};
use crate::view::JobView;

use super::context::{JobEvent, SessionCtx};
use super::interpret::{self, Interpret};
use super::mail::ExecutorMsg;

/// The executor's distribute-once coordination: a [`OnceKit`] for a job naming such a listener,
/// nothing otherwise (every call is then a no-op).
///
/// The kit is boxed, so that a job without it (most) carries 8 bytes, not 288, and so are its
/// futures: unboxed, each would make every future of the executor that awaits
/// it (its handler's, the command being carried out) about 650 bytes larger for every job, and
/// 10,000 jobs all awaiting their first writes at startup held 6 MB more at the peak for a
/// coordination few jobs use.
#[derive(Debug, Default)]
pub(crate) struct OnceSlot(Option<Box<OnceKit>>);

impl OnceSlot {
    /// The coordination `config` asks for.
    pub(crate) fn for_config(ctx: &SessionCtx, config: &ValidatedConfig) -> Self {
        let names = &config.config().job_listener_types;
        let listeners = ctx.node.handlers.distribute_once(names);
        Self(OnceKit::new(ctx, config, listeners).map(Box::new))
    }

    /// Whether the job's runs take part in distribute-once rounds.
    pub(crate) fn is_active(&self) -> bool {
        self.0.is_some()
    }

    /// A config change: the coordination starts, stops (waiting runs go at once) or follows the
    /// new count.
    pub(crate) fn reconfigure(&mut self, ctx: &SessionCtx, config: &ValidatedConfig) {
        let names = &config.config().job_listener_types;
        let listeners = ctx.node.handlers.distribute_once(names);
        match (&mut self.0, listeners.is_empty()) {
            (Some(_), true) => self.0 = None,
            (Some(once), false) => once.reconfigure(config),
            (None, _) => self.0 = OnceKit::new(ctx, config, listeners).map(Box::new),
        }
    }

    /// See [`OnceKit::launching`]; `None` (start at once) without a coordination.
    pub(crate) async fn launching(
        &mut self,
        ctx: &SessionCtx,
        myself: &ActorRef<ExecutorMsg>,
        run_id: u64,
        source: ExecutionSource,
        items: &[ShardItem],
    ) -> Option<oneshot::Receiver<()>> {
        let once = self.0.as_mut()?;
        Box::pin(once.launching(ctx, myself, run_id, source, items)).await
    }

    /// See [`OnceKit::run_ended`].
    pub(crate) async fn run_ended(
        &mut self,
        ctx: &SessionCtx,
        myself: &ActorRef<ExecutorMsg>,
        run_id: u64,
    ) {
        if let Some(once) = self.0.as_mut() {
            Box::pin(once.run_ended(ctx, myself, run_id)).await;
        }
    }

    /// A node of the job changed (see [`OnceKit::node_changed`]).
    pub(crate) async fn node_changed(
        &mut self,
        ctx: &SessionCtx,
        myself: &ActorRef<ExecutorMsg>,
        ev: &JobEvent,
    ) {
        if let Some(once) = self.0.as_mut() {
            let deleted = ev.kind == crate::registry::NodeEventKind::Deleted;
            Box::pin(once.node_changed(ctx, myself, &ev.node, deleted)).await;
        }
    }

    /// See [`OnceKit::release_waiting`].
    pub(crate) fn release_waiting(&mut self) {
        if let Some(once) = self.0.as_mut() {
            once.release_waiting();
        }
    }

    /// An input of the coordination (a round's timeout, hooks returned).
    pub(crate) async fn step(
        &mut self,
        ctx: &SessionCtx,
        myself: &ActorRef<ExecutorMsg>,
        input: GuaranteeInput,
    ) {
        if let Some(once) = self.0.as_mut() {
            Box::pin(once.step(ctx, myself, input)).await;
        }
    }
}

/// A job's distribute-once listeners and the state of their rounds here.
#[derive(Debug)]
pub(crate) struct OnceKit {
    job: JobName,
    total: u32,
    listeners: Vec<(String, Arc<dyn DistributeOnceListener>)>,
    machine: DistributeOnce,
    /// Runs waiting for the "before" round to resolve.
    waiting: Vec<oneshot::Sender<()>>,
    /// Runs taking part, by run id: their end enters the "after" round.
    runs: HashMap<u64, Vec<ShardItem>>,
}

impl OnceKit {
    /// The kit for a job naming `listeners`; `None` when it names none.
    pub(crate) fn new(
        ctx: &SessionCtx,
        config: &ValidatedConfig,
        listeners: Vec<(String, Arc<dyn DistributeOnceListener>)>,
    ) -> Option<Self> {
        if listeners.is_empty() {
            return None;
        }
        // The shortest timeout of the job's listeners bounds the wait.
        let started = listeners.iter().map(|(_, l)| l.started_timeout()).min()?;
        let completed = listeners.iter().map(|(_, l)| l.completed_timeout()).min()?;
        let job = config.job_name().clone();
        Some(Self {
            machine: DistributeOnce::new(job.clone(), ctx.me().clone(), started, completed),
            job,
            total: config.sharding_total_count(),
            listeners,
            waiting: Vec::new(),
            runs: HashMap::new(),
        })
    }

    /// A new configuration: the count may have changed.
    pub(crate) fn reconfigure(&mut self, config: &ValidatedConfig) {
        self.total = config.sharding_total_count();
    }

    /// A run is launching: a fire's run (normal or manual) takes part and waits for the
    /// "before" round; misfire catch-ups and failover runs do not.
    pub(crate) async fn launching(
        &mut self,
        ctx: &SessionCtx,
        myself: &ActorRef<ExecutorMsg>,
        run_id: u64,
        source: ExecutionSource,
        items: &[ShardItem],
    ) -> Option<oneshot::Receiver<()>> {
        if !matches!(source, ExecutionSource::Normal | ExecutionSource::Manual) {
            return None;
        }
        let (tx, rx) = oneshot::channel();
        self.waiting.push(tx);
        self.runs.insert(run_id, items.to_vec());
        let input = GuaranteeInput::Begin(Phase::Started, items.to_vec());
        self.step(ctx, myself, input).await;
        Some(rx)
    }

    /// The job is draining here: runs held for the "before" round start now rather than hold the
    /// drain up to the round's timeout (the round goes on without them).
    pub(crate) fn release_waiting(&mut self) {
        for tx in self.waiting.drain(..) {
            let _ = tx.send(());
        }
    }

    /// A run's task ended: a taking-part run's items enter the "after" round.
    pub(crate) async fn run_ended(
        &mut self,
        ctx: &SessionCtx,
        myself: &ActorRef<ExecutorMsg>,
        run_id: u64,
    ) {
        if let Some(items) = self.runs.remove(&run_id) {
            let input = GuaranteeInput::Begin(Phase::Completed, items);
            self.step(ctx, myself, input).await;
        }
    }

    /// A node of the job changed: the rounds under way look again.
    pub(crate) async fn node_changed(
        &mut self,
        ctx: &SessionCtx,
        myself: &ActorRef<ExecutorMsg>,
        node: &JobNode,
        deleted: bool,
    ) {
        if !crate::decide::guarantee::moved_by(node) {
            return;
        }
        for phase in [Phase::Started, Phase::Completed] {
            if !self.machine.waiting(phase) {
                continue;
            }
            let input = if deleted && *node == phase.root() {
                GuaranteeInput::RootDeleted(phase)
            } else {
                GuaranteeInput::Changed(phase)
            };
            self.step(ctx, myself, input).await;
        }
    }

    /// Steps the machine and carries out its commands (the executor's loop: [`interpret::drive`]).
    pub(crate) async fn step(
        &mut self,
        ctx: &SessionCtx,
        myself: &ActorRef<ExecutorMsg>,
        input: GuaranteeInput,
    ) {
        let mut driving = Driving {
            kit: self,
            ctx,
            myself,
        };
        interpret::drive(&mut driving, input).await;
    }

    async fn carry_out(
        &mut self,
        ctx: &SessionCtx,
        myself: &ActorRef<ExecutorMsg>,
        command: GuaranteeCommand,
    ) -> Option<GuaranteeInput> {
        match command {
            GuaranteeCommand::Write(phase, step, ops) => {
                let mode = match step {
                    Step::Claim => WriteMode::Direct,
                    Step::Register | Step::Clear => WriteMode::Tolerant,
                };
                let outcome = Outcome::of(&ctx.write(ops, mode).await);
                return Some(GuaranteeInput::Written(phase, step, outcome));
            }
            GuaranteeCommand::Call(phase, missing) => {
                let info = GuaranteeInfo {
                    job_name: self.job.clone(),
                    sharding_total_count: self.total,
                    missing,
                };
                let listeners = self.listeners.clone();
                let me = myself.clone();
                tokio::spawn(async move {
                    call_hooks(&listeners, phase, &info);
                    // The executor may be gone: nobody waits for the round then.
                    let _ = me.send_message(ExecutorMsg::Once(GuaranteeInput::Called(phase)));
                });
            }
            GuaranteeCommand::Go => {
                for tx in self.waiting.drain(..) {
                    // A run cancelled meanwhile has dropped its receiver.
                    let _ = tx.send(());
                }
            }
            GuaranteeCommand::Timer(phase, round, after) => {
                myself.send_after(after, move || {
                    ExecutorMsg::Once(GuaranteeInput::TimedOut(phase, round))
                });
            }
            GuaranteeCommand::Warn(message) => tracing::warn!(job = %self.job, "{message}"),
        }
        None
    }
}

/// A job's distribute-once machine with the kit that carries out its commands.
struct Driving<'a> {
    kit: &'a mut OnceKit,
    ctx: &'a SessionCtx,
    myself: &'a ActorRef<ExecutorMsg>,
}

impl Interpret for Driving<'_> {
    type Input = GuaranteeInput;
    type Command = GuaranteeCommand;

    fn step(&mut self, input: GuaranteeInput) -> Vec<GuaranteeCommand> {
        let (ctx, job, total) = (self.ctx, self.kit.job.clone(), self.kit.total);
        let facts = move |phase: Phase| read_facts(ctx, &job, total, phase);
        self.kit.machine.step(input, &facts)
    }

    fn carry_out(
        &mut self,
        command: GuaranteeCommand,
    ) -> impl std::future::Future<Output = Option<GuaranteeInput>> + Send {
        self.kit.carry_out(self.ctx, self.myself, command)
    }
}

/// One phase as the mirror holds it.
fn read_facts(ctx: &SessionCtx, job: &JobName, total: u32, phase: Phase) -> PhaseFacts {
    let mirror = ctx.mirror();
    let root_path = phase.root().to_path(job);
    let root = mirror.get(&root_path).map(|n| {
        let claimer = String::from_utf8_lossy(&n.data).into_owned();
        (n.stat.version, claimer)
    });
    let registered: BTreeSet<ShardItem> = mirror
        .children(&root_path)
        .iter()
        .filter_map(|c| c.parse().ok())
        .collect();
    let parent = mirror.exists(&JobNode::Guarantee.to_path(job));
    let view = JobView::read(mirror, job);
    PhaseFacts::read(&view, total, root, registered, parent)
}

/// Calls each listener's hook of `phase`, containing panics.
fn call_hooks(
    listeners: &[(String, Arc<dyn DistributeOnceListener>)],
    phase: Phase,
    info: &GuaranteeInfo,
) {
    for (name, l) in listeners {
        let call = || match phase {
            Phase::Started => l.before_job_executed_at_last_started(info),
            Phase::Completed => l.after_job_executed_at_last_completed(info),
        };
        // The listener sees only `info`, which nothing uses after a panic.
        if catch_unwind(AssertUnwindSafe(call)).is_err() {
            tracing::error!(job = %info.job_name, listener = %name, phase = phase.as_str(),
                "distribute-once listener panicked; the fire goes on");
        }
    }
}
