//! The history's upkeep on real databases, a SQLite file and a PostgreSQL server this test
//! starts: rows older than a job's window are deleted in batches while a node's events go on being
//! written (the window applied is recorded for readers), and per-job statistics match the rows.

#[macro_use]
extern crate support;

use support::cluster::init_tracing;
use support::events::item_finished;
use support::postgres;
use support::Peer;

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use shardcron::config::JobConfig;
use shardcron::events::EventBus;
use shardcron::history::{
    bucket, Bucket, ExecutionRecord, Granularity, History, HistoryQuery, HistoryWrite, Retention,
    RetentionWindow, StatusQuery, StatusRecord,
};
use shardcron::job::{FnJob, JobError, ShardingContext};
use shardcron::node::NodeBuilder;
use shardcron::registry::embedded::EmbeddedServer;
use shardcron::{InstanceId, JobName};

/// Old rows per job: several batches' worth.
const OLD_ROWS: u32 = 300;
/// Fresh executions written while the purge runs.
const FRESH: u32 = 200;
/// A bound on the wait for the fresh rows (real IO).
const WITHIN: Duration = Duration::from_secs(60);

#[tokio::test]
async fn rows_older_than_the_window_are_purged_from_sqlite_while_writes_go_on() {
    init_tracing();
    let dir = tempfile::tempdir().unwrap();
    let history = History::sqlite(dir.path().join("h.db")).await.unwrap();
    old_rows_go_while_fresh_rows_are_written(history).await;
}

#[tokio::test]
async fn rows_older_than_the_window_are_purged_from_postgresql_while_writes_go_on() {
    init_tracing();
    let bin = require!(Peer::PostgreSql);
    let (_server, history) = postgres::PgServer::with_history(&bin).await;
    old_rows_go_while_fresh_rows_are_written(history).await;
}

async fn old_rows_go_while_fresh_rows_are_written(history: History) {
    let now = Utc::now();
    let forty_days_ago = now - chrono::Duration::days(40);
    tracing::info!("--- {OLD_ROWS} executions and status rows 40 days old for two jobs");
    for job in ["orders", "audit"] {
        for n in 0..OLD_ROWS {
            let at = forty_days_ago + chrono::Duration::seconds(i64::from(n));
            history
                .write(&HistoryWrite::ExecutionFinished(execution(job, n, at)))
                .await
                .unwrap();
            history
                .write(&HistoryWrite::Status(status(job, n, at)))
                .await
                .unwrap();
        }
    }

    tracing::info!("--- a node's events are written while the purge runs (30d; audit keeps 60d)");
    let bus = EventBus::new();
    let recording = history.attach(&bus);
    let mut retention = Retention::window(RetentionWindow::parse("30d").unwrap());
    retention.per_job = Some(Arc::new(|job: &str| {
        (job == "audit").then(|| RetentionWindow::parse("60d").unwrap())
    }));
    retention.batch = 40;
    retention.pause = Duration::from_millis(2);
    let writer = async {
        for n in 0..FRESH {
            bus.emit(item_finished("orders", 10_000 + n, Utc::now(), None));
            tokio::task::yield_now().await;
        }
    };
    let (purged, ()) = tokio::join!(history.purge(&retention), writer);
    let purged = purged.expect("the purge succeeds");

    tracing::info!("--- every fresh row is there, and nothing was dropped or failed");
    let mut changes = recording.watch();
    tokio::time::timeout(WITHIN, changes.wait_for(|p| p.received == u64::from(FRESH)))
        .await
        .expect("every fresh event is handled")
        .unwrap();
    assert_eq!(recording.dropped(), 0);
    let progress = recording.close().await;
    assert_eq!(progress.write_errors, 0, "{progress:?}");
    assert_eq!(progress.written, u64::from(FRESH));

    tracing::info!("--- orders' old rows are gone, audit's (within its own window) stay");
    let orders = purged.iter().find(|p| p.job_name == "orders").unwrap();
    assert_eq!(orders.executions, u64::from(OLD_ROWS));
    assert_eq!(orders.statuses, u64::from(OLD_ROWS));
    let audit = purged.iter().find(|p| p.job_name == "audit").unwrap();
    assert_eq!((audit.executions, audit.statuses), (0, 0));
    let rows = all(&history, "orders").await;
    assert_eq!(rows.len(), FRESH as usize);
    let cutoff = now - chrono::Duration::days(30);
    assert!(rows.iter().all(|r| r.start_time >= cutoff));
    assert!(statuses(&history, "orders").await.is_empty());
    assert_eq!(all(&history, "audit").await.len(), OLD_ROWS as usize);
    assert_eq!(statuses(&history, "audit").await.len(), OLD_ROWS as usize);

    tracing::info!("--- the window applied is recorded for readers");
    let recorded = history.retention_of("orders").await.unwrap().unwrap();
    assert_eq!(recorded.window.to_string(), "30d");
    assert_eq!(
        recorded.purged_before,
        History::stored_instant(orders.purged_before)
    );
    let audit = history.retention_of("audit").await.unwrap().unwrap();
    assert_eq!(audit.window.to_string(), "60d");
    assert_eq!(history.retention_of("unknown").await.unwrap(), None);

    tracing::info!("--- a second purge finds nothing more to delete");
    let again = history.purge(&retention).await.unwrap();
    assert!(
        again.iter().all(|p| p.executions + p.statuses == 0),
        "{again:?}"
    );
    history.close().await;
}

