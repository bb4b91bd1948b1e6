//! Chaos on a real ZooKeeper with separate processes: example nodes run a script job (`chaos`, 4
//! items every second, failover on, misfire off) whose script logs every item run; a fault is
//! injected (a node killed or frozen, ZooKeeper stopped, an ensemble's leader killed, nodes coming
//! and going, bad data written into the registry); the log is then checked.
//!
//! Every scenario asserts that every item ran at every fire while an instance was up, except in
//! the window the fault itself makes (at most the session timeout + 2 s); that no item ran twice
//! for one fire, except one failover re-run of each item a crashed instance was running; and that
//! leadership and sharding converge afterwards (read through a ZooKeeper session of the test's
//! own). Each prints its report line (`[chaos] ...`, visible with `--nocapture`).
//!
//! The scenarios run one at a time (a static lock): each starts its own ZooKeeper and nodes, and
//! the machine has two cores.

#[macro_use]
extern crate support;

use support::jobs_file::{entries, script_job};
use support::Peer;

use support::chaos;
use support::node_proc::runs;
use support::zk;

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use chaos::log::{Crash, Expect, Window};
use chaos::{instance, now, Cluster, ITEMS, JOB, SESSION_TIMEOUT};
use support::wait::{wait_until_blocking, wait_until_blocking_every};
use zk::server::{ZkEnsemble, ZkServer};

/// How long a scenario watches the job after it has converged again.
const AFTERWARDS: f64 = 3.0;

/// The window a fault may cost: the session timeout + 2 s.
fn fault_window() -> f64 {
    fault_window_of(SESSION_TIMEOUT)
}

/// The window a fault may cost nodes whose session times out after `session`.
fn fault_window_of(session: Duration) -> f64 {
    session.as_secs_f64() + 2.0
}

/// The session timeout of the ZooKeeper restart scenario: longer than a restart of ZooKeeper's
/// JVM on a loaded machine.
const BOUNCE_SESSION_TIMEOUT: Duration = Duration::from_secs(10);

/// One scenario at a time.
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Starts `labels` and waits until they share the job and complete a fire; returns that second.
fn start_all(cluster: &mut Cluster, labels: &[&str]) -> u64 {
    for label in labels {
        cluster.start(label);
    }
    cluster.converge(labels);
    cluster.wait_complete_fire(JOB, ITEMS, now())
}

/// The chaos job's expectations from `from` to [`AFTERWARDS`] seconds from now.
/// The chaos job's expectations from `from` until [`AFTERWARDS`] seconds past both now and the end
/// of the last window, so that the state after every fault is watched too.
fn expect(from: u64, windows: Vec<Window>, crashes: Vec<Crash>) -> Expect {
    expect_job(JOB, ITEMS, from, windows, crashes)
}

/// [`expect`] for any job.
fn expect_job(
    job: &str,
    items: u32,
    from: u64,
    windows: Vec<Window>,
    crashes: Vec<Crash>,
) -> Expect {
    let last = windows.iter().map(|w| w.until).fold(now(), f64::max);
    Expect {
        job: job.to_owned(),
        items,
        from,
        to: (last + AFTERWARDS).floor() as u64,
        windows,
        crashes,
    }
}

#[test]
fn a_leader_killed_during_a_run_has_its_running_items_rerun_once_and_its_items_taken_over() {
    require!(Peer::ZooKeeper);
    let _serial = serial();
    let zk = ZkServer::start();
    let mut cluster = Cluster::new(&zk.connect_string(), "kill9", "");
    phase("three nodes share the job");
    let from = start_all(&mut cluster, &["a", "b", "c"]);

    phase("kill -9 the leader while it runs its items");
    let victim = cluster.leader();
    cluster.wait_running(&victim);
    let crashed = now();
    cluster.node(&victim).kill9();
    let survivors: Vec<&str> = ["a", "b", "c"]
        .into_iter()
        .filter(|l| *l != victim)
        .collect();

    phase("the survivors elect a leader and share all four items");
    let took = cluster.converge(&survivors);
    eprintln!("[chaos] kill -9: converged {took:?} after the kill was noticed by this test");
    let report = cluster.verdict(
        "kill -9 of the leader",
        &survivors,
        &expect(
            from,
            vec![Window {
                what: "kill -9".into(),
                from: crashed,
                until: crashed + fault_window(),
            }],
            vec![Crash {
                instance: instance(&victim),
                at: crashed,
                required: true,
            }],
        ),
    );
    assert!(
        !report.reruns.is_empty(),
        "the items the leader was running were re-run by failover: {report}"
    );
}

