//! Dataflow jobs (ElasticJob's `DataflowJob`): fetch a batch of data for the item, then process it.
//!
//! A [`DataflowJob`] runs through the [`Dataflow`] adapter in one of two modes:
//!
//! - **one-shot** ([`Dataflow::new`]): one fetch, and one process when the fetch is not empty;
//! - **streaming** ([`Dataflow::streaming`], or `streaming.process: true` in the job's `props`
//!   through [`Dataflow::from_props`]): fetch and process again until a fetch comes back empty, the
//!   item is taken away from this instance ([`ShardingContext::is_cancelled`]), or the job needs
//!   resharding ([`ShardingContext::resharding`]).
//!
//! As in ElasticJob, the first fetch always happens and the stop conditions are checked after each
//! processed batch: a batch that was fetched is always processed to its end, so stopping early for
//! cancellation or resharding is a normal end of the item (`Ok`), not a failure. A fetch or process
//! error ends the loop and fails the item with that error.

use std::collections::BTreeMap;
use std::fmt;

use async_trait::async_trait;

use super::{ItemHandler, JobError, ShardingContext};

/// The `props` key that turns streaming on, as ElasticJob names it.
pub const STREAMING_PROP: &str = "streaming.process";

/// Why a dataflow job could not be built from its configuration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DataflowError {
    /// Reading `streaming.process` from `props` found neither `true` nor `false`.
    ///
    /// ElasticJob reads any other value as `false`; we refuse it so a typo does not silently turn
    /// a streaming job into a one-shot one.
    #[error("props key {STREAMING_PROP:?} is {value:?}; expected \"true\" or \"false\"")]
    ReadStreamingProp {
        /// The value found.
        value: String,
    },
}

/// A job that fetches data for its item and processes it (ElasticJob's `DataflowJob`).
///
/// ```
/// use shardcron::job::{JobError, ShardingContext};
/// use shardcron::job::dataflow::DataflowJob;
/// #[derive(Debug)]
/// struct Orders;
/// #[async_trait::async_trait]
/// impl DataflowJob for Orders {
///     type Item = u64;
///     async fn fetch(&self, ctx: &ShardingContext) -> Result<Vec<u64>, JobError> {
///         Ok(vec![u64::from(ctx.sharding_item.get())])
///     }
///     async fn process(&self, _ctx: &ShardingContext, ids: Vec<u64>) -> Result<(), JobError> {
///         println!("processing {ids:?}");
///         Ok(())
///     }
/// }
/// ```
#[async_trait]
pub trait DataflowJob: Send + Sync + fmt::Debug + 'static {
    /// One unit of fetched data.
    type Item: Send + 'static;

    /// Fetches the next batch for the item; an empty batch means there is nothing (more) to do.
    async fn fetch(&self, ctx: &ShardingContext) -> Result<Vec<Self::Item>, JobError>;

    /// Processes one non-empty batch returned by [`DataflowJob::fetch`].
    async fn process(&self, ctx: &ShardingContext, data: Vec<Self::Item>) -> Result<(), JobError>;
}

/// Adapts a [`DataflowJob`] to an [`ItemHandler`], one-shot or streaming.
#[derive(Debug)]
pub struct Dataflow<J> {
    job: J,
    streaming: bool,
}

impl<J: DataflowJob> Dataflow<J> {
    /// One fetch per run, processed when not empty.
    pub fn new(job: J) -> Self {
        Self {
            job,
            streaming: false,
        }
    }

    /// Fetch and process until a fetch is empty, the item is cancelled or resharding is needed.
    pub fn streaming(job: J) -> Self {
        Self {
            job,
            streaming: true,
        }
    }

    /// Streaming when the job's `props` say `streaming.process: true`, one-shot when the key is
    /// absent or `false`.
    pub fn from_props(job: J, props: &BTreeMap<String, String>) -> Result<Self, DataflowError> {
        let streaming = match props.get(STREAMING_PROP).map(|v| v.trim()) {
            None => false,
            Some(v) if v.eq_ignore_ascii_case("true") => true,
            Some(v) if v.eq_ignore_ascii_case("false") => false,
            Some(v) => {
                return Err(DataflowError::ReadStreamingProp {
                    value: v.to_owned(),
                })
            }
        };
        Ok(Self { job, streaming })
    }

    /// Whether the adapter loops until the data runs out.
    pub fn is_streaming(&self) -> bool {
        self.streaming
    }

    /// The wrapped job.
    pub fn job(&self) -> &J {
        &self.job
    }
}

