//! Workflows across crashes: two example node processes on a real ZooKeeper run an upstream script
//! job of 4 items every 3 s and a downstream of 2 items without a cron (`shardcron.after`), both
//! with failover. One process is killed (SIGKILL) while it runs an upstream item; or the
//! downstream's leader is killed at the moment the upstream run completes. Either way the
//! downstream runs once per upstream run, after every upstream item of it ended.
//!
//! Scripts log by workflow run ([`support::step_log`]).

#[macro_use]
extern crate support;

use support::chaos::registry;
use support::jobs_file::{script_job, write_jobs};
use support::node_proc::{NodeProcess, Output, ZkJobs};
use support::step_log::{self, by_run, lines, Line};
use support::wait::{poll_blocking, POLL};
use support::Peer;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The two jobs: `import` (4 items every 3 s) and `report` (2 items after `import`).
fn jobs_file(dir: &Path, up: &Path, down: &Path) -> PathBuf {
    write_jobs(
        dir,
        &[
            script_job("import", 4, &format!("'{}'", up.display()))
                .cron("0/3 * * * * ?")
                .key("failover", "true")
                .key("misfire", "false"),
            script_job("report", 2, &format!("'{}'", down.display()))
                .key("failover", "true")
                .prop("shardcron.after", "import"),
        ],
    )
}

/// The test's world: the two logs, the jobs file, the nodes' arguments.
struct World {
    dir: tempfile::TempDir,
    up_log: PathBuf,
    down_log: PathBuf,
    zk: ZkJobs,
    output: Output,
}

impl World {
    fn new(connect: String, test: &str, up_work: f64) -> World {
        // `SHARDCRON_CHAOS_KEEP=1` keeps the directory (the scripts' logs), as the chaos tests do.
        let keep = std::env::var_os("SHARDCRON_CHAOS_KEEP").is_some();
        let dir = (tempfile::Builder::new().prefix("shardcron-workflow-"))
            .disable_cleanup(keep)
            .tempdir()
            .expect("a temp dir");
        let (up_log, down_log) = (dir.path().join("up.log"), dir.path().join("down.log"));
        let up = step_log::script(dir.path(), "up", &up_log, up_work);
        let down = step_log::script(dir.path(), "down", &down_log, 0.5);
        let jobs = jobs_file(dir.path(), &up, &down);
        STEP_LOGS.with(|logs| *logs.borrow_mut() = Some((up_log.clone(), down_log.clone())));
        World {
            dir,
            up_log,
            down_log,
            zk: ZkJobs {
                connect,
                namespace: format!("{test}-{}", std::process::id()),
                jobs,
            },
            output: Output::new(),
        }
    }

    /// Starts the node labelled `label` (instance `127.0.0.1@-@node-{label}`).
    fn start(&self, label: &str) -> NodeProcess {
        // At INFO: a wait that times out shows what each node did.
        (self.zk).spawn_logging(label, &id(label), label, &self.output, "info")
    }
}

fn id(label: &str) -> String {
    format!("127.0.0.1@-@node-{label}")
}

/// Checks every workflow run in `runs` (ascending): each downstream item ended once, and started
/// after every upstream item of the run ended, each once.
fn exactly_once_after_upstream(up: &[Line], down: &[Line], runs: &BTreeSet<String>) {
    let (up_ends, down_ends) = (by_run(up, "end"), by_run(down, "end"));
    for run in runs {
        let last_up = (0..4)
            .map(|i| {
                let ended = up_ends.get(&(run.clone(), i));
                let ended = ended.unwrap_or_else(|| panic!("upstream item {i} of {run} ended"));
                assert_eq!(
                    ended.len(),
                    1,
                    "upstream item {i} of {run} ended once: {ended:?}\n{}",
                    diagnostics()
                );
                ended[0].at
            })
            .max()
            .expect("four items");
        for item in 0..2 {
            let ends = down_ends.get(&(run.clone(), item));
            let ends = ends.unwrap_or_else(|| panic!("downstream item {item} of {run} ran"));
            assert_eq!(
                ends.len(),
                1,
                "downstream item {item} of {run} ended once: {ends:?}\n{}",
                diagnostics()
            );
            let started = down
                .iter()
                .filter(|l| l.phase == "start" && &l.run == run && l.item == item)
                .map(|l| l.at)
                .min()
                .expect("a run that ended started");
            assert!(
                started > last_up,
                "downstream item {item} of {run} started after every upstream item ended"
            );
        }
    }
}

