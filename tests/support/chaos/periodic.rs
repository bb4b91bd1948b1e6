//! The verdict on a job that fires every `period` seconds and whose runs come from instances of
//! both languages ([`tally`]): fires, item runs, duplicates, losses and failover re-runs.
//!
//! The Java peer's log does not say whether a run is a failover re-run, so the verdict counts
//! rather than classifies. Each run belongs to the fire window it started in (`[s, s + period)`,
//! `s` a fire instant). Every item runs once per window; a window without a run of an item is a
//! loss unless a fault window covers it; a second run in a window is a duplicate, except the one
//! re-run of each item a crash interrupted (a run of the crashed instance going at the crash),
//! which must land in the crash's window or the next one. With a period longer than the session
//! timeout plus a run, a re-run cannot be taken for the next fire's run.
//!
//! One more run is Java's own: ElasticJob's failover leader callback (`FailoverService`) claims
//! one crashed item and calls `triggerJob()`, once per item. When a survivor has claimed k items
//! before its triggered run starts, that run takes all k (`getLocalFailoverItems`), and each of the
//! k - 1 triggers left over runs the survivor's own items once more, right after it (its one Quartz
//! thread). Such a run, by a Java survivor, on none of the failover run's items, starting within a
//! run and a second of it, is counted apart ([`Tally::java_trigger_reruns`]), up to k - 1 of them.

use std::collections::BTreeMap;
use std::fmt;

use super::log::{Crash, Run, Window};

/// What a scenario checks.
#[derive(Debug, Clone)]
pub struct Periodic {
    /// The job.
    pub job: String,
    /// Its items.
    pub items: u32,
    /// Seconds between fires (divides 60).
    pub period: u64,
    /// How long a run lasts, in seconds: a run that started less than this before a crash was
    /// interrupted by it.
    pub run_seconds: f64,
    /// The first fire instant checked (unix seconds, a multiple of `period`).
    pub from: u64,
    /// The last fire instant checked.
    pub to: u64,
    /// Where runs may be missing.
    pub windows: Vec<Window>,
    /// Crashes whose interrupted items must be re-run once.
    pub crashes: Vec<Crash>,
}

/// The counts of one scenario.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    /// The scenario.
    pub scenario: String,
    /// Fire windows checked.
    pub fires: usize,
    /// Item runs in them.
    pub item_runs: usize,
    /// Runs beyond one per item and window, not a re-run of an interrupted item: a failure.
    pub duplicates: Vec<String>,
    /// `(fire, item)` without a run outside every fault window: a failure.
    pub losses: Vec<(u64, u32)>,
    /// `(fire, item)` without a run inside a fault window: allowed.
    pub lost_in_window: usize,
    /// Re-runs of interrupted items.
    pub failover_reruns: usize,
    /// Interrupted items never re-run: a failure.
    pub missing_reruns: Vec<String>,
    /// Item runs of a Java survivor's own items that a left-over failover trigger started.
    pub java_trigger_reruns: usize,
}

impl Tally {
    /// Whether nothing was lost, duplicated or left without its re-run.
    pub fn is_clean(&self) -> bool {
        self.duplicates.is_empty() && self.losses.is_empty() && self.missing_reruns.is_empty()
    }

    /// The table row: `| scenario | fires | item runs | duplicates | losses | failover re-runs |`.
    pub fn row(&self) -> String {
        format!(
            "| {} | {} | {} | {} | {} (+{} in fault windows) | {}{} |",
            self.scenario,
            self.fires,
            self.item_runs,
            self.duplicates.len(),
            self.losses.len(),
            self.lost_in_window,
            self.failover_reruns,
            match self.java_trigger_reruns {
                0 => String::new(),
                n => format!(" (+{n} own item runs by Java's trigger per failover item)"),
            }
        )
    }
}

impl fmt::Display for Tally {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} fires={} item_runs={} duplicates={:?} losses={:?} lost_in_window={} \
             failover_reruns={} missing_reruns={:?} java_trigger_reruns={}",
            self.scenario,
            self.fires,
            self.item_runs,
            self.duplicates,
            self.losses,
            self.lost_in_window,
            self.failover_reruns,
            self.missing_reruns,
            self.java_trigger_reruns
        )
    }
}

