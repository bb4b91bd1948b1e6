//! A workflow across the crash of an upstream owner: two example node processes on a real
//! ZooKeeper run an upstream script job of 4 items every 3 s and a downstream of 2 items without a
//! cron (`shardcron.after`), both with failover. One process is killed (SIGKILL) while it runs an
//! upstream item; the survivor takes the item over for the same workflow run, and the downstream
//! still runs once per upstream run, after every upstream item of it ended.

mod support;

use support::node_proc::{NodeProcess, Output};
use support::wait::{poll_blocking, POLL};
use support::Peer;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

/// One line a script wrote: the wall clock in ns, `start` or `end`, the process, the context.
#[derive(Debug, Clone)]
struct Line {
    at: u128,
    phase: String,
    instance: String,
    item: u64,
    scheduled_at: String,
}

fn lines(log: &Path) -> Vec<Line> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let mut words = l.splitn(4, ' ');
            let at = words.next()?.parse().ok()?;
            let phase = words.next()?.to_owned();
            let instance = words.next()?.to_owned();
            let ctx: serde_json::Value = serde_json::from_str(words.next()?).ok()?;
            Some(Line {
                at,
                phase,
                instance,
                item: ctx["shardingItem"].as_u64()?,
                scheduled_at: ctx["scheduledAt"].as_str()?.to_owned(),
            })
        })
        .collect()
}

/// A script writing a `start` line, sleeping, then an `end` line to `log`.
fn script(dir: &Path, name: &str, log: &Path) -> std::path::PathBuf {
    let path = dir.join(format!("{name}.sh"));
    let line = |phase: &str| {
        format!(
            "printf '%s {phase} %s %s\\n' \"$(date +%s%N)\" \"$SHARDCRON_TEST_INSTANCE\" \"$1\" >> '{}'\n",
            log.display()
        )
    };
    std::fs::write(
        &path,
        format!("#!/bin/sh\n{}sleep 1\n{}", line("start"), line("end")),
    )
    .unwrap();
    let mut permissions = std::fs::metadata(&path).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(&path, permissions).unwrap();
    path
}

/// The lines of `phase` by (root instant, item).
fn by_run(lines: &[Line], phase: &str) -> BTreeMap<(String, u64), Vec<Line>> {
    let mut map: BTreeMap<(String, u64), Vec<Line>> = BTreeMap::new();
    for l in lines.iter().filter(|l| l.phase == phase) {
        map.entry((l.scheduled_at.clone(), l.item))
            .or_default()
            .push(l.clone());
    }
    map
}

#[test]
fn an_upstream_owner_killed_mid_item_still_gives_one_downstream_run_per_upstream_run() {
    require!(Peer::ZooKeeper);
    let server = support::zk::server();
    let dir = tempfile::tempdir().unwrap();
    let (up_log, down_log) = (dir.path().join("up.log"), dir.path().join("down.log"));
    let (up_script, down_script) = (
        script(dir.path(), "up", &up_log),
        script(dir.path(), "down", &down_log),
    );
    let jobs = dir.path().join("jobs.yaml");
    std::fs::write(
        &jobs,
        format!(
            "jobs:\n\
             \x20 - type: SCRIPT\n    jobName: import\n    cron: '0/3 * * * * ?'\n    timeZone: GMT\n    \
             shardingTotalCount: 4\n    failover: true\n    props:\n      script.command.line: '{}'\n\
             \x20 - type: SCRIPT\n    jobName: report\n    timeZone: GMT\n    \
             shardingTotalCount: 2\n    failover: true\n    props:\n      script.command.line: '{}'\n      \
             shardcron.after: import\n",
            up_script.display(),
            down_script.display()
        ),
    )
    .unwrap();
    let namespace = format!("workflow-crash-{}", std::process::id());
    let connect = server.connect_string();
    let output = Output::new();
    let start = |label: &str, instance: &str| {
        let args = [
            "--zk",
            connect.as_str(),
            "--namespace",
            namespace.as_str(),
            "--jobs",
            jobs.to_str().unwrap(),
            "--instance-id",
            instance,
            "--session-timeout-ms",
            "4000",
        ];
        NodeProcess::spawn(label, &args, &[("SHARDCRON_TEST_INSTANCE", label)], &output)
    };
    let a = start("a", "127.0.0.1@-@node-a");
    let mut b = start("b", "127.0.0.2@-@node-b");
    let within = Duration::from_secs(90);

    // --- a runs an upstream item after the downstream ran once: kill -9 it mid-item
    let wait = |what: &str, check: &dyn Fn() -> bool| {
        poll_blocking(check, within, POLL)
            .unwrap_or_else(|_| panic!("{what}; a:\n{}\nb:\n{}", a.stderr(), b.stderr()))
    };
    wait("the downstream ran once", &|| {
        !by_run(&lines(&down_log), "end").is_empty()
    });
    let killed_in = poll_blocking(
        || {
            let all = lines(&up_log);
            let ended = by_run(&all, "end");
            all.iter()
                .filter(|l| l.phase == "start" && l.instance == "a")
                .find(|l| !ended.contains_key(&(l.scheduled_at.clone(), l.item)))
                .map(|l| l.scheduled_at.clone())
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
            let down = by_run(&lines(&down_log), "end");
            let instants: BTreeSet<&String> = down.keys().map(|(at, _)| at).collect();
            let later = instants.iter().filter(|at| ***at > killed_in).count();
            (0..2).all(|i| down.contains_key(&(killed_in.clone(), i))) && later >= 3
        },
    );
    b.terminate();

    let (up, down) = (lines(&up_log), lines(&down_log));
    let (up_ends, down_ends) = (by_run(&up, "end"), by_run(&down, "end"));
    for ((at, item), ends) in &down_ends {
        assert_eq!(
            ends.len(),
            1,
            "downstream item {item} of {at} ended once: {ends:?}"
        );
        let ups: Vec<&Line> = (0..4)
            .map(|i| {
                let ended = up_ends.get(&(at.clone(), i));
                let ended = ended.unwrap_or_else(|| panic!("upstream item {i} of {at} ended"));
                assert_eq!(ended.len(), 1, "upstream item {i} of {at} ended once");
                &ended[0]
            })
            .collect();
        let started = down
            .iter()
            .filter(|l| l.phase == "start" && &l.scheduled_at == at && l.item == *item)
            .map(|l| l.at)
            .min()
            .unwrap();
        let last_up = ups.iter().map(|l| l.at).max().unwrap();
        assert!(
            started > last_up,
            "downstream item {item} of {at} started after every upstream item ended"
        );
    }
    // The killed item's run ended on the survivor, in the same workflow run.
    let killed_item_ends: Vec<&Line> = up_ends
        .iter()
        .filter(|((at, _), _)| *at == killed_in)
        .flat_map(|(_, ends)| ends)
        .collect();
    assert_eq!(killed_item_ends.len(), 4, "{killed_item_ends:?}");
    assert!(killed_item_ends.iter().any(|l| l.instance == "b"));
}
