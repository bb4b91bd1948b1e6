//! One registry value must not take down the nodes that read it: YAML alias bombs written straight
//! into ZooKeeper (a job's `config`, a live instance's `instances/{id}` node) beside two running
//! node processes are refused, logged with their path, and every node stays up, small, and firing
//! every job.
//!
//! The bomb is the "billion laughs" of the issue: 50,000 aliases of a 100 KB anchor, about 250 KB of
//! text that serde would materialise as 5 GB.

#[macro_use]
extern crate support;

use std::time::Duration;

use support::node_proc::{Line, NodeProcess, Output};
use support::Peer;
use zookeeper_client as zk;

/// Resident memory every node must stay under.
const MAX_RSS_KB: u64 = 200 * 1024;
/// Bound of one raw client call.
const CALL: Duration = Duration::from_secs(10);

/// 50,000 aliases of a 100 KB anchor after `head`.
fn bomb(head: &str) -> String {
    let anchor = "x".repeat(100 * 1024);
    format!(
        "{head}big: &a '{anchor}'\nbomb: [{}*a]\n",
        "*a,".repeat(50_000)
    )
}

/// The process's resident memory (`VmRSS` of `/proc/PID/status`), in KiB.
fn rss_kb(pid: libc::pid_t) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_else(|e| panic!("process {pid} is gone: {e}"));
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no VmRSS in /proc/{pid}/status:\n{status}"))
}

/// Whether every `(node, job)` has an `exec` line among `lines[from..]`.
fn all_ran_since(lines: &[Line], from: usize, nodes: &[&str], jobs: &[&str]) -> bool {
    let recent = lines.get(from..).unwrap_or_default();
    nodes.iter().all(|node| {
        jobs.iter().all(|job| {
            recent
                .iter()
                .any(|l| l.node == *node && l.kind == "exec" && l.field("job") == *job)
        })
    })
}

#[test]
fn alias_bombs_in_a_config_and_an_instance_node_are_refused_and_every_node_keeps_running_every_job()
{
    require!(Peer::ZooKeeper);
    let server = support::zk::server();
    let connect = server.connect_string();
    let ns = format!("bomb-{}", std::process::id());
    let mut output = Output::new();
    let nodes = ["a", "b"];
    let mut processes: Vec<NodeProcess> = nodes
        .iter()
        .map(|n| {
            let id = format!("127.0.0.1@-@{n}");
            let args = ["--zk", &connect, "--namespace", &ns, "--instance-id", &id];
            NodeProcess::spawn(n, &args, &[], &output)
        })
        .collect();
    let jobs = ["orders", "inventory"];

    tracing::info!("--- both nodes run items of both jobs");
    {
        let refs: Vec<&NodeProcess> = processes.iter().collect();
        output.wait_until("both nodes running both jobs", &refs, |lines| {
            all_ran_since(lines, 0, &nodes, &jobs)
        });
    }

    tracing::info!(
        "--- bombs go into orders' config and node a's instance node, straight into ZooKeeper"
    );
    let config_bomb = bomb("jobName: orders\ncron: 0/2 * * * * ?\nshardingTotalCount: 8\n");
    let instance_bomb = bomb("jobInstanceId: 127.0.0.1@-@a\nlabels: gpu\nserverIp: 127.0.0.1\n");
    assert!(config_bomb.len() < 300 * 1024 && instance_bomb.len() < 300 * 1024);
    let instance_path = format!("/{ns}/orders/instances/127.0.0.1@-@a");
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let raw = zk::Client::connector()
                .connect(&connect)
                .await
                .expect("a raw client connects");
            for (path, data) in [
                (format!("/{ns}/orders/config"), &config_bomb),
                (instance_path.clone(), &instance_bomb),
            ] {
                tokio::time::timeout(CALL, raw.set_data(&path, data.as_bytes(), None))
                    .await
                    .expect("set_data answers")
                    .unwrap_or_else(|e| panic!("writing the bomb to {path}: {e}"));
            }
        });
    let written = output.seen.len();

    tracing::info!("--- both nodes go on running both jobs, each under 200 MB");
    {
        let refs: Vec<&NodeProcess> = processes.iter().collect();
        output.wait_until(
            "both nodes running both jobs after the bombs",
            &refs,
            |lines| all_ran_since(lines, written, &nodes, &jobs),
        );
        // Two more fires of each job, so that every reader has read both bombs by now.
        let after = output.seen.len();
        output.wait_until("the next fires", &refs, |lines| {
            all_ran_since(lines, after, &nodes, &jobs)
        });
    }
    for process in &processes {
        let rss = rss_kb(process.pid);
        assert!(
            rss < MAX_RSS_KB,
            "node {} is at {rss} kB resident, over {MAX_RSS_KB} kB",
            process.label
        );
    }

    tracing::info!("--- each node logged the refusals with their paths");
    for process in &mut processes {
        assert_eq!(
            process.terminate().code(),
            Some(0),
            "node {} exits 0 on SIGTERM:\n{}",
            process.label,
            process.stderr()
        );
        let stderr = process.stderr();
        assert!(
            stderr.contains("/orders/config: refusing job config YAML: YAML alias at line 5"),
            "node {} names the refused config:\n{stderr}",
            process.label
        );
        assert!(
            stderr.contains("/orders/instances/127.0.0.1@-@a") && stderr.contains("refused"),
            "node {} names the refused instance node:\n{stderr}",
            process.label
        );
    }
}