/// Counts `runs` against `p`.
pub fn tally(scenario: &str, runs: &[Run], p: &Periodic) -> Tally {
    let mut t = Tally {
        scenario: scenario.to_owned(),
        ..Tally::default()
    };
    let fire_of = |at: f64| (at.floor() as u64) / p.period * p.period;
    let mut by_slot: BTreeMap<(u64, u32), Vec<&Run>> = BTreeMap::new();
    for run in runs.iter().filter(|r| r.job == p.job) {
        let fire = fire_of(run.at);
        if (p.from..=p.to).contains(&fire) {
            by_slot.entry((fire, run.item)).or_default().push(run);
        }
    }
    // Each interrupted item is allowed one re-run, in its window or the next. The items of a run
    // are the ones its task id lists: an instance registers them all as running when the run
    // begins, so a crash interrupts every one, logged or not.
    let mut interrupted: BTreeMap<(u64, u32), (f64, String, String)> = BTreeMap::new();
    for crash in p.crashes.iter().filter(|c| c.required) {
        for run in runs
            .iter()
            .filter(|r| r.job == p.job && r.instance == crash.instance)
        {
            if run.at <= crash.at && run.at > crash.at - p.run_seconds {
                for item in task_items(&run.line) {
                    interrupted.entry((fire_of(run.at), item)).or_insert((
                        crash.at,
                        crash.instance.clone(),
                        run.line.clone(),
                    ));
                }
            }
        }
    }
    let mut extra: BTreeMap<(u64, u32), Vec<&Run>> = by_slot
        .iter()
        .filter(|(_, rs)| rs.len() > 1)
        .map(|(slot, rs)| (*slot, rs[1..].to_vec()))
        .collect();
    for ((fire, item), (at, victim, line)) in &interrupted {
        let slot = [(*fire, *item), (*fire + p.period, *item)]
            .into_iter()
            .find(|s| extra.get(s).is_some_and(|e| !e.is_empty()));
        if let Some(s) = slot {
            extra.get_mut(&s).map(Vec::pop);
            t.failover_reruns += 1;
            continue;
        }
        // A re-run alone in its window: the crash came before the interrupted item logged its
        // start, or the re-run went past the window boundary, where the owner leaves a
        // taken-over item to its taker (ElasticJob's take-off).
        let late = runs.iter().any(|r| {
            r.job == p.job
                && r.item == *item
                && r.instance != *victim
                && r.at > *at
                && (fire_of(r.at) == *fire || fire_of(r.at) == fire + p.period)
        });
        if late {
            t.failover_reruns += 1;
        } else {
            t.missing_reruns
                .push(format!("item {item} of the run {line:?}"));
        }
    }
    let mut rest: Vec<&Run> = extra.into_values().flatten().collect();
    rest.sort_by(|a, b| a.at.total_cmp(&b.at));
    let triggered = java_trigger_reruns(runs, p, &interrupted, &rest);
    t.java_trigger_reruns = triggered.len();
    t.duplicates = (rest.iter().enumerate())
        .filter(|(i, _)| !triggered.contains(i))
        .map(|(_, r)| r.line.clone())
        .collect();
    let mut fire = p.from;
    while fire <= p.to {
        t.fires += 1;
        for item in 0..p.items {
            match by_slot.get(&(fire, item)) {
                Some(rs) => t.item_runs += rs.len(),
                None if p.windows.iter().any(|w| covers(w, fire, p.period)) => {
                    t.lost_in_window += 1
                }
                None => t.losses.push((fire, item)),
            }
        }
        fire += p.period;
    }
    t
}

/// The indices in `rest` (the runs left over as duplicates, by start) that ElasticJob's trigger per
/// claimed failover item explains: a later run of a Java survivor's task on none of the items of
/// a failover run it made of k > 1 items, starting within `run_seconds + 1` of it, at most k - 1
/// such tasks per failover run.
fn java_trigger_reruns(
    runs: &[Run],
    p: &Periodic,
    interrupted: &BTreeMap<(u64, u32), (f64, String, String)>,
    rest: &[&Run],
) -> Vec<usize> {
    let fire_of = |at: f64| (at.floor() as u64) / p.period * p.period;
    let was_cut = |at: f64, item: u32| {
        let fire = fire_of(at);
        interrupted.contains_key(&(fire, item))
            || fire
                .checked_sub(p.period)
                .is_some_and(|f| interrupted.contains_key(&(f, item)))
    };
    // A Java failover run: a task of k > 1 items, one of them interrupted, with its k - 1 triggers.
    let mut failovers: Vec<(&Run, Vec<u32>, usize)> = Vec::new();
    for run in runs.iter().filter(|r| r.job == p.job && r.source == "JAVA") {
        let items = task_items(&run.line);
        let first = items.first() == Some(&run.item);
        if first && items.len() > 1 && items.iter().any(|i| was_cut(run.at, *i)) {
            failovers.push((run, items.clone(), items.len() - 1));
        }
    }
    let mut explained = Vec::new();
    // Each extra task (one instance, its items starting within 0.1 s) uses one trigger of the
    // failover run before it.
    let mut tasks: Vec<(String, f64, usize)> = Vec::new();
    for (i, run) in rest.iter().enumerate().filter(|(_, r)| r.source == "JAVA") {
        if let Some((_, _, f)) = tasks
            .iter()
            .find(|(inst, at, _)| *inst == run.instance && (run.at - at).abs() < 0.1)
        {
            if *f != usize::MAX {
                explained.push(i);
            }
            continue;
        }
        let found = failovers.iter().position(|(f, items, left)| {
            f.instance == run.instance
                && *left > 0
                && run.at > f.at
                && run.at <= f.at + p.run_seconds + 1.0
                && !task_items(&run.line).iter().any(|i| items.contains(i))
        });
        match found {
            Some(f) => {
                failovers[f].2 -= 1;
                tasks.push((run.instance.clone(), run.at, f));
                explained.push(i);
            }
            None => tasks.push((run.instance.clone(), run.at, usize::MAX)),
        }
    }
    explained
}

/// Whether a fault window may cost the fire at `fire` (a run of that fire starts in
/// `[fire, fire + period)`).
fn covers(w: &Window, fire: u64, period: u64) -> bool {
    let (start, end) = (fire as f64, (fire + period) as f64);
    end > w.from && start <= w.until
}

/// The items a run's task id lists (`{job}@-@{items}@-@...`), from a shardcron line (JSON
/// context) or a Java line (the task id last).
fn task_items(line: &str) -> Vec<u32> {
    let task = match line.split_once("\"taskId\":\"") {
        Some((_, rest)) => rest.split('"').next().unwrap_or_default(),
        None => line.rsplit(' ').next().unwrap_or_default(),
    };
    task.split("@-@")
        .nth(1)
        .unwrap_or_default()
        .split(',')
        .filter_map(|i| i.parse().ok())
        .collect()
}
