//! Per-job statistics from the history: runs, failures, timeouts and the 50th and 99th
//! percentiles of duration and trigger delay, per hour or per day. Pure: the rows are read by
//! [`History::stats`](super::History::stats) and bucketed here, the same way for SQLite and
//! PostgreSQL.
//!
//! The trigger delay is the start minus the scheduled instant recorded with the execution
//! (`scheduled_time`), so it is what happened, not a guess from today's cron; executions without
//! one (manual triggers, rows written before the column existed) count in runs but not in delays.

use std::collections::BTreeMap;

use chrono::{DateTime, DurationRound, TimeDelta, Utc};
use serde::Serialize;

use super::record::{ExecutionRecord, HistoryQuery};
use super::{History, HistoryError};
use crate::types::JobName;

/// The most rows one statistics request reads.
pub const MAX_STATS_ROWS: u32 = 100_000;

/// The failure cause a timed-out execution records (`JobError::TimedOut`, `timed out after 5s`).
const TIMEOUT_CAUSE: &str = "timed out";

/// How long one bucket is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Granularity {
    /// One bucket per UTC hour.
    Hour,
    /// One bucket per UTC day.
    Day,
}

impl Granularity {
    /// Parses `hour` or `day` (`--by`).
    pub fn parse(value: &str) -> Result<Self, HistoryError> {
        match value.trim() {
            "hour" => Ok(Self::Hour),
            "day" => Ok(Self::Day),
            _ => Err(HistoryError::InvalidGranularity {
                value: value.to_owned(),
            }),
        }
    }

    fn step(self) -> TimeDelta {
        match self {
            Self::Hour => TimeDelta::hours(1),
            Self::Day => TimeDelta::days(1),
        }
    }
}

/// The executions that started in one hour or day.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Bucket {
    /// The first instant of the bucket (UTC).
    pub start: DateTime<Utc>,
    /// Item executions started.
    pub runs: u64,
    /// Executions that ended in failure, timeouts included.
    pub failures: u64,
    /// Failures that were timeouts.
    pub timeouts: u64,
    /// Executions without an end (running, or their node died).
    pub unfinished: u64,
    /// Median duration of the finished executions, in milliseconds.
    pub duration_p50_ms: Option<i64>,
    /// 99th percentile of the same.
    pub duration_p99_ms: Option<i64>,
    /// Median trigger delay of the executions with a scheduled instant, in milliseconds.
    pub delay_p50_ms: Option<i64>,
    /// 99th percentile of the same.
    pub delay_p99_ms: Option<i64>,
}

/// One job's statistics since an instant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JobStats {
    /// The job.
    pub job_name: String,
    /// Executions started at or after this instant were counted.
    pub since: DateTime<Utc>,
    /// Per hour or per day.
    pub granularity: Granularity,
    /// The buckets with executions, oldest first.
    pub buckets: Vec<Bucket>,
    /// Whether more than [`MAX_STATS_ROWS`] executions matched: only the newest were counted.
    pub truncated: bool,
}

impl History {
    /// Statistics of `job`'s executions started at or after `since`, per hour or day (the newest
    /// [`MAX_STATS_ROWS`] executions at most).
    pub async fn stats(
        &self,
        job: &JobName,
        since: DateTime<Utc>,
        granularity: Granularity,
    ) -> Result<JobStats, HistoryError> {
        let mut query = HistoryQuery::job(job.clone());
        query.since = Some(since);
        query.limit = MAX_STATS_ROWS + 1;
        let mut rows = self.query(&query).await?;
        let truncated = rows.len() > MAX_STATS_ROWS as usize;
        rows.truncate(MAX_STATS_ROWS as usize);
        Ok(JobStats {
            job_name: job.to_string(),
            since,
            granularity,
            buckets: bucket(&rows, granularity),
            truncated,
        })
    }
}

/// Buckets `records` (any order) by the start of their hour or day, oldest first.
pub fn bucket(records: &[ExecutionRecord], granularity: Granularity) -> Vec<Bucket> {
    #[derive(Default)]
    struct Acc {
        bucket: Bucket,
        durations: Vec<i64>,
        delays: Vec<i64>,
    }
    let mut by_start: BTreeMap<DateTime<Utc>, Acc> = BTreeMap::new();
    for r in records {
        let start = r
            .start_time
            .duration_trunc(granularity.step())
            .unwrap_or(r.start_time);
        let acc = by_start.entry(start).or_default();
        acc.bucket.start = start;
        acc.bucket.runs += 1;
        match r.complete_time {
            None => acc.bucket.unfinished += 1,
            Some(end) => {
                acc.durations
                    .push((end - r.start_time).num_milliseconds().max(0));
                if !r.is_success {
                    acc.bucket.failures += 1;
                    // A row without an outcome (older) says so only in its cause.
                    let timed_out = match r.outcome.as_deref() {
                        Some(outcome) => outcome == crate::job::ItemOutcome::Timeout.as_str(),
                        None => (r.failure_cause.as_deref())
                            .is_some_and(|c| c.starts_with(TIMEOUT_CAUSE)),
                    };
                    if timed_out {
                        acc.bucket.timeouts += 1;
                    }
                }
            }
        }
        if let Some(scheduled) = r.scheduled_time {
            acc.delays
                .push((r.start_time - scheduled).num_milliseconds().max(0));
        }
    }
    by_start
        .into_values()
        .map(|mut acc| {
            acc.durations.sort_unstable();
            acc.delays.sort_unstable();
            Bucket {
                duration_p50_ms: percentile(&acc.durations, 50),
                duration_p99_ms: percentile(&acc.durations, 99),
                delay_p50_ms: percentile(&acc.delays, 50),
                delay_p99_ms: percentile(&acc.delays, 99),
                ..acc.bucket
            }
        })
        .collect()
}

