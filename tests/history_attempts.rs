//! The history's `attempt` and `outcome` columns on SQLite and PostgreSQL: a table created before
//! them (as ElasticJob creates it, or an older shardcron) keeps its rows and gains the columns when
//! the history opens it; new rows carry the attempt number and say `timeout` or `cancelled` where
//! `is_success` alone says only "not a success".

#[macro_use]
extern crate support;

use support::cluster::init_tracing;
use support::postgres::PgServer;
use support::Peer;

use chrono::{DateTime, NaiveDateTime, Utc};
use shardcron::events::{EngineEvent, EventBus};
use shardcron::history::{History, HistoryQuery};
use shardcron::job::{ExecutionSource, ItemOutcome};
use shardcron::{InstanceId, JobName, ShardItem};

/// `JOB_EXECUTION_LOG` as it was before shardcron added its columns.
const OLDER_TABLE: &str = "CREATE TABLE JOB_EXECUTION_LOG (
    id TEXT NOT NULL,
    job_name VARCHAR(100) NOT NULL,
    task_id TEXT NOT NULL,
    hostname VARCHAR(255) NOT NULL,
    ip VARCHAR(50) NOT NULL,
    sharding_item INT NOT NULL,
    execution_source VARCHAR(20) NOT NULL,
    failure_cause TEXT NULL,
    is_success INT NOT NULL,
    start_time TIMESTAMP NULL,
    complete_time TIMESTAMP NULL,
    PRIMARY KEY (id))";

/// A failed execution, as a Java instance writes it.
const JAVA_ROW: &str = "INSERT INTO JOB_EXECUTION_LOG (id, job_name, task_id, hostname, ip, \
     sharding_item, execution_source, failure_cause, is_success, start_time, complete_time) \
     VALUES ('java-1', 'reports', 'java', 'h', '10.0.0.8', 0, 'NORMAL_TRIGGER', 'boom', 0, $1, $1)";

fn at(s: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(1_770_000_000 + s, 0).unwrap()
}

fn naive(s: i64) -> NaiveDateTime {
    at(s).naive_utc()
}

/// Creates [`OLDER_TABLE`] on `pool` (SQLite or PostgreSQL: one text, two pool types) with
/// [`JAVA_ROW`] in it, then closes the pool.
macro_rules! older_table_with_a_java_row {
    ($pool:expr) => {
        sqlx::query(OLDER_TABLE).execute(&$pool).await.unwrap();
        sqlx::query(JAVA_ROW)
            .bind(naive(0))
            .execute(&$pool)
            .await
            .unwrap();
        $pool.close().await;
    };
}

#[tokio::test]
async fn an_older_sqlite_table_gains_attempt_and_outcome_and_keeps_its_rows() {
    init_tracing();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.db");
    tracing::info!("--- a table without the columns, with one row a Java instance wrote");
    let options = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(&path)
        .create_if_missing(true);
    let pool = sqlx::SqlitePool::connect_with(options).await.unwrap();
    older_table_with_a_java_row!(pool);

    let history = History::sqlite(&path).await.expect("the history opens it");
    attempts_and_outcomes_are_recorded_beside_older_rows(history).await;
}

#[tokio::test]
async fn an_older_postgresql_table_gains_attempt_and_outcome_and_keeps_its_rows() {
    init_tracing();
    let bin = require!(Peer::PostgreSql);
    let server = PgServer::start(&bin);
    tracing::info!("--- a table without the columns, with one row a Java instance wrote");
    let pool = sqlx::PgPool::connect(&server.url()).await.unwrap();
    older_table_with_a_java_row!(pool);

    let history = History::postgres(&server.url())
        .await
        .expect("the history connects");
    attempts_and_outcomes_are_recorded_beside_older_rows(history).await;
}

/// An item's execution of attempt `attempt`, started at `s` and ended a second later as
/// `outcome`: its two events.
fn execution(s: i64, attempt: u32, outcome: ItemOutcome) -> [EngineEvent; 2] {
    let task_id = format!("reports@-@0@-@NORMAL_TRIGGER@-@10.0.0.1@-@1@-@{s}");
    let execution_id = format!("{task_id}@-@0");
    let (job, instance) = (
        JobName::new("reports").unwrap(),
        InstanceId::parse("10.0.0.1@-@1").unwrap(),
    );
    let failure = match outcome {
        ItemOutcome::Success => None,
        ItemOutcome::Timeout => Some("timed out after 1s".to_owned()),
        other => Some(format!("{other}")),
    };
    [
        EngineEvent::ItemStarted {
            execution_id: execution_id.clone(),
            job: job.clone(),
            item: ShardItem(0),
            instance: instance.clone(),
            source: ExecutionSource::Normal,
            task_id: task_id.clone(),
            started_at: at(s),
            scheduled_at: Some(at(s)),
            attempt,
            workflow_run: None,
        },
        EngineEvent::ItemFinished {
            execution_id,
            job,
            item: ShardItem(0),
            instance,
            source: ExecutionSource::Normal,
            task_id,
            started_at: at(s),
            finished_at: at(s + 1),
            failure,
            scheduled_at: Some(at(s)),
            attempt,
            workflow_run: None,
            outcome,
        },
    ]
}

async fn attempts_and_outcomes_are_recorded_beside_older_rows(history: History) {
    tracing::info!("--- the Java row reads back, without attempt or outcome: failed");
    let query = HistoryQuery::job(JobName::new("reports").unwrap());
    let rows = history.query(&query).await.unwrap();
    assert_eq!(rows.len(), 1, "{rows:#?}");
    assert_eq!((rows[0].attempt, rows[0].outcome.as_deref()), (None, None));
    assert_eq!(rows[0].status(), "failed");

    tracing::info!("--- a timeout, a failure, a success on attempts 1 to 3, and a cancelled run");
    let bus = EventBus::new();
    let recording = history.attach(&bus);
    let runs = [
        (10, 1, ItemOutcome::Timeout),
        (20, 2, ItemOutcome::Failed),
        (30, 3, ItemOutcome::Success),
        (40, 1, ItemOutcome::Cancelled),
    ];
    for (s, attempt, outcome) in runs {
        for event in execution(s, attempt, outcome) {
            bus.emit(event);
        }
    }
    let progress = recording.close().await;
    assert_eq!(
        (progress.written, progress.write_errors),
        (8, 0),
        "{progress:?}"
    );

    let rows = history.query(&query).await.unwrap();
    let read: Vec<(Option<u32>, &str, bool)> = rows
        .iter()
        .map(|r| (r.attempt, r.status(), r.is_success))
        .collect();
    assert_eq!(
        read,
        [
            (Some(1), "cancelled", false),
            (Some(3), "success", true),
            (Some(2), "failed", false),
            (Some(1), "timeout", false),
            (None, "failed", false),
        ],
        "newest first\n{rows:#?}"
    );
    let timed_out = &rows[3];
    assert_eq!(timed_out.outcome.as_deref(), Some("timeout"));
    assert_eq!(
        timed_out.failure_cause.as_deref(),
        Some("timed out after 1s")
    );
    history.close().await;
}
