//! Run output end to end, on processes and a real ZooKeeper: the example node runs a script job
//! that asks for its output (`shardcron.output`) and records into a history (a SQLite file, or a
//! PostgreSQL server this test starts). The script's stdout and stderr lines of a finished run
//! come back from `shardcronctl logs`, and a running item's are followed live by
//! `shardcronctl logs --follow` and by the console's output viewer in headless Chromium, until the
//! item ends. A job beside it that does not ask for its output has none recorded.

#[macro_use]
extern crate support;

use std::path::Path;
use std::time::Duration;

use support::browser::Browser;
use support::console::{start_console, with_history};
use support::example_bin::{ctl_binary, on_zk, run_ctl};
use support::jobs_file::{script_job, write_jobs, write_script};
use support::node_proc::{NodeProcess, Output};
use support::postgres::PgServer;
use support::wait::wait_until;
use support::{zk, Peer};

use shardcron::console::Console;
use shardcron::history::{ExecutionRecord, History, HistoryQuery, HistoryWrite, OutputRecord};
use shardcron::registry::zookeeper::ZkConnector;
use shardcron::registry::Connector;
use shardcron::JobName;

/// A bound on every wait (real time: processes, a database, a browser).
const WITHIN: Duration = Duration::from_secs(60);

/// Run 1 says hello on both pipes; run 2 does too, then waits for the gate file, then says more.
const SCRIPT: &str = r#"#!/bin/sh
cd "$(dirname "$0")"
n=$(cat count 2>/dev/null || echo 0)
n=$((n + 1))
echo "$n" > count
echo "run $n starts"
echo "run $n warns" >&2
if [ "$n" = 2 ]; then
  while [ ! -e gate ]; do sleep 0.1; done
  echo "run $n passed the gate"
