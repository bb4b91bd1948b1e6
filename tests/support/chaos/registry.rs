//! What the registry says about a job, read through a ZooKeeper session of the test's own: who is
//! live, who leads, who owns which item. Used to wait until leadership and sharding converge.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use shardcron::registry::zookeeper::{ZkConfig, ZkConnector, ZkSession};
use shardcron::registry::Registry;

use crate::wait::wait_until_blocking_every;

/// How long the test's own session may take to open and to answer.
const CALL_WITHIN: Duration = Duration::from_secs(5);

/// One job's coordination state.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Snapshot {
    /// `instances/` children.
    pub instances: BTreeSet<String>,
    /// `leader/election/instance`.
    pub leader: Option<String>,
    /// `sharding/{i}/instance` per item.
    pub owners: BTreeMap<u32, String>,
    /// Whether `leader/sharding/necessary` is raised.
    pub necessary: bool,
}

impl Snapshot {
    /// Whether `live` are exactly the instances, one of them leads, and the items are split among
    /// them as AVG_ALLOCATION splits `items` (instances in descending order, the remainder to the
    /// first ones), with no resharding pending.
    pub fn converged_on(&self, live: &[&str], items: u32) -> bool {
        let live_set: BTreeSet<String> = live.iter().map(|s| (*s).to_owned()).collect();
        self.instances == live_set
            && self.leader.as_ref().is_some_and(|l| live_set.contains(l))
            && !self.necessary
            && self.owners == average_allocation(live, items)
    }
}

/// AVG_ALLOCATION, as the registry layout spec defines it, for checking an outcome.
pub fn average_allocation(live: &[&str], items: u32) -> BTreeMap<u32, String> {
    let mut sorted: Vec<&str> = live.to_vec();
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    let n = u32::try_from(sorted.len()).expect("a handful of instances");
    let mut owners = BTreeMap::new();
    if n == 0 {
        return owners;
    }
    let (q, r) = (items / n, items % n);
    for (p, owner) in (0..n).zip(&sorted) {
        for item in p * q..(p + 1) * q {
            owners.insert(item, (*owner).to_owned());
        }
        if p < r {
            owners.insert(q * n + p, (*owner).to_owned());
        }
    }
    owners
}

/// Reads `job`'s state under `namespace` on `connect`.
pub fn snapshot(connect: &str, namespace: &str, job: &str) -> Result<Snapshot, String> {
    let s = TestSession::open(connect, namespace)?;
    s.runtime.block_on(read(&s.session, job))
}

async fn read(session: &dyn Registry, job: &str) -> Result<Snapshot, String> {
    let text = |bytes: Vec<u8>| String::from_utf8_lossy(&bytes).into_owned();
    let mut snapshot = Snapshot {
        instances: session
            .children(&format!("/{job}/instances"))
            .await
            .map_err(|e| e.to_string())?
            .into_iter()
            .collect(),
        ..Snapshot::default()
    };
    snapshot.leader = match session
        .get(&format!("/{job}/leader/election/instance"))
        .await
    {
        Ok((data, _)) => Some(text(data)),
        Err(e) if e.is_no_node() => None,
        Err(e) => return Err(e.to_string()),
    };
    snapshot.necessary = session
        .exists(&format!("/{job}/leader/sharding/necessary"))
        .await
        .map_err(|e| e.to_string())?
        .is_some();
    let items = match session.children(&format!("/{job}/sharding")).await {
        Ok(items) => items,
        Err(e) if e.is_no_node() => Vec::new(),
        Err(e) => return Err(e.to_string()),
    };
    for item in items {
        let Ok(n) = item.parse::<u32>() else { continue };
        match session
            .get(&format!("/{job}/sharding/{item}/instance"))
            .await
        {
            Ok((data, _)) => {
                snapshot.owners.insert(n, text(data));
            }
            Err(e) if e.is_no_node() => {}
            Err(e) => return Err(e.to_string()),
        }
    }
    Ok(snapshot)
}

