//! Scenario 5 on ZooKeeper, pushed (issue 31): one node, monitorExecution on, the load raised step
//! by step until it no longer holds. Two shapes: many one-item jobs (a run per item: its own
//! fire, markers and end write) and fewer jobs of many items (a run's markers in one write).
//!
//! A step holds when every item of every second of its window ran, the trigger delay's p99 is
//! under [`P99_BOUND`], and every run's `running` marker was written: the node's sessions applied
//! as many `create`s and `delete`s as items ran (within [`MARKER_SLACK`]: the window's edges cut a
//! write or two). Each step runs on a fresh node and namespace; a shape stops at its first step that
//! does not hold.

use std::time::Duration;

use crate::fleet::Backend;
use crate::report::{dur, Table};
use crate::throughput::{measure, Capture, Window};

/// The trigger delay's p99 a step must stay under.
const P99_BOUND: Duration = Duration::from_millis(500);

/// How far the markers counted in a window may fall short of its executions (a fraction).
const MARKER_SLACK: f64 = 0.01;

/// The steps of the ramp, per shape.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ramp {
    /// Jobs of one item each, one step per count.
    pub(crate) one_item: &'static [usize],
    /// Jobs, and the items per job of each step.
    pub(crate) many_items: (usize, &'static [i32]),
    /// The item executions a second the highest step that holds must reach.
    pub(crate) target: u64,
}

/// What a step measured, and whether it held.
struct Step {
    jobs: usize,
    items: i32,
    window: Window,
    seconds: u64,
}

impl Step {
    fn expected(&self) -> u64 {
        self.jobs as u64 * self.items as u64
    }

    fn executions(&self) -> u64 {
        self.window.per_second.iter().map(|(_, n)| n).sum()
    }

    fn rate(&self) -> f64 {
        self.executions() as f64 / self.seconds as f64
    }

    /// Seconds of the window in which every item ran.
    fn full(&self) -> usize {
        let every = self.expected();
        let seconds = self.window.per_second.iter();
        seconds.filter(|(_, n)| *n == every).count()
    }

    /// Whether the markers counted cover every execution, within the slack.
    fn markers_written(&self) -> bool {
        let floor = self.executions() as f64 * (1.0 - MARKER_SLACK);
        self.window
            .markers
            .is_some_and(|(c, d)| c as f64 >= floor && d as f64 >= floor)
    }

    /// Why the step does not hold, or `None` when it does.
    fn broken(&self) -> Option<String> {
        let w = &self.window;
        let mut why = Vec::new();
        if self.full() < w.per_second.len() {
            why.push("items missed".to_owned());
        }
        if w.delays.p99 >= P99_BOUND {
            why.push(format!("p99 {}", dur(w.delays.p99)));
        }
        if !self.markers_written() {
            why.push("markers missing".to_owned());
        }
        (!why.is_empty()).then(|| why.join(", "))
    }

    fn report(&self, table: &mut Table) {
        let w = &self.window;
        let s = format!(
            "5 ramp, ZooKeeper, monitorExecution on, {} jobs x {} items / s",
            self.jobs, self.items
        );
        let fewest = w.per_second.iter().map(|(_, n)| *n).min().unwrap_or(0);
        table.info(
            &s,
            "item executions / s; seconds in which every item ran",
            format!(
                "{:.0}; {}/{} (fewest {fewest})",
                self.rate(),
                self.full(),
                w.per_second.len()
            ),
        );
        table.info(
            &s,
            &format!("trigger delay p50 / p99 over {} items", w.delays.n),
            format!("{} / {}", dur(w.delays.p50), dur(w.delays.p99)),
        );
        let (created, deleted) = w.markers.unwrap_or_default();
        table.info(
            &s,
            "running markers created / deleted; items run",
            format!("{created} / {deleted}; {}", self.executions()),
        );
        // Per item too: what a step costs whatever else the machine runs meanwhile (on a shared
        // machine a step may miss for want of CPU, not for its own cost).
        let cores = |cpu: Duration| format!("{:.2}", cpu.as_secs_f64() / self.seconds as f64);
        let per_item = |cpu: Duration| {
            let us = cpu.as_secs_f64() * 1e6 / self.executions().max(1) as f64;
            format!("{us:.0}")
        };
        table.info(
            &s,
            "CPU cores: bench process (node) / ZooKeeper; µs per item run",
            format!(
                "{} / {}; {} / {}",
                cores(w.node_cpu),
                w.zk_cpu.map_or("-".into(), cores),
                per_item(w.node_cpu),
                w.zk_cpu.map_or("-".into(), per_item)
            ),
        );
        table.info(&s, "load average (1 min) after the window", w.load.clone());
        table.info(
            &s,
            &format!("holds (every item, p99 < {}, every marker)", dur(P99_BOUND)),
            self.broken()
                .map_or("yes".into(), |why| format!("no: {why}")),
        );
    }
}

