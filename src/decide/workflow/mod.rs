//! Workflows: jobs that run after other jobs (`shardcron.after`), once per upstream run.
//!
//! | module | decides |
//! | --- | --- |
//! | [`graph`] | the namespace's dependency graph: declarations read from `props`, cycles and self-dependencies refused with their path, dependencies on missing jobs reported |
//! | [`records`] | a job's records of its workflow runs (`shardcron/workflow/{run}@{i}`, `{run}@start`), the runs a downstream starts or skips now, the old runs to delete |
//! | [`view`] | what an operator sees: the graph in layers with each step's newest run, and the runs of a workflow with each step's part (`shardcronctl workflow`, the console) |
//! | [`run`] | one workflow run: when an upstream run has ended (every item's last attempt), and whether a downstream starts, waits (fan-in) or is skipped (the dependency's policy) |

pub mod graph;
pub mod records;
pub mod run;
pub mod view;

#[cfg(test)]
mod records_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod view_tests;
