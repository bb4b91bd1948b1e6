//! What the bench measures with: a job handler that records its trigger delay, the process's own
//! resources from `/proc/self`, and ZooKeeper's four-letter words.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use shardcron::job::{ExecutionSource, FnJob, JobError, ShardingContext, SharedHandler};

/// The trigger delays of every normal fire a handler saw, and how many items ran per scheduled
/// second. Shared by all jobs of a scenario.
#[derive(Debug, Default)]
pub(crate) struct DelayLog {
    inner: Mutex<Inner>,
    count: AtomicU64,
}

#[derive(Debug, Default)]
struct Inner {
    /// Scheduled instant (Unix seconds) and delay (microseconds) of each execution, in arrival
    /// order.
    delays_us: Vec<(i64, u64)>,
    /// Delays are no longer kept, only counted (a long memory measurement: the log's own growth
    /// is not the engine's).
    counting_only: bool,
    /// Executions per scheduled instant (Unix seconds).
    per_second: BTreeMap<i64, u64>,
}

impl DelayLog {
    /// Records an execution that started at `now` for a cron that fires every `period` seconds at
    /// `offset` seconds past each multiple: the scheduled instant is the last such second at or
    /// before `now` (so a delay over one period would be misread; the targets are far below one).
    pub(crate) fn record(&self, now: DateTime<Utc>, period: i64, offset: i64) {
        let us = now.timestamp_micros();
        let period_us = period * 1_000_000;
        let scheduled_us =
            (us - offset * 1_000_000).div_euclid(period_us) * period_us + offset * 1_000_000;
        let mut inner = self.inner.lock().unwrap();
        if !inner.counting_only {
            inner.delays_us.push((
                scheduled_us.div_euclid(1_000_000),
                (us - scheduled_us) as u64,
            ));
        }
        *inner
            .per_second
            .entry(scheduled_us / 1_000_000)
            .or_default() += 1;
        drop(inner);
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    /// From now on, executions are counted but their delays not kept, and the kept ones are
    /// dropped.
    pub(crate) fn count_only(&self) {
        let mut inner = self.inner.lock().unwrap();
        inner.counting_only = true;
        inner.delays_us = Vec::new();
    }

    /// Executions recorded so far.
    pub(crate) fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    /// A position to take a window from.
    pub(crate) fn mark(&self) -> usize {
        self.inner.lock().unwrap().delays_us.len()
    }

    /// The delays recorded since `mark`.
    pub(crate) fn delays_since(&self, mark: usize) -> Vec<u64> {
        let inner = self.inner.lock().unwrap();
        inner.delays_us[mark..].iter().map(|(_, d)| *d).collect()
    }

    /// The delays of the executions scheduled in `[from, to)` (Unix seconds).
    pub(crate) fn delays_between(&self, from: i64, to: i64) -> Vec<u64> {
        let inner = self.inner.lock().unwrap();
        inner
            .delays_us
            .iter()
            .filter(|(at, _)| (from..to).contains(at))
            .map(|(_, d)| *d)
            .collect()
    }

    /// The delays of the fire scheduled at `instant` (Unix seconds) recorded since `mark`.
    pub(crate) fn delays_of(&self, mark: usize, instant: i64) -> Vec<u64> {
        let inner = self.inner.lock().unwrap();
        inner.delays_us[mark..]
            .iter()
            .filter(|(at, _)| *at == instant)
            .map(|(_, d)| *d)
            .collect()
    }

    /// Executions per scheduled second, for the seconds in `[from, to)` (Unix seconds).
    pub(crate) fn per_second(&self, from: i64, to: i64) -> Vec<(i64, u64)> {
        let inner = self.inner.lock().unwrap();
        (from..to)
            .map(|s| (s, inner.per_second.get(&s).copied().unwrap_or(0)))
            .collect()
    }

    /// Waits until `n` executions of the fire scheduled at `instant` (Unix seconds) were recorded,
    /// or `within` passed; returns whether they were. Polls every 10 ms, as [`Self::wait_count`].
    pub(crate) async fn wait_instant(&self, instant: i64, n: u64, within: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let seen = self.per_second(instant, instant + 1)[0].1;
            if seen >= n {
                return true;
            }
            if tokio::time::Instant::now() > deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Waits until at least `n` executions were recorded, or `within` passed; returns whether they
    /// were. Polls every 10 ms: waking the bench on each of up to 100,000 executions a second would
    /// cost more than the engine under test.
    pub(crate) async fn wait_count(&self, n: u64, within: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + within;
        while self.count() < n {
            if tokio::time::Instant::now() > deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        true
    }
}

/// A handler that records its delay against a cron of `period` seconds at `offset`, reading the
/// system clock first thing, and does nothing else (so the figures are the engine's, not the job's).
pub(crate) fn delay_handler(log: Arc<DelayLog>, period: i64, offset: i64) -> SharedHandler {
    Arc::new(FnJob(move |ctx: ShardingContext| {
        let log = log.clone();
        async move {
            let now = Utc::now();
            if ctx.source == ExecutionSource::Normal {
                log.record(now, period, offset);
            }
            Ok::<(), JobError>(())
        }
    }))
}

/// [`delay_handler`] for a job that captures its output: each item also prints one line
/// through its context ([`ShardingContext::print`]).
pub(crate) fn printing_handler(log: Arc<DelayLog>) -> SharedHandler {
    Arc::new(FnJob(move |ctx: ShardingContext| {
        let log = log.clone();
        async move {
            let now = Utc::now();
            if ctx.source == ExecutionSource::Normal {
                log.record(now, 1, 0);
            }
            ctx.print("item ran");
            Ok::<(), JobError>(())
        }
    }))
}

/// Sleeps until `at` plus `after` on the system clock.
pub(crate) async fn sleep_until_wall(at: DateTime<Utc>, after: Duration) {
    let target = at + chrono::Duration::from_std(after).unwrap_or_default();
    if let Ok(d) = (target - Utc::now()).to_std() {
        tokio::time::sleep(d).await;
    }
}

/// The next whole second that is `offset` past a multiple of `period` seconds, after now.
pub(crate) fn next_instant(period: i64, offset: i64) -> DateTime<Utc> {
    let now = Utc::now().timestamp();
    let next = (now - offset).div_euclid(period) * period + offset + period;
    DateTime::from_timestamp(next, 0).expect("a near instant")
}

/// One field of `/proc/self/status` (`VmRSS`, `Threads`), as its leading number.
pub(crate) fn status_field(name: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// The allocator's view of the heap at this moment, in KiB: live, and resident but not live (freed
/// pages jemalloc has not given back yet, its metadata and its thread caches: what a burst's
/// garbage costs in resident memory beyond the live heap).
pub(crate) fn heap_kib() -> (u64, u64) {
    use tikv_jemalloc_ctl::{epoch, stats};
    // jemalloc's statistics are a snapshot taken at an epoch: advance it first.
    let _ = epoch::advance();
    let allocated = stats::allocated::read().unwrap_or(0) as u64;
    let resident = stats::resident::read().unwrap_or(0) as u64;
    (allocated / 1024, resident.saturating_sub(allocated) / 1024)
}

/// [`heap_kib`] into `r` (not in the table: for reading a memory figure): `heap_inuse_kib` live,
/// `heap_free_kib` resident but not live.
pub(crate) fn put_heap(r: &mut crate::child::Results) {
    let (inuse, kept) = heap_kib();
    r.put("heap_inuse_kib", inuse);
    r.put("heap_free_kib", kept);
}

/// The process's user plus system CPU time so far.
pub(crate) fn cpu_time() -> Duration {
    cpu_time_of("self")
}

/// The user plus system CPU time so far of process `pid` (`self`, or a child's id): zero when it
/// is gone.
pub(crate) fn cpu_time_of(pid: &str) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may hold spaces, hence the last ')'): utime and stime
    // are fields 14 and 15 of the whole line, so 12 and 13 after it.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<u64> = rest
        .split_whitespace()
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    let ticks = fields.get(11).copied().unwrap_or(0) + fields.get(12).copied().unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Duration::from_micros(ticks * 1_000_000 / hz)
}

/// Sends a ZooKeeper four-letter word (`mntr`, `wchs`) and returns the answer.
pub(crate) fn four_letter(addr: SocketAddr, command: &str) -> std::io::Result<String> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    stream.write_all(command.as_bytes())?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    Ok(answer)
}

/// The numeric `mntr` figures (`zk_packets_received`, `zk_watch_count`, ...).
pub(crate) fn mntr(addr: SocketAddr) -> BTreeMap<String, f64> {
    four_letter(addr, "mntr")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once('\t')?;
            Some((k.to_owned(), v.trim().parse().ok()?))
        })
        .collect()
}
