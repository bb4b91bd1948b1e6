//! Item runs as spans: the tracking script logs a run's start, a tick while it runs and its end,
//! and [`check`] finds what a fault test fails on: two runs of one item at once (an overlap), a
//! (fire, item) that ran twice other than by failover (a duplicate), and a fire an item missed
//! outside every fault window (a loss).
//!
//! Failover runs are never duplicates: an instance cut off from the registry may finish a run it
//! cannot report, and the survivors, who cannot tell, run it again (at least once). They are
//! counted apart: re-runs of a run that was interrupted, and re-runs of a run that had ended.
//!
//! The script (`track.sh TICKS SECONDS CONTEXT`) writes one short line per event (short, so that
//! each is one atomic append: a context's task id names every item of the run, 50 KB for a job of
//! 10,000 items), taking the job, the item and the source out of the context:
//!
//! ```text
//! {unix seconds} {instance} S {pid} {job} {item} {source} {run}   the run started
//! {unix seconds} {instance} T {pid}                               it still runs (every SECONDS)
//! {unix seconds} {instance} E {pid}                               it ended on its own (after TICKS ticks)
//! ```
//!
//! `{run}` is the context's `workflowRun` (a workflow step's run, see [`super::workflow`]), `-`
//! outside workflows.
//!
//! A run killed (its item cancelled, its node gone: the script stops at the next tick when its
//! parent is gone) has no `E` line; it ran until its last tick. A process that is stopped writes no
//! tick, so a span only covers time in which the script actually ran.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::Path;

use super::log::whole_lines;