#[test]
fn a_node_frozen_past_its_session_loses_its_items_and_after_resuming_rejoins_without_running_them()
{
    require!(Peer::ZooKeeper);
    let _serial = serial();
    let zk = ZkServer::start();
    let mut cluster = Cluster::new(&zk.connect_string(), "sigstop", "");
    phase("three nodes share the job");
    let from = start_all(&mut cluster, &["a", "b", "c"]);

    phase("SIGSTOP a follower while it runs its items");
    let leader = cluster.leader();
    let victim = ["a", "b", "c"]
        .into_iter()
        .find(|l| *l != leader)
        .expect("two followers");
    let others: Vec<&str> = ["a", "b", "c"]
        .into_iter()
        .filter(|l| *l != victim)
        .collect();
    cluster.wait_running(victim);
    let stopped = now();
    cluster.node(victim).signal(libc::SIGSTOP);

    phase("while it is stopped, the others take its items over");
    cluster.converge(&others);
    let taken_over = cluster.wait_complete_fire(JOB, ITEMS, now());
    assert!(
        now() - stopped > SESSION_TIMEOUT.as_secs_f64(),
        "the node stayed stopped past its session timeout"
    );

    phase("SIGCONT: it notices the lost session and re-registers");
    let resumed = now();
    cluster.node(victim).signal(libc::SIGCONT);
    cluster.converge(&["a", "b", "c"]);
    let stderr = cluster.node(victim).stderr();
    assert!(
        stderr.contains("registry session ended"),
        "the resumed node says it lost its session:\n{stderr}"
    );
    let report = cluster.verdict(
        "SIGSTOP past the session timeout, then SIGCONT",
        &["a", "b", "c"],
        &expect(
            from,
            vec![Window {
                what: "SIGSTOP".into(),
                from: stopped,
                until: stopped + fault_window(),
            }],
            vec![Crash {
                instance: instance(victim),
                at: stopped,
                required: true,
            }],
        ),
    );
    eprintln!(
        "[chaos] SIGSTOP: full fire by the others at {taken_over} ({:.1} s after the stop); resumed at {resumed:.1}: {report}",
        taken_over as f64 - stopped
    );
}

#[test]
fn zookeeper_restarted_within_the_session_timeout_costs_no_item_beyond_its_outage() {
    require!(Peer::ZooKeeper);
    let _serial = serial();
    let zk = ZkServer::start();
    // A restart is a JVM start, which on a loaded two-core machine takes up to about 6 s: the
    // session outlasts that with room to spare, so the scenario is the one it names.
    let cluster = Cluster::new(&zk.connect_string(), "zk-bounce", "");
    let mut cluster = cluster.with_session(BOUNCE_SESSION_TIMEOUT);
    phase("three nodes share the job");
    let from = start_all(&mut cluster, &["a", "b", "c"]);

    phase("ZooKeeper is killed and started again on the same data");
    let down = now();
    zk.stop();
    // The outage itself: the fault's length, not a wait for a state.
    std::thread::sleep(Duration::from_millis(1500));
    zk.resume();
    let up = now();
    eprintln!("[chaos] zk bounce: ZooKeeper was down {:.1} s", up - down);
    assert!(
        up - down < cluster.session().as_secs_f64(),
        "the outage stayed within the session timeout (the JVM took {:.1} s to come back)",
        up - down
    );

    phase("the same instances, leader and owners, and fires go on");
    cluster.converge(&["a", "b", "c"]);
    cluster.verdict(
        "ZooKeeper restarted within the session timeout",
        &["a", "b", "c"],
        &expect(
            from,
            vec![Window {
                what: "ZooKeeper down".into(),
                from: down,
                until: down + fault_window_of(cluster.session()),
            }],
            Vec::new(),
        ),
    );
}

