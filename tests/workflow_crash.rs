//! Workflows across crashes: two example node processes on a real ZooKeeper run an upstream script
//! job of 4 items every 3 s and a downstream of 2 items without a cron (`shardcron.after`), both
//! with failover. One process is killed (SIGKILL) while it runs an upstream item; or the
//! downstream's leader is killed at the moment the upstream run completes. Either way the
//! downstream runs once per upstream run, after every upstream item of it ended.
//!
//! Scripts log by workflow run ([`support::step_log`]).

mod support;

use support::chaos::registry;
use support::node_proc::{NodeProcess, Output};
use support::step_log::{self, by_run, lines, Line};
use support::wait::{poll_blocking, POLL};
use support::Peer;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The two jobs: `import` (4 items every 3 s) and `report` (2 items after `import`).
fn jobs_file(dir: &Path, up: &Path, down: &Path) -> PathBuf {
    let jobs = dir.join("jobs.yaml");
    std::fs::write(
        &jobs,
        format!(
            "jobs:\n\
             \x20 - type: SCRIPT\n    jobName: import\n    cron: '0/3 * * * * ?'\n    timeZone: GMT\n    \
             shardingTotalCount: 4\n    failover: true\n    misfire: false\n    props:\n      \
             script.command.line: '{}'\n\
             \x20 - type: SCRIPT\n    jobName: report\n    timeZone: GMT\n    \
             shardingTotalCount: 2\n    failover: true\n    props:\n      script.command.line: '{}'\n      \
             shardcron.after: import\n",
            up.display(),
            down.display()
        ),
    )
    .expect("writing the jobs file");
    jobs
}

/// The test's world: the two logs, the jobs file, the nodes' arguments.
struct World {
    dir: tempfile::TempDir,
    up_log: PathBuf,
    down_log: PathBuf,
    jobs: PathBuf,
    connect: String,
    namespace: String,
    output: Output,
}

impl World {
    fn new(connect: String, test: &str, up_work: f64) -> World {
        let dir = tempfile::tempdir().expect("a temp dir");
        let (up_log, down_log) = (dir.path().join("up.log"), dir.path().join("down.log"));
        let up = step_log::script(dir.path(), "up", &up_log, up_work);
        let down = step_log::script(dir.path(), "down", &down_log, 0.5);
        let jobs = jobs_file(dir.path(), &up, &down);
        World {
            dir,
            up_log,
            down_log,
            jobs,
            connect,
            namespace: format!("{test}-{}", std::process::id()),
            output: Output::new(),
        }
    }

