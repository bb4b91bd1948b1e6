//! The execution history end to end: a node on the embedded registry runs a job whose item 1
//! fails once, with a history attached to its event bus; the records land in a real SQLite file
//! and in a real PostgreSQL server that this test binary starts, and the queries filter them.
//!
//! PostgreSQL comes from the Debian `postgresql` package (`scripts/test` installs it; without it the
//! PostgreSQL test is skipped outside CI). The server
//! runs as the `postgres` user when the tests run as root (PostgreSQL refuses root), on a free
//! loopback port with its socket in a temporary directory, and dies with the test process
//! (`PR_SET_PDEATHSIG`) or when the test drops it.

#[macro_use]
extern crate support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use support::cluster::init_tracing;
use support::events::item_finished;
use support::postgres::PgServer;
use support::wait::wait_until_woken;
use support::Peer;

use chrono::{DateTime, Utc};
use shardcron::config::JobConfig;
use shardcron::events::{EngineEvent, EventBus, RunState};
use shardcron::history::{
    ExecutionRecord, History, HistoryHandle, HistoryQuery, HistoryWrite, StatusQuery, StatusRecord,
};
use shardcron::job::{ExecutionSource, FnJob, JobError, ShardingContext};
use shardcron::node::NodeBuilder;
use shardcron::registry::embedded::EmbeddedServer;
use shardcron::{InstanceId, JobName, ShardItem};

/// A bound on every wait for records (real time: SQLite and PostgreSQL do real IO).
const WITHIN: Duration = Duration::from_secs(30);

#[tokio::test]
async fn executions_and_status_changes_land_in_a_sqlite_file_and_the_queries_filter_them() {
    init_tracing();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested").join("history.db");
    let history = History::sqlite(&path)
        .await
        .expect("the SQLite history opens");
    a_run_is_recorded_and_queried(history).await;

    tracing::info!("--- the file keeps the records; opening it again migrates nothing");
    assert!(path.is_file());
    let reopened = History::sqlite(&path).await.unwrap();
    let all = reopened.query(&query("reports")).await.unwrap();
    assert_eq!(all.len(), 6);
    reopened.close().await;
}

#[tokio::test]
async fn executions_and_status_changes_land_in_postgresql_and_the_queries_filter_them() {
    init_tracing();
    let bin = require!(Peer::PostgreSql);
    let server = PgServer::start(&bin);
    let history = History::postgres(&server.url())
        .await
        .expect("the PostgreSQL history connects");
    a_run_is_recorded_and_queried(history).await;

    tracing::info!("--- a second connection migrates nothing and reads the same records");
    let reopened = History::postgres(&server.url()).await.unwrap();
    let all = reopened.query(&query("reports")).await.unwrap();
    assert_eq!(all.len(), 6);
    reopened.close().await;
}

#[tokio::test]
async fn a_full_history_queue_drops_events_and_counts_them() {
    let dir = tempfile::tempdir().unwrap();
    let history = History::sqlite(dir.path().join("h.db")).await.unwrap();
    let bus = EventBus::new();
    let recording = history.attach_with_capacity(&bus, 1);

    tracing::info!("--- 50 events at once into a queue of one (the task has not run yet)");
    for n in 0..50 {
        bus.emit(finished("burst", n, None));
    }
    assert_eq!(recording.dropped(), 49);

    tracing::info!("--- the queued one is written, and writing goes on");
    wait_for(&recording, "the queued event", async || {
        (recording.progress().received == 1).then_some(())
    })
    .await;
    bus.emit(finished("burst", 50, None));
    assert_eq!(recording.dropped(), 49, "the next event fits again");
    let progress = recording.close().await;
    assert_eq!(progress.received, 2);
    assert_eq!(progress.written, 2);
    assert_eq!(progress.write_errors, 0);
    let items: Vec<u32> = history
        .query(&query("burst"))
        .await
        .unwrap()
        .iter()
        .map(|r| r.sharding_item)
        .collect();
    assert_eq!(items.len(), 2);
    assert!(items.contains(&0) && items.contains(&50), "{items:?}");
    history.close().await;
}

