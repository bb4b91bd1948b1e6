//! The jobs compiled into the example, known by the `type:` a jobs file gives them:
//!
//! - `demo`: prints the context it receives, as a script job would see it;
//! - `orders`: a simple job that "ships" the orders of the city its item parameter names, and
//!   fails for a city it cannot ship to, so the output shows an error outcome too;
//! - `inventory`: a one-shot dataflow job that fetches a few stock records per item and sums them.

use std::time::Duration;

use async_trait::async_trait;
use shardcron::job::dataflow::DataflowJob;
use shardcron::job::{ItemHandler, JobError, ShardingContext, SimpleJob};

use crate::report::timestamp;

/// The names a jobs file may give as `type:` besides `SCRIPT`.
pub(crate) const COMPILED_TYPES: [&str; 3] = ["demo", "orders", "inventory"];

/// `demo`: prints the item's context as ElasticJob's JSON.
#[derive(Debug)]
pub(crate) struct PrintContext;

#[async_trait]
impl ItemHandler for PrintContext {
    async fn run_item(&self, ctx: ShardingContext) -> Result<(), JobError> {
        println!(
            "{} context job={} item={} instance={} json={}",
            timestamp(),
            ctx.job_name,
            ctx.sharding_item,
            ctx.instance_id,
            ctx.to_json()
        );
        Ok(())
    }
}

/// The city no order ships to: its item fails on every run.
const UNREACHABLE_CITY: &str = "Atlantis";

/// `orders`: ships the orders of the item's city (its `shardingItemParameters` entry).
#[derive(Debug)]
pub(crate) struct Orders;

#[async_trait]
impl SimpleJob for Orders {
    async fn execute(&self, ctx: ShardingContext) -> Result<(), JobError> {
        if ctx.sharding_parameter == UNREACHABLE_CITY {
            return Err(JobError::failed(format!(
                "no orders ship to {UNREACHABLE_CITY}"
            )));
        }
        // Stands in for real work; higher items take a little longer so durations differ.
        let work = Duration::from_millis(20 + 15 * u64::from(ctx.sharding_item.get()));
        tokio::select! {
            _ = tokio::time::sleep(work) => Ok(()),
            _ = ctx.cancelled() => Err(JobError::Cancelled("the item moved to another instance".into())),
        }
    }
}

/// `inventory`: fetches the stock records of the item's warehouse and sums them.
#[derive(Debug)]
pub(crate) struct Inventory;

#[async_trait]
impl DataflowJob for Inventory {
    type Item = u64;

    async fn fetch(&self, ctx: &ShardingContext) -> Result<Vec<u64>, JobError> {
        let warehouse = u64::from(ctx.sharding_item.get());
        Ok((0..3).map(|n| warehouse * 10 + n).collect())
    }

    async fn process(&self, ctx: &ShardingContext, stock: Vec<u64>) -> Result<(), JobError> {
        let total: u64 = stock.iter().sum();
        tracing::info!(job = %ctx.job_name, item = %ctx.sharding_item, total, "stock counted");
        Ok(())
    }
}
