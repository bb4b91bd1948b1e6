//! `ctl cron next`: the next fire instants of an expression, as a user checks one before deploying
//! it. The whole command lives here (arguments as text in, output text out, an error with its exit
//! code) so that any command-line front end only forwards its arguments.
//!
//! ```
//! use shardcron::cron::next::{cron_next, CronNextArgs};
//! let out = cron_next(
//!     &CronNextArgs {
//!         expr: "0 0 22-6/4 * * ?".into(),
//!         zone: Some("Asia/Shanghai".into()),
//!         from: Some("2026-03-01T00:00:00Z".into()),
//!         count: Some("2".into()),
//!         json: false,
//!     },
//!     chrono::Utc::now(),
//! )
//! .unwrap();
//! assert_eq!(
//!     out,
//!     "2026-03-01T14:00:00Z  2026-03-01T22:00:00+08:00\n\
//!      2026-03-01T18:00:00Z  2026-03-02T02:00:00+08:00\n"
//! );
//! ```

use chrono::{DateTime, FixedOffset, SecondsFormat, Utc};
use serde_json::json;

use super::{CronError, CronSchedule};
use crate::timezone::{JobTimeZone, TimeZoneError};

/// Fire times listed when `--count` is not given.
pub const DEFAULT_COUNT: usize = 5;
/// The most fire times one call lists.
pub const MAX_COUNT: usize = 1000;
/// The exit code of every refusal of this command: bad input.
pub const BAD_INPUT: u8 = 2;

/// The command's arguments, as given on the command line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CronNextArgs {
    /// The Quartz expression.
    pub expr: String,
    /// `--zone`: an IANA name or `GMT+hh:mm`; absent means the local zone, as for a job config
    /// without `timeZone`.
    pub zone: Option<String>,
    /// `--from`: an RFC 3339 instant; absent means now.
    pub from: Option<String>,
    /// `--count`: how many fire times (1 to [`MAX_COUNT`], default [`DEFAULT_COUNT`]).
    pub count: Option<String>,
    /// `--json`: print one JSON document instead of lines.
    pub json: bool,
}

/// Why `cron next` refused its input; each variant names the argument. All exit with
/// [`BAD_INPUT`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CronNextError {
    /// The expression is refused (the error names the field).
    #[error(transparent)]
    Cron(#[from] CronError),
    /// `--zone` is refused.
    #[error("--zone: {0}")]
    Zone(#[from] TimeZoneError),
    /// `--from` is not an RFC 3339 instant.
    #[error(
        "--from {input:?}: expected an RFC 3339 instant such as 2026-03-08T06:00:00Z ({reason})"
    )]
    From {
        /// The value given.
        input: String,
        /// The parser's reason.
        reason: String,
    },
    /// `--count` is not a number from 1 to [`MAX_COUNT`].
    #[error("--count {input:?}: expected a whole number from 1 to {MAX_COUNT}")]
    Count {
        /// The value given.
        input: String,
    },
}

impl CronNextError {
    /// The process exit code for this error (always [`BAD_INPUT`]).
    pub fn exit_code(&self) -> u8 {
        BAD_INPUT
    }
}

/// One fire time: the instant and the zone's wall clock at it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fire {
    /// The instant.
    pub utc: DateTime<Utc>,
    /// The same instant in the job's zone, with its offset.
    pub local: DateTime<FixedOffset>,
}

/// The answer of `cron next`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CronNext {
    /// The expression as given.
    pub expr: String,
    /// The zone, as given (`local` when none).
    pub zone: String,
    /// The instant searched from.
    pub from: DateTime<Utc>,
    /// The fire times, fewer than asked when the expression stops firing.
    pub fires: Vec<Fire>,
}

impl CronNext {
    /// One line per fire: the UTC instant, then the local time with its offset. An expression
    /// that no longer fires says so on one line.
    pub fn to_text(&self) -> String {
        if self.fires.is_empty() {
            return format!(
                "{:?} does not fire after {}\n",
                self.expr,
                rfc3339(&self.from)
            );
        }
        self.fires
            .iter()
            .map(|f| format!("{}  {}\n", rfc3339(&f.utc), rfc3339(&f.local)))
            .collect()
    }

    /// `{"expr", "zone", "from", "fires": [{"utc", "local"}]}`.
    pub fn to_json(&self) -> serde_json::Value {
        let fires: Vec<_> = self
            .fires
            .iter()
            .map(|f| json!({"utc": rfc3339(&f.utc), "local": rfc3339(&f.local)}))
            .collect();
        json!({
            "expr": self.expr,
            "zone": self.zone,
            "from": rfc3339(&self.from),
            "fires": fires,
        })
    }
}

