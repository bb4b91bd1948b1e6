//! Quartz cron expressions, as ElasticJob takes them: `sec min hour day-of-month month day-of-week
//! [year]`, with `?`, `L`, `L-n`, `W`, `LW`, `#`, month and day names, wrap-around ranges
//! (`22-6`, `FRI-MON`, `NOV-FEB`) and Quartz's day numbering (1 = SUN .. 7 = SAT).
//!
//! The rule is simple: **what Quartz 2.3.2 accepts is accepted and fires at the same instants;
//! what it refuses is refused**, with an error naming the field. Java and Rust instances of one
//! job then fire together. `tests/quartz_differential.rs` checks this against the real
//! `org.quartz.CronExpression` on thousands of generated expressions in every CI run. The grammar
//! is in `parse` (Quartz's own, quirks included) and the search in `search`, over a model
//! of Java's lenient calendar in `calendar`. croner was the parser before; it cannot express
//! wrap-around ranges, `L-n` or Quartz's DST resolution, so it is no longer used (ARCHITECTURE.md).
//!
//! Deliberate differences from Quartz (README's Cron section lists them with examples):
//!
//! - an expression that can never fire (`0 0 0 30 2 ?`) is refused, where Quartz accepts it and
//!   returns no fire time; so is one Quartz accepts but cannot search (an empty list `0 0 12 * , ?`
//!   throws `NoSuchElementException` in Quartz);
//! - `W` on a day that can fall before the month starts (`0W`, `L-28W` to `L-30W`) is refused:
//!   Quartz's search loops forever on it once that day comes up;
//! - more than seven fields are refused (Quartz ignores the extra ones);
//! - fire times are searched up to the year 2999, where Quartz 2.3.2 stops at the current year +
//!   100 (2126 in 2026);
//! - `W` compares with the wall clock's milliseconds taken as 0 (Quartz reads the real clock's,
//!   so its answer can depend on when it is asked);
//! - only ASCII digits are numbers (Java's `parseInt` also takes other scripts' digits after `#`).
//!
//! Parsing is done once per config by [`CronSchedule::parse`]; [`CronSchedule::next_fire_after`]
//! then only searches. Schedules written the same way share one parse.
//!
//! # Daylight-saving time
//!
//! Times are matched on the wall clock of the job's [`JobTimeZone`], resolved as Java resolves
//! them, because that is what Quartz 2.3.2 does (checked against it for America/New_York,
//! Europe/London and Australia/Lord_Howe in the differential test):
//!
//! - **Gap** (spring forward; 02:30 does not exist on 2026-03-08 in America/New_York): a fixed
//!   time inside the gap does not fire that day at all: `0 30 2 * * ?` fires on 03-07 and then on
//!   03-09. Interval fires inside the gap are skipped; the rest of the day fires as usual.
//! - **Overlap** (fall back; 01:30 happens twice on 2026-11-01 in America/New_York): a fixed time
//!   fires once, at the *second* occurrence (01:30 EST, 06:30Z). An interval expression such as
//!   `0 0/30 * * * ?` fires through the repeated hour as Quartz does (see the tests).
//!
//! Both are Quartz's behaviour, kept so that mixed Java/Rust clusters agree; schedule daily jobs
//! outside 01:00-03:00 local time, or in UTC, to avoid them.

pub mod next;

mod calendar;
mod parse;
mod search;

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use chrono::{DateTime, Utc};

use crate::timezone::{JobTimeZone, Zone};

use parse::{Fields, GrammarError};

/// The seven Quartz fields in order, as error messages name them.
const FIELD_NAMES: [&str; 7] = [
    "seconds",
    "minutes",
    "hours",
    "day-of-month",
    "month",
    "day-of-week",
    "year",
];

