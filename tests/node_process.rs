//! The example node (`examples/node`) as real processes: its output lines, its exit codes, and two
//! processes sharing the work of a script job through a real ZooKeeper.
//!
//! The binary is built by the first test that needs it (`support::example_bin::example_binary`).
//! Every wait is on the processes' output lines (`support::node_proc`), with a deadline that names
//! what was expected.

#[macro_use]
extern crate support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use support::jobs_file::{script_job, write_jobs, write_script, ScriptEntry};
use support::node_proc::{run_to_exit, Line, NodeProcess, Output, ZkJobs};
use support::Peer;

/// Node processes on the test ZooKeeper running one script job whose `record.sh` appends
/// `{time} {instance} {context JSON}` to `log` for every item.
struct Recording {
    _dir: tempfile::TempDir,
    log: PathBuf,
    zk: ZkJobs,
}

impl Recording {
    /// Writes the script and a jobs file holding `job` running it, on a namespace `{tag}-{pid}`.
    fn new(tag: &str, job: ScriptEntry) -> Recording {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("runs.log");
        let script = dir.path().join("record.sh");
        write_script(
            &script,
            &format!(
                "#!/bin/sh\n# One line per item: the time, the instance, the context JSON (last argument).\n\
                 printf '%s %s %s\\n' \"$(date +%s.%N)\" \"$SHARDCRON_TEST_INSTANCE\" \"$1\" >> '{}'\n",
                log.display()
            ),
        );
        let command = format!("'{}'", script.display());
        let zk = ZkJobs {
            connect: support::zk::server().connect_string(),
            namespace: format!("{tag}-{}", std::process::id()),
            jobs: write_jobs(dir.path(), &[job.command(&command)]),
        };
        Recording { _dir: dir, log, zk }
    }

    /// Starts a node process `label` as `instance`.
    fn start(&self, label: &str, instance: &str, output: &Output) -> NodeProcess {
        self.zk.spawn(label, instance, instance, output)
    }
}

#[test]
fn the_example_without_arguments_runs_every_demo_item_and_exits_zero_on_sigterm() {
    let mut output = Output::new();
    let mut node = NodeProcess::spawn("demo", &[], &[], &output);

    // --- the jobs are announced before the first node starts, so the first `node` line closes the list
    output.wait_until("the first node to start", &[&node], |lines| {
        Output::of_kind(lines, "node").next().is_some()
    });
    let expected: BTreeSet<(String, String)> = Output::of_kind(&output.seen, "job")
        .flat_map(|l| {
            let items: u32 = l
                .field("items")
                .parse()
                .expect("a job line names its item count");
            (0..items).map(|i| (l.field("job").to_owned(), i.to_string()))
        })
        .collect();
    let jobs: BTreeSet<&str> = expected.iter().map(|(job, _)| job.as_str()).collect();
    assert!(
        jobs.contains("orders") && jobs.contains("inventory"),
        "the demo set has a simple and a dataflow job: {jobs:?}"
    );

    // --- every item of every demo job runs, on three in-process instances
    output.wait_until("an execution line for every demo item", &[&node], |lines| {
        let ran: BTreeSet<(String, String)> = Output::of_kind(lines, "exec")
            .map(|l| (l.field("job").to_owned(), l.field("item").to_owned()))
            .collect();
        ran.is_superset(&expected)
    });
    let instances: BTreeSet<&str> = Output::of_kind(&output.seen, "node")
        .map(|l| l.field("instance"))
        .collect();
    assert_eq!(
        instances.len(),
        3,
        "three instances by default: {instances:?}"
    );
    let pid = node.pid.to_string();
    for instance in &instances {
        assert!(
            instance.starts_with("127.0.0.1@-@") && instance.contains(&pid),
            "in-process instances are 127.0.0.1@-@{{pid}}-{{n}}: {instance}"
        );
    }
    let exec = Output::of_kind(&output.seen, "exec")
        .find(|l| l.field("job") == "orders")
        .expect("orders ran");
    for key in ["instance", "source", "outcome", "duration_ms"] {
        assert!(
            !exec.field(key).is_empty(),
            "an exec line has {key}=: {}",
            exec.text
        );
    }
    let failed = Output::of_kind(&output.seen, "exec")
        .find(|l| l.field("outcome") == "error")
        .expect("the Atlantis item of orders fails");
    assert!(
        failed.text.contains("error=\"no orders ship to Atlantis\""),
        "{}",
        failed.text
    );
    for job in &jobs {
        assert!(
            Output::of_kind(&output.seen, "reshard").any(|l| l.field("job") == *job),
            "a reshard line for {job}"
        );
    }

    // --- SIGTERM shuts every node down, then the process exits 0
    let status = node.terminate();
    assert_eq!(
        status.code(),
        Some(0),
        "exit status; stderr:\n{}",
        node.stderr()
    );
    output.wait_until("the stopped line", &[&node], |lines| {
        Output::of_kind(lines, "stopped").next().is_some()
    });
}