/// The tracking script, for a log at `log`.
pub fn script(log: &Path) -> String {
    format!(
        r#"#!/bin/bash
# track.sh TICKS SECONDS CONTEXT: logs S, a T every SECONDS, E after TICKS ticks;
# stops without E as soon as its node (the parent) is gone.
export LC_ALL=C
log='{log}'
parent=$PPID
[[ $3 =~ \"jobName\":\"([^\"]*)\" ]] && job=${{BASH_REMATCH[1]}}
[[ $3 =~ \"shardingItem\":([0-9]+) ]] && item=${{BASH_REMATCH[1]}}
[[ $3 =~ \"taskId\":\"[^@\"]*@-@[^@\"]*@-@([A-Z_]+)@-@ ]] && source=${{BASH_REMATCH[1]}}
[[ $3 =~ \"workflowRun\":\"([0-9]+)\" ]] && run=${{BASH_REMATCH[1]}}
echo "$EPOCHREALTIME $SHARDCRON_TEST_INSTANCE S $$ ${{job:-?}} ${{item:-?}} ${{source:-?}} ${{run:--}}" >> "$log"
for ((i = 0; i < $1; i++)); do
  sleep "$2"
  kill -0 "$parent" 2>/dev/null || exit 0
  echo "$EPOCHREALTIME $SHARDCRON_TEST_INSTANCE T $$" >> "$log"
done
echo "$EPOCHREALTIME $SHARDCRON_TEST_INSTANCE E $$" >> "$log"
"#,
        log = log.display()
    )
}

/// One item run, from its lines.
#[derive(Debug, Clone)]
pub struct Span {
    /// The instance that ran it.
    pub instance: String,
    /// The job.
    pub job: String,
    /// The item.
    pub item: u32,
    /// `NORMAL`, `FAILOVER`, `MISFIRE`, `WORKFLOW`, from the task id.
    pub source: String,
    /// The workflow run it is a step of (`workflowRun`: the root fire's instant in epoch ms).
    pub run: Option<String>,
    /// When it started, in unix seconds.
    pub start: f64,
    /// When it was last seen running: its end, or its last tick.
    pub last: f64,
    /// Whether it ended on its own (an `E` line).
    pub ended: bool,
    /// Its `S` line, for reports.
    pub line: String,
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} item {} {} on {} {:.3}..{:.3}{}",
            self.job,
            self.item,
            self.source,
            self.instance,
            self.start,
            self.last,
            if self.ended { "" } else { " (interrupted)" }
        )
    }
}

/// Reads every run in `log`, in start order. A line torn by a script killed in the middle of its
/// write (SIGKILL of its node's tree) is skipped; see [`torn_lines`].
pub fn read(log: &Path) -> Vec<Span> {
    let complete = whole_lines(log);
    let mut spans: Vec<Span> = Vec::new();
    // (instance, pid) -> index of its latest start.
    let mut open: HashMap<(String, String), usize> = HashMap::new();
    for line in complete.iter().filter(|l| is_whole(l)) {
        let mut parts = line.splitn(5, ' ');
        let (Some(time), Some(instance), Some(kind), Some(pid)) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            panic!("a track log line has a time, an instance, a kind and a pid: {line:?}")
        };
        let at: f64 = time
            .parse()
            .unwrap_or_else(|e| panic!("the time is $EPOCHREALTIME ({e}): {line:?}"));
        let key = (instance.to_owned(), pid.to_owned());
        match kind {
            "S" => {
                let rest: Vec<&str> = parts.next().unwrap_or_default().split(' ').collect();
                let [job, item, source, run] = rest[..] else {
                    panic!("a start line names a job, an item, a source and a run: {line:?}")
                };
                open.insert(key, spans.len());
                spans.push(Span {
                    instance: instance.to_owned(),
                    job: job.to_owned(),
                    item: item
                        .parse()
                        .unwrap_or_else(|e| panic!("the item is a number ({e}): {line:?}")),
                    source: source.to_owned(),
                    run: (run != "-").then(|| run.to_owned()),
                    start: at,
                    last: at,
                    ended: false,
                    line: line.to_owned(),
                });
            }
            "T" | "E" => {
                if let Some(span) = open.get(&key).map(|i| &mut spans[*i]) {
                    span.last = span.last.max(at);
                    span.ended |= kind == "E";
                }
            }
            other => panic!("unknown track line kind {other:?}: {line:?}"),
        }
    }
    spans.sort_by(|a, b| a.start.total_cmp(&b.start));
    spans
}

/// Whether `line` is one whole track line (a torn one runs two lines into one).
fn is_whole(line: &str) -> bool {
    let parts: Vec<&str> = line.split(' ').collect();
    let number = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit() || b == b'.');
    match parts[..] {
        [time, _, "S", pid, _, item, _, run] => {
            number(time) && number(pid) && number(item) && (run == "-" || number(run))
        }
        [time, _, "T" | "E", pid] => number(time) && number(pid),
        _ => false,
    }
}

/// How many lines of `log` are torn (skipped by [`read`]).
pub fn torn_lines(log: &Path) -> usize {
    whole_lines(log).iter().filter(|l| !is_whole(l)).count()
}

/// A span of time during which a fault may cost fires.
#[derive(Debug, Clone)]
pub struct Window {
    /// What the fault was.
    pub what: String,
    /// When it began, in unix seconds.
    pub from: f64,
    /// The latest instant at which a fire may still be missing.
    pub until: f64,
}

/// One job the verdict checks.
#[derive(Debug, Clone)]
pub struct JobCheck {
    /// The job.
    pub job: String,
    /// Its item count.
    pub items: u32,
    /// Its cron period in seconds (fires at multiples of it).
    pub period: u64,
}

/// What was found.
#[derive(Debug, Clone, Default)]
pub struct Verdict {
    /// Runs by source (`NORMAL`, `FAILOVER`, `MISFIRE`).
    pub runs: BTreeMap<String, usize>,
    /// Failover runs that re-ran an interrupted run.
    pub failovers_matched: usize,
    /// Failover runs of an item none of whose earlier runs was interrupted (the owner finished
    /// but could not say so): allowed, listed for the table.
    pub failovers_of_ended: Vec<String>,
    /// Pairs of runs of one item at once, with how long they overlapped.
    pub overlaps: Vec<String>,
    /// Runs of a (fire, item) beyond the first that no interrupted run explains.
    pub duplicates: Vec<String>,
    /// (job, fire, item) missed inside a fault window: allowed.
    pub lost_in_window: usize,
    /// (job, fire, item) missed outside every fault window.
    pub lost: Vec<String>,
    /// (job, fire, item) checked.
    pub expected: usize,
}

impl Verdict {
    /// Whether nothing overlapped, ran twice or went missing outside a window.
    pub fn is_clean(&self) -> bool {
        self.overlaps.is_empty() && self.duplicates.is_empty() && self.lost.is_empty()
    }
}

/// Checks `spans` of `jobs` over the fires in `from..=to` (unix seconds).
pub fn check(spans: &[Span], jobs: &[JobCheck], from: f64, to: f64, windows: &[Window]) -> Verdict {
    let mut verdict = Verdict::default();
    for job in jobs {
        let mine: Vec<&Span> = spans.iter().filter(|s| s.job == job.job).collect();
        for span in &mine {
            *verdict.runs.entry(span.source.clone()).or_default() += 1;
        }
        overlaps(&mine, &mut verdict);
        duplicates(&mine, job, &mut verdict);
        losses(&mine, job, from, to, windows, &mut verdict);
    }
    verdict
}

/// Runs of one item whose spans intersect (in start order, each against the longest before it).
pub fn overlaps(spans: &[&Span], verdict: &mut Verdict) {
    let mut by_item: BTreeMap<u32, Vec<&Span>> = BTreeMap::new();
    for span in spans {
        by_item.entry(span.item).or_default().push(span);
    }
    for runs in by_item.values() {
        let mut reach: Option<&Span> = None;
        for run in runs {
            if let Some(before) = reach.filter(|b| b.last > run.start) {
                verdict.overlaps.push(format!(
                    "{:.0} ms: {before} / {run}",
                    (before.last.min(run.last) - run.start) * 1000.0
                ));
            }
            if reach.is_none_or(|b| run.last > b.last) {
                reach = Some(run);
            }
        }
    }
}

/// Normal runs beyond the first per (fire, item); failover runs sorted into re-runs of an
/// interrupted run (each explains one failover run that started after it) and the others.
fn duplicates(spans: &[&Span], job: &JobCheck, verdict: &mut Verdict) {
    let fire = |s: &Span| (s.start as u64) / job.period * job.period;
    let mut normal: BTreeMap<(u64, u32), Vec<&Span>> = BTreeMap::new();
    for span in spans.iter().filter(|s| s.source == "NORMAL") {
        normal
            .entry((fire(span), span.item))
            .or_default()
            .push(span);
    }
    for ((at, item), runs) in &normal {
        for extra in runs.iter().skip(1) {
            verdict.duplicates.push(format!(
                "fire {at} item {item} ran again: {extra} (first: {})",
                runs[0]
            ));
        }
    }
    // Interrupted runs not yet explaining a failover, per item, in start order.
    let mut interrupted: BTreeMap<u32, Vec<&Span>> = BTreeMap::new();
    for span in spans {
        if span.source == "FAILOVER" {
            let pool = interrupted.entry(span.item).or_default();
            if let Some(i) = pool.iter().position(|r| r.start < span.start) {
                pool.remove(i);
                verdict.failovers_matched += 1;
            } else {
                verdict.failovers_of_ended.push(span.to_string());
            }
        }
        if !span.ended {
            interrupted.entry(span.item).or_default().push(span);
        }
    }
}

/// Fires in `from..=to` at which an item did not start a normal run.
fn losses(
    spans: &[&Span],
    job: &JobCheck,
    from: f64,
    to: f64,
    windows: &[Window],
    verdict: &mut Verdict,
) {
    let fire = |s: &Span| (s.start as u64) / job.period * job.period;
    let ran: std::collections::BTreeSet<(u64, u32)> = spans
        .iter()
        .filter(|s| s.source == "NORMAL")
        .map(|s| (fire(s), s.item))
        .collect();
    let first = (from.ceil() as u64).div_ceil(job.period) * job.period;
    let mut at = first;
    while (at as f64) <= to {
        // A fire is missed by a fault that began before the fire's period ended.
        let covered = windows
            .iter()
            .any(|w| w.from < (at + job.period) as f64 && at as f64 <= w.until);
        for item in 0..job.items {
            verdict.expected += 1;
            if ran.contains(&(at, item)) {
                continue;
            }
            if covered {
                verdict.lost_in_window += 1;
            } else {
                verdict
                    .lost
                    .push(format!("{} fire {at} item {item}", job.job));
            }
        }
        at += job.period;
    }
}