/// Waits until `job` has converged on `live` (see [`Snapshot::converged_on`]); returns the state
/// and how long it took. Fails naming what was expected and what was last seen.
pub fn wait_converged(
    connect: &str,
    namespace: &str,
    job: &str,
    live: &[&str],
    items: u32,
    within: Duration,
) -> (Snapshot, Duration) {
    let started = Instant::now();
    let check = || {
        let read = snapshot(connect, namespace, job);
        match read {
            Ok(s) if s.converged_on(live, items) => Ok(s),
            other => Err(other),
        }
    };
    let what = format!(
        "{job} to converge on instances {live:?} with AVG_ALLOCATION of {items} items ({:?}) and \
         a live leader",
        average_allocation(live, items)
    );
    let converged = wait_until_blocking_every(check, &what, within, Duration::from_millis(200));
    (converged, started.elapsed())
}

/// A session of the test's own, on a runtime of its own: the test thread is not async.
struct TestSession {
    runtime: tokio::runtime::Runtime,
    session: ZkSession,
}

impl TestSession {
    fn open(connect: &str, namespace: &str) -> Result<Self, String> {
        Self::open_within(connect, namespace, CALL_WITHIN)
    }

    /// A session whose connection and calls give up after `within`.
    fn open_within(connect: &str, namespace: &str, within: Duration) -> Result<Self, String> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime for the test's ZooKeeper session");
        let config = ZkConfig::new(connect, namespace)
            .map_err(|e| e.to_string())?
            .with_session_timeout(Duration::from_secs(4))
            .with_connection_timeout(within)
            .with_call_timeout(within)
            .map_err(|e| e.to_string())?;
        let session = runtime
            .block_on(ZkConnector::new(config).connect_session())
            .map_err(|e| e.to_string())?;
        Ok(Self { runtime, session })
    }
}

impl Drop for TestSession {
    fn drop(&mut self) {
        self.runtime.block_on(self.session.close());
    }
}

/// The data of `path` (relative to the namespace).
pub fn get_data(connect: &str, namespace: &str, path: &str) -> String {
    let read = TestSession::open(connect, namespace).and_then(|s| {
        s.runtime
            .block_on(s.session.get(path))
            .map(|(data, _)| String::from_utf8_lossy(&data).into_owned())
            .map_err(|e| e.to_string())
    });
    read.unwrap_or_else(|e| panic!("reading {path}: {e}"))
}

/// Overwrites the data of `path` (relative to the namespace), as an operator or a broken tool would.
pub fn set_data(connect: &str, namespace: &str, path: &str, data: &str) {
    let written = TestSession::open(connect, namespace).and_then(|s| {
        s.runtime
            .block_on(s.session.set(path, data.as_bytes(), None))
            .map_err(|e| e.to_string())
    });
    written.unwrap_or_else(|e| panic!("writing {path}: {e}"));
}

/// Applies `ops` (paths relative to the namespace) as one multi-op, as another instance would.
pub fn apply(connect: &str, namespace: &str, ops: &[shardcron::registry::Op]) {
    let applied = TestSession::open(connect, namespace).and_then(|s| {
        s.runtime
            .block_on(s.session.multi(ops))
            .map(|_| ())
            .map_err(|e| e.to_string())
    });
    applied.unwrap_or_else(|e| panic!("applying {ops:?}: {e}"));
}

/// Whether `path` (relative to the namespace) exists.
pub fn exists(connect: &str, namespace: &str, path: &str) -> bool {
    let read = TestSession::open(connect, namespace).and_then(|s| {
        s.runtime
            .block_on(s.session.exists(path))
            .map(|stat| stat.is_some())
            .map_err(|e| e.to_string())
    });
    read.unwrap_or_else(|e| panic!("reading {path}: {e}"))
}

/// Whether a new session opens on `server` (one `host:port`) and answers a read within `within`.
/// Opening a session is a write through the ensemble's quorum (`createSession`), so this tells
/// an ensemble that serves from one whose members only answer four-letter commands.
pub fn opens_sessions(server: &str, namespace: &str, within: Duration) -> bool {
    TestSession::open_within(server, namespace, within)
        .is_ok_and(|s| s.runtime.block_on(s.session.exists("/")).is_ok())
}