fi
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scripts_output_is_printed_by_shardcronctl_logs_and_followed_live_on_sqlite() {
    support::cluster::init_tracing();
    require!(Peer::ZooKeeper);
    require!(Peer::Chromium);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("history.db").display().to_string();
    output_of_a_script(dir.path(), &db, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scripts_output_is_printed_by_shardcronctl_logs_and_followed_live_on_postgresql() {
    support::cluster::init_tracing();
    require!(Peer::ZooKeeper);
    let bin = require!(Peer::PostgreSql);
    let server = PgServer::start(&bin);
    let dir = tempfile::tempdir().unwrap();
    output_of_a_script(dir.path(), &server.url(), false).await;
}

async fn output_of_a_script(dir: &Path, db: &str, in_browser: bool) {
    let script = dir.join("run.sh");
    write_script(&script, SCRIPT);
    let every_second = |name, command: &str| script_job(name, 1, command).cron("* * * * * ?");
    let jobs = write_jobs(
        dir,
        &[
            every_second("ticks", &format!("'{}'", script.display())).prop("shardcron.output", "4"),
            every_second("quiet", "'echo unseen'"),
        ],
    );
    let namespace = format!("run-output-{}-{}", std::process::id(), in_browser);
    let connect = zk::server().connect_string();
    let node_output = Output::new();
    let args = on_zk(
        &connect,
        &namespace,
        &["--jobs", jobs.to_str().unwrap(), "--history", db],
    );
    // Opened (its tables created) before the node opens it too: two first migrations of one
    // SQLite file at once may both add the same column.
    let history = History::open(db).await.expect("the history opens");
    let mut node = NodeProcess::spawn("node", &args, &[], &node_output);

    tracing::info!("--- run 1 ends; run 2 runs, waiting at the gate, its first lines recorded");
    let (first, second) = wait_until(
        async || {
            let runs = executions(&history, "ticks").await;
            let [.., second, first] = runs.as_slice() else {
                let stderr = node.stderr();
                let tail = &stderr[stderr.len().saturating_sub(2000)..];
                return Err(format!(
                    "{} executions; the node's stderr ends:\n{tail}",
                    runs.len()
                ));
            };
            let out = history.output(&second.id).await.unwrap();
            let recorded = out.is_some_and(|o| o.output.contains("run 2 starts"));
            match first.complete_time.is_some() && second.complete_time.is_none() && recorded {
                true => Ok((first.clone(), second.clone())),
                false => Err(format!("{runs:#?}")),
            }
        },
        "run 1 ended and run 2 running with its first lines in the history",
        WITHIN,
    )
    .await;

    tracing::info!("--- shardcronctl logs prints the finished run: stdout and stderr apart");
    let out = run_ctl(&["logs", "ticks", "--db", db, "--run", &first.id]).await;
    assert_eq!(out.code, 0, "{out:#?}");
    assert_eq!(out.stdout, "run 1 starts\n", "{out:#?}");
    assert!(out.stderr.contains("run 1 warns"), "{out:#?}");
    assert!(
        out.stderr.contains("item 0") && out.stderr.contains("OK"),
        "{out:#?}"
    );
    let run_number = first.task_id.rsplit("@-@").next().unwrap();
    let by_number = run_ctl(&["logs", "ticks", "--db", db, "--run", run_number]).await;
    assert_eq!(by_number.stdout, out.stdout, "{by_number:#?}");

    tracing::info!("--- without --run: the newest execution, still running");
    let out = run_ctl(&["logs", "ticks", "--db", db, "--item", "0"]).await;
    assert_eq!(out.code, 0, "{out:#?}");
    assert_eq!(out.stdout, "run 2 starts\n", "{out:#?}");
    assert!(out.stderr.contains("RUNNING"), "{out:#?}");

    tracing::info!("--- a job that does not ask for its output has none");
    let quiet = wait_until(
        async || executions(&history, "quiet").await.pop(),
        "an execution of quiet",
        WITHIN,
    )
    .await;
    assert_eq!(history.output(&quiet.id).await.unwrap(), None);
    let out = run_ctl(&["logs", "quiet", "--db", db]).await;
    assert_eq!(out.code, 1, "{out:#?}");
    assert!(out.stderr.contains("shardcron.output"), "{out:#?}");

    tracing::info!("--- shardcronctl logs --follow prints the running item's lines as they come");
    let follow_output = Output::new();
    let follow_args = ["logs", "ticks", "--db", db, "--run", &second.id, "--follow"];
    let mut follow =
        NodeProcess::spawn_program(&ctl_binary(), "follow", &follow_args, &[], &follow_output);
    let mut follow_output = tokio::task::block_in_place(|| {
        let mut follow_output = follow_output;
        follow_output.wait_until("the follower printed run 2's start", &[&follow], |lines| {
            lines.iter().any(|l| l.text == "run 2 starts")
        });
        follow_output
    });

    let browser = match in_browser {
        true => Some(viewer_of(&namespace, db, &first, &second).await),
        false => None,
    };

    tracing::info!("--- the gate opens: the follower prints the last line and ends with the item");
    std::fs::write(dir.join("gate"), "").unwrap();
    let status = tokio::task::block_in_place(|| follow.wait_exit());
    assert!(status.success(), "{}", follow.stderr());
    tokio::task::block_in_place(|| {
        follow_output.wait_until("the follower's last line", &[], |lines| {
            lines.iter().any(|l| l.text == "run 2 passed the gate")
        })
    });
    let printed: Vec<&str> = follow_output.seen.iter().map(|l| l.text.as_str()).collect();
    assert_eq!(printed, ["run 2 starts", "run 2 passed the gate"]);
    assert!(
        follow.stderr().contains("run 2 warns"),
        "{}",
        follow.stderr()
    );

    if let Some((browser, console)) = browser {
        tracing::info!("--- the console's viewer tails the same lines until the item ends");
        let shown = viewer_lines(
            &browser,
            "the viewer shows run 2's last line and the run ended",
            "document.getElementById('output-status').dataset.state === 'ended'",
        )
        .await;
        assert_eq!(
            shown,
            [
                "err run 2 warns",
                "out run 2 passed the gate",
                "out run 2 starts"
            ]
        );
        browser.quit().await;
        console.stop().await;
    }
    node.terminate();
    history.close().await;
}

/// Opens the console on the history and its viewer on run 1 (finished), then on run 2 (running).
async fn viewer_of(
    namespace: &str,
    db: &str,
    first: &ExecutionRecord,
    second: &ExecutionRecord,
) -> (Browser, Console) {
    let connector: std::sync::Arc<dyn Connector> =
        std::sync::Arc::new(ZkConnector::new(zk::backend().config(namespace)));
    let (console, base) = start_console(connector, with_history(namespace, db)).await;
    let browser = Browser::start().await;

    tracing::info!("--- the History tab links each run to its output; run 1's is shown");
    browser.goto(&format!("{base}/#/history/ticks")).await;
    browser
        .wait_for(
            "the history lists run 1 with an output link",
            &format!(
                "document.querySelector('tr[data-execution=\"{}\"] a.output-link')",
                first.id
            ),
        )
        .await;
    browser
        .click(&format!(
            "tr[data-execution=\"{}\"] a.output-link",
            first.id
        ))
        .await;
    let shown = viewer_lines(
        &browser,
        "run 1's output, ended",
        "document.getElementById('output-status')?.dataset.state === 'ended'",
    )
    .await;
    assert_eq!(shown, ["err run 1 warns", "out run 1 starts"]);

    tracing::info!("--- run 2's output, live while it runs");
    let page = format!(
        "{base}/#/output/ticks/{}",
        percent_encoding::utf8_percent_encode(&second.id, percent_encoding::NON_ALPHANUMERIC)
    );
    browser.goto(&page).await;
    browser
        .wait_for(
            "run 2's first lines, running",
            "document.getElementById('output-status')?.dataset.state === 'running' && \
             document.querySelector('#output .line.out')?.textContent === 'run 2 starts'",
        )
        .await;
    (browser, console)
}

/// The viewer's lines as `{stream} {text}`, once `ready` (a JS condition) holds; sorted, since a
/// script's stdout and stderr are read side by side and may interleave either way.
async fn viewer_lines(browser: &Browser, what: &str, ready: &str) -> Vec<String> {
    let shown = browser
        .wait_for(
            what,
            &format!(
                "{ready} && [...document.querySelectorAll('#output .line')]\
                 .map((l) => l.dataset.stream + ' ' + l.textContent)"
            ),
        )
        .await;
    let mut lines: Vec<String> = serde_json::from_value(shown).unwrap();
    lines.sort();
    lines
}

/// The job's executions, newest first.
async fn executions(history: &History, job: &str) -> Vec<ExecutionRecord> {
    let query = HistoryQuery::job(JobName::new(job).unwrap());
    history.query(&query).await.unwrap()
}

#[tokio::test]
async fn an_output_row_only_moves_forward_and_stays_once_complete_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let history = History::sqlite(dir.path().join("h.db")).await.unwrap();
    output_rows_move_forward(history).await;
}

#[tokio::test]
async fn an_output_row_only_moves_forward_and_stays_once_complete_on_postgresql() {
    let bin = require!(Peer::PostgreSql);
    let (_server, history) = PgServer::with_history(&bin).await;
    output_rows_move_forward(history).await;
}

/// Chunks of one execution written out of order, then after its last one.
async fn output_rows_move_forward(history: History) {
    let chunk = |text: &str, written: u64, complete: bool| {
        HistoryWrite::Output(OutputRecord {
            id: "ticks@-@0@-@NORMAL@-@10.0.0.1@-@1@-@1@-@0".into(),
            job_name: "ticks".into(),
            sharding_item: 0,
            output: text.into(),
            written_bytes: written,
            dropped_bytes: written - text.len() as u64,
            complete,
            update_time: History::stored_instant(chrono::Utc::now()),
        })
    };
    let id = "ticks@-@0@-@NORMAL@-@10.0.0.1@-@1@-@1@-@0";
    tracing::info!("--- a chunk, then an older one arriving late: the newer stays");
    history
        .write(&chunk("out a\nout b\n", 12, false))
        .await
        .unwrap();
    history.write(&chunk("out a\n", 6, false)).await.unwrap();
    let row = history.output(id).await.unwrap().unwrap();
    assert_eq!(
        (row.output.as_str(), row.complete),
        ("out a\nout b\n", false)
    );

    tracing::info!("--- the last chunk completes the row; nothing moves it after");
    history
        .write(&chunk("out b\nerr c\n", 18, true))
        .await
        .unwrap();
    history
        .write(&chunk("out b\nerr c\nout d\n", 24, false))
        .await
        .unwrap();
    let row = history.output(id).await.unwrap().unwrap();
    assert_eq!(
        (row.written_bytes, row.dropped_bytes, row.complete),
        (18, 6, true)
    );
    let read = row.snapshot();
    let new = read.since(6);
    assert_eq!((new.lost, new.text), (0, "out b\nerr c\n"));
    assert_eq!(history.output("no such execution").await.unwrap(), None);
    history.close().await;
}