/// The nearest-rank percentile of sorted values: the smallest value with at least `p`% of the
/// values at or below it.
pub fn percentile(sorted: &[i64], p: u32) -> Option<i64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (sorted.len() * p as usize).div_ceil(100).max(1);
    sorted.get(rank - 1).copied()
}

/// The buckets as an aligned text table.
pub fn render_stats(buckets: &[Bucket], granularity: Granularity) -> String {
    let first = match granularity {
        Granularity::Hour => "HOUR (UTC)",
        Granularity::Day => "DAY (UTC)",
    };
    let header = [
        first,
        "RUNS",
        "FAILED",
        "TIMEOUTS",
        "UNFINISHED",
        "P50 TOOK",
        "P99 TOOK",
        "P50 DELAY",
        "P99 DELAY",
    ];
    let ms = |v: Option<i64>| v.map_or("-".to_owned(), |v| format!("{v}ms"));
    let rows: Vec<Vec<String>> = buckets
        .iter()
        .map(|b| {
            vec![
                match granularity {
                    Granularity::Hour => b.start.format("%Y-%m-%d %H:00").to_string(),
                    Granularity::Day => b.start.format("%Y-%m-%d").to_string(),
                },
                b.runs.to_string(),
                b.failures.to_string(),
                b.timeouts.to_string(),
                b.unfinished.to_string(),
                ms(b.duration_p50_ms),
                ms(b.duration_p99_ms),
                ms(b.delay_p50_ms),
                ms(b.delay_p99_ms),
            ]
        })
        .collect();
    super::cli::render_table(&header, &rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    fn row(
        start: &str,
        took_ms: Option<i64>,
        delay_ms: Option<i64>,
        cause: Option<&str>,
    ) -> ExecutionRecord {
        let start_time = at(start);
        ExecutionRecord {
            id: start.to_owned(),
            job_name: "orders".into(),
            task_id: "t".into(),
            hostname: "h".into(),
            ip: "10.0.0.1".into(),
            sharding_item: 0,
            execution_source: "NORMAL_TRIGGER".into(),
            failure_cause: cause.map(str::to_owned),
            is_success: cause.is_none(),
            start_time,
            complete_time: took_ms.map(|ms| start_time + TimeDelta::milliseconds(ms)),
            scheduled_time: delay_ms.map(|ms| start_time - TimeDelta::milliseconds(ms)),
            attempt: None,
            workflow_run: None,
            outcome: None,
        }
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let values: Vec<i64> = (1..=100).collect();
        let table: &[(&[i64], u32, Option<i64>)] = &[
            (&[], 50, None),
            (&[7], 50, Some(7)),
            (&[7], 99, Some(7)),
            (&[1, 2], 50, Some(1)),
            (&[1, 2], 99, Some(2)),
            (&[1, 2, 3], 50, Some(2)),
            (&values, 50, Some(50)),
            (&values, 99, Some(99)),
        ];
        for &(sorted, p, want) in table {
            assert_eq!(percentile(sorted, p), want, "p{p} of {sorted:?}");
        }
    }

    #[test]
    fn rows_fall_in_their_hour_and_day_with_counts_and_percentiles() {
        let rows = [
            row("2026-03-02T10:00:05Z", Some(100), Some(5), None),
            row("2026-03-02T10:30:00Z", Some(300), Some(15), Some("boom")),
            row(
                "2026-03-02T10:59:59Z",
                Some(200),
                None,
                Some("timed out after 1s"),
            ),
            row("2026-03-02T11:00:00Z", None, Some(20), None),
            row("2026-03-03T00:00:00Z", Some(50), Some(1), None),
        ];
        let hours = bucket(&rows, Granularity::Hour);
        let starts: Vec<String> = hours.iter().map(|b| b.start.to_rfc3339()).collect();
        assert_eq!(
            starts,
            [
                "2026-03-02T10:00:00+00:00",
                "2026-03-02T11:00:00+00:00",
                "2026-03-03T00:00:00+00:00"
            ]
        );
        assert_eq!(
            hours[0],
            Bucket {
                start: at("2026-03-02T10:00:00Z"),
                runs: 3,
                failures: 2,
                timeouts: 1,
                unfinished: 0,
                duration_p50_ms: Some(200),
                duration_p99_ms: Some(300),
                delay_p50_ms: Some(5),
                delay_p99_ms: Some(15),
            }
        );
        assert_eq!((hours[1].runs, hours[1].unfinished), (1, 1));
        assert_eq!(hours[1].duration_p50_ms, None);
        assert_eq!(hours[1].delay_p99_ms, Some(20));
        let days = bucket(&rows, Granularity::Day);
        assert_eq!(days.len(), 2);
        assert_eq!(
            (days[0].runs, days[0].failures, days[0].timeouts),
            (4, 2, 1)
        );
        assert_eq!(days[0].delay_p50_ms, Some(15));
        let table = render_stats(&days, Granularity::Day);
        assert!(table.starts_with("DAY (UTC)"), "{table}");
        assert!(table.contains("2026-03-02  4     2       1"), "{table}");
    }

    #[test]
    fn a_granularity_is_hour_or_day() {
        assert_eq!(Granularity::parse("hour").unwrap(), Granularity::Hour);
        assert_eq!(Granularity::parse(" day").unwrap(), Granularity::Day);
        let err = Granularity::parse("week").unwrap_err().to_string();
        assert!(err.contains("--by") && err.contains("week"), "{err}");
    }
}
