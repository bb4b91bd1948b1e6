//! The mixed clusters' verdict ([`support::chaos::periodic::tally`]) on made-up runs: what it
//! counts as Java's own behaviour and what as a duplicate. No peer is needed.

use support::chaos::log::{Crash, Run};
use support::chaos::periodic::{tally, Periodic};

fn java(at: f64, item: u32, instance: &str, items: &str) -> Run {
    let ms = (at * 1000.0) as u64;
    Run {
        at,
        instance: instance.to_owned(),
        job: "j".to_owned(),
        item,
        source: "JAVA".to_owned(),
        line: format!("{ms} {item} {instance} java start j@-@{items}@-@READY@-@{instance}"),
    }
}

fn rust(at: f64, item: u32, instance: &str, items: &str) -> Run {
    Run {
        at,
        instance: instance.to_owned(),
        job: "j".to_owned(),
        item,
        source: "READY".to_owned(),
        line: format!("{at} {instance} {{\"taskId\":\"j@-@{items}@-@READY@-@{instance}@-@1\"}}"),
    }
}

/// One task of the Java survivor `s0` starting at `at`: a run of each of `items`.
fn task(at: f64, items: &[u32]) -> Vec<Run> {
    let listed: Vec<String> = items.iter().map(u32::to_string).collect();
    let listed = listed.join(",");
    items.iter().map(|i| java(at, *i, "s0", &listed)).collect()
}

/// A Java survivor `s0` (items 0, 1) and a shardcron victim `v0` (items 2, 3) killed while
/// running the fire at 600, then `after` the survivor's runs following the crash.
fn scenario(after: Vec<Run>) -> support::chaos::periodic::Tally {
    let mut runs = vec![
        java(600.0, 0, "s0", "0,1"),
        java(600.0, 1, "s0", "0,1"),
        rust(600.0, 2, "v0", "2,3"),
        rust(600.0, 3, "v0", "2,3"),
    ];
    runs.extend(after);
    for fire in [606.0, 612.0] {
        runs.push(java(fire, 0, "s0", "0,1,2,3"));
        for item in 1..4 {
            runs.push(java(fire, item, "s0", "0,1,2,3"));
        }
    }
    let p = Periodic {
        job: "j".to_owned(),
        items: 4,
        period: 6,
        run_seconds: 1.5,
        from: 600,
        to: 612,
        windows: Vec::new(),
        crashes: vec![Crash {
            instance: "v0".to_owned(),
            at: 600.8,
            required: true,
        }],
    };
    tally("t", &runs, &p)
}

#[test]
fn a_java_survivors_run_of_its_own_items_after_a_two_item_failover_run_is_javas_left_over_trigger()
{
    let t = scenario([task(604.05, &[2, 3]), task(605.66, &[0, 1])].concat());
    assert!(t.is_clean(), "{t}");
    assert_eq!((t.failover_reruns, t.java_trigger_reruns), (2, 2), "{t}");
}

#[test]
fn a_second_run_of_own_items_after_one_item_failover_runs_is_a_duplicate() {
    let t = scenario([task(604.05, &[2]), task(605.6, &[3]), task(605.7, &[0, 1])].concat());
    assert_eq!(t.duplicates.len(), 2, "{t}");
    assert_eq!(t.java_trigger_reruns, 0, "{t}");
}

#[test]
fn one_left_over_trigger_explains_one_run_not_two() {
    let t = scenario(
        [
            task(604.05, &[2, 3]),
            task(605.6, &[0, 1]),
            task(605.9, &[0, 1]),
        ]
        .concat(),
    );
    assert_eq!((t.java_trigger_reruns, t.duplicates.len()), (2, 2), "{t}");
}
