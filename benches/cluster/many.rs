//! Scenario 4: many jobs on one node, on ZooKeeper: N jobs of 1 item every 10 s (quick mode: every 5 s) (all on the same
//! instants, so that a quiet window lies between fires). Run in a child process of its own, so its
//! resident memory, threads and CPU time are this scenario's alone.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;

use crate::child::{self, Results};
use crate::fleet::{self, Backend};
use crate::probe::{self, DelayLog};
use crate::report::{dur, Stats, Table};

/// The child: registers `jobs` jobs, waits until they are sharded, waits for one fire of all of
/// them, then measures a quiet window and prints one `result` line. With `fires` over 1, the
/// resident memory is taken after that many fires (steady operation: ractor's mailboxes, for one,
/// take a second block after 32 messages). With `scrape`, the node serves `/metrics` (the
/// recorder records every job's series), and [`scrape`] measures one scrape in the middle of the
/// period after the fire.
pub(crate) async fn child(zk: &str, jobs: usize, period: i64, fires: u32, scrape: bool) {
    let addr: SocketAddr = zk.parse().expect("many: zk=ADDR");
    let log = Arc::new(DelayLog::default());
    let c = Backend::Zk(addr).connector(&fleet::namespace("many"), Duration::from_secs(10));
    let names: Vec<String> = (0..jobs).map(|i| format!("many-{i}")).collect();
    let configs = names
        .iter()
        .map(|n| {
            (
                fleet::job(n, 1, &format!("0/{period} * * * * ?"), true),
                probe::delay_handler(log.clone(), period, 0),
            )
        })
        .collect();
    let started = Instant::now();
    let metrics = scrape.then(|| SocketAddr::from(([127, 0, 0, 1], 0)));
    let node =
        fleet::start_node_serving(c.connector.clone(), fleet::instance(1), configs, metrics).await;
    let registered = fleet::wait_registered(&node, &names, Duration::from_secs(120)).await;
    let register = started.elapsed();
    let calls_registered = c.counts();
    // The fire is measured once every job is sharded: a fire before its first plan waits for it.
    let sharded = fleet::wait_sharded(&node, &names, Duration::from_secs(120)).await;
    let ready = started.elapsed();
    let calls_ready = c.counts();
    let rss_ready = probe::status_field("VmRSS");
    let heap_ready = probe::heap_kib();
    // One fire of every job after registration.
    let fire = probe::next_instant(period, 0);
    // The mark is taken before the instant: the first items start within a millisecond of it,
    // sooner than this task wakes.
    let mark = log.mark();
    probe::sleep_until_wall(fire, Duration::ZERO).await;
    let fired_all = log
        .wait_instant(
            fire.timestamp(),
            jobs as u64,
            Duration::from_secs(period as u64 - 1),
        )
        .await;
    let fire_took = (Utc::now() - fire).to_std().unwrap_or_default();
    let delays = Stats::of(log.delays_of(mark, fire.timestamp()));
    // The quiet window: from once the fire's registry calls are answered (none for 200 ms, and
    // at least 300 ms after the last item started) to just before the next fire.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let calls = || {
        let n = c.counts();
        (n.reads, n.writes)
    };
    let latest = fire + chrono::Duration::milliseconds(period * 1000 - 1500);
    let mut seen = calls();
    while Utc::now() < latest {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let now = calls();
        if now == seen {
            break;
        }
        seen = now;
    }
    let (cpu0, t0) = (probe::cpu_time(), Instant::now());
    probe::sleep_until_wall(fire, Duration::from_millis(period as u64 * 1000 - 300)).await;
    let (cpu, quiet) = (probe::cpu_time() - cpu0, t0.elapsed());
    if fires > 1 {
        // The delays are taken: the log's own growth over more fires is not the engine's.
        log.count_only();
    }
    for _ in 1..fires {
        let next = probe::next_instant(period, 0);
        probe::sleep_until_wall(next, Duration::from_millis(period as u64 * 500)).await;
    }
    let scraped = match node.metrics_addr() {
        Some(metrics) => {
            let next = probe::next_instant(period, 0);
            probe::sleep_until_wall(next, Duration::from_millis(period as u64 * 500)).await;
            Some(self::scrape(metrics).await)
        }
        None => None,
    };
    let wchs = probe::four_letter(addr, "wchs").unwrap_or_default();
    let total_watches = wchs
        .lines()
        .find_map(|l| l.strip_prefix("Total watches:"))
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(u64::MAX);
    let mut r = Results::default();
    r.put("registered", registered as u64);
    r.put("register_us", register.as_micros() as u64);
    r.put("sharded", sharded as u64);
    r.put("ready_us", ready.as_micros() as u64);
    r.put("fired_all", fired_all as u64);
    r.put("fire_us", fire_took.as_micros() as u64);
    r.put("fire_p50_us", delays.p50.as_micros() as u64);
    r.put("fire_p99_us", delays.p99.as_micros() as u64);
    r.put("cpu_us", cpu.as_micros() as u64);
    r.put("quiet_us", quiet.as_micros() as u64);
    r.put("rss_kib", probe::status_field("VmRSS"));
    r.put("rss_anon_kib", probe::status_field("RssAnon"));
    r.put("rss_file_kib", probe::status_field("RssFile"));
    probe::put_heap(&mut r);
    r.put("rss_ready_kib", rss_ready);
    r.put("heap_inuse_ready_kib", heap_ready.0);
    r.put("heap_free_ready_kib", heap_ready.1);
    r.put("fires", u64::from(fires));
    r.put("threads", probe::status_field("Threads"));
    r.put("server_watches", total_watches);
    r.put("watch_calls", c.counts().watches);
    r.put("writes_registered", calls_registered.writes);
    r.put("reads_registered", calls_registered.reads);
    r.put("writes_ready", calls_ready.writes);
    r.put("reads_ready", calls_ready.reads);
    if let Some(s) = scraped {
        r.put("scrape_bytes", s.bytes);
        r.put("scrape_us", s.took.as_micros() as u64);
        r.put("scrape_rss_before_kib", s.rss_before_kib);
        r.put("scrape_peak_kib", s.peak_kib);
    }
    r.print();
    // Exit without a graceful shutdown of thousands of jobs: the figures are taken, and the
    // session's ephemerals go with the process.
    std::process::exit(0);
}