#[test]
fn zookeeper_down_longer_than_the_session_timeout_is_survived_by_every_node_on_its_own() {
    require!(Peer::ZooKeeper);
    let _serial = serial();
    let zk = ZkServer::start();
    let mut cluster = Cluster::new(&zk.connect_string(), "zk-outage", "");
    phase("three nodes share the job");
    let from = start_all(&mut cluster, &["a", "b", "c"]);

    phase("ZooKeeper is down for longer than the session timeout, from the middle of a run");
    cluster.wait_running("a");
    let down = now();
    zk.stop();
    // The outage itself: the fault's length, not a wait for a state.
    std::thread::sleep(SESSION_TIMEOUT + Duration::from_secs(3));
    zk.resume();
    let up = now();
    eprintln!("[chaos] zk outage: ZooKeeper was down {:.1} s", up - down);

    phase("every node reconnects, leadership and sharding converge, fires resume");
    let took = cluster.converge(&["a", "b", "c"]);
    eprintln!("[chaos] zk outage: converged {took:?} after ZooKeeper served again");
    for label in ["a", "b", "c"] {
        assert!(cluster.node(label).is_running(), "node {label} is still up");
    }
    cluster.verdict(
        "ZooKeeper down past the session timeout",
        &["a", "b", "c"],
        &expect(
            from,
            vec![Window {
                what: "ZooKeeper down".into(),
                from: down,
                until: up + fault_window(),
            }],
            // A session that expired looks like a crash: its unfinished runs may be re-run once.
            ["a", "b", "c"]
                .iter()
                .map(|l| Crash {
                    instance: instance(l),
                    at: down,
                    required: false,
                })
                .collect(),
        ),
    );
}

#[test]
fn nodes_on_an_ensemble_move_to_another_server_when_its_leader_is_killed_and_keep_firing() {
    require!(Peer::ZooKeeper);
    let _serial = serial();
    let ensemble = ZkEnsemble::start();
    let mut cluster = Cluster::new(&ensemble.connect_string(), "ensemble", "");
    phase("three nodes on a three-server ensemble");
    let from = start_all(&mut cluster, &["a", "b", "c"]);

    phase("kill the ensemble's leader");
    let leader = ensemble.leader().expect("a serving ensemble has a leader");
    let killed = now();
    ensemble.kill(leader);

    phase("the two others elect a leader; the nodes reconnect there and fire on");
    let took = cluster.converge(&["a", "b", "c"]);
    eprintln!(
        "[chaos] ensemble: server {} killed; converged after {took:?}",
        leader + 1
    );
    cluster.verdict(
        "ensemble leader killed",
        &["a", "b", "c"],
        &expect(
            from,
            vec![Window {
                what: "ensemble leader killed".into(),
                from: killed,
                until: killed + fault_window(),
            }],
            Vec::new(),
        ),
    );
}

#[test]
fn a_node_joining_and_another_leaving_gracefully_reshard_at_the_next_fire() {
    require!(Peer::ZooKeeper);
    let _serial = serial();
    let zk = ZkServer::start();
    let mut cluster = Cluster::new(&zk.connect_string(), "join-leave", "");
    phase("two nodes share the job");
    let from = start_all(&mut cluster, &["a", "b"]);

    phase("c joins");
    let joined = now();
    cluster.start("c");
    cluster.converge(&["a", "b", "c"]);
    let resharded = now();
    let c = instance("c");
    let first_by_c = cluster.wait_runs("c to run an item", |runs| {
        runs.iter()
            .find(|r| r.job == JOB && r.instance == c && r.source == "NORMAL")
            .map(|r| r.at)
    });
    assert!(
        first_by_c < resharded.ceil() + 1.0,
        "the new assignment took effect at the next fire: c first ran at {first_by_c:.2}, the \
         registry showed the new assignment by {resharded:.2}"
    );

    phase("a leaves gracefully (SIGTERM)");
    let leaving = now();
    let status = cluster.node("a").terminate();
    assert_eq!(status.code(), Some(0), "a exits 0 after SIGTERM");
    let left = now();
    cluster.converge(&["b", "c"]);
    let report = cluster.verdict(
        "join, then graceful leave",
        &["b", "c"],
        &expect(
            from,
            vec![
                Window {
                    what: "join".into(),
                    from: joined,
                    until: joined + 2.0,
                },
                Window {
                    what: "graceful leave".into(),
                    from: leaving,
                    until: left + 2.0,
                },
            ],
            Vec::new(),
        ),
    );
    assert!(
        report.reruns.is_empty(),
        "a graceful leave needs no failover"
    );
}

/// The extra jobs of the bad-input scenario: a job whose config gets broken, a script that hangs,
/// a script that does not exist.
fn bad_input_jobs() -> String {
    let job = |name, items, command| {
        script_job(name, items, command)
            .cron("* * * * * ?")
            .key("misfire", "false")
            .key("overwrite", "true")
    };
    entries(&[
        job("victim", 2, "'{record}'"),
        job("hang", 1, "'{hang}'"),
        job("missing", 1, "/nonexistent/chaos-missing.sh"),
    ])
}

