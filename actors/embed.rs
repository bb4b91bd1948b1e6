//! Embedding shardcron in a host's ractor tree: a job whose items are handled by an actor the host
//! runs ([`ActorJob`]), and engine events delivered to a host actor as messages ([`forward_events`]).
//! Linking the node under the host's supervisor is [`NodeBuilder::start_linked`](super::node::NodeBuilder::start_linked).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use ractor::{ActorRef, Message, RpcReplyPort};
use tokio::task::JoinHandle;

use crate::events::{Delivered, Subscription};
use crate::job::{ItemHandler, JobError, ShardingContext};

type Build<M> = dyn Fn(ShardingContext, RpcReplyPort<Result<(), JobError>>) -> M + Send + Sync;

/// A job whose items are handled by a host actor: for each item the engine sends the actor a
/// message built from the [`ShardingContext`] with a reply port for the outcome.
///
/// The actor is looked up by its registered name at every item, so after the host restarts it the
/// next fire reaches the new actor, never a stale ref. No reply within `timeout`, or no actor of that
/// name, fails the item through the job's error handler.
pub struct ActorJob<M: Message> {
    name: String,
    timeout: Duration,
    build: Arc<Build<M>>,
}

impl<M: Message> fmt::Debug for ActorJob<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ActorJob")
            .field("name", &self.name)
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl<M: Message> ActorJob<M> {
    /// Items go to the actor registered as `name`, as the message `build` makes.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ractor::RpcReplyPort;
    /// use shardcron::job::{JobError, ShardingContext};
    /// use shardcron::embed::ActorJob;
    ///
    /// enum WorkerMsg {
    ///     RunItem(ShardingContext, RpcReplyPort<Result<(), JobError>>),
    /// }
    /// let job = ActorJob::new("billing-worker", Duration::from_secs(30), WorkerMsg::RunItem);
    /// ```
    pub fn new(
        name: impl Into<String>,
        timeout: Duration,
        build: impl Fn(ShardingContext, RpcReplyPort<Result<(), JobError>>) -> M + Send + Sync + 'static,
    ) -> Self {
        Self {
            name: name.into(),
            timeout,
            build: Arc::new(build),
        }
    }
}

#[async_trait]
impl<M: Message> ItemHandler for ActorJob<M> {
    async fn run_item(&self, ctx: ShardingContext) -> Result<(), JobError> {
        let actor: ActorRef<M> = ractor::registry::where_is(self.name.clone())
            .map(ActorRef::from)
            .ok_or_else(|| {
                JobError::failed(format!("no actor named {:?} is running", self.name))
            })?;
        let (tx, rx) = ractor::concurrency::oneshot();
        actor
            .send_message((self.build)(ctx, tx.into()))
            .map_err(|e| {
                JobError::failed(format!("actor {:?} refused the item: {e}", self.name))
            })?;
        match tokio::time::timeout(self.timeout, rx).await {
            Ok(Ok(outcome)) => outcome,
            Ok(Err(_)) => Err(JobError::failed(format!(
                "actor {:?} stopped before answering",
                self.name
            ))),
            Err(_) => Err(JobError::failed(format!(
                "actor {:?} did not answer within {:?}",
                self.name, self.timeout
            ))),
        }
    }
}

/// Delivers a subscription's events to `actor` as messages made by `wrap`, in order, until either
/// side goes away. Overflow of the subscription's bounded queue is counted by the bus and reported in
/// [`Delivered::missed_before`].
pub fn forward_events<M: Message>(
    mut subscription: Subscription,
    actor: ActorRef<M>,
    wrap: impl Fn(Delivered) -> M + Send + 'static,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        while let Some(delivered) = subscription.events.recv().await {
            if actor.send_message(wrap(delivered)).is_err() {
                break;
            }
        }
    })
}
