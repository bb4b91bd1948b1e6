//! Quartz cron expressions, as ElasticJob takes them: `sec min hour day-of-month month day-of-week
//! [year]`, with `?`, `L`, `W`, `#`, month and day names, and Quartz's day numbering (1 = SUN .. 7 =
//! SAT).
//!
//! Parsing is done once per config by [`CronSchedule::parse`]; [`CronSchedule::next_fire_after`]
//! then only searches, so it is cheap enough to run for every fire of every job.
//!
//! A parsed croner pattern takes about 5 KB (its year field is a bitfield over croner's whole
//! range of years), so schedules written the same way share one parse: ten thousand jobs on
//! `0/10 * * * * ?` hold one pattern, and a clone of a schedule is a reference count.
//!
//! # Quartz rules enforced here (croner is laxer)
//!
//! - Exactly one of day-of-month and day-of-week is `?`; the other may be `*`. Quartz refuses both
//!   set ("specifying both a day-of-week AND a day-of-month is not implemented") and both `?`.
//! - Seconds are required: a 5-field unix expression is refused with a message saying so.
//! - `?` stands alone and only in the two day fields; croner's `+` (AND) day-of-week modifier and
//!   `@daily`-style nicknames are not Quartz and are refused.
//!
//! A day-of-week of just `L` is Saturday, as in Quartz. Not supported: the `L-3` offset from
//! the last day of the month (croner refuses it, so the error names the field).
//!
//! # Daylight-saving time
//!
//! Times are matched on the wall clock of the job's [`JobTimeZone`]. Following croner, which follows
//! the Open Cron Pattern Specification, a *fixed-time* expression (one value each in seconds,
//! minutes and hours, e.g. `0 30 2 * * ?`) differs from an *interval* one (`0 0/30 * * * ?`):
//!
//! - **Gap** (spring forward; 02:30 does not exist on 2025-03-30 in Europe/Berlin): a fixed-time
//!   fire moves to the first instant after the gap (03:00 CEST), so a daily job still runs that
//!   day. Interval fires inside the gap are skipped: they name no instant. (Quartz, through Java's
//!   lenient `Calendar`, may fire at 03:30 instead; we take the earliest real instant.)
//! - **Overlap** (fall back; 02:30 happens twice on 2025-10-26 in Europe/Berlin): a fixed-time
//!   fire happens once, at the first occurrence (CEST), as Quartz does. Interval fires happen on
//!   both passes, so `0 0/30 * * * ?` keeps firing every 30 minutes of real time.
//!
//! Both rules are deterministic and covered by the tests below.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, Weak};

use chrono::{DateTime, Local, Utc};
use croner::parser::{CronParser, Seconds};
use croner::Cron;

use crate::timezone::{JobTimeZone, Zone};

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
const DAY_OF_MONTH: usize = 3;
const DAY_OF_WEEK: usize = 5;

/// Why a cron expression was refused. Every variant carries the expression.
#[derive(Debug, thiserror::Error)]
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
        /// How many whitespace-separated fields it has.
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
    /// Syntax that croner accepts but Quartz does not (`?` mixed with values or outside the day
    /// fields, the `+` day-of-week modifier).
    #[error("cron {expr:?}: {field} field {value:?}: {problem}")]
    NotQuartz {
        /// The refused expression.
        expr: String,
        /// Which field holds it.
        field: &'static str,
        /// The field's text.
        value: String,
        /// What Quartz does not allow.
        problem: &'static str,
    },
    /// croner refused one field (a value out of range, a bad step, an unknown name).
    #[error("cron {expr:?}: {field} field {value:?} is invalid: {source}")]
    InvalidField {
        /// The refused expression.
        expr: String,
        /// Which field croner refused.
        field: &'static str,
        /// The field's text.
        value: String,
        /// croner's reason.
        #[source]
        source: croner::errors::CronError,
    },
    /// croner refused the expression and no single field alone explains it.
    #[error("cron {expr:?} is invalid: {source}")]
    Invalid {
        /// The refused expression.
        expr: String,
        /// croner's reason.
        #[source]
        source: croner::errors::CronError,
    },
}

/// The schedules alive in this process, by expression (entries of dropped ones are pruned as the
/// table grows).
static PARSED: LazyLock<Parsed> = LazyLock::new(Parsed::default);

#[derive(Default)]
struct Parsed(Mutex<ParsedTable>);

#[derive(Default)]
struct ParsedTable {
    by_expr: HashMap<Arc<str>, Weak<Cron>>,
    /// Size after the last pruning; the next one happens at twice that.
    pruned_at: usize,
}

impl Parsed {
    fn get(&self, expr: &str) -> Option<CronSchedule> {
        let table = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let (expr, cron) = table.by_expr.get_key_value(expr)?;
        Some(CronSchedule {
            expr: expr.clone(),
            cron: cron.upgrade()?,
        })
    }