#[test]
fn a_bad_config_and_bad_scripts_are_reported_and_cost_the_healthy_job_nothing() {
    require!(Peer::ZooKeeper);
    let _serial = serial();
    let zk = ZkServer::start();
    let mut cluster = Cluster::new(&zk.connect_string(), "bad-input", &bad_input_jobs());
    let (connect, ns) = (cluster.connect.clone(), cluster.namespace.clone());
    phase("two nodes run the healthy job beside the ones about to break");
    let from = start_all(&mut cluster, &["a", "b"]);
    let first = cluster.wait_complete_fire("victim", 2, now());
    // Victim is watched from the next complete fire: its first fire after the nodes joined may
    // start late (parked until its first plan), and with misfire off the fire after it is then
    // skipped while that run lasts; that is the join's cost, not the bad input's.
    let victim_from = cluster.wait_complete_fire("victim", 2, first as f64 + 1.0);
    cluster.wait_runs("the hanging script to start", |runs| {
        runs.iter().find(|r| r.job == "hang").map(|_| ())
    });

    phase("invalid YAML in victim's config");
    let config = chaos::registry::get_data(&connect, &ns, "/victim/config");
    let seen = cluster.stderr().len();
    chaos::registry::set_data(&connect, &ns, "/victim/config", "cron: [unclosed\n  : -");
    let error = cluster.wait_runs("an error naming victim's invalid config", |_| {
        cluster.stderr()[seen..]
            .lines()
            .find(|l| l.contains("victim") && l.contains("config"))
            .map(str::to_owned)
    });
    eprintln!("[chaos] bad input: invalid YAML reported as: {error}");
    cluster.wait_complete_fire("victim", 2, now() + 1.0);
    chaos::registry::set_data(&connect, &ns, "/victim/config", &config);

    phase("the missing script is reported; the hanging one ran once and holds only its item");
    let text = cluster.stderr();
    let missing = text
        .lines()
        .find(|l| l.contains("chaos-missing.sh"))
        .unwrap_or_else(|| panic!("the missing script is named in an error:\n{text}"));
    eprintln!("[chaos] bad input: missing script reported as: {missing}");
    let hangs: Vec<String> = (cluster.runs().iter())
        .filter(|r| r.job == "hang")
        .map(|r| r.line.clone())
        .collect();
    // The job's lines, and the session's: a node cut off past its fencing budget cancels its
    // runs, the hanging one too.
    let said: Vec<&str> = text
        .lines()
        .filter(|l| ["hang", "session", "fencing"].iter().any(|w| l.contains(w)))
        .take(40)
        .collect();
    assert_eq!(
        hangs.len(),
        1,
        "the hanging item is not started again while it runs: {hangs:#?}\nthe nodes said: {said:#?}"
    );

    phase("every job lost nothing beyond what its own fault made");
    let healthy = |job: &str, items: u32, from: u64| {
        cluster.verdict(
            &format!("bad input ({job})"),
            &["a", "b"],
            &expect_job(job, items, from, Vec::new(), Vec::new()),
        )
    };
    healthy(JOB, ITEMS, from);
    healthy("victim", 2, victim_from);
}

