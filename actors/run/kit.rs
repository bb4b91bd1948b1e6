//! A job's [`RunKit`]: what its runs are made with (listeners, error handler, item gate, fencing
//! tokens) and the cancellation tokens and deadlines of those in flight; a launch builds each
//! item's context and starts the run's task.

use std::sync::Arc;

use chrono::{DateTime, Utc};

use ractor::ActorRef;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::config::ValidatedConfig;
use crate::job::concurrency::ItemGate;
use crate::job::deadline::RunDeadline;
use crate::job::fencing::{FencingToken, OwnershipZxids};
use crate::job::handlers::{ErrorAction, ErrorHandler, Listeners};
use crate::job::output::OutputCapture;
use crate::job::{ExecutionSource, JobError, ReshardingFlag, ShardingContext, StopGrace};
use crate::types::{JobName, ShardItem};

use crate::actors::context::{NodeContext, SessionCtx};
use crate::actors::mail::{ExecutorMsg, RunReport};
use crate::actors::spec::JobSpec;

use super::{task_id, HeldRun, Launch, RunRequest};

/// What a job's runs are made with, and the cancellation tokens of those in flight (usually
/// none or one): the executor's equipment, kept apart from its state machine.
#[derive(Debug)]
pub(crate) struct RunKit {
    pub(crate) spec: Arc<JobSpec>,
    pub(crate) listeners: Listeners,
    pub(crate) error_handler: Arc<dyn ErrorHandler>,
    pub(crate) resharding: ReshardingFlag,
    /// The job's item concurrency limit, shared by its runs.
    pub(crate) gate: ItemGate,
    /// The job's `props`, shared by every context of every run (built again on a new config).
    props: Arc<Props>,
    tokens: Vec<InFlight>,
    /// What only some jobs hold, some of the time: boxed, so that ten thousand jobs without any
    /// pay one pointer each.
    rare: Option<Box<Rare>>,
}

/// `props` as the runs share them; every job without any shares one empty map.
fn shared_props(props: &Props) -> Arc<Props> {
    static EMPTY: std::sync::LazyLock<Arc<Props>> = std::sync::LazyLock::new(Arc::default);
    if props.is_empty() {
        return Arc::clone(&EMPTY);
    }
    Arc::new(props.clone())
}

/// A job's `props`.
type Props = std::collections::BTreeMap<String, String>;

/// A kit's parts that are empty for most jobs most of the time.
#[derive(Debug, Default)]
struct Rare {
    /// Fencing tokens of items just claimed for failover, from the claimer's mirror (the mark's
    /// zxid), until their run launches: the mirror may show the mark gone before the claim.
    failover_fences: Vec<(ShardItem, FencingToken)>,
    /// The deadlines of runs in flight of a job with a timeout.
    deadlines: Vec<(u64, Arc<RunDeadline>)>,
    /// The last failure of each item the error handler has not heard (a retry was to follow,
    /// `shardcron.retry.notify: final`), until it is retried or reported
    /// ([`Command::FailureStands`]): at most one per item.
    ///
    /// [`Command::FailureStands`]: crate::decide::lifecycle::Command::FailureStands
    unheard: Vec<(ShardItem, JobError)>,
    /// The gates of runs handed back at their instant (the trigger found the registry silent),
    /// opened by the machine's `Command::Go`.
    gates: Vec<(u64, oneshot::Sender<()>)>,
}

impl Rare {
    fn is_empty(&self) -> bool {
        self.failover_fences.is_empty()
            && self.deadlines.is_empty()
            && self.unheard.is_empty()
            && self.gates.is_empty()
    }
}

/// One run in flight: its items' cancellation tokens, the grace its processes share, and the
/// grace a cancellation by this node gives them (the session's, so that a fenced script's group
/// is gone before the session can expire).
#[derive(Debug)]
struct InFlight {
    run_id: u64,
    tokens: Vec<(ShardItem, CancellationToken)>,
    grace: StopGrace,
    cancel_grace: std::time::Duration,
}

impl RunKit {
    /// The kit for `spec` running with `config`.
    pub(crate) fn new(
        node: &NodeContext,
        spec: Arc<JobSpec>,
        config: &ValidatedConfig,
    ) -> Result<Self, ractor::ActorProcessingErr> {
        Ok(Self {
            listeners: node
                .handlers
                .listeners(&config.config().job_listener_types)?,
            error_handler: node.handlers.error_handler(Some(config.error_handler()))?,
            spec,
            resharding: ReshardingFlag::default(),
            gate: ItemGate::new(config.item_concurrency().limit()),
            props: shared_props(&config.config().props),
            tokens: Vec::new(),
            rare: None,
        })
    }

    /// Listeners, error handler and item concurrency of a new configuration (a name that does
    /// not resolve keeps the current one: validation already reported it).
    pub(crate) fn reconfigure(&mut self, node: &NodeContext, config: &ValidatedConfig) {
        self.gate.set_limit(config.item_concurrency().limit());
        if *self.props != config.config().props {
            self.props = shared_props(&config.config().props);
        }
        if let Ok(l) = node.handlers.listeners(&config.config().job_listener_types) {
            self.listeners = l;
        }
        if let Ok(h) = node.handlers.error_handler(Some(config.error_handler())) {
            self.error_handler = h;
        }
    }

