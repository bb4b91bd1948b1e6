//! The seeded randomized fault test (issue 17): a real three-server ZooKeeper ensemble, four
//! example nodes as processes each behind proxies of its own, and faults drawn from a seed (see
//! `tests/support/chaos/soak.rs`). Fails on any overlap (one item running on two instances at
//! once), any non-failover duplicate of a (fire, item), and any fire lost outside a fault window;
//! and, for the workflow among the jobs (`tests/support/chaos/workflow.rs`), on a step that ran
//! other than once per completed root run (twice, early, for a root run that did not complete,
//! or not at all outside a fault window). Prints the seed and the fault table.
//!
//! `SHARDCRON_SOAK_SEED=N` replays a seed; `SHARDCRON_SOAK_SECONDS=S` sets how long faults are
//! injected (CI: 45 s, about two minutes in all); `scripts/soak --minutes M --seed N` runs it
//! longer.

#[macro_use]
extern crate support;

use support::Peer;

use support::chaos;

use std::time::Duration;

use chaos::soak::{Settings, Soak};

/// Fault time in CI: with the ensemble's start, the last fault's healing, its window and the
/// final checks, the test takes about two minutes (1:40 to 2:25 measured on 2 cores).
const CI_FAULT_TIME: Duration = Duration::from_secs(45);

#[test]
fn randomized_faults_on_an_ensemble_cause_no_overlap_no_duplicate_and_no_loss_outside_fault_windows(
) {
    require!(Peer::ZooKeeper);
    let settings = Settings::from_env(CI_FAULT_TIME);
    eprintln!(
        "[soak] seed {} (replay with SHARDCRON_SOAK_SEED={}), faults for {:?}",
        settings.seed, settings.seed, settings.duration
    );
    let mut soak = Soak::start(settings.seed, "soak");
    soak.run(settings.duration);
    let (verdict, flow, table) = soak.finish(&settings);
    assert!(
        verdict.is_clean() && flow.is_clean(),
        "seed {}: overlaps {:#?}\nduplicates {:#?}\nlost outside fault windows {:#?}\nworkflow \
         {flow:#?}\n{table}\n{}",
        settings.seed,
        verdict.overlaps,
        verdict.duplicates,
        verdict.lost,
        soak.cluster.dump()
    );
}

/// The workflow verdict on a hand-made log: a duplicate, a loss outside and one inside a window,
/// an early step run and a step run of a root run that did not complete are each found, and a
/// failover re-run is no duplicate (a unit test of the support code, run in this binary only).
mod workflow_verdict {
    use super::chaos::spans::{Span, Window};
    use super::chaos::workflow::{check, FlowCheck};

    fn span(job: &str, item: u32, source: &str, run: u64, at: (f64, f64), ended: bool) -> Span {
        Span {
            instance: "a".into(),
            job: job.into(),
            item,
            source: source.into(),
            run: Some((run * 1000).to_string()),
            start: at.0,
            last: at.1,
            ended,
            line: String::new(),
        }
    }

    #[test]
    fn duplicates_losses_early_and_stray_step_runs_are_found() {
        let flow = FlowCheck {
            root: "r",
            root_items: 2,
            period: 5,
            step: "s",
            step_items: 1,
        };
        let mut spans = Vec::new();
        for fire in [10, 15, 20, 25] {
            let t = fire as f64;
            spans.push(span("r", 0, "NORMAL", fire, (t, t + 1.0), true));
            let last = if fire == 25 { t + 1.5 } else { t + 1.0 };
            spans.push(span("r", 1, "NORMAL", fire, (t, last), true));
        }
        spans.push(span("r", 0, "NORMAL", 30, (30.0, 31.0), true));
        spans.push(span("r", 1, "NORMAL", 30, (30.0, 30.4), false));
        spans.extend([
            span("s", 0, "WORKFLOW", 10, (11.2, 11.4), true),
            span("s", 0, "WORKFLOW", 10, (11.5, 11.7), true),
            span("s", 0, "FAILOVER", 10, (12.0, 12.2), true),
            span("s", 0, "WORKFLOW", 25, (26.2, 26.4), true),
            span("s", 0, "WORKFLOW", 30, (31.2, 31.4), true),
        ]);
        let window = Window {
            what: "a fault".into(),
            from: 20.5,
            until: 22.0,
        };
        let v = check(&spans, &flow, 10.0, 32.0, &[window]);
        assert_eq!(
            (v.runs, v.completed),
            (5, 4),
            "fires 10 to 30, 30 incomplete"
        );
        assert_eq!(v.duplicates.len(), 1, "{:?}", v.duplicates);
        assert_eq!(v.lost.len(), 1, "run 15: {:?}", v.lost);
        assert_eq!(v.lost_in_window, 1, "run 20");
        assert_eq!(v.early.len(), 1, "run 25: {:?}", v.early);
        assert_eq!(v.stray.len(), 1, "run 30: {:?}", v.stray);
        assert!(v.overlaps.is_empty(), "{:?}", v.overlaps);
        assert_eq!(v.step_runs.get("FAILOVER"), Some(&1));
        assert!(!v.is_clean());
    }
}
