//! Missed fires: which skips drop a fire's work (`shardcron_fires_missed_total`) and which only
//! defer it, and the WARN once per streak.

use super::*;
use crate::config::Overlap;

/// Fires at seconds 1, 2 and 3 while run 1 of items 0 and 1 still runs here: each fire's skip.
fn skips_over_a_run(config: Arc<ValidatedConfig>) -> Vec<(Option<MissReason>, bool)> {
    let mut f = fake();
    let mut m = machine_with(Registration::Confirmed, config);
    started(&mut m, t(0), &f);
    let mut skips = Vec::new();
    for s in 1..4 {
        f.now = t(s);
        for c in m.step(Input::Fire { scheduled: t(s) }, &f) {
            if let Command::Skipped {
                reason,
                missed,
                warn,
                ..
            } = c
            {
                assert_eq!(reason, SkipReason::StillRunning);
                skips.push((missed, warn));
            }
        }
    }
    skips
}

#[test]
fn a_fire_over_a_running_item_is_missed_only_when_the_overlap_policy_drops_it() {
    let missed = Some(MissReason::OverlapSkip);
    type Case = (&'static str, Arc<ValidatedConfig>, Option<MissReason>);
    let cases: [Case; 4] = [
        ("overlap skip", config(|c| c.overlap(Overlap::Skip)), missed),
        ("misfire false", config(|c| c.misfire(false)), missed),
        (
            "buffer_one",
            config(|c| c.misfire(false).overlap(Overlap::BufferOne)),
            None,
        ),
        ("misfire true", config(|c| c.misfire(true)), None),
    ];
    for (name, config, expected) in cases {
        let skips = skips_over_a_run(config);
        let want = vec![(expected, true), (expected, false), (expected, false)];
        assert_eq!(
            skips, want,
            "{name}: missed every time, WARN at the first only"
        );
    }
}

#[test]
fn a_run_that_starts_again_ends_the_streak_so_the_next_miss_warns_again() {
    let mut f = fake();
    let mut m = machine_with(
        Registration::Confirmed,
        config(|c| c.overlap(Overlap::Skip)),
    );
    started(&mut m, t(0), &f);
    let skipped = |warn| {
        skip(
            SkipReason::StillRunning,
            2,
            Some(MissReason::OverlapSkip),
            warn,
        )
    };
    f.now = t(1);
    let out = m.step(Input::Fire { scheduled: t(1) }, &f);
    assert!(out.contains(&skipped(true)), "{out:?}");
    m.step(finished(1, &[]), &f);
    m.step(run_done(1), &f);
    f.now = t(2);
    started(&mut m, t(2), &f);
    f.now = t(3);
    let out = m.step(Input::Fire { scheduled: t(3) }, &f);
    assert!(out.contains(&skipped(true)), "a new streak: {out:?}");
}