#[tokio::test]
async fn every_run_state_becomes_a_status_record_named_as_elasticjob_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let history = History::sqlite(dir.path().join("h.db")).await.unwrap();
    let bus = EventBus::new();
    let recording = history.attach(&bus);
    let states = [
        RunState::TaskStaging,
        RunState::TaskRunning,
        RunState::TaskFinished,
        RunState::TaskError,
    ];
    for (n, state) in states.into_iter().enumerate() {
        bus.emit(EngineEvent::RunStatus {
            job: JobName::new("states").unwrap(),
            task_id: "states@-@0,1@-@FAILOVER@-@10.0.0.9@-@9@-@1".into(),
            instance: InstanceId::parse("10.0.0.9@-@9").unwrap(),
            items: vec![ShardItem(0), ShardItem(1)],
            source: ExecutionSource::Failover,
            state,
            message: format!("message {n}"),
            at: DateTime::from_timestamp(1_770_000_000 + n as i64, 0).unwrap(),
        });
    }
    let progress = recording.close().await;
    assert_eq!(progress.written, 4, "{progress:?}");

    let records = history
        .statuses(&StatusQuery {
            job: JobName::new("states").unwrap(),
            task_id: None,
            limit: 10,
        })
        .await
        .unwrap();
    let rows: Vec<(&str, &str, &str, &str)> = records
        .iter()
        .map(|r| {
            (
                r.state.as_str(),
                r.message.as_str(),
                r.execution_type.as_str(),
                r.sharding_item.as_str(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("TASK_ERROR", "message 3", "FAILOVER", "[0, 1]"),
            ("TASK_FINISHED", "message 2", "FAILOVER", "[0, 1]"),
            ("TASK_RUNNING", "message 1", "FAILOVER", "[0, 1]"),
            ("TASK_STAGING", "message 0", "FAILOVER", "[0, 1]"),
        ],
        "newest first"
    );
    history.close().await;
}

/// The scenario both backends run: two manual runs of three items, item 1 failing in the first.
async fn a_run_is_recorded_and_queried(history: History) {
    let bus = EventBus::new();
    let recording = history.attach(&bus);
    let fail_item_1 = Arc::new(AtomicBool::new(true));
    let fail = fail_item_1.clone();
    let handler = FnJob(move |ctx: ShardingContext| {
        let fail = fail.load(Ordering::SeqCst) && ctx.sharding_item == ShardItem(1);
        async move {
            if fail {
                return Err(JobError::failed("upstream refused item 1"));
            }
            Ok::<(), JobError>(())
        }
    });
    let registry = EmbeddedServer::new();
    let node = NodeBuilder::new(Arc::new(registry.connector("history")))
        .instance_id(InstanceId::parse("10.0.0.1@-@1").unwrap())
        .event_bus(bus.clone())
        .job(
            JobConfig::new("reports", 3).one_off(),
            "reports",
            Arc::new(handler),
        )
        .start()
        .await
        .expect("the node starts");
    let job = JobName::new("reports").unwrap();

    tracing::info!("--- first run: items 0 and 2 succeed, item 1 fails");
    node.trigger(&job).await.unwrap();
    let first = wait_for(
        &recording,
        "the first run's three executions, finished",
        async || {
            let records = history.query(&query("reports")).await.unwrap();
            (records.iter().filter(|r| r.complete_time.is_some()).count() == 3).then_some(records)
        },
    )
    .await;
    let first_task = first[0].task_id.clone();
    assert!(first.iter().all(|r| r.task_id == first_task), "{first:#?}");

    tracing::info!("--- second run: every item succeeds");
    fail_item_1.store(false, Ordering::SeqCst);
    let cut = first.iter().map(|r| r.start_time).max().unwrap() + chrono::Duration::microseconds(1);
    node.trigger(&job).await.unwrap();
    let all = wait_for(
        &recording,
        "both runs' six executions, finished",
        async || {
            let records = history.query(&query("reports")).await.unwrap();
            (records.iter().filter(|r| r.complete_time.is_some()).count() == 6).then_some(records)
        },
    )
    .await;
    let second_task = all[0].task_id.clone();
    assert_ne!(second_task, first_task);
    node.shutdown().await;

    tracing::info!("--- the execution records");
    for r in &all {
        assert_eq!(r.job_name, "reports");
        assert_eq!(r.execution_source, "MANUAL");
        assert_eq!(r.ip, "10.0.0.1");
        assert!(!r.hostname.is_empty());
        assert!(r.complete_time.unwrap() >= r.start_time, "{r:#?}");
        assert_eq!(r.id, format!("{}@-@{}", r.task_id, r.sharding_item));
    }
    let outcome = |r: &ExecutionRecord| (r.sharding_item, r.is_success, r.failure_cause.clone());
    let mut first_outcomes: Vec<_> = first.iter().map(outcome).collect();
    first_outcomes.sort();
    assert_eq!(
        first_outcomes,
        [
            (0, true, None),
            (1, false, Some("upstream refused item 1".to_owned())),
            (2, true, None)
        ]
    );
    assert!(
        all[..3]
            .iter()
            .all(|r| r.task_id == second_task && r.is_success),
        "newest first: the second run's records lead\n{all:#?}"
    );
    assert!(all.windows(2).all(|w| w[0].start_time >= w[1].start_time));

    tracing::info!("--- the queries filter by item, failure, time and count");
    let item_1 = history
        .query(&HistoryQuery {
            item: Some(ShardItem(1)),
            ..query("reports")
        })
        .await
        .unwrap();
    assert_eq!(
        item_1.iter().map(|r| r.is_success).collect::<Vec<_>>(),
        [true, false],
        "item 1, newest first"
    );
    let failed = history
        .query(&HistoryQuery {
            failed_only: true,
            ..query("reports")
        })
        .await
        .unwrap();
    assert_eq!(failed.len(), 1);
    assert_eq!(
        (failed[0].sharding_item, &failed[0].task_id),
        (1, &first_task)
    );
    let since = history
        .query(&HistoryQuery {
            since: Some(cut),
            ..query("reports")
        })
        .await
        .unwrap();
    assert_eq!(since.len(), 3);
    assert!(since.iter().all(|r| r.task_id == second_task));
    let limited = history
        .query(&HistoryQuery {
            limit: 2,
            ..query("reports")
        })
        .await
        .unwrap();
    assert_eq!(limited, all[..2]);
    assert!(history.query(&query("other")).await.unwrap().is_empty());

    tracing::info!("--- the status records");
    let first_statuses = wait_for(
        &recording,
        "the first run's status changes (staging, running, error)",
        async || {
            let states = statuses(&history, &first_task).await;
            (states.len() >= 3).then_some(states)
        },
    )
    .await;

    let second_statuses = wait_for(
        &recording,
        "the second run's status changes (staging, running, finished)",
        async || {
            let states = statuses(&history, &second_task).await;
            (states.len() >= 3).then_some(states)
        },
    )
    .await;
    assert_eq!(
        states_of(&first_statuses),
        ["TASK_ERROR", "TASK_RUNNING", "TASK_STAGING"],
        "staging, running, then error for the run with a failed item\n{first_statuses:#?}"
    );
    assert_eq!(
        states_of(&second_statuses),
        ["TASK_FINISHED", "TASK_RUNNING", "TASK_STAGING"],
        "staging, running, then finished for the run that succeeded\n{second_statuses:#?}"
    );
    for s in first_statuses.iter().chain(&second_statuses) {
        assert_eq!(s.job_name, "reports");
        assert_eq!(s.slave_id, "10.0.0.1@-@1");
        assert_eq!(s.source, "LITE_EXECUTOR");
        assert_eq!(s.execution_type, "READY");
        assert_eq!(s.sharding_item, "[0, 1, 2]");
    }
    let error = first_statuses
        .iter()
        .find(|s| s.state == "TASK_ERROR")
        .unwrap();
    assert!(
        error.message.contains("upstream refused item 1"),
        "{error:#?}"
    );

    let progress = recording.close().await;
    assert_eq!(progress.write_errors, 0, "{progress:?}");
    assert_eq!(progress.last_error, None);
    history.close().await;
}

fn query(job: &str) -> HistoryQuery {
    HistoryQuery::job(JobName::new(job).unwrap())
}

async fn statuses(history: &History, task_id: &str) -> Vec<StatusRecord> {
    history
        .statuses(&StatusQuery {
            job: JobName::new("reports").unwrap(),
            task_id: Some(task_id.to_owned()),
            limit: 100,
        })
        .await
        .unwrap()
}

fn states_of(records: &[StatusRecord]) -> Vec<&str> {
    let mut states: Vec<&str> = records.iter().map(|s| s.state.as_str()).collect();
    states.sort();
    states
}

/// Probes after every event the recording task handles until `probe` answers, failing with `what`
/// (and the task's progress) after [`WITHIN`].
async fn wait_for<T>(
    recording: &HistoryHandle,
    what: &str,
    probe: impl AsyncFn() -> Option<T>,
) -> T {
    let mut changes = recording.watch();
    changes.borrow_and_update();
    let check = async || {
        probe()
            .await
            .ok_or_else(|| format!("history progress: {:?}", recording.progress()))
    };
    let wake = async || {
        if changes.changed().await.is_err() {
            // The recording task ended: nothing changes any more, so the wait times out.
            std::future::pending::<()>().await;
        }
    };
    wait_until_woken(check, wake, what, WITHIN).await
}

/// An `ItemFinished` of item `n` of `job`, at second `n` after a fixed instant.
fn finished(job: &str, n: u32, failure: Option<String>) -> EngineEvent {
    let at: DateTime<Utc> = DateTime::from_timestamp(1_770_000_000 + i64::from(n), 0).unwrap();
    item_finished(job, n, at, failure)
}

#[tokio::test]
async fn the_history_is_filtered_by_workflow_run() {
    let dir = tempfile::tempdir().unwrap();
    let history = History::open(&dir.path().join("h.db").display().to_string())
        .await
        .unwrap();
    let row = |id: &str, item: u32, run: Option<&str>| ExecutionRecord {
        id: id.to_owned(),
        job_name: "report".to_owned(),
        task_id: format!("task-{id}"),
        hostname: "vm".to_owned(),
        ip: "127.0.0.1".to_owned(),
        sharding_item: item,
        execution_source: "WORKFLOW".to_owned(),
        failure_cause: None,
        is_success: false,
        start_time: Utc::now(),
        complete_time: None,
        scheduled_time: None,
        attempt: Some(1),
        outcome: None,
        workflow_run: run.map(str::to_owned),
    };
    for record in [
        row("a", 0, Some("1767225600000")),
        row("b", 1, Some("1767225600000")),
        row("c", 0, Some("1767229200000")),
        row("d", 0, None),
    ] {
        history
            .write(&HistoryWrite::ExecutionStarted(record))
            .await
            .unwrap();
    }
    let mut ids: Vec<String> = history
        .query(&HistoryQuery {
            workflow_run: Some("1767225600000".into()),
            ..query("report")
        })
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect();
    ids.sort();
    assert_eq!(ids, ["a", "b"], "the rows of that workflow run only");
    assert_eq!(history.query(&query("report")).await.unwrap().len(), 4);
    history.close().await;
}
