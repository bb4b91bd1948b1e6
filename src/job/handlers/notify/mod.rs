//! The notifying error handlers ElasticJob ships, `EMAIL`, `WECHAT` and `DINGTALK`, and ours,
//! `WEBHOOK` (a Slack-compatible `{"text": ...}` post), selected by `jobErrorHandlerType` and
//! configured by the job's `props` with ElasticJob's keys ([`props`]).
//!
//! A run never waits for a notice: the handler logs the failure (as `LOG` does), puts a notice on a
//! bounded queue ([`QUEUE_CAPACITY`]) and returns; one task per node drains the queue and sends each
//! notice within its bound ([`send::bound`]). A full queue drops the notice and counts it
//! (`shardcron_error_notifications_total{outcome="dropped"}`), as a failed send is counted
//! (`outcome="failed"`) and logged. ElasticJob sends on the job's thread, with JavaMail's infinite
//! default timeouts: a dead SMTP server there stalls the job.
//!
//! The settings of each job are installed when its config is validated for this node (at start, at
//! registration and at every config change), so a job's notifier follows its live config.

/// The notifiers' settings, read from `props`: config validation checks them, so they live in the
/// core's [`config`](crate::config::notify).
pub use crate::config::notify as props;
pub mod send;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::RwLock;
use tokio::sync::mpsc;

pub use props::{
    EmailSettings, HookSettings, NotifierSettings, PropError, DINGTALK, EMAIL, NOTIFIERS, WEBHOOK,
    WECHAT,
};
pub use send::{dingtalk_sign, SendError};

use super::error::{ErrorAction, ErrorHandler};
use crate::job::JobError;
use crate::types::{JobName, ShardItem};

/// How many notices wait for sending at most; more are dropped and counted.
pub const QUEUE_CAPACITY: usize = 64;

/// What happened to notices so far, for tests and the operator.
#[derive(Debug, Default)]
pub struct NoticeCounts {
    /// Delivered.
    pub sent: AtomicU64,
    /// Not delivered (refused, failed or timed out).
    pub failed: AtomicU64,
    /// Dropped because the queue was full.
    pub dropped: AtomicU64,
}

/// One notice on its way.
#[derive(Debug)]
struct Notice {
    job: JobName,
    settings: Arc<NotifierSettings>,
    text: String,
}

/// Every job's notifier settings, the queue and its sender task (started at the first notice, on
/// the runtime the failing run is on).
#[derive(Debug)]
pub struct Notifiers {
    jobs: RwLock<BTreeMap<JobName, Arc<NotifierSettings>>>,
    queue: OnceLock<mpsc::Sender<Notice>>,
    counts: Arc<NoticeCounts>,
}

impl Default for Notifiers {
    fn default() -> Self {
        Self {
            jobs: RwLock::new(BTreeMap::new()),
            queue: OnceLock::new(),
            counts: Arc::new(NoticeCounts::default()),
        }
    }
}

impl Notifiers {
    /// Installs `job`'s notifier from its error handler's name and props (already validated), or
    /// removes it when the handler is not a notifier or the props do not parse.
    pub fn configure(&self, job: &JobName, handler: &str, props: &BTreeMap<String, String>) {
        match NotifierSettings::from_props(handler, props) {
            Some(Ok(settings)) => {
                self.jobs.write().insert(job.clone(), Arc::new(settings));
            }
            _ => {
                self.jobs.write().remove(job);
            }
        }
    }

    /// The settings installed for `job`.
    pub fn settings(&self, job: &JobName) -> Option<Arc<NotifierSettings>> {
        self.jobs.read().get(job).cloned()
    }

    /// The counts of notices sent, failed and dropped.
    pub fn counts(&self) -> &NoticeCounts {
        &self.counts
    }

