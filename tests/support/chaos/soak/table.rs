//! The end of a soak: its verdicts on the log (the jobs' and the workflow's) and the fault table.

use std::fmt::Write as _;

use super::super::spans::{self, Verdict};
use super::super::workflow::{self, FlowVerdict};
use super::super::{now, SESSION_TIMEOUT};
use super::{checks, Fault, Injected, Settings, Soak, LABELS, STALL_AFTER};

impl Soak {
    /// Waits until the last window closed, checks the log (the jobs, and the workflow), prints
    /// the table (and writes it to `SHARDCRON_SOAK_TABLE` when set), then checks that every node
    /// is up and both jobs converged on all of them. Returns the verdicts and the table.
    pub fn finish(&mut self, settings: &Settings) -> (Verdict, FlowVerdict, String) {
        self.bury_the_dead();
        let last = self.windows.iter().map(|w| w.until).fold(now(), f64::max);
        // Two more seconds of fires, and a fire's run logged.
        let to = last + 2.0;
        super::super::sleep_until(to + 1.5);
        let spans = self.cluster.spans();
        let verdict = spans::check(&spans, &checks(), self.from, to, &self.windows);
        let flow = workflow::check(&spans, &workflow::FLOW, self.from, to, &self.windows);
        let table = self.table(settings, &verdict, &flow, to - self.from);
        // Before any assertion below: a long run's table is what it is run for.
        eprintln!("[soak] fault table\n{table}");
        if let Ok(path) = std::env::var("SHARDCRON_SOAK_TABLE") {
            std::fs::write(&path, &table)
                .unwrap_or_else(|e| panic!("writing the table to {path}: {e}"));
        }
        assert!(
            self.deaths.is_empty(),
            "nodes died during the soak (seed {}):\n{}\n{table}",
            settings.seed,
            self.deaths.join("\n")
        );
        self.converge();
        (verdict, flow, table)
    }

    /// The fault table: faults by kind, item runs, duplicates, overlaps, losses; the workflow's.
    pub fn table(
        &self,
        settings: &Settings,
        verdict: &Verdict,
        flow: &FlowVerdict,
        checked: f64,
    ) -> String {
        let mut t = String::new();
        let _ = writeln!(
            t,
            "soak: seed {} | faults injected for {:?} | {:.0} s of fires checked | {} nodes, \
             3-server ensemble, session timeout {:?}",
            settings.seed,
            settings.duration,
            checked,
            LABELS.len(),
            SESSION_TIMEOUT
        );
        let _ = writeln!(t, "| fault | count | total s |");
        let _ = writeln!(t, "| --- | ---: | ---: |");
        for fault in Fault::ALL {
            let of: Vec<&Injected> = self.injected.iter().filter(|i| i.fault == fault).collect();
            let total: f64 = of.iter().map(|i| i.lasted).sum();
            let _ = writeln!(t, "| {} | {} | {total:.1} |", fault.name(), of.len());
        }
        let _ = writeln!(t, "| all | {} | |", self.injected.len());
        let runs: Vec<String> = verdict
            .runs
            .iter()
            .map(|(source, n)| format!("{source} {n}"))
            .collect();
        let _ = writeln!(
            t,
            "item runs: {} ({}); failovers of interrupted runs: {}, of runs that had ended: {}",
            verdict.runs.values().sum::<usize>(),
            runs.join(", "),
            verdict.failovers_matched,
            verdict.failovers_of_ended.len()
        );
        let _ = writeln!(
            t,
            "(fire, item) checked: {} | duplicates: {} | overlaps: {} | lost outside fault \
             windows: {} | lost inside: {}",
            verdict.expected,
            verdict.duplicates.len(),
            verdict.overlaps.len(),
            verdict.lost.len(),
            verdict.lost_in_window
        );
        let _ = writeln!(t, "{}", flow.summary());
        for stuck in &flow.stuck {
            let _ = writeln!(t, "  {stuck}");
        }
        let _ = writeln!(
            t,
            "track log lines torn by a kill mid-write (skipped): {}",
            self.cluster.torn_lines()
        );
        let _ = writeln!(
            t,
            "ensemble stalls after a fault (no session opened for {STALL_AFTER:?}; a server \
             restarted): {}",
            self.stalls
        );
        let _ = writeln!(t, "nodes that died on their own: {}", self.deaths.len());
        for death in &self.deaths {
            let _ = writeln!(t, "  {}", death.lines().next().unwrap_or_default());
        }
        let _ = writeln!(t, "faults in order:");
        for i in &self.injected {
            let _ = writeln!(
                t,
                "  {:.3} +{:.1} s {} ({})",
                i.at,
                i.lasted,
                i.fault.name(),
                i.target
            );
        }
        t
    }
}
