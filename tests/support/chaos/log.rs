//! The script's log and its verdict: which fires every item ran at, which it missed, which it ran
//! twice, and whether the failover re-runs were exactly the runs a crash interrupted.
//!
//! The script writes one line per item when it starts: `{date +%s.%N} {instance} {context JSON}`.
//! Items start within milliseconds of their fire, so the whole second a normal run started in is
//! its fire. A failover re-run starts later and names its source in the task id
//! (`{job}@-@{items}@-@FAILOVER@-@{instance}@-@{run}`).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::Path;
use std::time::Duration;

use crate::wait::{wait_until_blocking, Later};

/// How long one run of the script lasts: a run that started less than this before a crash was
/// still running when the crash came.
pub const RUN_SECONDS: f64 = 0.5;

/// One item run, as the script logged it.
#[derive(Debug, Clone)]
pub struct Run {
    /// When the script started, in unix seconds.
    pub at: f64,
    /// The instance that ran it.
    pub instance: String,
    /// The job.
    pub job: String,
    /// The item.
    pub item: u32,
    /// `NORMAL`, `FAILOVER`, `MISFIRE`, ... from the task id.
    pub source: String,
    /// The line, for failure messages.
    pub line: String,
}

impl Run {
    /// The fire second of a normal run.
    pub fn second(&self) -> u64 {
        self.at.floor() as u64
    }
}

/// Every whole line of the log a process appends to at `log` (none if it is missing): a line
/// being appended right now has no newline yet, and is left for the next read.
pub fn whole_lines(log: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let complete = text.rsplit_once('\n').map_or("", |(done, _)| done);
    complete.lines().map(str::to_owned).collect()
}

/// Reads every run in `log`; a line that does not parse fails the test.
pub fn read_runs(log: &Path) -> Vec<Run> {
    whole_lines(log).iter().map(|l| parse_line(l)).collect()
}

fn parse_line(line: &str) -> Run {
    let mut parts = line.splitn(3, ' ');
    let (Some(time), Some(instance), Some(json)) = (parts.next(), parts.next(), parts.next())
    else {
        panic!("a script log line has a time, an instance and a context: {line:?}")
    };
    let ctx: serde_json::Value = serde_json::from_str(json)
        .unwrap_or_else(|e| panic!("the context is JSON ({e}): {line:?}"));
    let task_id = ctx["taskId"].as_str().expect("the context has a taskId");
    Run {
        at: time.parse().expect("the time is `date +%s.%N`"),
        instance: instance.to_owned(),
        job: ctx["jobName"].as_str().unwrap_or_default().to_owned(),
        item: ctx["shardingItem"]
            .as_u64()
            .and_then(|i| u32::try_from(i).ok())
            .expect("the context has a shardingItem"),
        source: task_id.split("@-@").nth(2).unwrap_or_default().to_owned(),
        line: line.to_owned(),
    }
}

/// A span of time, in unix seconds, during which a fault may cost fires.
#[derive(Debug, Clone)]
pub struct Window {
    /// What the fault was, for the report.
    pub what: String,
    /// When it began.
    pub from: f64,
    /// The latest instant at which a fire may still be missing.
    pub until: f64,
}

impl Window {
    fn covers(&self, second: u64) -> bool {
        let s = second as f64;
        // A fire at second s is missed by a fault that began before s + 1.
        s + 1.0 > self.from && s <= self.until
    }
}

/// An instance that died (or froze) abruptly: the items it was running then must be re-run once.
#[derive(Debug, Clone)]
pub struct Crash {
    /// The instance.
    pub instance: String,
    /// When it happened, in unix seconds.
    pub at: f64,
    /// Whether its interrupted items must be re-run (a crash the cluster sees for sure), or only
    /// may be, at most once (a session that may or may not have expired).
    pub required: bool,
}

/// What a scenario expects of one job's log.
#[derive(Debug, Clone)]
pub struct Expect {
    /// The job.
    pub job: String,
    /// Its item count.
    pub items: u32,
    /// The first fire second checked.
    pub from: u64,
    /// The last fire second checked.
    pub to: u64,
    /// Where fires may be missing.
    pub windows: Vec<Window>,
    /// Crashes whose running items must be re-run exactly once.
    pub crashes: Vec<Crash>,
}

/// The verdict on one job's log.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// The job.
    pub job: String,
    /// Fires × items checked.
    pub expected: usize,
    /// Of those, how many ran.
    pub executed: usize,
    /// `(second, item)` missing inside a fault window, allowed.
    pub lost_in_window: Vec<(u64, u32)>,
    /// `(second, item)` missing outside every window: a failure.
    pub lost: Vec<(u64, u32)>,
    /// Normal runs of one item in one fire beyond the first: a failure.
    pub duplicated: Vec<String>,
    /// Failover re-runs of items a crash interrupted, one each: allowed.
    pub reruns: Vec<String>,
    /// Failover re-runs that re-ran nothing a crash interrupted, or re-ran it twice: a failure.
    pub bad_reruns: Vec<String>,
    /// Items a crash interrupted that were never re-run: a failure.
    pub missing_reruns: Vec<String>,
    /// Per window: seconds from the fault to the first fire after which no item was missing.
    pub recovery: Vec<(String, f64)>,
}