/// One scrape of `/metrics` as the child measured it.
struct Scraped {
    bytes: u64,
    took: Duration,
    rss_before_kib: u64,
    /// The peak resident set during the scrape (`VmHWM`, reset just before it).
    peak_kib: u64,
}

/// Scrapes `/metrics` at `addr` once, reading the body chunk by chunk and keeping only its length
/// (so that the client's copy does not count in the process's peak).
async fn scrape(addr: SocketAddr) -> Scraped {
    let rss_before_kib = probe::status_field("VmRSS");
    // "5" resets the peak resident set (VmHWM) to the current one (Linux 4.0 and later).
    std::fs::write("/proc/self/clear_refs", "5").expect("resetting VmHWM");
    let started = Instant::now();
    let mut answer = reqwest::get(format!("http://{addr}/metrics"))
        .await
        .expect("the scrape answers");
    assert!(answer.status().is_success(), "scrape: {}", answer.status());
    let mut bytes = 0u64;
    while let Some(chunk) = answer.chunk().await.expect("the scrape's body") {
        bytes += chunk.len() as u64;
    }
    Scraped {
        bytes,
        took: started.elapsed(),
        rss_before_kib,
        peak_kib: probe::status_field("VmHWM"),
    }
}

/// Runs the child with `scrape=1`: the resident memory before and at the peak of one `/metrics`
/// scrape of `jobs` jobs.
pub(crate) fn run_scrape(zk: SocketAddr, jobs: usize, period: i64, table: &mut Table) {
    let r = child::run(&[
        "many",
        &format!("zk={zk}"),
        &format!("jobs={jobs}"),
        &format!("period={period}"),
        "scrape=1",
    ]);
    let s = format!("4 many jobs, ZooKeeper, {jobs} x 1 item / {period} s, serving /metrics");
    let mib = |k: &str| r.get(k) as f64 / 1024.0;
    let (before, peak) = (mib("scrape_rss_before_kib"), mib("scrape_peak_kib"));
    table.check(
        &s,
        "VmRSS before one scrape / its peak during it",
        format!(
            "{before:.1} / {peak:.1} MiB (+{:.0} %)",
            100.0 * (peak / before - 1.0)
        ),
        "no transient doubling it",
        peak < 2.0 * before,
    );
    table.info(
        &s,
        "  the scrape's body, and its time",
        format!(
            "{:.1} MiB, {}",
            r.get("scrape_bytes") as f64 / 1_048_576.0,
            dur(Duration::from_micros(r.get("scrape_us")))
        ),
    );
}