    /// Items about to be handed over by a failover claim, with the tokens the claim saw.
    pub(crate) fn failover_fences(&mut self, fences: Vec<(ShardItem, FencingToken)>) {
        if !fences.is_empty() {
            self.rare().failover_fences.extend(fences);
        }
    }

    /// The item's fencing token, from the mirror (no registry call); one lookup but for a
    /// failover run.
    fn fence(
        &mut self,
        ctx: &SessionCtx,
        job: &JobName,
        item: ShardItem,
        source: ExecutionSource,
    ) -> FencingToken {
        if source != ExecutionSource::Failover {
            return OwnershipZxids::read_owner(ctx.mirror(), job, item).token();
        }
        let mut token = OwnershipZxids::read(ctx.mirror(), job, item).token();
        if let Some(fences) = self.rare.as_mut().map(|r| &mut r.failover_fences) {
            if let Some(at) = fences.iter().position(|(i, _)| *i == item) {
                token = token.max(fences.swap_remove(at).1);
            }
        }
        token
    }

    /// Starts `run` of `items` in its task, which reports to `executor`; a run whose cron
    /// instant is still ahead (its fire decided ahead, `decide/lifecycle/ahead.rs`) is handed to
    /// the trigger instead, which starts it at the instant.
    pub(crate) fn launch(
        &mut self,
        ctx: &SessionCtx,
        config: &ValidatedConfig,
        executor: &ActorRef<ExecutorMsg>,
        run: Launch,
        items: &[ShardItem],
        go: Option<oneshot::Receiver<()>>,
    ) -> Option<(DateTime<Utc>, HeldRun)> {
        let ahead = (run.scheduled)
            .filter(|at| run.source == ExecutionSource::Normal && *at > ctx.node.clock.now());
        let req = Box::new(self.request(ctx, config, run, items, go));
        let held = HeldRun {
            req,
            executor: executor.clone(),
        };
        match ahead {
            Some(at) => Some((at, held)),
            None => {
                super::start(held);
                None
            }
        }
    }

    /// What the task of `run` of `items` is given; its tokens are kept from now on.
    fn request(
        &mut self,
        ctx: &SessionCtx,
        config: &ValidatedConfig,
        run: Launch,
        items: &[ShardItem],
        go: Option<oneshot::Receiver<()>>,
    ) -> RunRequest {
        let Launch {
            run_id,
            source,
            scheduled,
            attempt,
            parameter,
            workflow,
            decided_at,
        } = run;
        let me = ctx.me().clone();
        let job = config.job_name().clone();
        let task_id = task_id(&job, items, source, &me, run_id);
        let c = config.config();
        let mut tokens = Vec::with_capacity(items.len());
        if source != ExecutionSource::Failover {
            if let Some(rare) = self.rare.as_mut() {
                rare.failover_fences.clear();
            }
        }
        let fences: Vec<FencingToken> = items
            .iter()
            .map(|i| self.fence(ctx, &job, *i, source))
            .collect();
        let props = &self.props;
        // `None` unless the job asks for its output: nothing is allocated per item then.
        let output = config.output_limit();
        let budget =
            crate::decide::lifecycle::FenceBudget::for_session(ctx.registry.session_info().timeout);
        let lease = budget.frozen_node_lease();
        // A job with a timeout gives its processes its grace after any cancel (a shorter one asked
        // for by fencing still wins).
        let grace = config
            .policy()
            .timeout
            .map_or_else(StopGrace::default, |t| StopGrace::new(t.grace));
        let contexts = items
            .iter()
            .zip(fences)
            .map(|(item, fencing_token)| {
                let token = CancellationToken::new();
                tokens.push((*item, token.clone()));
                ShardingContext {
                    job_name: job.clone(),
                    task_id: task_id.clone(),
                    sharding_total_count: config.sharding_total_count(),
                    job_parameter: match &parameter {
                        Some(p) => p.to_string(),
                        None => c.job_parameter.clone().unwrap_or_default(),
                    },
                    sharding_item: *item,
                    sharding_parameter: config.item_parameter(*item).unwrap_or_default().to_owned(),
                    scheduled_at: scheduled,
                    workflow_run: workflow.as_ref().map(|w| w.to_string()),
                    fencing_token,
                    source,
                    instance_id: me.clone(),
                    cancellation: token,
                    resharding: self.resharding.clone(),
                    props: props.clone(),
                    child_lease: Some(lease),
                    stop_grace: grace.clone(),
                    output: output.map(|limit| Arc::new(OutputCapture::new(limit))),
                }
            })
            .collect();
        self.tokens.push(InFlight {
            run_id,
            tokens,
            grace,
            cancel_grace: budget.kill_grace(),
        });
        let deadline = config.policy().timeout.map(|t| {
            let deadline = Arc::new(RunDeadline::new(t.after));
            self.rare().deadlines.push((run_id, deadline.clone()));
            deadline
        });
        let req = RunRequest {
            run_id,
            job,
            instance: me,
            source,
            task_id,
            contexts,
            handler: self.spec.handler.clone(),
            listeners: self.listeners.clone(),
            error_handler: self.error_handler.clone(),
            clock: ctx.node.clock.clone(),
            events: ctx.node.events.clone(),
            gate: self.gate.clone(),
            go,
            scheduled,
            deadline,
            attempt,
            workflow_run: workflow.map(|w| w.to_string()),
            decided_at,
            notify: config.policy().notifies(attempt),
        };
        self.tidy();
        req
    }