fn rfc3339<Tz: chrono::TimeZone>(t: &DateTime<Tz>) -> String
where
    Tz::Offset: std::fmt::Display,
{
    t.to_rfc3339_opts(SecondsFormat::AutoSi, true)
}

/// The next `count` fire times of `schedule` in `tz` strictly after `from`.
pub fn next_fires(
    schedule: &CronSchedule,
    tz: &JobTimeZone,
    from: DateTime<Utc>,
    count: usize,
) -> Vec<Fire> {
    schedule
        .fires_after(from, tz)
        .take(count)
        .map(|utc| Fire {
            utc,
            local: tz.to_fixed(utc),
        })
        .collect()
}

/// Checks the arguments and computes the answer; `now` is the default `--from`.
pub fn compute(args: &CronNextArgs, now: DateTime<Utc>) -> Result<CronNext, CronNextError> {
    let schedule = CronSchedule::parse(&args.expr)?;
    let tz = JobTimeZone::from_config(args.zone.as_deref())?;
    let from = match &args.from {
        None => now,
        Some(input) => DateTime::parse_from_rfc3339(input)
            .map_err(|e| CronNextError::From {
                input: input.clone(),
                reason: e.to_string(),
            })?
            .with_timezone(&Utc),
    };
    let count = match &args.count {
        None => DEFAULT_COUNT,
        Some(input) => input
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=MAX_COUNT).contains(n))
            .ok_or_else(|| CronNextError::Count {
                input: input.clone(),
            })?,
    };
    Ok(CronNext {
        expr: args.expr.clone(),
        zone: tz.to_string(),
        from,
        fires: next_fires(&schedule, &tz, from, count),
    })
}

/// The whole command: the text to print (lines, or JSON with `--json`), or the error to report
/// with its exit code.
pub fn cron_next(args: &CronNextArgs, now: DateTime<Utc>) -> Result<String, CronNextError> {
    let answer = compute(args, now)?;
    Ok(if args.json {
        format!("{:#}\n", answer.to_json())
    } else {
        answer.to_text()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(expr: &str) -> CronNextArgs {
        CronNextArgs {
            expr: expr.into(),
            zone: Some("America/New_York".into()),
            from: Some("2026-03-07T12:00:00Z".into()),
            count: Some("3".into()),
            json: false,
        }
    }

    #[test]
    fn cron_next_lists_utc_and_local_times_across_a_dst_switch() {
        let out = cron_next(&args("0 0 12 * * ?"), Utc::now()).unwrap();
        assert_eq!(
            out,
            "2026-03-07T17:00:00Z  2026-03-07T12:00:00-05:00\n\
             2026-03-08T16:00:00Z  2026-03-08T12:00:00-04:00\n\
             2026-03-09T16:00:00Z  2026-03-09T12:00:00-04:00\n"
        );
    }

    #[test]
    fn cron_next_prints_json_when_asked() {
        let mut a = args("0 0 12 * * ?");
        a.json = true;
        a.count = Some("1".into());
        let out: serde_json::Value =
            serde_json::from_str(&cron_next(&a, Utc::now()).unwrap()).unwrap();
        assert_eq!(out["zone"], "America/New_York");
        assert_eq!(out["fires"][0]["utc"], "2026-03-07T17:00:00Z");
        assert_eq!(out["fires"][0]["local"], "2026-03-07T12:00:00-05:00");
    }

    #[test]
    fn cron_next_refuses_bad_input_naming_the_field_with_exit_code_2() {
        let cases: [(CronNextArgs, &str); 5] = [
            (args("0 0 12 * MON ?"), "month field \"MON\""),
            (
                CronNextArgs {
                    zone: Some("GMT+1€".into()),
                    ..args("0 0 12 * * ?")
                },
                "--zone",
            ),
            (
                CronNextArgs {
                    from: Some("yesterday".into()),
                    ..args("0 0 12 * * ?")
                },
                "--from",
            ),
            (
                CronNextArgs {
                    count: Some("0".into()),
                    ..args("0 0 12 * * ?")
                },
                "--count",
            ),
            (args("0 0 0 30 2 ?"), "never fires"),
        ];
        for (a, expected) in cases {
            let err = cron_next(&a, Utc::now()).unwrap_err();
            assert!(err.to_string().contains(expected), "{err}");
            assert_eq!(err.exit_code(), 2);
        }
    }

    #[test]
    fn an_expression_that_stopped_firing_says_so() {
        let out = cron_next(&args("0 0 12 1 1 ? 2020"), Utc::now()).unwrap();
        assert!(out.contains("does not fire after"), "{out}");
    }
}