impl Report {
    /// Whether nothing was lost, duplicated or re-run wrongly.
    pub fn is_clean(&self) -> bool {
        self.lost.is_empty()
            && self.duplicated.is_empty()
            && self.bad_reruns.is_empty()
            && self.missing_reruns.is_empty()
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "job={} expected={} executed={} lost_in_window={} lost={:?} duplicated={:?} \
             reruns={:?} bad_reruns={:?} missing_reruns={:?} recovery={:?}",
            self.job,
            self.expected,
            self.executed,
            self.lost_in_window.len(),
            self.lost,
            self.duplicated,
            self.reruns,
            self.bad_reruns,
            self.missing_reruns,
            self.recovery
        )
    }
}

/// Checks `runs` against `expect`.
pub fn check(runs: &[Run], expect: &Expect) -> Report {
    let runs: Vec<&Run> = runs.iter().filter(|r| r.job == expect.job).collect();
    let mut report = Report {
        job: expect.job.clone(),
        ..Report::default()
    };
    let mut normal: BTreeMap<(u64, u32), Vec<&Run>> = BTreeMap::new();
    for run in runs.iter().filter(|r| r.source == "NORMAL") {
        normal
            .entry((run.second(), run.item))
            .or_default()
            .push(run);
    }
    for second in expect.from..=expect.to {
        for item in 0..expect.items {
            report.expected += 1;
            if normal.contains_key(&(second, item)) {
                report.executed += 1;
            } else if expect.windows.iter().any(|w| w.covers(second)) {
                report.lost_in_window.push((second, item));
            } else {
                report.lost.push((second, item));
            }
        }
    }
    for runs in normal.values().filter(|runs| runs.len() > 1) {
        report
            .duplicated
            .extend(runs.iter().skip(1).map(|r| r.line.clone()));
    }
    // Items a crash interrupted: the crashed instance's normal runs still going at the crash.
    let mut interrupted: BTreeSet<u32> = BTreeSet::new();
    let mut required: BTreeSet<u32> = BTreeSet::new();
    for crash in &expect.crashes {
        let items: Vec<u32> = runs
            .iter()
            .filter(|r| r.source == "NORMAL" && r.instance == crash.instance)
            .filter(|r| r.at <= crash.at && r.at > crash.at - RUN_SECONDS)
            .map(|r| r.item)
            .collect();
        if crash.required {
            required.extend(items.iter().copied());
        }
        interrupted.extend(
            runs.iter()
                .filter(|r| r.source == "NORMAL" && r.instance == crash.instance)
                .filter(|r| r.at <= crash.at && r.at > crash.at - RUN_SECONDS)
                .map(|r| r.item),
        );
    }
    let mut rerun: BTreeMap<u32, Vec<&Run>> = BTreeMap::new();
    for run in runs.iter().filter(|r| r.source == "FAILOVER") {
        rerun.entry(run.item).or_default().push(run);
    }
    for (item, runs) in &rerun {
        let allowed = usize::from(interrupted.contains(item));
        report
            .reruns
            .extend(runs.iter().take(allowed).map(|r| r.line.clone()));
        report
            .bad_reruns
            .extend(runs.iter().skip(allowed).map(|r| r.line.clone()));
    }
    report.missing_reruns = required
        .iter()
        .filter(|i| !rerun.contains_key(i))
        .map(|i| format!("item {i}"))
        .collect();
    for window in &expect.windows {
        let last_lost = report
            .lost_in_window
            .iter()
            .chain(&report.lost)
            .map(|(second, _)| *second)
            .filter(|s| window.covers(*s))
            .max();
        let recovered = last_lost.map_or(0.0, |s| (s + 1) as f64 - window.from);
        report
            .recovery
            .push((window.what.clone(), recovered.max(0.0)));
    }
    report
}

/// Polls `runs` until `pred` holds on them; fails naming `what`, with `dump` (the processes'
/// output) as the last state seen.
pub fn wait_runs<T>(
    runs: impl Fn() -> Vec<Run>,
    dump: impl Fn() -> String,
    what: &str,
    within: Duration,
    mut pred: impl FnMut(&[Run]) -> Option<T>,
) -> T {
    let check = || pred(&runs()).ok_or(Later(&dump));
    wait_until_blocking(check, what, within)
}
