//! The slice of Java's lenient `GregorianCalendar` that Quartz's search leans on.
//!
//! Quartz finds the next fire time by setting calendar fields to out-of-range values (hour 24, day
//! 32, month 12) and reading them back normalized, and it resolves wall-clock times that a
//! daylight-saving switch skips or repeats the way Java does. Matching its fire instants means
//! matching both, so this module models exactly that:
//!
//! - fields are set raw and normalized on the next read, linearly (month 12 is January of the next
//!   year, day 0 the last day of the previous month, hour 24 midnight of the next day);
//! - a wall-clock time is turned into an instant with Java's rule: the offset of the last
//!   transition whose *wall-clock* start is at or before it. A time inside a spring-forward gap
//!   therefore reads with the offset before the gap (02:30 in a 02:00→03:00 gap is 03:30), and a
//!   time the fall-back repeats reads with the offset after it (the second occurrence).

use chrono::{
    DateTime, Datelike, Duration, FixedOffset, Local, LocalResult, NaiveDate, NaiveDateTime,
    Offset, TimeZone, Timelike, Utc,
};

use crate::timezone::Zone;

/// The calendar fields Quartz uses, in the order of [`Calendar::fields`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Field {
    Year = 0,
    /// Zero-based, as in Java (0 = January).
    Month = 1,
    DayOfMonth = 2,
    HourOfDay = 3,
    Minute = 4,
    Second = 5,
}

/// A Java-style calendar in one zone, at whole-second precision (Quartz clears milliseconds).
#[derive(Debug, Clone)]
pub(super) struct Calendar {
    zone: Zone,
    /// Year, month (0-based), day, hour, minute, second; raw until the next read normalizes them.
    fields: [i64; 6],
    /// Whether a field was set since the last normalization.
    dirty: bool,
}

impl Calendar {
    /// The calendar at `epoch_seconds`, read in `zone`. `None` past chrono's range.
    pub(super) fn at(zone: Zone, epoch_seconds: i64) -> Option<Self> {
        let mut calendar = Self {
            zone,
            fields: [0; 6],
            dirty: false,
        };
        calendar.set_time(epoch_seconds)?;
        Some(calendar)
    }

    /// Sets one field, unnormalized (Java's `Calendar.set` on a lenient calendar).
    pub(super) fn set(&mut self, field: Field, value: i64) {
        self.fields[field as usize] = value;
        self.dirty = true;
    }

    /// Reads one field, normalizing pending sets first. `None` past chrono's range.
    pub(super) fn get(&mut self, field: Field) -> Option<i64> {
        self.complete()?;
        Some(self.fields[field as usize])
    }

    /// The day of the week, 1 = Sunday .. 7 = Saturday (Java's and Quartz's numbering).
    pub(super) fn day_of_week(&mut self) -> Option<i64> {
        self.complete()?;
        let date = NaiveDate::from_ymd_opt(
            i32::try_from(self.fields[0]).ok()?,
            u32::try_from(self.fields[1] + 1).ok()?,
            u32::try_from(self.fields[2]).ok()?,
        )?;
        Some(i64::from(date.weekday().num_days_from_sunday()) + 1)
    }

    /// Java's `add(Calendar.YEAR, n)`: the year moves and the day is pinned to the new month's
    /// length (February 29th becomes the 28th).
    pub(super) fn add_years(&mut self, years: i64) -> Option<()> {
        self.complete()?;
        self.fields[0] += years;
        let last = last_day_of_month(self.fields[1] + 1, self.fields[0]);
        self.fields[2] = self.fields[2].min(last);
        self.dirty = true;
        Some(())
    }

    /// The instant the fields name, in epoch seconds (Java's `getTime`).
    pub(super) fn time(&self) -> Option<i64> {
        let wall = lenient_wall_clock(&self.fields)?;
        wall_to_instant(self.zone, wall).map(|t| t.timestamp())
    }

    fn complete(&mut self) -> Option<()> {
        if self.dirty {
            let time = self.time()?;
            self.set_time(time)?;
        }
        Some(())
    }

    fn set_time(&mut self, epoch_seconds: i64) -> Option<()> {
        let instant = DateTime::<Utc>::from_timestamp(epoch_seconds, 0)?;
        let wall = instant.naive_utc() + offset_at(self.zone, instant);
        self.fields = [
            i64::from(wall.year()),
            i64::from(wall.month0()),
            i64::from(wall.day()),
            i64::from(wall.hour()),
            i64::from(wall.minute()),
            i64::from(wall.second()),
        ];
        self.dirty = false;
        Some(())
    }
}

/// Days in `month` (1-based) of `year`, Gregorian.
pub(super) fn last_day_of_month(month: i64, year: i64) -> i64 {
    match month {
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// The wall-clock time raw fields name, normalized linearly as Java's lenient calendar does.
fn lenient_wall_clock(fields: &[i64; 6]) -> Option<NaiveDateTime> {
    let [year, month0, day, hour, minute, second] = *fields;
    let year = year.checked_add(month0.div_euclid(12))?;
    let month = u32::try_from(month0.rem_euclid(12) + 1).ok()?;
    let first = NaiveDate::from_ymd_opt(i32::try_from(year).ok()?, month, 1)?;
    let seconds = hour
        .checked_mul(3600)?
        .checked_add(minute.checked_mul(60)?)?
        .checked_add(second)?;
    first
        .and_hms_opt(0, 0, 0)?
        .checked_add_signed(Duration::try_days(day.checked_sub(1)?)?)?
        .checked_add_signed(Duration::try_seconds(seconds)?)
}

/// The offset of `zone` in force at `instant`.
fn offset_at(zone: Zone, instant: DateTime<Utc>) -> FixedOffset {
    match zone {
        Zone::Iana(tz) => tz.offset_from_utc_datetime(&instant.naive_utc()).fix(),
        Zone::Fixed(offset) => offset,
        Zone::Local => Local.offset_from_utc_datetime(&instant.naive_utc()).fix(),
    }
}

/// The instant a wall-clock time names in `zone`, resolved as Java resolves it (module docs).
pub(super) fn wall_to_instant(zone: Zone, wall: NaiveDateTime) -> Option<DateTime<Utc>> {
    match zone {
        Zone::Iana(tz) => resolve(&tz, wall, zone),
        Zone::Fixed(offset) => resolve(&offset, wall, zone),
        Zone::Local => resolve(&Local, wall, zone),
    }
}

fn resolve<Z: TimeZone>(tz: &Z, wall: NaiveDateTime, zone: Zone) -> Option<DateTime<Utc>> {
    match tz.from_local_datetime(&wall) {
        LocalResult::Single(t) => Some(t.with_timezone(&Utc)),
        // Repeated by a fall-back: the offset after the switch, i.e. the later instant.
        LocalResult::Ambiguous(_, later) => Some(later.with_timezone(&Utc)),
        // Skipped by a spring-forward: the offset in force before the gap. A day earlier is
        // before the switch in every zone (none switches twice within a day).
        LocalResult::None => {
            let before = wall.checked_sub_signed(Duration::days(1))?.and_utc();
            let offset = offset_at(zone, before);
            Some((wall - offset).and_utc())
        }
    }
}