#[test]
fn an_upstream_owner_killed_mid_item_still_gives_one_downstream_run_per_upstream_run() {
    require!(Peer::ZooKeeper);
    let server = support::zk::server();
    let world = World::new(server.connect_string(), "workflow-crash", 1.0);
    let mut nodes = [Some(world.start("a")), Some(world.start("b"))];

    // --- a runs an upstream item after the downstream ran once: kill -9 it mid-item
    wait("the downstream ran once", &nodes, POLL, || {
        (!by_run(&lines(&world.down_log), "end").is_empty()).then_some(())
    });
    let every = Duration::from_millis(20);
    let killed_in = wait("a running an upstream item", &nodes, every, || {
        let all = lines(&world.up_log);
        let ended = by_run(&all, "end");
        all.iter()
            .filter(|l| l.phase == "start" && l.instance == "a")
            .find(|l| !ended.contains_key(&(l.run.clone(), l.item)))
            .map(|l| l.run.clone())
    });
    let killed = nodes[0].take().expect("a runs");
    killed.signal(libc::SIGKILL);
    eprintln!(
        "[workflow] node a killed at {} ns, mid-item in run {killed_in}",
        now_ns()
    );

    // --- the survivor ends the killed run, and the downstream runs for it and three runs more
    let what = "the downstream ran for the killed run and three later ones";
    wait(what, &nodes, POLL, || {
        let down = by_run(&lines(&world.down_log), "end");
        let runs: BTreeSet<&String> = down.keys().map(|(run, _)| run).collect();
        let later = runs.iter().filter(|run| ***run > killed_in).count();
        let killed = (0..2).all(|i| down.contains_key(&(killed_in.clone(), i)));
        (killed && later >= 3).then_some(())
    });
    for node in nodes.iter_mut().flatten() {
        node.terminate();
    }
    let ended: Vec<&NodeProcess> = nodes.iter().flatten().chain([&killed]).collect();
    keep_node_logs(&ended);

    let (up, down) = (lines(&world.up_log), lines(&world.down_log));
    let runs: BTreeSet<String> = by_run(&down, "end").into_keys().map(|(r, _)| r).collect();
    exactly_once_after_upstream(&up, &down, &runs);
    // The killed item's run ended on the survivor, in the same workflow run.
    let killed_item_ends: Vec<Line> = by_run(&up, "end")
        .into_iter()
        .filter(|((run, _), _)| *run == killed_in)
        .flat_map(|(_, ends)| ends)
        .collect();
    assert_eq!(killed_item_ends.len(), 4, "{killed_item_ends:?}");
    assert!(killed_item_ends.iter().any(|l| l.instance == "b"));
}

/// When, around the completion of the held upstream run, the downstream's leader is killed.
#[derive(Debug, Clone, Copy)]
enum Moment {
    /// Just before the last upstream items are let go: its session outlives the completion.
    BeforeCompletion,
    /// As soon as the last upstream item's script ended (its end not yet written).
    AtLastItemEnd,
    /// As soon as the downstream's `{run}@start` decision is in the registry.
    AtStartDecision,
}

/// The data of `path`, or `None` while it is not there.
fn record(world: &World, path: &str) -> Option<String> {
    registry::exists(&world.zk.connect, &world.zk.namespace, path)
        .then(|| registry::get_data(&world.zk.connect, &world.zk.namespace, path))
}

/// The newest workflow run whose root fired after `after` (ns since the epoch) and whose
/// downstream ended both items.
fn downstream_ran_after(world: &World, after: u128) -> Option<String> {
    let up = lines(&world.up_log);
    let down = by_run(&lines(&world.down_log), "end");
    let fired_after: BTreeSet<&String> = up
        .iter()
        .filter(|l| l.phase == "start" && l.at > after)
        .map(|l| &l.run)
        .collect();
    let ran = fired_after
        .into_iter()
        .rev()
        .find(|run| (0..2).all(|i| down.contains_key(&((*run).clone(), i))));
    ran.cloned()
}

/// The wall clock in ns since the epoch, as the scripts' `date +%s%N`.
fn now_ns() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("the clock is past 1970")
        .as_nanos()
}

/// Whether the wall clock is between two fires of the upstream (1.0-2.5 s into its 3 s period),
/// so that a hold file created now catches every item of its next fire, and none before.
fn between_fires() -> bool {
    (1000..2500).contains(&(now_ns() / 1_000_000 % 3000))
}

/// A bound on every wait: a session's expiry, a reshard and a few upstream fires.
const WITHIN: Duration = Duration::from_secs(60);