#[tokio::test]
async fn statistics_match_the_rows_in_sqlite() {
    init_tracing();
    let dir = tempfile::tempdir().unwrap();
    let history = History::sqlite(dir.path().join("h.db")).await.unwrap();
    statistics_match_the_rows(&history).await;
    tracing::info!(
        "--- a node records the cron instant of each execution, so its delay is measured"
    );
    a_node_records_the_scheduled_instant(&history).await;
    history.close().await;
}

#[tokio::test]
async fn statistics_match_the_rows_in_postgresql() {
    init_tracing();
    let bin = require!(Peer::PostgreSql);
    let (_server, history) = postgres::PgServer::with_history(&bin).await;
    statistics_match_the_rows(&history).await;
    history.close().await;
}

/// Executions over two hours of one day and one of the next, with known durations, delays and
/// outcomes; read back per hour and per day.
async fn statistics_match_the_rows(history: &History) {
    let base: DateTime<Utc> = "2026-03-02T10:00:00Z".parse().unwrap();
    tracing::info!("--- 20 executions in 10:00, 3 in 11:00, 2 the next day");
    let mut n = 0;
    let mut write =
        async |start: DateTime<Utc>, took: Option<i64>, delay: i64, cause: Option<&str>| {
            n += 1;
            let mut r = execution("stats", n, start);
            r.complete_time = took.map(|ms| start + chrono::Duration::milliseconds(ms));
            r.scheduled_time = Some(start - chrono::Duration::milliseconds(delay));
            r.is_success = cause.is_none();
            r.failure_cause = cause.map(str::to_owned);
            let write = match took {
                Some(_) => HistoryWrite::ExecutionFinished(r),
                None => HistoryWrite::ExecutionStarted(r),
            };
            history.write(&write).await.unwrap();
        };
    for i in 1..=20_i64 {
        let cause = match i {
            7 => Some("boom"),
            13 => Some("timed out after 2s"),
            _ => None,
        };
        // Durations 10..200 ms, delays 1..20 ms.
        write(
            base + chrono::Duration::seconds(i * 60),
            Some(i * 10),
            i,
            cause,
        )
        .await;
    }
    let eleven = base + chrono::Duration::hours(1);
    write(eleven, Some(500), 40, None).await;
    write(
        eleven + chrono::Duration::minutes(5),
        Some(100),
        20,
        Some("no"),
    )
    .await;
    write(eleven + chrono::Duration::minutes(9), None, 30, None).await;
    let next_day = base + chrono::Duration::days(1);
    write(next_day, Some(70), 3, None).await;
    write(next_day + chrono::Duration::hours(5), Some(90), 5, None).await;

    let job = JobName::new("stats").unwrap();
    let hours = history
        .stats(&job, base - chrono::Duration::hours(1), Granularity::Hour)
        .await
        .unwrap();
    assert!(!hours.truncated);
    let at = |s: &str| s.parse::<DateTime<Utc>>().unwrap();
    assert_eq!(
        hours.buckets[0],
        Bucket {
            start: at("2026-03-02T10:00:00Z"),
            runs: 20,
            failures: 2,
            timeouts: 1,
            unfinished: 0,
            duration_p50_ms: Some(100),
            duration_p99_ms: Some(200),
            delay_p50_ms: Some(10),
            delay_p99_ms: Some(20),
        }
    );
    assert_eq!(
        hours.buckets[1],
        Bucket {
            start: at("2026-03-02T11:00:00Z"),
            runs: 3,
            failures: 1,
            timeouts: 0,
            unfinished: 1,
            duration_p50_ms: Some(100),
            duration_p99_ms: Some(500),
            delay_p50_ms: Some(30),
            delay_p99_ms: Some(40),
        }
    );
    let starts: Vec<DateTime<Utc>> = hours.buckets.iter().map(|b| b.start).collect();
    assert_eq!(
        starts[2..],
        [at("2026-03-03T10:00:00Z"), at("2026-03-03T15:00:00Z")]
    );

    tracing::info!("--- per day, and the same as bucketing the rows as read");
    let days = history
        .stats(&job, base - chrono::Duration::hours(1), Granularity::Day)
        .await
        .unwrap();
    assert_eq!(days.buckets.len(), 2);
    assert_eq!(
        (
            days.buckets[0].runs,
            days.buckets[0].failures,
            days.buckets[0].unfinished
        ),
        (23, 3, 1)
    );
    assert_eq!(days.buckets[1].runs, 2);
    let rows = all(history, "stats").await;
    assert_eq!(rows.len(), 25);
    assert_eq!(days.buckets, bucket(&rows, Granularity::Day));
    assert_eq!(hours.buckets, bucket(&rows, Granularity::Hour));

    tracing::info!("--- `since` leaves the first day out");
    let later = history
        .stats(&job, at("2026-03-03T00:00:00Z"), Granularity::Day)
        .await
        .unwrap();
    assert_eq!(later.buckets.len(), 1);
    assert_eq!(later.buckets[0].runs, 2);
}