    /// Starts the node labelled `label` (instance `127.0.0.1@-@node-{label}`).
    fn start(&self, label: &str) -> NodeProcess {
        let instance = id(label);
        let args = [
            "--zk",
            self.connect.as_str(),
            "--namespace",
            self.namespace.as_str(),
            "--jobs",
            self.jobs.to_str().expect("a UTF-8 temp path"),
            "--instance-id",
            instance.as_str(),
            "--session-timeout-ms",
            "4000",
        ];
        let env = [("SHARDCRON_TEST_INSTANCE", label)];
        NodeProcess::spawn(label, &args, &env, &self.output)
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
                assert_eq!(ended.len(), 1, "upstream item {i} of {run} ended once");
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
                "downstream item {item} of {run} ended once: {ends:?}"
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
    let a = world.start("a");
    let mut b = world.start("b");
    let within = Duration::from_secs(90);

    // --- a runs an upstream item after the downstream ran once: kill -9 it mid-item
    let wait = |what: &str, check: &dyn Fn() -> bool| {
        poll_blocking(check, within, POLL)
            .unwrap_or_else(|_| panic!("{what}; a:\n{}\nb:\n{}", a.stderr(), b.stderr()))
    };
    wait("the downstream ran once", &|| {
        !by_run(&lines(&world.down_log), "end").is_empty()
    });
    let killed_in = poll_blocking(
        || {
            let all = lines(&world.up_log);
            let ended = by_run(&all, "end");
            all.iter()
                .filter(|l| l.phase == "start" && l.instance == "a")
                .find(|l| !ended.contains_key(&(l.run.clone(), l.item)))
                .map(|l| l.run.clone())
        },
        within,
        Duration::from_millis(20),
    )
    .expect("a runs an upstream item");
    a.signal(libc::SIGKILL);

    // --- the survivor ends the killed run, and the downstream runs for it and three runs more
    wait(
        "the downstream ran for the killed run and three later ones",
        &|| {
            let down = by_run(&lines(&world.down_log), "end");
            let runs: BTreeSet<&String> = down.keys().map(|(run, _)| run).collect();
            let later = runs.iter().filter(|run| ***run > killed_in).count();
            (0..2).all(|i| down.contains_key(&(killed_in.clone(), i))) && later >= 3
        },
    );
    b.terminate();

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

/// The data of `path`, or `None` while it is not there (or the read failed).
fn record(world: &World, path: &str) -> Option<String> {
    registry::exists(&world.connect, &world.namespace, path)
        .then(|| registry::get_data(&world.connect, &world.namespace, path))
}

/// The workflow run whose downstream ended both items, newest first, whose root fired after
/// `after` (ns since the epoch): the wait for a run after a restart.
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

#[test]
fn the_downstream_leader_killed_at_the_moment_of_completion_still_gives_one_downstream_run_per_upstream_run(
) {
    require!(Peer::ZooKeeper);
    let server = support::zk::server();
    let world = World::new(server.connect_string(), "workflow-leader", 0.2);
    let began = std::time::Instant::now();
    let mut nodes = [Some(world.start("a")), Some(world.start("b"))];
    let within = Duration::from_secs(30);
    let fail = |what: &str, nodes: &[Option<NodeProcess>; 2]| -> ! {
        let stderr: Vec<String> = nodes
            .iter()
            .flatten()
            .map(|n| format!("--- {}:\n{}", n.label, n.stderr()))
            .collect();
        panic!("timed out after {within:?}: {what}\n{}", stderr.join("\n"))
    };
    let ids = [id("a"), id("b")];
    let live: Vec<&str> = ids.iter().map(String::as_str).collect();
    let mut since = 0u128;
    let mut first = None;
    for moment in [
        Moment::BeforeCompletion,
        Moment::AtLastItemEnd,
        Moment::AtStartDecision,
    ] {
        // --- both nodes share both jobs, and a workflow run went through on them
        let Ok(ran) = poll_blocking(|| downstream_ran_after(&world, since), within, POLL) else {
            fail("a workflow run through both jobs", &nodes)
        };
        first.get_or_insert(ran);
        eprintln!(
            "[workflow] {:.1} s: a workflow run went through",
            began.elapsed().as_secs_f64()
        );
        let (ns, connect) = (world.namespace.as_str(), world.connect.as_str());
        registry::wait_converged(connect, ns, "import", &live, 4, within);
        registry::wait_converged(connect, ns, "report", &live, 2, within);
        eprintln!(
            "[workflow] {:.1} s: converged",
            began.elapsed().as_secs_f64()
        );
        let leader = registry::snapshot(connect, ns, "report")
            .expect("reading the downstream's leader")
            .leader
            .expect("a converged job has a leader");
        let victim = usize::from(leader == ids[1]);
        let (victim_label, survivor) = (["a", "b"][victim], ["a", "b"][1 - victim]);

        // --- the survivor's items of the next upstream run are held; the leader's end
        if poll_blocking(between_fires, within, Duration::from_millis(10)).is_err() {
            fail("a moment between two upstream fires", &nodes);
        }
        step_log::hold(world.dir.path(), survivor);
        let from = now_ns();
        let held = |l: &Line| l.phase == "held" && l.instance == survivor && l.at > from;
        let Ok(run) = poll_blocking(
            || lines(&world.up_log).into_iter().find(held).map(|l| l.run),
            within,
            POLL,
        ) else {
            fail("the survivor's upstream items held", &nodes)
        };
        let ended_or_held = || {
            let all = lines(&world.up_log);
            let held_here = all.iter().filter(|l| held(l) && l.run == run).count();
            let ended = by_run(&all, "end")
                .keys()
                .filter(|(r, _)| *r == run)
                .count();
            let ends_written = (0..4).filter(|i| {
                record(&world, &format!("/import/shardcron/workflow/{run}@{i}"))
                    .is_some_and(|d| !d.starts_with("running:"))
            });
            held_here == 2 && ended == 2 && ends_written.count() == 2
        };
        if poll_blocking(ended_or_held, within, POLL).is_err() {
            fail(
                &format!("run {run}: 2 items held on {survivor}, 2 ended on {victim_label}"),
                &nodes,
            );
        }

        // --- the downstream leader is killed at the moment of completion
        let kill = |nodes: &mut [Option<NodeProcess>; 2]| {
            let node = nodes[victim].take().expect("the victim runs");
            node.signal(libc::SIGKILL);
        };
        let start_path = format!("/report/shardcron/workflow/{run}@start");
        match moment {
            Moment::BeforeCompletion => {
                kill(&mut nodes);
                step_log::release(world.dir.path(), survivor);
            }
            Moment::AtLastItemEnd => {
                step_log::release(world.dir.path(), survivor);
                let all_ended = || {
                    let ends = by_run(&lines(&world.up_log), "end");
                    (0..4).all(|i| ends.contains_key(&(run.clone(), i)))
                };
                if poll_blocking(all_ended, within, Duration::from_millis(2)).is_err() {
                    fail(&format!("every upstream item of {run} ended"), &nodes);
                }
                kill(&mut nodes);
            }
            Moment::AtStartDecision => {
                step_log::release(world.dir.path(), survivor);
                let decided = || record(&world, &start_path).is_some();
                if poll_blocking(decided, within, Duration::from_millis(2)).is_err() {
                    fail(&format!("the downstream's decision for {run}"), &nodes);
                }
                kill(&mut nodes);
            }
        }
        let victim_started: Vec<u64> = lines(&world.down_log)
            .iter()
            .filter(|l| l.phase == "start" && l.run == run && l.instance == victim_label)
            .map(|l| l.item)
            .collect();
        eprintln!(
            "[workflow] {:.1} s {moment:?}: leader {victim_label} killed for run {run}; {} it had \
             started downstream items {victim_started:?}",
            began.elapsed().as_secs_f64(),
            if record(&world, &start_path).is_some() {
                "decided;"
            } else {
                "undecided;"
            },
        );

        // --- the survivor runs the whole downstream run; the victim comes back
        let ran_both = || {
            let ends = by_run(&lines(&world.down_log), "end");
            (0..2).all(|i| ends.contains_key(&(run.clone(), i)))
        };
        if poll_blocking(ran_both, within, POLL).is_err() {
            fail(&format!("both downstream items of {run} ran"), &nodes);
        }
        eprintln!(
            "[workflow] {:.1} s: the downstream ran run {run} on the survivor",
            began.elapsed().as_secs_f64()
        );
        nodes[victim] = Some(world.start(victim_label));
        since = now_ns();
    }
    let Ok(last) = poll_blocking(|| downstream_ran_after(&world, since), within, POLL) else {
        fail(
            "a workflow run through both jobs after the last restart",
            &nodes,
        )
    };
    for node in nodes.iter_mut().flatten() {
        node.terminate();
    }

    // Every upstream run from the first workflow run to the last: a complete one (4 items ended)
    // ran the downstream once, after it; one that is not (an item held, skipped or missed while
    // its owner was dead) ran no downstream item.
    let (up, down) = (lines(&world.up_log), lines(&world.down_log));
    let first = first.expect("a first workflow run");
    let up_ends = by_run(&up, "end");
    let span: BTreeSet<String> = up
        .iter()
        .map(|l| l.run.clone())
        .filter(|r| *r >= first && *r <= last)
        .collect();
    let (complete, partial): (BTreeSet<String>, BTreeSet<String>) = span
        .into_iter()
        .partition(|r| (0..4).all(|i| up_ends.contains_key(&(r.clone(), i))));
    exactly_once_after_upstream(&up, &down, &complete);
    let stray: Vec<&Line> = down.iter().filter(|l| partial.contains(&l.run)).collect();
    assert!(
        stray.is_empty(),
        "no downstream run for an upstream run that did not complete: {stray:?}"
    );
    eprintln!(
        "[workflow] runs {first}..={last}: {} complete, each with one downstream run; {} not \
         complete, with none",
        complete.len(),
        partial.len()
    );
}