#[test]
fn a_huge_item_count_is_reported_and_costs_the_healthy_job_nothing() {
    require!(Peer::ZooKeeper);
    let _serial = serial();
    let zk = ZkServer::start();
    let mut cluster = Cluster::new(&zk.connect_string(), "huge-count", &bad_input_jobs());
    let (connect, ns) = (cluster.connect.clone(), cluster.namespace.clone());
    phase("two nodes run the healthy job beside victim");
    let from = start_all(&mut cluster, &["a", "b"]);
    cluster.wait_complete_fire("victim", 2, now());
    let config = chaos::registry::get_data(&connect, &ns, "/victim/config");

    phase("a shardingTotalCount of 100000 in victim's config");
    let huge = config.replace("shardingTotalCount: 2", "shardingTotalCount: 100000");
    assert_ne!(
        huge, config,
        "victim's config names its item count:\n{config}"
    );
    let seen = cluster.stderr().len();
    let huge_at = now();
    chaos::registry::set_data(&connect, &ns, "/victim/config", &huge);
    // Nothing to wait on: a few fires of the healthy job give a bad reaction time to show.
    cluster.wait_complete_fire(JOB, ITEMS, huge_at + 3.0);
    let victim_runs = cluster
        .runs()
        .iter()
        .filter(|r| r.job == "victim" && r.at > huge_at + 1.0)
        .count();
    let said: Vec<String> = cluster.stderr()[seen..]
        .lines()
        .filter(|l| l.contains("victim"))
        .take(2)
        .map(|l| l.chars().take(300).collect())
        .collect();
    eprintln!("[chaos] bad input: count 100000: victim ran {victim_runs} items; logged {said:?}");
    assert!(
        !said.is_empty(),
        "the refused count is reported, naming victim"
    );

    phase("victim's config is restored; it runs its two items again");
    chaos::registry::set_data(&connect, &ns, "/victim/config", &config);
    let restored = now();
    cluster.wait_complete_fire("victim", 2, restored);

    phase("neither job lost anything beyond victim's own fault");
    cluster.verdict(
        "huge count (chaos)",
        &["a", "b"],
        &expect(from, Vec::new(), Vec::new()),
    );
    cluster.verdict(
        "huge count (victim)",
        &["a", "b"],
        &expect_job(
            "victim",
            2,
            from,
            vec![Window {
                what: "shardingTotalCount 100000".into(),
                from: huge_at,
                until: restored + 2.0,
            }],
            Vec::new(),
        ),
    );
}

/// The extra job of the ghost-owner scenario: reconciled every minute, the shortest interval.
const ORPHAN_JOB: &str = "  - type: SCRIPT
    jobName: orphan
    cron: '* * * * * ?'
    timeZone: GMT
    shardingTotalCount: 2
    misfire: false
    reconcileIntervalMinutes: 1
    overwrite: true
    props:
      script.command.line: '{record}'
";

#[test]
fn an_item_whose_owner_names_a_nonexistent_instance_gets_a_live_owner_within_the_fault_window() {
    require!(Peer::ZooKeeper);
    let _serial = serial();
    let zk = ZkServer::start();
    let mut cluster = Cluster::new(&zk.connect_string(), "ghost", ORPHAN_JOB);
    let (connect, ns) = (cluster.connect.clone(), cluster.namespace.clone());
    phase("two nodes run the healthy job and orphan");
    let from = start_all(&mut cluster, &["a", "b"]);
    cluster.wait_complete_fire("orphan", 2, now());

    phase("orphan's item 0 names an instance that does not exist");
    let ghosted = now();
    chaos::registry::set_data(
        &connect,
        &ns,
        "/orphan/sharding/0/instance",
        "127.0.0.1@-@ghost",
    );
    // Up to the reconcile interval (one minute), so that a slow fix is measured, not just failed.
    chaos::registry::wait_converged(
        &connect,
        &ns,
        "orphan",
        &[&instance("a"), &instance("b")],
        2,
        Duration::from_secs(75),
    );
    eprintln!(
        "[chaos] ghost owner: orphan's item 0 owned by a live instance {:.1} s after the write",
        now() - ghosted
    );

    phase("orphan lost item 0 only within the fault window; the healthy job lost nothing");
    cluster.verdict(
        "ghost owner (chaos)",
        &["a", "b"],
        &expect(from, Vec::new(), Vec::new()),
    );
    cluster.verdict(
        "ghost owner (orphan)",
        &["a", "b"],
        &expect_job(
            "orphan",
            2,
            from,
            vec![Window {
                what: "ghost owner".into(),
                from: ghosted,
                until: ghosted + fault_window(),
            }],
            Vec::new(),
        ),
    );
}

/// Marks a phase of a scenario in the test's output (the test has no tracing subscriber: the nodes
/// are other processes).
fn phase(what: &str) {
    eprintln!("[chaos] --- {what}");
}

fn orphan_jobs() -> String {
    script_job("orphan", 1, "'{orphan}'")
        .cron("* * * * * ?")
        .key("misfire", "false")
        .key("overwrite", "true")
        .yaml()
}

