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
}

impl Tally {
    /// Whether nothing was lost, duplicated or left without its re-run.
    pub fn is_clean(&self) -> bool {
        self.duplicates.is_empty() && self.losses.is_empty() && self.missing_reruns.is_empty()
    }

    /// The table row: `| scenario | fires | item runs | duplicates | losses | failover re-runs |`.
    pub fn row(&self) -> String {
        format!(
            "| {} | {} | {} | {} | {} (+{} in fault windows) | {} |",
            self.scenario,
            self.fires,
            self.item_runs,
            self.duplicates.len(),
            self.losses.len(),
            self.lost_in_window,
            self.failover_reruns
        )
    }
}

impl fmt::Display for Tally {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} fires={} item_runs={} duplicates={:?} losses={:?} lost_in_window={} \
             failover_reruns={} missing_reruns={:?}",
            self.scenario,
            self.fires,
            self.item_runs,
            self.duplicates,
            self.losses,
            self.lost_in_window,
            self.failover_reruns,
            self.missing_reruns
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
    t.duplicates = extra.values().flatten().map(|r| r.line.clone()).collect();
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
