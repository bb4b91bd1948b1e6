//! The one table the bench prints: a row per figure, with its target and whether it was met, and the
//! order statistics every delay figure is built from.

use std::fmt::Write as _;
use std::time::Duration;

/// One figure of one scenario.
#[derive(Debug, Clone)]
pub(crate) struct Row {
    scenario: String,
    figure: String,
    value: String,
    target: String,
    /// `None` for figures that are reported without a target.
    met: Option<bool>,
}

/// The rows so far, printed once at the end (scenarios also print each row as it comes, so a
/// slow run shows progress).
#[derive(Debug, Default)]
pub(crate) struct Table {
    rows: Vec<Row>,
}

impl Table {
    /// Adds a figure with a target.
    pub(crate) fn check(
        &mut self,
        scenario: &str,
        figure: &str,
        value: String,
        target: &str,
        met: bool,
    ) {
        self.push(scenario, figure, value, target, Some(met));
    }

    /// Adds a figure reported without a target.
    pub(crate) fn info(&mut self, scenario: &str, figure: &str, value: String) {
        self.push(scenario, figure, value, "", None);
    }

    fn push(
        &mut self,
        scenario: &str,
        figure: &str,
        value: String,
        target: &str,
        met: Option<bool>,
    ) {
        let row = Row {
            scenario: scenario.to_owned(),
            figure: figure.to_owned(),
            value,
            target: target.to_owned(),
            met,
        };
        eprintln!(
            "  {} | {} | {} | {} | {}",
            row.scenario,
            row.figure,
            row.value,
            row.target,
            mark(row.met)
        );
        self.rows.push(row);
    }

    /// Figures whose target was missed.
    pub(crate) fn missed(&self) -> usize {
        self.rows.iter().filter(|r| r.met == Some(false)).count()
    }

    /// The table as Markdown, so it can be pasted into `benches/README.md` as is.
    pub(crate) fn render(&self) -> String {
        let header = ["scenario", "figure", "value", "target", "met?"];
        let cells: Vec<[String; 5]> = self
            .rows
            .iter()
            .map(|r| {
                [
                    r.scenario.clone(),
                    r.figure.clone(),
                    r.value.clone(),
                    r.target.clone(),
                    mark(r.met).to_owned(),
                ]
            })
            .collect();
        let mut width = header.map(str::len);
        for row in &cells {
            for (w, c) in width.iter_mut().zip(row) {
                *w = (*w).max(c.chars().count());
            }
        }
        let mut out = String::new();
        let line = |out: &mut String, row: &[String]| {
            out.push('|');
            for (c, w) in row.iter().zip(width) {
                let _ = write!(out, " {c}{} |", " ".repeat(w - c.chars().count()));
            }
            out.push('\n');
        };
        line(&mut out, &header.map(str::to_owned));
        line(&mut out, &width.map(|w| "-".repeat(w)));
        for row in &cells {
            line(&mut out, row);
        }
        out
    }
}

fn mark(met: Option<bool>) -> &'static str {
    match met {
        Some(true) => "yes",
        Some(false) => "NO",
        None => "-",
    }
}

/// Order statistics of a sample of durations in microseconds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stats {
    /// How many samples.
    pub(crate) n: usize,
    /// Median.
    pub(crate) p50: Duration,
    /// 99th percentile (nearest rank).
    pub(crate) p99: Duration,
    /// Largest.
    pub(crate) max: Duration,
}

impl Stats {
    /// Statistics of `micros` (sorted here). An empty sample gives zeros with `n == 0`.
    pub(crate) fn of(mut micros: Vec<u64>) -> Stats {
        micros.sort_unstable();
        let rank = |p: f64| -> Duration {
            if micros.is_empty() {
                return Duration::ZERO;
            }
            // Nearest rank: the smallest sample at or above the p-th fraction.
            let i = ((p * micros.len() as f64).ceil() as usize).clamp(1, micros.len()) - 1;
            Duration::from_micros(micros[i])
        };
        Stats {
            n: micros.len(),
            p50: rank(0.50),
            p99: rank(0.99),
            max: micros
                .last()
                .map_or(Duration::ZERO, |m| Duration::from_micros(*m)),
        }
    }
}

/// A duration with a unit that fits it (`0.42 ms`, `2.31 s`).
pub(crate) fn dur(d: Duration) -> String {
    if d < Duration::from_millis(1) {
        format!("{} µs", d.as_micros())
    } else if d < Duration::from_secs(1) {
        format!("{:.2} ms", d.as_secs_f64() * 1e3)
    } else {
        format!("{:.2} s", d.as_secs_f64())
    }
}