/// A node firing every second records the cron instant with each execution.
async fn a_node_records_the_scheduled_instant(history: &History) {
    let bus = EventBus::new();
    let recording = history.attach(&bus);
    let handler = FnJob(|_: ShardingContext| async { Ok::<(), JobError>(()) });
    let registry = EmbeddedServer::new();
    let node = NodeBuilder::new(Arc::new(registry.connector("stats")))
        .instance_id(InstanceId::parse("10.0.0.1@-@1").unwrap())
        .event_bus(bus.clone())
        .job(
            JobConfig::new("ticks", 2)
                .cron("* * * * * ?")
                .time_zone("GMT"),
            "ticks",
            Arc::new(handler),
        )
        .start()
        .await
        .expect("the node starts");
    let mut changes = recording.watch();
    tokio::time::timeout(WITHIN, changes.wait_for(|p| p.written >= 21))
        .await
        .expect("three fires of two items, started and finished")
        .unwrap();
    node.shutdown().await;
    recording.close().await;
    let rows = all(history, "ticks").await;
    assert!(rows.len() >= 4, "{rows:#?}");
    for r in &rows {
        let scheduled = r.scheduled_time.expect("a cron fire records its instant");
        assert_eq!(
            scheduled.timestamp_subsec_micros(),
            0,
            "a whole second: {r:#?}"
        );
        assert!(r.start_time >= scheduled, "{r:#?}");
    }
    let stats = history
        .stats(
            &JobName::new("ticks").unwrap(),
            Utc::now() - chrono::Duration::hours(1),
            Granularity::Hour,
        )
        .await
        .unwrap();
    let runs: u64 = stats.buckets.iter().map(|b| b.runs).sum();
    assert_eq!(runs, rows.len() as u64);
    assert!(stats.buckets.iter().all(|b| b.delay_p50_ms.is_some()));
}

async fn all(history: &History, job: &str) -> Vec<ExecutionRecord> {
    let mut query = HistoryQuery::job(JobName::new(job).unwrap());
    query.limit = 10_000;
    history.query(&query).await.unwrap()
}

async fn statuses(history: &History, job: &str) -> Vec<StatusRecord> {
    let query = StatusQuery {
        job: JobName::new(job).unwrap(),
        task_id: None,
        limit: 10_000,
    };
    history.statuses(&query).await.unwrap()
}

fn execution(job: &str, n: u32, at: DateTime<Utc>) -> ExecutionRecord {
    ExecutionRecord {
        id: format!("{job}@-@old@-@{n}"),
        job_name: job.to_owned(),
        task_id: format!("{job}@-@old"),
        hostname: "host".to_owned(),
        ip: "10.0.0.9".to_owned(),
        sharding_item: n,
        execution_source: "NORMAL_TRIGGER".to_owned(),
        failure_cause: None,
        is_success: true,
        start_time: at,
        complete_time: Some(at),
        scheduled_time: None,
        attempt: None,
        workflow_run: None,
        outcome: None,
    }
}

fn status(job: &str, n: u32, at: DateTime<Utc>) -> StatusRecord {
    StatusRecord {
        id: format!("{job}@-@old{n}@-@TASK_FINISHED"),
        job_name: job.to_owned(),
        original_task_id: String::new(),
        task_id: format!("{job}@-@old{n}"),
        slave_id: "10.0.0.9@-@9".to_owned(),
        source: "LITE_EXECUTOR".to_owned(),
        execution_type: "READY".to_owned(),
        sharding_item: "[0]".to_owned(),
        state: "TASK_FINISHED".to_owned(),
        message: String::new(),
        creation_time: at,
    }
}