/// Runs one shape's steps in turn, each over `seconds` fires, until one does not hold; returns the
/// highest rate that held (0 for none) and the first step measured.
async fn shape(
    steps: impl Iterator<Item = (usize, i32)>,
    seconds: u64,
    table: &mut Table,
) -> (u64, Option<Step>) {
    let mut held = 0;
    let mut first = None;
    for (jobs, items) in steps {
        eprintln!("  ramp step: {jobs} jobs x {items} items / s");
        let zk = crate::server::ZkServer::start();
        let window = measure(
            Backend::Zk(zk.addr()),
            zk.pid(),
            (jobs, items),
            true,
            Capture::Off,
            seconds,
        )
        .await;
        drop(zk);
        let step = Step {
            jobs,
            items,
            window,
            seconds,
        };
        step.report(table);
        let holds = step.broken().is_none();
        if holds {
            held = step.expected();
        }
        if first.is_none() {
            first = Some(step);
        }
        if !holds {
            break;
        }
    }
    (held, first)
}

/// Runs the ramp's two shapes, or only the steps `SHARDCRON_RAMP_STEPS` names (`100x100,2000x1`:
/// jobs x items, to look at one step).
pub(crate) async fn run(ramp: &Ramp, seconds: u64, table: &mut Table) {
    if let Ok(steps) = std::env::var("SHARDCRON_RAMP_STEPS") {
        let steps = steps.split(',').filter_map(|s| {
            let (jobs, items) = s.trim().split_once('x')?;
            Some((jobs.parse().ok()?, items.parse().ok()?))
        });
        let steps: Vec<(usize, i32)> = steps.collect();
        for step in steps {
            shape(std::iter::once(step), seconds, table).await;
        }
        return;
    }
    let one = ramp.one_item.iter().map(|j| (*j, 1));
    let (held, first) = shape(one, seconds, table).await;
    // The first step keeps scenario 5's former target: a thousand one-item jobs, each on time.
    if let Some(first) = first {
        table.check(
            &format!("5 ramp, ZooKeeper, {} one-item jobs / s", first.jobs),
            &format!("trigger delay p99 over {} items", first.window.delays.n),
            dur(first.window.delays.p99),
            "< 50 ms",
            first.window.delays.p99 < Duration::from_millis(50),
        );
    }
    let (jobs, items) = ramp.many_items;
    let many = items.iter().map(|i| (jobs, *i));
    let (held_many, _) = shape(many, seconds, table).await;
    let s = "5 ramp, ZooKeeper, monitorExecution on";
    let figure = |shape: &str| format!("highest step that holds, {shape} (item executions / s)");
    table.info(s, &figure("one-item jobs"), held.to_string());
    table.info(
        s,
        &figure(&format!("{jobs} jobs of many items")),
        held_many.to_string(),
    );
    let best = held.max(held_many);
    table.check(
        s,
        &figure("either shape"),
        best.to_string(),
        &format!(">= {}", ramp.target),
        best >= ramp.target,
    );
}
