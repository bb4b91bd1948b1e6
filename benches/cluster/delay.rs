//! Scenarios 1 and 2: trigger delay and registry traffic of two instances sharing one job of 4
//! items every second, with monitorExecution off and on, on ZooKeeper and on the embedded registry.
//!
//! The ZooKeeper clusters run one after the other, so that the server's `mntr` packet counters
//! belong to one of them; each embedded cluster is measured during one ZooKeeper window (it does
//! not touch the server).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use shardcron::node::NodeHandle;

use crate::fleet::{self, Backend, Counted, Counts};
use crate::probe::{self, DelayLog};
use crate::report::{dur, Stats, Table};

const ITEMS: i32 = 4;
const INSTANCES: u64 = 2;

/// Two instances of one job, and what they are measured with.
struct Pair {
    backend: Backend,
    monitor: bool,
    nodes: Vec<NodeHandle>,
    counted: Vec<Counted>,
    log: Arc<DelayLog>,
}

/// What one window measured.
struct Window {
    fires: u64,
    complete: u64,
    delays: Stats,
    calls: Counts,
    /// `mntr` deltas (received, sent), ZooKeeper only.
    packets: Option<(f64, f64)>,
}

impl Pair {
    async fn start(backend: Backend, monitor: bool) -> Pair {
        let ns = fleet::namespace(if monitor { "delay-on" } else { "delay-off" });
        let log = Arc::new(DelayLog::default());
        let mut nodes = Vec::new();
        let mut counted = Vec::new();
        for n in 1..=INSTANCES as u32 {
            let c = backend.connector(&ns, Duration::from_secs(10));
            let job = fleet::job("delay", ITEMS, "* * * * * ?", monitor);
            let handler = probe::delay_handler(log.clone(), 1, 0);
            nodes.push(
                fleet::start_node(
                    c.connector.clone(),
                    fleet::instance(n),
                    vec![(job, handler)],
                )
                .await,
            );
            counted.push(c);
        }
        Pair {
            backend,
            monitor,
            nodes,
            counted,
            log,
        }
    }

    fn counts(&self) -> Counts {
        if self.counted[0].is_per_node() {
            self.counted
                .iter()
                .fold(Counts::default(), |a, c| a.plus(c.counts()))
        } else {
            self.counted[0].counts()
        }
    }

    /// Measures `fires` fires after the cluster has settled (both instances own items).
    async fn measure(&self, fires: u64, zk: Option<SocketAddr>) -> Window {
        // Settled: two complete fires after the second instance joined (the join reshards at the
        // leader's next fire), then start mid-second so no run straddles the window's edges.
        let start = self.log.count();
        self.log
            .wait_count(start + 2 * ITEMS as u64, Duration::from_secs(30))
            .await;
        let t0 = probe::next_instant(1, 0);
        probe::sleep_until_wall(t0, Duration::from_millis(500)).await;
        let mark = self.log.mark();
        let calls0 = self.counts();
        let mntr0 = zk.map(probe::mntr);
        probe::sleep_until_wall(t0, Duration::from_millis(500 + 1000 * fires)).await;
        let calls = self.counts().since(calls0);
        let packets = zk.zip(mntr0).map(|(addr, before)| {
            let after = probe::mntr(addr);
            let delta = |k: &str| after.get(k).unwrap_or(&0.0) - before.get(k).unwrap_or(&0.0);
            (delta("zk_packets_received"), delta("zk_packets_sent"))
        });
        let from = t0.timestamp() + 1;
        let per_second = self.log.per_second(from, from + fires as i64);
        Window {
            fires,
            complete: per_second
                .iter()
                .filter(|(_, n)| *n == ITEMS as u64)
                .count() as u64,
            delays: Stats::of(self.log.delays_since(mark)),
            calls,
            packets,
        }
    }

    fn report(&self, w: &Window, table: &mut Table) {
        let mode = if self.monitor { "on" } else { "off" };
        let s1 = format!("1 delay, {}, monitorExecution {mode}", self.backend.name());
        let (p50, p99) = if self.monitor { (2, 5) } else { (1, 2) };
        let ms = Duration::from_millis;
        let p50_name = format!("p50 over {} items", w.delays.n);
        for (name, got, limit) in [(&*p50_name, w.delays.p50, p50), ("p99", w.delays.p99, p99)] {
            table.check(
                &s1,
                name,
                dur(got),
                &format!("< {limit} ms"),
                got < ms(limit),
            );
        }
        table.check(
            &s1,
            "complete fires",
            format!("{}/{}", w.complete, w.fires),
            "all",
            w.complete == w.fires,
        );
        let s2 = format!(
            "2 traffic, {}, monitorExecution {mode}",
            self.backend.name()
        );
        let runs = (w.fires * INSTANCES) as f64;
        let max_writes = if self.monitor { 2.0 } else { 0.0 };
        let reads = w.calls.reads as f64 / runs;
        let writes = w.calls.writes as f64 / runs;
        table.check(
            &s2,
            "reads / run / instance (op counters)",
            format!("{reads:.2}"),
            "0",
            reads == 0.0,
        );
        table.check(
            &s2,
            "writes / run / instance (op counters)",
            format!("{writes:.2}"),
            &format!("<= {max_writes}"),
            writes <= max_writes,
        );
        if let Some((received, sent)) = w.packets {
            table.info(
                &s2,
                "mntr packets received / run / instance",
                format!("{:.2}", received / runs),
            );
            table.info(
                &s2,
                "mntr packets sent / run / instance",
                format!("{:.2}", sent / runs),
            );
        }
    }

    async fn shutdown(self) {
        for n in self.nodes.iter().rev() {
            n.shutdown().await;
        }
    }
}

/// Runs scenarios 1 and 2 (`fires` per window).
pub(crate) async fn run(zk: SocketAddr, fires: u64, table: &mut Table) {
    for monitor in [false, true] {
        let on_zk = Pair::start(Backend::Zk(zk), monitor).await;
        let embedded = Pair::start(Backend::Embedded(Default::default()), monitor).await;
        let (wz, we) = tokio::join!(
            on_zk.measure(fires, Some(zk)),
            embedded.measure(fires, None)
        );
        on_zk.report(&wz, table);
        embedded.report(&we, table);
        on_zk.shutdown().await;
        embedded.shutdown().await;
    }
}