/// Runs scenario 4 with `jobs` jobs.
pub(crate) fn run(zk: SocketAddr, jobs: usize, period: i64, table: &mut Table) {
    let r = child::run(&[
        "many",
        &format!("zk={zk}"),
        &format!("jobs={jobs}"),
        &format!("period={period}"),
    ]);
    let s = format!("4 many jobs, ZooKeeper, {jobs} x 1 item / {period} s");
    let us = |k: &str| Duration::from_micros(r.get(k));
    table.check(
        &s,
        "time to register all",
        dur(us("register_us")),
        "< 15 s",
        r.get("registered") == 1 && us("register_us") < Duration::from_secs(15),
    );
    table.info(
        &s,
        "  until every job is sharded (ready to fire)",
        format!("{}{}", dur(us("ready_us")), incomplete(r.get("sharded"))),
    );
    let rss = r.get("rss_kib") as f64 / 1024.0;
    table.check(
        &s,
        "resident memory (VmRSS) after a fire of every job",
        format!("{rss:.1} MiB"),
        "< 150 MB",
        rss * 1.048_576 < 150.0,
    );
    table.info(
        &s,
        "  resident memory when every job is ready, before any fire",
        format!("{:.1} MiB", r.get("rss_ready_kib") as f64 / 1024.0),
    );
    let mib = |k: &str| r.get(k) as f64 / 1024.0;
    table.info(
        &s,
        "  of which anonymous / file-backed (RssAnon / RssFile: the binary's mapped pages)",
        format!(
            "{:.1} / {:.1} MiB",
            mib("rss_anon_kib"),
            mib("rss_file_kib")
        ),
    );
    table.info(
        &s,
        "  of which heap in use / resident but not in use (jemalloc stats)",
        format!(
            "{:.1} / {:.1} MiB",
            mib("heap_inuse_kib"),
            mib("heap_free_kib")
        ),
    );
    let cpu = 100.0 * us("cpu_us").as_secs_f64() / us("quiet_us").as_secs_f64().max(1e-9);
    table.check(
        &s,
        &format!("idle CPU over {} between fires", dur(us("quiet_us"))),
        format!("{cpu:.2} % of a core"),
        "< 2 %",
        cpu < 2.0,
    );
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get()) as u64;
    table.check(
        &s,
        "threads",
        r.get("threads").to_string(),
        &format!("<= {}", 2 * cores + 8),
        r.get("threads") <= 2 * cores + 8,
    );
    table.check(
        &s,
        "recursive watches (wchs total; watch calls)",
        format!("{}; {}", r.get("server_watches"), r.get("watch_calls")),
        "1",
        r.get("server_watches") == 1 && r.get("watch_calls") == 1,
    );
    table.info(
        &s,
        "  registry calls until registered / until ready: writes (a multi once), reads",
        format!(
            "{} / {}, {} / {}",
            r.get("writes_registered"),
            r.get("writes_ready"),
            r.get("reads_registered"),
            r.get("reads_ready")
        ),
    );
    table.info(
        &s,
        "one fire of all jobs: last item started after",
        format!("{}{}", dur(us("fire_us")), incomplete(r.get("fired_all"))),
    );
    table.info(
        &s,
        "  its trigger delay p50 / p99",
        format!("{} / {}", dur(us("fire_p50_us")), dur(us("fire_p99_us"))),
    );
}

/// What follows a figure whose wait ended before it was complete (`done` is the child's 0/1 flag).
fn incomplete(done: u64) -> &'static str {
    if done == 1 {
        ""
    } else {
        " (INCOMPLETE)"
    }
}