/// The pids `{orphan}` logged so far.
fn orphan_pids(cluster: &Cluster) -> Vec<libc::pid_t> {
    std::fs::read_to_string(cluster.dir().join("orphans.log"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// Waits for a pid of `{orphan}` not in `seen`, and returns it.
fn new_orphan(cluster: &Cluster, seen: &[libc::pid_t]) -> libc::pid_t {
    let check = || orphan_pids(cluster).into_iter().find(|p| !seen.contains(p));
    wait_until_blocking(check, "a new run of the orphan job", chaos::WITHIN)
}

/// Waits until `pid` no longer runs; returns how long that took, failing after `within`.
fn gone_within(pid: libc::pid_t, within: Duration, what: &str) -> Duration {
    let started = std::time::Instant::now();
    let what = format!("{what}: child {pid} to end");
    // Every 20 ms: the time it took is reported.
    wait_until_blocking_every(|| !runs(pid), &what, within, Duration::from_millis(20));
    started.elapsed()
}

#[test]
fn a_frozen_or_killed_nodes_script_children_die_before_its_session_can_expire() {
    require!(Peer::ZooKeeper);
    let _serial = serial();
    let zk = ZkServer::start();
    let mut cluster = Cluster::with_jobs(&zk.connect_string(), "orphans", &orphan_jobs());
    phase("one node runs a script that ignores what becomes of its node");
    cluster.start("a");
    let first = new_orphan(&cluster, &[]);
    assert!(runs(first), "the orphan script {first} runs");

    phase("SIGSTOP the node: its keeper kills the child before the session can expire");
    cluster.node("a").signal(libc::SIGSTOP);
    let killed = gone_within(first, SESSION_TIMEOUT, "the node stopped");
    cluster.node("a").signal(libc::SIGCONT);

    phase("SIGCONT: the node runs the job again; kill -9: the keeper kills the child at once");
    let second = new_orphan(&cluster, &[first]);
    cluster.node("a").kill9();
    let after_kill = gone_within(second, Duration::from_secs(1), "the node killed");
    eprintln!(
        "[chaos] orphans: child of a stopped node killed {killed:?} after the stop (session \
         {SESSION_TIMEOUT:?}); child of a killed node {after_kill:?} after the kill"
    );

    phase(
        "kill -9 at the instant a child starts (its first line): the keeper kills it all the same",
    );
    let mut seen = vec![first, second];
    for round in 1..=3 {
        cluster.start("a");
        // Every millisecond: the node dies while it has just spawned the child.
        let check = || {
            orphan_pids(&cluster)
                .into_iter()
                .find(|p| !seen.contains(p))
        };
        let what = "a new run of the orphan job";
        let child = wait_until_blocking_every(check, what, chaos::WITHIN, Duration::from_millis(1));
        cluster.node("a").kill9();
        let gone = gone_within(
            child,
            Duration::from_secs(1),
            "the node killed at the spawn",
        );
        eprintln!("[chaos] orphans: round {round}: child of a node killed at its start gone after {gone:?}");
        seen.push(child);
    }
}

/// The tracking verdict on a hand-made log: an overlap, a duplicate, a matched failover re-run
/// and two lost fires are each found (a unit test of the support code, run in this binary only).
mod tracking_verdict {
    use super::chaos::spans::{check, JobCheck, Span};

    fn span(instance: &str, item: u32, source: &str, start: f64, last: f64, ended: bool) -> Span {
        Span {
            instance: instance.into(),
            job: "j".into(),
            item,
            source: source.into(),
            run: None,
            start,
            last,
            ended,
            line: String::new(),
        }
    }

    #[test]
    fn overlaps_duplicates_and_losses_are_found() {
        let job = JobCheck {
            job: "j".into(),
            items: 1,
            period: 1,
        };
        let spans = vec![
            span("a", 0, "NORMAL", 10.0, 10.3, true),
            span("a", 0, "NORMAL", 11.0, 11.2, false),
            span("b", 0, "FAILOVER", 11.1, 11.4, true),
            span("b", 0, "FAILOVER", 11.5, 11.6, true),
            span("b", 0, "NORMAL", 13.0, 13.3, true),
            span("c", 0, "NORMAL", 13.5, 13.6, true),
        ];
        let v = check(&spans, &[job], 10.0, 14.0, &[]);
        assert_eq!(v.overlaps.len(), 1, "{:?}", v.overlaps);
        assert_eq!(v.duplicates.len(), 1, "{:?}", v.duplicates);
        assert_eq!(v.failovers_matched, 1);
        assert_eq!(v.failovers_of_ended.len(), 1);
        assert_eq!(v.lost.len(), 2, "fires 12 and 14: {:?}", v.lost);
    }
}
