//! Scenario 6: shardcron beside tokio-cron-scheduler, one node, the same handler, the same jobs
//! (N one-item jobs every 10 s, spread over the ten seconds). Each system runs in a child process
//! of its own, so resident memory is that system's alone. shardcron runs on the embedded registry
//! with monitorExecution off: tokio-cron-scheduler keeps no registry either.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_cron_scheduler::{Job, JobScheduler};

use crate::child::{self, Results};
use crate::fleet::{self, Backend};
use crate::probe::{self, DelayLog};
use crate::report::{dur, Table};

const PERIOD: i64 = 10;

/// The child: starts `jobs` jobs on `system`, waits until they are ready to fire (for shardcron:
/// registered and sharded), measures `seconds` of fires after one second of warm-up, prints one
/// `result` line.
pub(crate) async fn child(system: &str, jobs: usize, seconds: u64) {
    let log = Arc::new(DelayLog::default());
    let started = Instant::now();
    // Kept alive until the figures are taken.
    let mut _node = None;
    let mut _scheduler = None;
    let registered: Duration;
    match system {
        "shardcron" => {
            let c =
                Backend::Embedded(Default::default()).connector("versus", Duration::from_secs(10));
            let names: Vec<String> = (0..jobs).map(|i| format!("v-{i}")).collect();
            let configs = names
                .iter()
                .enumerate()
                .map(|(i, n)| {
                    let offset = i as i64 % PERIOD;
                    let cron = format!("{offset}/{PERIOD} * * * * ?");
                    (
                        fleet::job(n, 1, &cron, false),
                        probe::delay_handler(log.clone(), PERIOD, offset),
                    )
                })
                .collect();
            let node = fleet::start_node(c.connector, fleet::instance(1), configs).await;
            assert!(fleet::wait_registered(&node, &names, Duration::from_secs(120)).await);
            registered = started.elapsed();
            // Delays are measured in steady operation, as for tokio-cron-scheduler: a job fires
            // on time once its first sharding is committed (a fire before waits for it).
            assert!(fleet::wait_sharded(&node, &names, Duration::from_secs(120)).await);
            _node = Some(node);
        }
        "tokio-cron-scheduler" => {
            let scheduler = JobScheduler::new().await.expect("a scheduler");
            for i in 0..jobs {
                let offset = i as i64 % PERIOD;
                let log = log.clone();
                let job = Job::new_async(format!("{offset}/{PERIOD} * * * * *"), move |_, _| {
                    let log = log.clone();
                    Box::pin(async move { log.record(chrono::Utc::now(), PERIOD, offset) })
                })
                .expect("a valid cron");
                scheduler.add(job).await.expect("adding a job");
            }
            scheduler.start().await.expect("starting the scheduler");
            registered = started.elapsed();
            _scheduler = Some(scheduler);
        }
        other => panic!("unknown system {other}"),
    }
    let ready = started.elapsed();
    // The window is a span of scheduled instants, not of arrival times: an instant's executions
    // all count or none do, however late they arrive (a window of arrival times starting on a
    // whole second counted that second's hundred fires or not, by a millisecond's race).
    let t0 = probe::next_instant(1, 0);
    let from = t0.timestamp() + 1;
    let to = from + seconds as i64;
    // One more second for the last instants' late executions.
    probe::sleep_until_wall(t0, Duration::from_millis(2000 + 1000 * seconds)).await;
    let delays = crate::report::Stats::of(log.delays_between(from, to));
    let mut r = Results::default();
    r.put("register_us", registered.as_micros() as u64);
    r.put("ready_us", ready.as_micros() as u64);
    r.put("fires", delays.n as u64);
    r.put("p50_us", delays.p50.as_micros() as u64);
    r.put("p99_us", delays.p99.as_micros() as u64);
    r.put("rss_kib", probe::status_field("VmRSS"));
    probe::put_heap(&mut r);
    r.put("threads", probe::status_field("Threads"));
    r.print();
    std::process::exit(0);
}

/// Runs scenario 6 at each job count of `counts`, measuring `seconds` of fires.
pub(crate) fn run(counts: &[usize], seconds: u64, table: &mut Table) {
    for &jobs in counts {
        for system in ["shardcron", "tokio-cron-scheduler"] {
            let r = child::run(&[
                "versus",
                &format!("system={system}"),
                &format!("jobs={jobs}"),
                &format!("seconds={seconds}"),
            ]);
            let s = format!("6 vs, {system}, {jobs} jobs / 10 s");
            let us = |k: &str| Duration::from_micros(r.get(k));
            table.info(
                &s,
                &format!("trigger delay p50 / p99 over {} fires", r.get("fires")),
                format!("{} / {}", dur(us("p50_us")), dur(us("p99_us"))),
            );
            table.info(
                &s,
                "resident memory; threads",
                format!(
                    "{:.1} MiB; {}",
                    r.get("rss_kib") as f64 / 1024.0,
                    r.get("threads")
                ),
            );
            table.info(&s, "time to add all jobs", dur(us("register_us")));
            table.info(
                &s,
                "  until every job is ready to fire (shardcron: sharded)",
                dur(us("ready_us")),
            );
        }
    }
}