/// Why a cron expression was refused. Every variant carries the expression.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CronError {
    /// Five fields: a unix cron line, which lacks Quartz's leading seconds field.
    #[error(
        "cron {expr:?} has 5 fields, like unix cron: Quartz cron needs seconds first and '?' in \
         one day field (sec min hour day-of-month month day-of-week [year]), e.g. {suggestion:?}; \
         Quartz numbers weekdays 1=SUN..7=SAT"
    )]
    MissingSeconds {
        /// The refused expression.
        expr: String,
        /// The Quartz expression it most likely meant.
        suggestion: String,
    },
    /// Neither 6 nor 7 fields.
    #[error("cron {expr:?} has {count} fields; Quartz cron has 6 or 7 (sec min hour day-of-month month day-of-week [year])")]
    FieldCount {
        /// The refused expression.
        expr: String,
        /// How many space-separated fields it has.
        count: usize,
    },
    /// Both day fields hold a value: Quartz requires `?` in exactly one of them.
    #[error("cron {expr:?}: exactly one of day-of-month and day-of-week must be '?' (Quartz does not combine them); both are set")]
    BothDaysSet {
        /// The refused expression.
        expr: String,
    },
    /// Both day fields are `?`.
    #[error("cron {expr:?}: exactly one of day-of-month and day-of-week must be '?'; both are")]
    BothDaysUnspecified {
        /// The refused expression.
        expr: String,
    },
    /// Quartz's grammar refuses one field.
    #[error("cron {expr:?}: {field} field {value:?} is invalid: {problem}")]
    InvalidField {
        /// The refused expression.
        expr: String,
        /// Which field is refused.
        field: &'static str,
        /// The field's text.
        value: String,
        /// What is wrong with it.
        problem: String,
    },
    /// A field that names no value at all (`,`, or `L` outside the day fields): Quartz accepts it
    /// and then fails to search.
    #[error("cron {expr:?}: {field} field {value:?} matches no value")]
    NoValues {
        /// The refused expression.
        expr: String,
        /// The empty field.
        field: &'static str,
        /// The field's text.
        value: String,
    },
    /// `W` on a day that can fall before the month starts (`0W`, `L-28W` to `L-30W`): Quartz
    /// 2.3.2's search then loops forever (its scheduler thread spins), so it is refused.
    #[error("cron {expr:?}: day-of-month field {value:?}: 'W' on a day that can fall before the month starts (0W, L-28W to L-30W) makes Quartz's search loop forever; use a day from 1W or L-27W")]
    QuartzLoops {
        /// The refused expression.
        expr: String,
        /// The day-of-month field.
        value: String,
    },
    /// A valid expression that matches no instant from 1970 to 2999 (`0 0 0 30 2 ?`).
    #[error("cron {expr:?} never fires: no date from 1970 to 2999 matches its day, month and year fields")]
    NeverFires {
        /// The refused expression.
        expr: String,
    },
}

impl CronError {
    /// The field the error is about, when it is about one.
    pub fn field(&self) -> Option<&'static str> {
        match self {
            Self::InvalidField { field, .. } | Self::NoValues { field, .. } => Some(field),
            Self::QuartzLoops { .. } => Some(FIELD_NAMES[parse::DAY_OF_MONTH]),
            Self::BothDaysSet { .. } | Self::BothDaysUnspecified { .. } => {
                Some("day-of-month/day-of-week")
            }
            _ => None,
        }
    }
}

/// The schedules parsed in this process, by expression. The table holds each parsed expression
/// itself, so that one parsed and dropped (a node validates every job's config at its start, then
/// again when the job registers) is found again, not parsed a second time; entries nothing else
/// holds are pruned each time the table has doubled, so it stays within twice the expressions in
/// use (plus 64).
static PARSED: LazyLock<Parsed> = LazyLock::new(Parsed::default);

#[derive(Default)]
struct Parsed(Mutex<ParsedTable>);

#[derive(Default)]
struct ParsedTable {
    by_expr: HashMap<Arc<str>, Arc<Fields>>,
    /// Size after the last pruning; the next one happens at twice that.
    pruned_at: usize,
}

impl Parsed {
    fn get(&self, expr: &str) -> Option<CronSchedule> {
        let table = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let (expr, cron) = table.by_expr.get_key_value(expr)?;
        Some(CronSchedule {
            expr: expr.clone(),
            cron: cron.clone(),
        })
    }

    fn put(&self, schedule: &CronSchedule) {
        let mut table = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if table.by_expr.len() >= 2 * table.pruned_at.max(64) {
            table.by_expr.retain(|_, cron| Arc::strong_count(cron) > 1);
            table.pruned_at = table.by_expr.len();
        }
        table
            .by_expr
            .insert(schedule.expr.clone(), schedule.cron.clone());
    }
}

/// The last answer of [`CronSchedule::next_fire_after_memo`].
#[derive(Debug, Default)]
pub struct NextFireMemo {
    last: Option<MemoEntry>,
}

#[derive(Debug)]
struct MemoEntry {
    expr: Arc<str>,
    zone: crate::timezone::Zone,
    now: DateTime<Utc>,
    next: Option<DateTime<Utc>>,
}

/// A parsed Quartz cron expression.
///
/// ```
/// use chrono::{DateTime, Utc};
/// use shardcron::{cron::CronSchedule, timezone::JobTimeZone};
/// let every_5s = CronSchedule::parse("0/5 * * * * ?").unwrap();
/// let now: DateTime<Utc> = "2025-01-01T00:00:03Z".parse().unwrap();
/// let next = every_5s.next_fire_after(now, &JobTimeZone::utc()).unwrap();
/// assert_eq!(next.to_rfc3339(), "2025-01-01T00:00:05+00:00");
/// ```
#[derive(Debug, Clone)]
pub struct CronSchedule {
    expr: Arc<str>,
    cron: Arc<Fields>,
}

impl PartialEq for CronSchedule {
    /// Two schedules are equal when written the same way (what a config change compares).
    fn eq(&self, other: &Self) -> bool {
        self.expr == other.expr
    }
}

impl Eq for CronSchedule {}

impl CronSchedule {
    /// Parses a Quartz expression (see the module docs for the rules).
    pub fn parse(expr: &str) -> Result<Self, CronError> {
        if let Some(shared) = PARSED.get(expr) {
            return Ok(shared);
        }
        let fields = parse_fields(expr)?;
        let schedule = Self {
            expr: Arc::from(expr),
            cron: Arc::new(fields),
        };
        PARSED.put(&schedule);
        Ok(schedule)
    }