    fn put(&self, schedule: &CronSchedule) {
        let mut table = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if table.by_expr.len() >= 2 * table.pruned_at.max(64) {
            table.by_expr.retain(|_, cron| cron.strong_count() > 0);
            table.pruned_at = table.by_expr.len();
        }
        table
            .by_expr
            .insert(schedule.expr.clone(), Arc::downgrade(&schedule.cron));
    }
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
    cron: Arc<Cron>,
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
        let fields: Vec<&str> = expr.split_whitespace().collect();
        check_quartz_shape(expr, &fields)?;
        let cron = quartz_parser()
            .parse(&croner_spelling(&fields))
            .map_err(|source| blame_field(expr, &fields, source))?;
        let schedule = Self {
            expr: Arc::from(expr),
            cron: Arc::new(cron),
        };
        PARSED.put(&schedule);
        Ok(schedule)
    }

    /// The expression as written.
    pub fn as_str(&self) -> &str {
        &self.expr
    }

    /// The first fire time strictly after `now`, reading the expression in `tz`.
    ///
    /// `None` when the expression never fires again (a past year, or no match before croner's
    /// search horizon, the year 5000): the job has no next fire, not a failed lookup.
    pub fn next_fire_after(&self, now: DateTime<Utc>, tz: &JobTimeZone) -> Option<DateTime<Utc>> {
        // croner searches the wall clock in whole seconds and, being exclusive, starts at the
        // second after `now`'s; a fire inside `now`'s own second is never after `now`. The final
        // filter states the contract (strictly after) rather than trusting that detail.
        let result = match tz.zone() {
            Zone::Iana(zone) => self
                .cron
                .find_next_occurrence(&now.with_timezone(&zone), false)
                .map(|t| t.with_timezone(&Utc)),
            Zone::Fixed(offset) => self
                .cron
                .find_next_occurrence(&now.with_timezone(&offset), false)
                .map(|t| t.with_timezone(&Utc)),
            Zone::Local => self
                .cron
                .find_next_occurrence(&now.with_timezone(&Local), false)
                .map(|t| t.with_timezone(&Utc)),
        };
        match result {
            Ok(next) => Some(next).filter(|next| *next > now),
            // croner's way of saying the expression never matches again.
            Err(croner::errors::CronError::TimeSearchLimitExceeded) => None,
            Err(error) => {
                // Only a date arithmetic overflow near croner's horizon gets here; the job has no
                // representable next fire, which is worth a line in the log.
                tracing::warn!(cron = %self.expr, %now, %error, "no next fire time");
                None
            }
        }
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

/// croner configured as Quartz: seconds required, optional year, 1 = SUN, and `0/5` steps.
fn quartz_parser() -> CronParser {
    CronParser::builder()
        .seconds(Seconds::Required)
        .alternative_weekdays(true)
        .sloppy_ranges(true)
        .build()
}

/// The Quartz rules croner does not enforce, checked before croner sees the expression.
fn check_quartz_shape(expr: &str, fields: &[&str]) -> Result<(), CronError> {
    match fields.len() {
        5 => {
            return Err(CronError::MissingSeconds {
                expr: expr.to_owned(),
                suggestion: quartz_suggestion(fields),
            })
        }
        6 | 7 => {}
        count => {
            return Err(CronError::FieldCount {
                expr: expr.to_owned(),
                count,
            })
        }
    }
    let not_quartz = |index: usize, problem| CronError::NotQuartz {
        expr: expr.to_owned(),
        field: FIELD_NAMES[index],
        value: fields[index].to_owned(),
        problem,
    };
    for (index, field) in fields.iter().enumerate() {
        let is_day_field = index == DAY_OF_MONTH || index == DAY_OF_WEEK;
        if field.contains('?') && !(is_day_field && *field == "?") {
            return Err(not_quartz(
                index,
                "'?' stands alone, and only in day-of-month or day-of-week",
            ));
        }
    }
    if fields[DAY_OF_WEEK].starts_with('+') {
        return Err(not_quartz(
            DAY_OF_WEEK,
            "the '+' modifier is croner's, not Quartz's",
        ));
    }
    match (fields[DAY_OF_MONTH] == "?", fields[DAY_OF_WEEK] == "?") {
        (true, false) | (false, true) => Ok(()),
        (false, false) => Err(CronError::BothDaysSet {
            expr: expr.to_owned(),
        }),
        (true, true) => Err(CronError::BothDaysUnspecified {
            expr: expr.to_owned(),
        }),
    }
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

/// The expression as croner reads Quartz: a day-of-week of just `L` means Saturday in Quartz (the
/// last day of the week), where croner would take it as a never-matching "last" flag.
fn croner_spelling(fields: &[&str]) -> String {
    let mut fields = fields.to_vec();
    if fields[DAY_OF_WEEK].eq_ignore_ascii_case("L") {
        fields[DAY_OF_WEEK] = "7";
    }
    fields.join(" ")
}

/// Finds the field croner refused by parsing each field alone in an otherwise valid expression.
///
/// Runs only on the error path, so the extra parses cost nothing in steady state.
fn blame_field(expr: &str, fields: &[&str], source: croner::errors::CronError) -> CronError {
    let parser = quartz_parser();
    for (index, value) in fields.iter().enumerate() {
        let mut probe = ["0", "0", "0", "*", "*", "?", "*"];
        if index == DAY_OF_MONTH {
            probe[DAY_OF_WEEK] = "?";
        }
        if index == DAY_OF_WEEK {
            probe[DAY_OF_MONTH] = "?";
        }
        probe[index] = value;
        if let Err(source) = parser.parse(&croner_spelling(&probe)) {
            return CronError::InvalidField {
                expr: expr.to_owned(),
                field: FIELD_NAMES[index],
                value: (*value).to_owned(),
                source,
            };
        }
    }
    CronError::Invalid {
        expr: expr.to_owned(),
        source,
    }
}

#[cfg(test)]
mod tests;