#[async_trait]
impl<J: DataflowJob> ItemHandler for Dataflow<J> {
    async fn run_item(&self, ctx: ShardingContext) -> Result<(), JobError> {
        loop {
            let data = self.job.fetch(&ctx).await?;
            if data.is_empty() {
                return Ok(());
            }
            self.job.process(&ctx, data).await?;
            if !self.streaming {
                return Ok(());
            }
            if ctx.is_cancelled() || ctx.resharding.is_raised() {
                tracing::info!(
                    job = %ctx.job_name,
                    item = %ctx.sharding_item,
                    cancelled = ctx.is_cancelled(),
                    resharding = ctx.resharding.is_raised(),
                    "streaming dataflow stops fetching"
                );
                return Ok(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::sync::Mutex;

    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::job::{ExecutionSource, ReshardingFlag};
    use crate::types::{InstanceId, JobName, ShardItem};

    /// What the fake does after processing a given batch.
    #[derive(Debug, Clone, Copy)]
    enum AfterBatch {
        Nothing,
        Cancel,
        RaiseResharding,
        Fail,
    }

    /// Hands out prepared batches and records what it processed.
    #[derive(Debug)]
    struct Batches {
        pending: Mutex<VecDeque<Vec<u32>>>,
        processed: Mutex<Vec<Vec<u32>>>,
        fetches: Mutex<usize>,
        after: Mutex<Vec<AfterBatch>>,
    }

    impl Batches {
        fn new(batches: &[&[u32]], after: &[AfterBatch]) -> Self {
            Self {
                pending: Mutex::new(batches.iter().map(|b| b.to_vec()).collect()),
                processed: Mutex::new(Vec::new()),
                fetches: Mutex::new(0),
                after: Mutex::new(after.to_vec()),
            }
        }
        fn processed(&self) -> Vec<Vec<u32>> {
            self.processed.lock().unwrap().clone()
        }
        fn fetches(&self) -> usize {
            *self.fetches.lock().unwrap()
        }
    }

    #[async_trait]
    impl DataflowJob for Batches {
        type Item = u32;
        async fn fetch(&self, _ctx: &ShardingContext) -> Result<Vec<u32>, JobError> {
            *self.fetches.lock().unwrap() += 1;
            Ok(self.pending.lock().unwrap().pop_front().unwrap_or_default())
        }
        async fn process(&self, ctx: &ShardingContext, data: Vec<u32>) -> Result<(), JobError> {
            let n = {
                let mut processed = self.processed.lock().unwrap();
                processed.push(data);
                processed.len() - 1
            };
            let after = self.after.lock().unwrap().get(n).copied();
            match after.unwrap_or(AfterBatch::Nothing) {
                AfterBatch::Nothing => Ok(()),
                AfterBatch::Cancel => {
                    ctx.cancellation.cancel();
                    Ok(())
                }
                AfterBatch::RaiseResharding => {
                    ctx.resharding.set(true);
                    Ok(())
                }
                AfterBatch::Fail => Err(JobError::failed(format!("batch {n} is bad"))),
            }
        }
    }

    fn context() -> ShardingContext {
        ShardingContext {
            job_name: JobName::new("orders").unwrap(),
            task_id: "orders@-@0@-@NORMAL@-@192.0.2.1@-@1".into(),
            sharding_total_count: 1,
            job_parameter: String::new(),
            sharding_item: ShardItem(0),
            sharding_parameter: String::new(),
            scheduled_at: None,
            workflow_run: None,
            fencing_token: Default::default(),
            source: ExecutionSource::Normal,
            instance_id: InstanceId::parse("192.0.2.1@-@1").unwrap(),
            cancellation: CancellationToken::new(),
            resharding: ReshardingFlag::default(),
            props: Default::default(),
            child_lease: None,
            stop_grace: Default::default(),
            output: None,
        }
    }

    async fn run(adapter: &Dataflow<Batches>) -> Result<(), JobError> {
        adapter.run_item(context()).await
    }

    #[tokio::test]
    async fn one_shot_fetches_once_and_processes_the_batch() {
        let flow = Dataflow::new(Batches::new(&[&[1, 2], &[3]], &[]));
        run(&flow).await.unwrap();
        assert_eq!(flow.job().processed(), vec![vec![1, 2]]);
        assert_eq!(flow.job().fetches(), 1);
    }

    #[tokio::test]
    async fn one_shot_skips_process_when_the_fetch_is_empty() {
        let flow = Dataflow::new(Batches::new(&[], &[]));
        run(&flow).await.unwrap();
        assert!(flow.job().processed().is_empty());
    }

    #[tokio::test]
    async fn streaming_stops_at_the_first_empty_fetch() {
        let flow = Dataflow::streaming(Batches::new(&[&[1], &[2], &[3]], &[]));
        run(&flow).await.unwrap();
        assert_eq!(flow.job().processed(), vec![vec![1], vec![2], vec![3]]);
        assert_eq!(flow.job().fetches(), 4);
    }

    #[tokio::test]
    async fn streaming_stops_after_the_batch_during_which_the_item_was_cancelled() {
        let after = [AfterBatch::Nothing, AfterBatch::Cancel];
        let flow = Dataflow::streaming(Batches::new(&[&[1], &[2], &[3]], &after));
        run(&flow).await.unwrap();
        assert_eq!(flow.job().processed(), vec![vec![1], vec![2]]);
        assert_eq!(flow.job().fetches(), 2);
    }

    #[tokio::test]
    async fn streaming_stops_when_resharding_is_needed() {
        let after = [AfterBatch::RaiseResharding];
        let flow = Dataflow::streaming(Batches::new(&[&[1], &[2]], &after));
        run(&flow).await.unwrap();
        assert_eq!(flow.job().processed(), vec![vec![1]]);
    }

    #[tokio::test]
    async fn a_process_error_stops_streaming_and_fails_the_item() {
        let after = [AfterBatch::Nothing, AfterBatch::Fail];
        let flow = Dataflow::streaming(Batches::new(&[&[1], &[2], &[3]], &after));
        let err = run(&flow).await.unwrap_err();
        assert_eq!(err, JobError::failed("batch 1 is bad"));
        assert_eq!(flow.job().fetches(), 2);
    }

    #[test]
    fn streaming_is_read_from_props_and_a_bad_value_is_refused() {
        let props = |v: &str| BTreeMap::from([(STREAMING_PROP.to_owned(), v.to_owned())]);
        let job = || Batches::new(&[], &[]);
        assert!(!Dataflow::from_props(job(), &BTreeMap::new())
            .unwrap()
            .is_streaming());
        assert!(Dataflow::from_props(job(), &props("true"))
            .unwrap()
            .is_streaming());
        assert!(!Dataflow::from_props(job(), &props("FALSE"))
            .unwrap()
            .is_streaming());
        assert_eq!(
            Dataflow::from_props(job(), &props("yes")).unwrap_err(),
            DataflowError::ReadStreamingProp {
                value: "yes".into()
            }
        );
    }
}