#[test]
fn bad_flags_exit_with_code_2_and_a_message_naming_the_flag() {
    let cases: [(&[&str], &str); 11] = [
        (&["--bogus"], "--bogus"),
        (&["--label", "gpu,a b"], "--label"),
        (&["--label", "gpu", "--label", "eu"], "--label"),
        (&["extra"], "extra"),
        (&["--zk"], "--zk"),
        (&["--zk", ""], "--zk"),
        (&["--nodes", "0"], "--nodes"),
        (&["--nodes=three"], "--nodes"),
        (&["--zk", "127.0.0.1:2181", "--nodes", "2"], "--nodes"),
        (&["--instance-id", "no-separator"], "--instance-id"),
        (&["--session-timeout-ms", "-5"], "--session-timeout-ms"),
    ];
    for (args, flag) in cases {
        let (status, stderr) = run_to_exit(args);
        assert_eq!(
            status.code(),
            Some(2),
            "{args:?}: exit code; stderr:\n{stderr}"
        );
        assert!(
            stderr.contains(flag),
            "{args:?}: stderr names {flag}:\n{stderr}"
        );
    }
}

#[test]
fn a_bad_jobs_file_exits_with_code_2_naming_the_file_and_the_field_or_line() {
    let dir = tempfile::tempdir().unwrap();
    let job = |body: &str| format!("jobs:\n  - type: demo\n    jobName: reports\n{body}");
    let cases: [(&str, String, &[&str]); 8] = [
        (
            "a notifier's bad prop is named",
            job("    shardingTotalCount: 2\n    jobErrorHandlerType: EMAIL\n    props:\n      email.port: smtp\n"),
            &["jobs[0]", "props.email.port", "props.email.host"],
        ),
        (
            "a job label that is not a label",
            job("    shardingTotalCount: 2\n    label: 'a,b'\n"),
            &["jobs[0]", "label"],
        ),
        (
            "a wrong type of value is reported with its field and line",
            job("    cron: '0/3 * * * * ?'\n    shardingTotalCount: many\n"),
            &["shardingTotalCount", "line 5"],
        ),
        (
            "an invalid config is reported per field by validation",
            job("    cron: not a cron\n    shardingTotalCount: 2\n"),
            &["jobs[0]", "cron"],
        ),
        (
            "a job without a type",
            "jobs:\n  - jobName: reports\n    shardingTotalCount: 2\n".to_owned(),
            &["jobs[0]", "type"],
        ),
        (
            "a job of an unknown type",
            "jobs:\n  - type: nosuch\n    jobName: reports\n    shardingTotalCount: 2\n".to_owned(),
            &["type", "nosuch"],
        ),
        (
            "a script job without its command line",
            "jobs:\n  - type: SCRIPT\n    jobName: cleanup\n    shardingTotalCount: 2\n".to_owned(),
            &["script.command.line"],
        ),
        (
            "a file without a jobs list",
            "job:\n  - type: demo\n".to_owned(),
            &["jobs"],
        ),
    ];
    for (n, (what, text, needles)) in cases.into_iter().enumerate() {
        let file = dir.path().join(format!("jobs-{n}.yaml"));
        std::fs::write(&file, text).unwrap();
        let (status, stderr) = run_to_exit(&["--jobs", file.to_str().unwrap()]);
        assert_eq!(
            status.code(),
            Some(2),
            "{what}: exit code; stderr:\n{stderr}"
        );
        for needle in needles.iter().chain([&file.to_str().unwrap()]) {
            assert!(
                stderr.contains(needle),
                "{what}: stderr names {needle:?}:\n{stderr}"
            );
        }
    }
    let missing = dir.path().join("missing.yaml");
    let (status, stderr) = run_to_exit(&["--jobs", missing.to_str().unwrap()]);
    assert_eq!(
        status.code(),
        Some(2),
        "a missing jobs file: exit code; stderr:\n{stderr}"
    );
    assert!(
        stderr.contains("missing.yaml"),
        "a missing jobs file is named:\n{stderr}"
    );
}