    /// The expression as written.
    pub fn as_str(&self) -> &str {
        &self.expr
    }

    /// The first fire time strictly after `now`, reading the expression in `tz`, as Quartz's
    /// `getNextValidTimeAfter` gives it.
    ///
    /// `None` when the expression never fires again (a past year, or nothing before the year
    /// 2999): the job has no next fire, not a failed lookup.
    pub fn next_fire_after(&self, now: DateTime<Utc>, tz: &JobTimeZone) -> Option<DateTime<Utc>> {
        let next = search::next_after(&self.cron, tz.zone(), now.timestamp_millis())?;
        DateTime::from_timestamp(next, 0).filter(|next| *next > now)
    }

    /// [`Self::next_fire_after`], answered from `memo` when its last question was the same
    /// expression, zone and instant. The trigger requeues a busy instant's jobs one after the
    /// other, and jobs on one schedule mostly share their expression: at 10,000 jobs on one cron
    /// that is one calendar search instead of 10,000 in the instant's critical section.
    pub fn next_fire_after_memo(
        &self,
        now: DateTime<Utc>,
        tz: &JobTimeZone,
        memo: &mut NextFireMemo,
    ) -> Option<DateTime<Utc>> {
        if let Some(last) = &memo.last {
            if last.now == now && last.zone == tz.zone() && last.expr == self.expr {
                return last.next;
            }
        }
        let next = self.next_fire_after(now, tz);
        memo.last = Some(MemoEntry {
            expr: self.expr.clone(),
            zone: tz.zone(),
            now,
            next,
        });
        next
    }

    /// The fire times after `now`, in order; a convenience over [`Self::next_fire_after`].
    pub fn fires_after<'a>(
        &'a self,
        now: DateTime<Utc>,
        tz: &'a JobTimeZone,
    ) -> impl Iterator<Item = DateTime<Utc>> + 'a {
        std::iter::successors(self.next_fire_after(now, tz), move |last| {
            self.next_fire_after(*last, tz)
        })
    }
}

impl std::fmt::Display for CronSchedule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.expr)
    }
}

/// Parses with Quartz's grammar, then refuses what Quartz would accept but cannot fire.
fn parse_fields(expr: &str) -> Result<Fields, CronError> {
    let tokens = parse::tokens(expr);
    let fields = parse::parse(expr).map_err(|error| match error {
        GrammarError::FieldCount(5) => CronError::MissingSeconds {
            expr: expr.to_owned(),
            suggestion: quartz_suggestion(&tokens),
        },
        GrammarError::FieldCount(count) => CronError::FieldCount {
            expr: expr.to_owned(),
            count,
        },
        GrammarError::BothDays {
            both_unspecified: true,
        } => CronError::BothDaysUnspecified {
            expr: expr.to_owned(),
        },
        GrammarError::BothDays { .. } => CronError::BothDaysSet {
            expr: expr.to_owned(),
        },
        GrammarError::Field(error) => CronError::InvalidField {
            expr: expr.to_owned(),
            field: FIELD_NAMES[error.field],
            value: tokens.get(error.field).unwrap_or(&"").to_string(),
            problem: error.problem,
        },
    })?;
    for index in [
        parse::SECOND,
        parse::MINUTE,
        parse::HOUR,
        parse::MONTH,
        parse::YEAR,
    ] {
        if fields.sets[index].is_empty() {
            return Err(CronError::NoValues {
                expr: expr.to_owned(),
                field: FIELD_NAMES[index],
                value: tokens.get(index).unwrap_or(&"").to_string(),
            });
        }
    }
    let loops = fields.nearest_weekday
        && if fields.last_day_of_month {
            fields.last_day_offset >= 28
        } else {
            fields.sets[parse::DAY_OF_MONTH].first() == Some(&0)
        };
    if loops {
        return Err(CronError::QuartzLoops {
            expr: expr.to_owned(),
            value: tokens.get(parse::DAY_OF_MONTH).unwrap_or(&"").to_string(),
        });
    }
    // From the first second of 1970 (Quartz's first year), in UTC.
    let utc = Zone::Iana(chrono_tz::UTC);
    if search::next_after(&fields, utc, -1000).is_none() {
        return Err(CronError::NeverFires {
            expr: expr.to_owned(),
        });
    }
    Ok(fields)
}

/// The Quartz spelling of a 5-field unix expression: seconds `0`, and `?` in the day field that
/// was `*` (day-of-week first, as unix `* * *` days mean "every day").
fn quartz_suggestion(unix: &[&str]) -> String {
    let (mut dom, mut dow) = (unix[2], unix[4]);
    if dow == "*" {
        dow = "?";
    } else if dom == "*" {
        dom = "?";
    }
    format!("0 {} {} {dom} {} {dow}", unix[0], unix[1], unix[3])
}

#[cfg(test)]
mod tests;