    /// Queues a notice of `job`'s failure if `kind` is the job's notifier; never waits.
    fn notify(&self, kind: &'static str, job: &JobName, item: Option<ShardItem>, error: &JobError) {
        let Some(settings) = self.settings(job).filter(|s| s.kind() == kind) else {
            tracing::warn!(%job, handler = kind,
                "the job's notifier is not configured; the failure is only logged");
            return;
        };
        let Some(queue) = self.queue() else {
            tracing::warn!(%job, handler = kind, "no async runtime to send the notice on");
            return;
        };
        let notice = Notice {
            job: job.clone(),
            settings,
            text: message(job, item, error),
        };
        if queue.try_send(notice).is_err() {
            self.counts.dropped.fetch_add(1, Ordering::Relaxed);
            count(job, kind, "dropped");
            tracing::warn!(%job, handler = kind, capacity = QUEUE_CAPACITY,
                "the notice queue is full; the notice is dropped");
        }
    }

    fn queue(&self) -> Option<&mpsc::Sender<Notice>> {
        if let Some(q) = self.queue.get() {
            return Some(q);
        }
        let runtime = tokio::runtime::Handle::try_current().ok()?;
        Some(self.queue.get_or_init(|| {
            let (tx, rx) = mpsc::channel(QUEUE_CAPACITY);
            runtime.spawn(drain(rx, self.counts.clone()));
            tx
        }))
    }
}

/// ElasticJob's sentence, with the item when there is one, its URLs redacted (a failure may
/// quote one with its token or password).
fn message(job: &JobName, item: Option<ShardItem>, error: &JobError) -> String {
    let error = crate::secret::redact_text(&error.to_string());
    match item {
        Some(item) => format!(
            "Job '{job}' exception occur in job processing, caused by {error} (item {item})"
        ),
        None => format!("Job '{job}' exception occur in job processing, caused by {error}"),
    }
}

fn count(job: &JobName, kind: &'static str, outcome: &'static str) {
    crate::metrics::error_notification(job, kind, outcome);
}

/// Sends the queued notices one at a time, each within its bound, until every sender is gone.
async fn drain(mut rx: mpsc::Receiver<Notice>, counts: Arc<NoticeCounts>) {
    while let Some(notice) = rx.recv().await {
        let kind = notice.settings.kind();
        let bound = send::bound(&notice.settings);
        let now = chrono::Utc::now().timestamp_millis();
        let outcome = tokio::time::timeout(bound, send::send(&notice.settings, &notice.text, now))
            .await
            .unwrap_or(Err(SendError::TimedOut(bound)));
        match outcome {
            Ok(()) => {
                counts.sent.fetch_add(1, Ordering::Relaxed);
                count(&notice.job, kind, "sent");
                let verbose = matches!(&*notice.settings, NotifierSettings::Email(e) if e.debug);
                if verbose {
                    tracing::info!(job = %notice.job, handler = kind, "failure notice sent");
                } else {
                    tracing::debug!(job = %notice.job, handler = kind, "failure notice sent");
                }
            }
            Err(e) => {
                counts.failed.fetch_add(1, Ordering::Relaxed);
                count(&notice.job, kind, "failed");
                // Every URL in the error is shown redacted (the robot's carries its token).
                let error = crate::secret::error_chain(&e);
                tracing::error!(job = %notice.job, handler = kind, %error,
                    "sending the failure notice failed");
            }
        }
    }
}

/// The error handler of one notifier kind: logs the failure as `LOG` does, queues a notice, and
/// continues.
#[derive(Debug, Clone)]
pub struct NotifyErrorHandler {
    kind: &'static str,
    notifiers: Arc<Notifiers>,
}

impl NotifyErrorHandler {
    /// The handler of `kind` (one of [`NOTIFIERS`]) over the node's `notifiers`.
    pub fn new(kind: &'static str, notifiers: Arc<Notifiers>) -> Self {
        Self { kind, notifiers }
    }
}

impl ErrorHandler for NotifyErrorHandler {
    fn handle(&self, job: &JobName, item: Option<ShardItem>, error: &JobError) -> ErrorAction {
        let action = super::error::LogErrorHandler.handle(job, item, error);
        self.notifiers.notify(self.kind, job, item, error);
        action
    }
}