/// One run of the script job, as the script logged it.
#[derive(Debug, Clone)]
struct ScriptRun {
    /// The whole second the script started in: the fire second, as the items start within
    /// milliseconds of their fire.
    second: u64,
    /// The instance the test started the process as.
    instance: String,
    item: u64,
    /// `NORMAL`, `MISFIRE`, ... from the task id.
    source: String,
    line: String,
}

/// Parses the script's log: `{unix time} {instance} {context JSON}` per line.
fn script_runs(log: &Path) -> Vec<ScriptRun> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .map(|line| {
            let mut parts = line.splitn(3, ' ');
            let (time, instance, json) = match (parts.next(), parts.next(), parts.next()) {
                (Some(t), Some(i), Some(j)) => (t, i, j),
                _ => panic!("a script log line has a time, an instance and a context: {line:?}"),
            };
            let ctx: serde_json::Value = serde_json::from_str(json)
                .unwrap_or_else(|e| panic!("the context is JSON ({e}): {line:?}"));
            let task_id = ctx["taskId"].as_str().expect("the context has a taskId");
            // {job}@-@{items}@-@{SOURCE}@-@{ip}@-@{suffix}@-@{run}
            let parts: Vec<&str> = task_id.split("@-@").collect();
            assert_eq!(
                parts.get(3..5).map(|p| p.join("@-@")).as_deref(),
                Some(instance),
                "the task id names the instance that ran it: {line:?}"
            );
            ScriptRun {
                second: time
                    .split('.')
                    .next()
                    .unwrap()
                    .parse()
                    .expect("unix seconds"),
                instance: instance.to_owned(),
                item: ctx["shardingItem"]
                    .as_u64()
                    .expect("the context has a shardingItem"),
                source: parts.get(2).copied().unwrap_or_default().to_owned(),
                line: line.to_owned(),
            }
        })
        .collect()
}

fn unix_seconds() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("the clock is after 1970")
        .as_secs()
}

/// Fire seconds whose normal runs covered items `0..items` exactly once, run by `instances`
/// instances.
fn fires_split(runs: &[ScriptRun], items: u64, instances: usize) -> Vec<u64> {
    let mut by_second: BTreeMap<u64, Vec<&ScriptRun>> = BTreeMap::new();
    for run in runs.iter().filter(|r| r.source == "NORMAL") {
        by_second.entry(run.second).or_default().push(run);
    }
    by_second
        .into_iter()
        .filter(|(_, runs)| {
            let mut ran: Vec<u64> = runs.iter().map(|r| r.item).collect();
            ran.sort_unstable();
            let by: BTreeSet<&str> = runs.iter().map(|r| r.instance.as_str()).collect();
            ran == (0..items).collect::<Vec<_>>() && by.len() == instances
        })
        .map(|(second, _)| second)
        .collect()
}

#[test]
fn two_processes_on_zookeeper_split_a_script_job_and_run_each_item_once_per_fire() {
    require!(Peer::ZooKeeper);
    let zk = Recording::new(
        "node-process",
        script_job("ticks", 4, "").cron("* * * * * ?"),
    );
    let log = &zk.log;
    let mut output = Output::new();

    // --- one process alone runs every item
    let mut a = zk.start("a", "127.0.0.1@-@node-a", &output);
    output.wait_until("process a to run items 0..4", &[&a], |lines| {
        let items: BTreeSet<&str> = Output::of_kind(lines, "exec")
            .map(|l| l.field("item"))
            .collect();
        items == BTreeSet::from(["0", "1", "2", "3"])
    });

    // --- a second process joins, and the items are resharded between the two
    let joined = unix_seconds();
    let mut b = zk.start("b", "127.0.0.1@-@node-b", &output);
    output.wait_until(
        "a fire of items 0..4 split between both processes after b joined",
        &[&a, &b],
        |lines| {
            Output::of_kind(lines, "exec").any(|l| l.node == "b")
                && fires_split(&script_runs(log), 4, 2)
                    .iter()
                    .any(|second| *second > joined)
        },
    );
    let reshards = Output::of_kind(&output.seen, "reshard").filter(|l| l.node == "a");
    assert!(
        reshards.count() >= 2,
        "process a printed its first sharding and the resharding when b joined"
    );

    // --- both leave gracefully
    for node in [&mut a, &mut b] {
        let status = node.terminate();
        assert_eq!(
            status.code(),
            Some(0),
            "node {} exit status; stderr:\n{}",
            node.label,
            node.stderr()
        );
    }
    let runs = script_runs(log);
    let items: BTreeSet<u64> = runs.iter().map(|r| r.item).collect();
    assert_eq!(items, BTreeSet::from([0, 1, 2, 3]), "every item ran");
    let mut per_fire: BTreeMap<(u64, u64), Vec<&str>> = BTreeMap::new();
    for run in runs.iter().filter(|r| r.source == "NORMAL") {
        per_fire
            .entry((run.item, run.second))
            .or_default()
            .push(&run.line);
    }
    let twice: Vec<_> = per_fire
        .iter()
        .filter(|(_, lines)| lines.len() > 1)
        .collect();
    assert!(
        twice.is_empty(),
        "items that ran twice in one fire second: {twice:#?}"
    );
}