thread_local! {
    /// This test's step logs (upstream, downstream), shown when a wait times out.
    static STEP_LOGS: std::cell::RefCell<Option<(PathBuf, PathBuf)>> = const { std::cell::RefCell::new(None) };
}

thread_local! {
    /// The ended nodes' log lines about items and failover, shown when a verdict fails.
    static NODE_LOGS: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

/// Keeps the lines of `nodes`' logs that name an item, a failover or an instance (at most 80 a
/// node, the newest) for [`diagnostics`].
fn keep_node_logs(nodes: &[&NodeProcess]) {
    let kept: Vec<String> = (nodes.iter())
        .map(|n| {
            let all = n.stderr();
            let about: Vec<&str> = (all.lines())
                .filter(|l| {
                    ["item", "failover", "instance"]
                        .iter()
                        .any(|w| l.contains(w))
                })
                .collect();
            let tail = about[about.len().saturating_sub(80)..].join("\n");
            format!(
                "--- node {} (lines about items, failover, instances):\n{tail}",
                n.label
            )
        })
        .collect();
    NODE_LOGS.with(|logs| *logs.borrow_mut() = kept.join("\n"));
}

/// What a failed verdict shows: the step logs' last lines and the kept node log lines.
fn diagnostics() -> String {
    let nodes = NODE_LOGS.with(|logs| logs.borrow().clone());
    format!("{}\n{nodes}", step_logs_tail())
}

/// The last lines of this test's step logs.
fn step_logs_tail() -> String {
    STEP_LOGS.with(|logs| {
        let Some((up, down)) = logs.borrow().clone() else {
            return String::new();
        };
        [("upstream", up), ("downstream", down)]
            .into_iter()
            .map(|(name, path)| {
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                let lines: Vec<&str> = text.lines().collect();
                let tail = lines[lines.len().saturating_sub(40)..].join("\n");
                format!("--- {name} log (last 40 lines):\n{tail}")
            })
            .collect::<Vec<_>>()
            .join("\n")
    })
}

/// Waits until `check` holds (polling every `every`); fails naming `what`, with the nodes' stderr
/// and the step logs' last lines.
fn wait<T>(
    what: &str,
    nodes: &[Option<NodeProcess>],
    every: Duration,
    check: impl FnMut() -> Option<T>,
) -> T {
    poll_blocking(check, WITHIN, every).unwrap_or_else(|_| {
        let stderr: Vec<String> = (nodes.iter().flatten())
            .map(|n| format!("--- {}:\n{}", n.label, n.stderr()))
            .collect();
        panic!(
            "timed out after {WITHIN:?}: {what}\n{}\n{}",
            stderr.join("\n"),
            step_logs_tail()
        )
    })
}

/// Holds `survivor`'s items of the next upstream fire while `victim`'s end; returns its run.
fn hold_next_run(world: &World, nodes: &[Option<NodeProcess>], survivor: &str) -> String {
    wait(
        "a moment between two fires",
        nodes,
        Duration::from_millis(10),
        || between_fires().then_some(()),
    );
    step_log::hold(world.dir.path(), survivor);
    let from = now_ns();
    let held = |l: &Line| l.phase == "held" && l.instance == survivor && l.at > from;
    let run = wait("the survivor's items held", nodes, POLL, || {
        lines(&world.up_log).into_iter().find(held).map(|l| l.run)
    });
    let what = format!("run {run}: 2 items held on {survivor}, the other 2 ended and recorded");
    wait(&what, nodes, POLL, || {
        let all = lines(&world.up_log);
        let held_here = all.iter().filter(|l| held(l) && l.run == run).count();
        let ended = (by_run(&all, "end").keys())
            .filter(|(r, _)| *r == run)
            .count();
        let recorded = (0..4).filter(|i| {
            record(world, &format!("/import/shardcron/workflow/{run}@{i}"))
                .is_some_and(|d| !d.starts_with("running:"))
        });
        (held_here == 2 && ended == 2 && recorded.count() == 2).then_some(())
    });
    run
}

/// Lets `survivor`'s held items of `run` end, and kills (SIGKILL) `victim` at `moment`.
fn kill_at(
    moment: Moment,
    world: &World,
    nodes: &mut [Option<NodeProcess>; 2],
    victim: usize,
    run: &str,
) {
    let survivor = ["a", "b"][1 - victim];
    let start_path = format!("/report/shardcron/workflow/{run}@start");
    if !matches!(moment, Moment::BeforeCompletion) {
        step_log::release(world.dir.path(), survivor);
    }
    let fast = Duration::from_millis(2);
    match moment {
        Moment::BeforeCompletion => {}
        Moment::AtLastItemEnd => wait("every upstream item ended", nodes, fast, || {
            let ends = by_run(&lines(&world.up_log), "end");
            (0..4)
                .all(|i| ends.contains_key(&(run.to_owned(), i)))
                .then_some(())
        }),
        Moment::AtStartDecision => wait("the downstream's decision", nodes, fast, || {
            record(world, &start_path).map(|_| ())
        }),
    }
    let node = nodes[victim].take().expect("the victim runs");
    node.signal(libc::SIGKILL);
    if matches!(moment, Moment::BeforeCompletion) {
        step_log::release(world.dir.path(), survivor);
    }
    let started: Vec<u64> = (lines(&world.down_log).iter())
        .filter(|l| l.phase == "start" && l.run == run && l.instance == node.label)
        .map(|l| l.item)
        .collect();
    let decided = record(world, &start_path).is_some();
    eprintln!(
        "[workflow] {moment:?}: leader {} killed for run {run}; decided: {decided}; it had \
         started downstream items {started:?}",
        node.label
    );
}

#[test]
fn the_downstream_leader_killed_at_the_moment_of_completion_still_gives_one_downstream_run_per_upstream_run(
) {
    require!(Peer::ZooKeeper);
    let server = support::zk::server();
    let world = World::new(server.connect_string(), "workflow-leader", 0.2);
    let mut nodes = [Some(world.start("a")), Some(world.start("b"))];
    let ids = [id("a"), id("b")];
    let live: Vec<&str> = ids.iter().map(String::as_str).collect();
    let (ns, connect) = (world.zk.namespace.as_str(), world.zk.connect.as_str());
    let (mut since, mut first) = (0, None);
    for moment in [
        Moment::BeforeCompletion,
        Moment::AtLastItemEnd,
        Moment::AtStartDecision,
    ] {
        // --- a workflow run went through, and both nodes share both jobs
        let ran = wait("a workflow run through both jobs", &nodes, POLL, || {
            downstream_ran_after(&world, since)
        });
        first.get_or_insert(ran);
        registry::wait_converged(connect, ns, "import", &live, 4, WITHIN);
        registry::wait_converged(connect, ns, "report", &live, 2, WITHIN);
        let snapshot = registry::snapshot(connect, ns, "report").expect("reading the leader");
        let victim = usize::from(snapshot.leader.as_deref() == Some(ids[1].as_str()));

        // --- the other's items of a run are held; the leader is killed around their end
        let run = hold_next_run(&world, &nodes, ["a", "b"][1 - victim]);
        kill_at(moment, &world, &mut nodes, victim, &run);

        // --- the survivor runs the whole downstream run; the victim comes back
        wait(
            &format!("both downstream items of {run} ran"),
            &nodes,
            POLL,
            || {
                let ends = by_run(&lines(&world.down_log), "end");
                (0..2)
                    .all(|i| ends.contains_key(&(run.clone(), i)))
                    .then_some(())
            },
        );
        nodes[victim] = Some(world.start(["a", "b"][victim]));
        since = now_ns();
    }
    let last = wait(
        "a workflow run after the last restart",
        &nodes,
        POLL,
        || downstream_ran_after(&world, since),
    );
    for node in nodes.iter_mut().flatten() {
        node.terminate();
    }
    keep_node_logs(&nodes.iter().flatten().collect::<Vec<_>>());

    // Every upstream run from the first workflow run to the last: a complete one (4 items ended)
    // ran the downstream once, after it; one that is not (an item held, skipped or missed while
    // its owner was dead) ran no downstream item.
    let (up, down) = (lines(&world.up_log), lines(&world.down_log));
    let first = first.expect("a first workflow run");
    let up_ends = by_run(&up, "end");
    let runs: BTreeSet<String> = (up.iter().map(|l| l.run.clone()))
        .filter(|r| *r >= first && *r <= last)
        .collect();
    let (complete, partial): (BTreeSet<String>, BTreeSet<String>) = runs
        .into_iter()
        .partition(|r| (0..4).all(|i| up_ends.contains_key(&(r.clone(), i))));
    exactly_once_after_upstream(&up, &down, &complete);
    let stray: Vec<&Line> = down.iter().filter(|l| partial.contains(&l.run)).collect();
    assert!(
        stray.is_empty(),
        "a downstream run of an incomplete upstream run: {stray:?}"
    );
    eprintln!(
        "[workflow] runs {first}..={last}: {} complete, each with one downstream run; {} not \
         complete, with none",
        complete.len(),
        partial.len()
    );
}
