//! The console's time arithmetic, pure: a job's next fire times, and the points of the history
//! chart (trigger delay and duration of each execution).
//!
//! The history stores when an item started, not the instant its fire was scheduled for, so the
//! delay of a cron-fired execution is measured from the job's latest fire at or before its start,
//! read in the job's current cron and time zone. Triggered, failover and misfire runs have no
//! scheduled instant of their own: they get no delay.

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

use crate::config::JobConfig;
use crate::cron::CronSchedule;
use crate::history::ExecutionRecord;
use crate::timezone::JobTimeZone;

/// A job's schedule as the console reads it.
#[derive(Debug, Clone)]
pub struct Schedule {
    cron: CronSchedule,
    zone: JobTimeZone,
}

impl Schedule {
    /// The schedule of `config`; `None` for a one-off job; an error names the bad field.
    pub fn of(config: &JobConfig) -> Result<Option<Self>, String> {
        let Some(expr) = config.cron_expr() else {
            return Ok(None);
        };
        let cron = CronSchedule::parse(expr).map_err(|e| format!("cron: {e}"))?;
        let zone = JobTimeZone::from_config(config.time_zone.as_deref())
            .map_err(|e| format!("timeZone: {e}"))?;
        Ok(Some(Self { cron, zone }))
    }

    /// The next `count` fires after `now`.
    pub fn next_fires(&self, now: DateTime<Utc>, count: usize) -> Vec<DateTime<Utc>> {
        self.cron.fires_after(now, &self.zone).take(count).collect()
    }

    /// The latest fire at or before `at`; `None` when none is found within 32 days.
    pub fn last_fire_at_or_before(&self, at: DateTime<Utc>) -> Option<DateTime<Utc>> {
        // The narrowest window that holds a fire bounds the walk: at most a minute of
        // per-second fires, an hour of per-minute fires, and so on.
        for window in [1, 60, 3_600, 86_400, 32 * 86_400] {
            let mut fire = self
                .cron
                .next_fire_after(at - Duration::seconds(window), &self.zone)?;
            if fire > at {
                continue;
            }
            while let Some(next) = self.cron.next_fire_after(fire, &self.zone) {
                if next > at {
                    break;
                }
                fire = next;
            }
            return Some(fire);
        }
        None
    }
}

/// One execution on the history chart.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChartPoint {
    /// When the item started.
    pub at: DateTime<Utc>,
    /// The item.
    pub item: u32,
    /// From the scheduled fire to the start, for cron-fired executions.
    pub delay_ms: Option<i64>,
    /// From start to end; `None` while it runs.
    pub duration_ms: Option<i64>,
    /// Whether it succeeded.
    pub success: bool,
    /// Why it ran (`NORMAL_TRIGGER`, `MISFIRE`, `FAILOVER`, `MANUAL`).
    pub source: String,
}

/// The chart's points for `records`, oldest first.
pub fn chart_points(records: &[ExecutionRecord], schedule: Option<&Schedule>) -> Vec<ChartPoint> {
    let mut points: Vec<ChartPoint> = records
        .iter()
        .map(|r| {
            // The instant recorded with the execution when there is one; older rows fall back on
            // the job's schedule as it is now.
            let delay_ms = match (r.scheduled_time, schedule) {
                (Some(scheduled), _) => Some((r.start_time - scheduled).num_milliseconds()),
                (None, Some(s)) if r.execution_source == "NORMAL_TRIGGER" => s
                    .last_fire_at_or_before(r.start_time)
                    .map(|fire| (r.start_time - fire).num_milliseconds()),
                _ => None,
            };
            ChartPoint {
                at: r.start_time,
                item: r.sharding_item,
                delay_ms,
                duration_ms: r
                    .complete_time
                    .map(|end| (end - r.start_time).num_milliseconds()),
                success: r.is_success,
                source: r.execution_source.clone(),
            }
        })
        .collect();
    points.sort_by_key(|p| p.at);
    points
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(h: u32, m: u32, s: u32, ms: i64) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 3, 2, h, m, s).unwrap() + Duration::milliseconds(ms)
    }

    fn schedule(cron: &str) -> Schedule {
        Schedule::of(&JobConfig::new("j", 1).cron(cron).time_zone("UTC"))
            .unwrap()
            .unwrap()
    }

    fn record(source: &str, start: DateTime<Utc>, took_ms: Option<i64>) -> ExecutionRecord {
        ExecutionRecord {
            id: "t@-@0".into(),
            job_name: "j".into(),
            task_id: "t".into(),
            hostname: "h".into(),
            ip: "10.0.0.1".into(),
            sharding_item: 0,
            execution_source: source.into(),
            failure_cause: None,
            is_success: took_ms.is_some(),
            start_time: start,
            complete_time: took_ms.map(|ms| start + Duration::milliseconds(ms)),
            scheduled_time: None,
            attempt: None,
            workflow_run: None,
            outcome: None,
        }
    }

    #[test]
    fn the_last_fire_is_found_for_every_second_minute_and_day() {
        let table = [
            ("* * * * * ?", at(10, 0, 7, 250), at(10, 0, 7, 0)),
            ("0 * * * * ?", at(10, 3, 7, 0), at(10, 3, 0, 0)),
            ("0 0/15 * * * ?", at(10, 44, 59, 999), at(10, 30, 0, 0)),
            (
                "0 30 2 * * ?",
                at(1, 0, 0, 0),
                at(2, 30, 0, 0) - Duration::days(1),
            ),
            ("0 0 10 * * ?", at(10, 0, 0, 0), at(10, 0, 0, 0)),
        ];
        for (cron, start, fire) in table {
            assert_eq!(
                schedule(cron).last_fire_at_or_before(start),
                Some(fire),
                "{cron}"
            );
        }
    }

    #[test]
    fn only_cron_fired_executions_get_a_delay_and_points_come_oldest_first() {
        let s = schedule("0/5 * * * * ?");
        let records = [
            record("MANUAL", at(10, 0, 11, 0), Some(40)),
            record("NORMAL_TRIGGER", at(10, 0, 5, 120), None),
            record("NORMAL_TRIGGER", at(10, 0, 0, 30), Some(200)),
        ];
        let points = chart_points(&records, Some(&s));
        let got: Vec<(Option<i64>, Option<i64>)> =
            points.iter().map(|p| (p.delay_ms, p.duration_ms)).collect();
        assert_eq!(
            got,
            [(Some(30), Some(200)), (Some(120), None), (None, Some(40))]
        );
        assert!(chart_points(&records, None)
            .iter()
            .all(|p| p.delay_ms.is_none()));
    }

    #[test]
    fn next_fires_follow_the_jobs_zone_and_a_one_off_job_has_none() {
        let s = Schedule::of(
            &JobConfig::new("j", 1)
                .cron("0 0 9 * * ?")
                .time_zone("Asia/Shanghai"),
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            s.next_fires(at(0, 0, 0, 0), 2),
            [at(1, 0, 0, 0), at(1, 0, 0, 0) + Duration::days(1)]
        );
        assert!(Schedule::of(&JobConfig::new("j", 1)).unwrap().is_none());
        let bad = Schedule::of(&JobConfig::new("j", 1).cron("nope")).unwrap_err();
        assert!(bad.starts_with("cron:"), "{bad}");
    }
}