/// The instant a line was printed (its first word).
fn printed_at(line: &Line) -> f64 {
    let stamp = line.text.split(' ').next().unwrap_or_default();
    let at = chrono::DateTime::parse_from_rfc3339(stamp)
        .unwrap_or_else(|e| panic!("a line starts with its timestamp ({e}): {}", line.text));
    at.timestamp_millis() as f64 / 1000.0
}

#[test]
fn three_processes_on_zookeeper_hear_a_distribute_once_listener_once_per_fire_around_every_item() {
    require!(Peer::ZooKeeper);
    let zk = Recording::new(
        "node-process-once",
        script_job("once", 3, "")
            .cron("0/2 * * * * ?")
            .key("jobListenerTypes", "[ONCE_LOG]"),
    );
    let log = &zk.log;
    let mut output = Output::new();
    let mut nodes = vec![
        zk.start("a", "127.0.0.1@-@once-a", &output),
        zk.start("b", "127.0.0.1@-@once-b", &output),
        zk.start("c", "127.0.0.1@-@once-c", &output),
    ];
    let joined = unix_seconds();
    // --- three fires split over the three processes, each with its after hook printed
    {
        let refs: Vec<&NodeProcess> = nodes.iter().collect();
        output.wait_until("three fires over three processes, heard", &refs, |lines| {
            let fires: Vec<u64> = fires_split(&script_runs(log), 3, 3)
                .into_iter()
                .filter(|s| *s > joined)
                .collect();
            let afters = Output::of_kind(lines, "once").filter(|l| l.field("hook") == "after");
            fires.len() >= 3 && afters.filter(|l| printed_at(l) > fires[2] as f64).count() >= 1
        });
    }
    let runs = script_runs(log);
    let fires: Vec<u64> = fires_split(&runs, 3, 3)
        .into_iter()
        .filter(|s| *s > joined)
        .take(3)
        .collect();
    let hooks: Vec<&Line> = Output::of_kind(&output.seen, "once").collect();
    for fire in fires {
        let window = |l: &&&Line| {
            let at = printed_at(l);
            at >= fire as f64 && at < (fire + 2) as f64
        };
        let before: Vec<&&Line> = hooks
            .iter()
            .filter(|l| l.field("hook") == "before")
            .filter(window)
            .collect();
        let after: Vec<&&Line> = hooks
            .iter()
            .filter(|l| l.field("hook") == "after")
            .filter(window)
            .collect();
        assert_eq!(
            before.len(),
            1,
            "one before hook across the processes for fire {fire}: {hooks:#?}"
        );
        assert_eq!(
            after.len(),
            1,
            "one after hook across the processes for fire {fire}: {hooks:#?}"
        );
        assert_eq!(
            before[0].field("missing"),
            "",
            "no item missing at fire {fire}"
        );
        let (before_at, after_at) = (printed_at(before[0]), printed_at(after[0]));
        for run in runs
            .iter()
            .filter(|r| r.second == fire && r.source == "NORMAL")
        {
            let started: f64 = run.line.split(' ').next().unwrap().parse().unwrap();
            assert!(
                before_at <= started && started <= after_at,
                "item {} of fire {fire} ran at {started}, between the hooks at {before_at} and {after_at}",
                run.item
            );
        }
    }
    for node in &mut nodes {
        let status = node.terminate();
        assert_eq!(
            status.code(),
            Some(0),
            "node {} exit; stderr:\n{}",
            node.label,
            node.stderr()
        );
    }
}

#[test]
fn a_history_password_in_argv_is_refused_and_never_printed() {
    let (status, stderr) = run_to_exit(&["--history", "postgres://app:hunter2@127.0.0.1:1/jobs"]);
    assert_eq!(status.code(), Some(2), "stderr:\n{stderr}");
    assert!(
        stderr.contains("--history") && stderr.contains("PGPASSWORD"),
        "{stderr}"
    );
    assert!(!stderr.contains("hunter2"), "{stderr}");
}
