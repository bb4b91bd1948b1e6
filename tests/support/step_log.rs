//! Workflow steps as example node processes see them: a script that logs the start and the end of
//! every item run to a file of its job, and the reading of that log by workflow run and item. A
//! test holds an instance's runs at their start by creating `hold-{instance label}` beside the
//! scripts ([`hold`]), and lets them end by removing it ([`release`]).
//!
//! ```text
//!   {ns since the epoch} start {label} {context JSON}
//!   {ns since the epoch} held  {label} {context JSON}    (only while a hold file was there)
//!   {ns since the epoch} end   {label} {context JSON}
//! ```
//!
//! `{label}` is the node's `SHARDCRON_TEST_INSTANCE`; the context's `workflowRun` names the
//! workflow run (the root fire's instant in epoch ms), which every step of the run shares. Lines
//! of runs outside any workflow (a root's fires before a downstream registered) are left out.

use super::chaos::log::whole_lines;
use super::jobs_file::write_script;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One line a script wrote.
#[derive(Debug, Clone)]
pub struct Line {
    /// The wall clock when it was written, in ns since the epoch.
    pub at: u128,
    /// `start`, `held` or `end`.
    pub phase: String,
    /// The label of the node that ran it.
    pub instance: String,
    /// The item.
    pub item: u64,
    /// The workflow run (`workflowRun`).
    pub run: String,
}

/// Every whole line of `log` (one being appended is left for the next read).
pub fn lines(log: &Path) -> Vec<Line> {
    (whole_lines(log).iter())
        .filter_map(|l| {
            let mut words = l.splitn(4, ' ');
            let at = words.next()?.parse().ok()?;
            let phase = words.next()?.to_owned();
            let instance = words.next()?.to_owned();
            let ctx: serde_json::Value = serde_json::from_str(words.next()?).ok()?;
            Some(Line {
                at,
                phase,
                instance,
                item: ctx["shardingItem"].as_u64()?,
                run: ctx["workflowRun"].as_str()?.to_owned(),
            })
        })
        .collect()
}

/// Writes `{dir}/{name}.sh`: a `start` line, a wait while `{dir}/hold-{label}` exists (with a
/// `held` line first), `work` seconds of work, an `end` line, all to `log`. Returns its path.
pub fn script(dir: &Path, name: &str, log: &Path, work: f64) -> PathBuf {
    let path = dir.join(format!("{name}.sh"));
    let line = |phase: &str| {
        format!(
            "printf '%s {phase} %s %s\\n' \"$(date +%s%N)\" \"$SHARDCRON_TEST_INSTANCE\" \"$1\" >> '{}'\n",
            log.display()
        )
    };
    let hold = format!("{}/hold-$SHARDCRON_TEST_INSTANCE", dir.display());
    write_script(
        &path,
        &format!(
            "#!/bin/sh\n{start}if [ -e \"{hold}\" ]; then\n{held}  while [ -e \"{hold}\" ]; do \
             sleep 0.02; done\nfi\nsleep {work}\n{end}",
            start = line("start"),
            held = line("held"),
            end = line("end"),
        ),
    );
    path
}

/// Holds the runs that the node labelled `label` starts from now on, at their start.
pub fn hold(dir: &Path, label: &str) {
    std::fs::write(dir.join(format!("hold-{label}")), "").expect("writing a hold file");
}

/// Lets the held runs of the node labelled `label` go on.
pub fn release(dir: &Path, label: &str) {
    std::fs::remove_file(dir.join(format!("hold-{label}"))).expect("removing a hold file");
}

/// The lines of `phase` by (workflow run, item).
pub fn by_run(lines: &[Line], phase: &str) -> BTreeMap<(String, u64), Vec<Line>> {
    let mut map: BTreeMap<(String, u64), Vec<Line>> = BTreeMap::new();
    for l in lines.iter().filter(|l| l.phase == phase) {
        map.entry((l.run.clone(), l.item))
            .or_default()
            .push(l.clone());
    }
    map
}