    /// Cancels the running items `which` selects.
    pub(crate) fn cancel(&self, which: impl Fn(ShardItem) -> bool) {
        for run in &self.tokens {
            for (item, token) in &run.tokens {
                if which(*item) {
                    run.grace.cancel_within(token, run.cancel_grace);
                }
            }
        }
    }

    /// Run `run_id` is past its timeout: its items are cancelled, their processes given `grace`
    /// (SIGTERM now, SIGKILL after it), and their errors are timeouts.
    pub(crate) fn time_out(&self, run_id: u64, grace: std::time::Duration) {
        if let Some(d) = self.deadline(run_id) {
            d.time_out();
        }
        for run in self.tokens.iter().filter(|r| r.run_id == run_id) {
            for (_, token) in &run.tokens {
                run.grace.cancel_within(token, grace);
            }
        }
    }

    /// Run `run_id`'s grace after its timeout ran out: what of it still runs is dropped.
    pub(crate) fn abandon(&self, run_id: u64) {
        if let Some(d) = self.deadline(run_id) {
            d.abandon();
        }
    }

    /// A run of `job` ended: an escalation is logged, its tokens go (the memory too, once none
    /// is left).
    pub(crate) fn finished(&mut self, job: &JobName, report: &RunReport) {
        if report.escalated {
            tracing::error!(%job, failures = report.outcome.failures().count(),
                "run failed and its error handler escalates (THROW)");
        }
        self.tokens.retain(|run| run.run_id != report.run_id);
        if self.tokens.is_empty() {
            self.tokens = Vec::new();
        }
        if let Some(rare) = self.rare.as_mut() {
            rare.deadlines.retain(|(id, _)| *id != report.run_id);
            rare.gates.retain(|(id, _)| *id != report.run_id);
            let results = &report.outcome.results;
            (rare.unheard).retain(|(item, _)| !results.iter().any(|(i, _)| i == item));
        }
        if !report.notified {
            let mut failures = report.outcome.failures().peekable();
            if failures.peek().is_some() {
                let failures = failures.map(|(i, e)| (i, e.clone()));
                self.rare().unheard.extend(failures);
            }
        }
        self.tidy();
    }

    /// The retries of `items` will not run: the error handler hears their last failures now.
    pub(crate) fn failure_stands(&mut self, job: &JobName, items: &[ShardItem]) {
        for item in items {
            let Some(unheard) = self.rare.as_mut().map(|r| &mut r.unheard) else {
                return;
            };
            let Some(at) = unheard.iter().position(|(i, _)| i == item) else {
                continue;
            };
            let (item, error) = unheard.swap_remove(at);
            if self.error_handler.handle(job, Some(item), &error) == ErrorAction::Escalate {
                tracing::error!(%job, item = item.0,
                    "failure whose retry did not run: its error handler escalates (THROW)");
            }
        }
        self.tidy();
    }

    /// The kit's rare parts, made on first use.
    fn rare(&mut self) -> &mut Rare {
        self.rare.get_or_insert_with(Box::default)
    }

    /// Starts a run handed back at its instant behind a gate: its items wait for [`Self::open`]
    /// (or their cancellation). A run with a gate of its own already (none is taken ahead) just
    /// starts.
    pub(crate) fn start_gated(&mut self, mut run: HeldRun) {
        if run.req.go.is_none() {
            let (open, gate) = oneshot::channel();
            run.req.go = Some(gate);
            self.rare().gates.push((run.req.run_id, open));
        }
        super::start(run);
    }

    /// Opens the gate of run `run_id` (`Command::Go`).
    pub(crate) fn open(&mut self, run_id: u64) {
        if let Some(rare) = self.rare.as_mut() {
            if let Some(at) = rare.gates.iter().position(|(id, _)| *id == run_id) {
                let _ = rare.gates.swap_remove(at).1.send(());
            }
        }
        self.tidy();
    }

    /// Drops the rare parts once they hold nothing.
    fn tidy(&mut self) {
        if self.rare.as_ref().is_some_and(|r| r.is_empty()) {
            self.rare = None;
        }
    }

    /// Run `run_id`'s deadline, for a job with a timeout.
    fn deadline(&self, run_id: u64) -> Option<&Arc<RunDeadline>> {
        let deadlines = &self.rare.as_ref()?.deadlines;
        deadlines
            .iter()
            .find(|(id, _)| *id == run_id)
            .map(|(_, d)| d)
    }
}
