//! The next fire time, found as Quartz 2.3.2's `CronExpression.getTimeAfter` finds it.
//!
//! The search walks the calendar field by field (second, minute, hour, day, month, year), and
//! each time a field has to move it sets the smaller ones to their start and starts over. It runs
//! on a [`Calendar`] that normalizes and resolves daylight-saving times as Java's does, so the
//! instants are Quartz's, DST quirks included (see the `cron` module docs).

use super::calendar::{last_day_of_month, Calendar, Field};
use super::parse::{Fields, MAX_YEAR, NO_SPEC};
use crate::timezone::Zone;

/// More steps than any expression needs to reach year 2999 (a month-by-month walk from 1970 is
/// about 40,000); a bound so that no input can make the search spin.
const STEP_LIMIT: u32 = 500_000;

/// The smallest value of `set` at or above `value` (Java's `tailSet(value).first()`).
fn tail(set: &[i64], value: i64) -> Option<i64> {
    set.get(set.partition_point(|v| *v < value)).copied()
}

/// Quartz's `setCalendarHour`: an hour the day skips (a spring-forward gap) becomes the next one.
fn set_calendar_hour(cl: &mut Calendar, hour: i64) -> Option<()> {
    cl.set(Field::HourOfDay, hour);
    if cl.get(Field::HourOfDay)? != hour && hour != 24 {
        cl.set(Field::HourOfDay, hour + 1);
    }
    Some(())
}

/// Sets the time of day to midnight and the date to `day`/`month0` (0-based month, may overflow).
fn restart_day(cl: &mut Calendar, day: i64, month0: i64) {
    cl.set(Field::Second, 0);
    cl.set(Field::Minute, 0);
    cl.set(Field::HourOfDay, 0);
    cl.set(Field::DayOfMonth, day);
    cl.set(Field::Month, month0);
}

/// Where `W` moves `day` (1-based) of `month`/`year`: the nearest weekday within the month, and
/// whether that fire is before `after_ms`. Quartz computes this on a second calendar.
fn nearest_weekday(
    zone: Zone,
    year: i64,
    month: i64,
    day: i64,
    time: (i64, i64, i64),
    after_ms: i64,
) -> Option<(i64, bool)> {
    let mut tcal = Calendar::at(zone, 0)?;
    tcal.set(Field::Second, 0);
    tcal.set(Field::Minute, 0);
    tcal.set(Field::HourOfDay, 0);
    tcal.set(Field::DayOfMonth, day);
    tcal.set(Field::Month, month - 1);
    tcal.set(Field::Year, year);
    let last = last_day_of_month(month, year);
    let dow = tcal.day_of_week()?;
    let day = match dow {
        7 if day == 1 => day + 2,
        7 => day - 1,
        1 if day == last => day - 2,
        1 => day + 1,
        _ => day,
    };
    let (hour, minute, second) = time;
    tcal.set(Field::Second, second);
    tcal.set(Field::Minute, minute);
    tcal.set(Field::HourOfDay, hour);
    tcal.set(Field::DayOfMonth, day);
    tcal.set(Field::Month, month - 1);
    // Quartz's second calendar keeps the wall clock's milliseconds; ours has none (README).
    let before = tcal.time()?.checked_mul(1000)? < after_ms;
    Some((day, before))
}

/// The first fire time strictly after `after_ms` (epoch milliseconds), in epoch seconds, or
/// `None` when there is none up to [`MAX_YEAR`].
pub(super) fn next_after(f: &Fields, zone: Zone, after_ms: i64) -> Option<i64> {
    let [seconds, minutes, hours, days_of_month, months, days_of_week, years] = &f.sets;
    let first = |set: &[i64]| set.first().copied();
    let after_ms = after_ms.checked_add(1000)?;
    let mut cl = Calendar::at(zone, after_ms.div_euclid(1000))?;
    let dom_spec = !days_of_month.contains(&NO_SPEC);
    let dow_spec = !days_of_week.contains(&NO_SPEC);
    debug_assert!(dom_spec != dow_spec, "the parser refuses both or neither");

    // Quartz's walk only moves forward, except through its `W` bug (a target day before the
    // month starts), where it can cycle forever. A cycle passes through a backward step, so the
    // instants reached after one are remembered: meeting one again is a loop, and no fire.
    let mut latest = i64::MIN;
    let mut after_backward_steps = std::collections::HashSet::new();
    for _ in 0..STEP_LIMIT {
        if cl.get(Field::Year)? > MAX_YEAR {
            return None;
        }
        let at = cl.time()?;
        if at < latest {
            if !after_backward_steps.insert(at) {
                tracing::warn!(cron = ?f, "the Quartz search loops; no next fire");
                return None;
            }
        } else {
            latest = at;
        }

        // Second.
        let mut sec = cl.get(Field::Second)?;
        let mut min = cl.get(Field::Minute)?;
        match tail(seconds, sec) {
            Some(s) => sec = s,
            None => {
                sec = first(seconds)?;
                min += 1;
                cl.set(Field::Minute, min);
            }
        }
        cl.set(Field::Second, sec);

        // Minute.
        min = cl.get(Field::Minute)?;
        let mut hr = cl.get(Field::HourOfDay)?;
        let mut t = -1;
        match tail(minutes, min) {
            Some(m) => {
                t = min;
                min = m;
            }
            None => {
                min = first(minutes)?;
                hr += 1;
            }
        }
        if min != t {
            cl.set(Field::Second, 0);
            cl.set(Field::Minute, min);
            set_calendar_hour(&mut cl, hr)?;
            continue;
        }
        cl.set(Field::Minute, min);

        // Hour.
        hr = cl.get(Field::HourOfDay)?;
        let mut day = cl.get(Field::DayOfMonth)?;
        t = -1;
        match tail(hours, hr) {
            Some(h) => {
                t = hr;
                hr = h;
            }
            None => {
                hr = first(hours)?;
                day += 1;
            }
        }
        if hr != t {
            cl.set(Field::Second, 0);
            cl.set(Field::Minute, 0);
            cl.set(Field::DayOfMonth, day);
            set_calendar_hour(&mut cl, hr)?;
            continue;
        }
        cl.set(Field::HourOfDay, hr);

        // Day.
        day = cl.get(Field::DayOfMonth)?;
        let mut mon = cl.get(Field::Month)? + 1;
        t = -1;
        let mut tmon = mon;
        if dom_spec {
            let year = cl.get(Field::Year)?;
            if f.last_day_of_month {
                t = day;
                day = last_day_of_month(mon, year) - f.last_day_offset;
                if !f.nearest_weekday {
                    if t > day {
                        mon += 1;
                        if mon > 12 {
                            mon = 1;
                            tmon = 3333;
                            cl.add_years(1)?;
                        }
                        day = 1;
                    }
                } else {
                    let (moved, before) =
                        nearest_weekday(zone, year, mon, day, (hr, min, sec), after_ms)?;
                    day = moved;
                    if before {
                        day = 1;
                        mon += 1;
                    }
                }
            } else if f.nearest_weekday {
                t = day;
                let (moved, before) = nearest_weekday(
                    zone,
                    year,
                    mon,
                    first(days_of_month)?,
                    (hr, min, sec),
                    after_ms,
                )?;
                day = moved;
                if before {
                    day = first(days_of_month)?;
                    mon += 1;
                }
            } else if let Some(d) = tail(days_of_month, day) {
                t = day;
                day = d;
                if day > last_day_of_month(mon, year) {
                    day = first(days_of_month)?;
                    mon += 1;
                }
            } else {
                day = first(days_of_month)?;
                mon += 1;
            }
            if day != t || mon != tmon {
                restart_day(&mut cl, day, mon - 1);
                continue;
            }
        } else if dow_spec {
            let year = cl.get(Field::Year)?;
            let last_day = last_day_of_month(mon, year);
            let c_dow = cl.day_of_week()?;
            let days_to = |dow: i64| match c_dow.cmp(&dow) {
                std::cmp::Ordering::Less => dow - c_dow,
                std::cmp::Ordering::Greater => dow + (7 - c_dow),
                std::cmp::Ordering::Equal => 0,
            };
            if f.last_day_of_week {
                // The last given weekday of the month.
                let mut add = days_to(first(days_of_week)?);
                if day + add > last_day {
                    restart_day(&mut cl, 1, mon);
                    continue;
                }
                while day + add + 7 <= last_day {
                    add += 7;
                }
                day += add;
                if add > 0 {
                    restart_day(&mut cl, day, mon - 1);
                    continue;
                }
            } else if f.nth_day_of_week != 0 {
                // The n-th given weekday of the month.
                let add = days_to(first(days_of_week)?);
                let shifted = add > 0;
                day += add;
                let mut week = day / 7;
                if day % 7 > 0 {
                    week += 1;
                }
                let add = (f.nth_day_of_week - week) * 7;
                day += add;
                if add < 0 || day > last_day {
                    restart_day(&mut cl, 1, mon);
                    continue;
                } else if add > 0 || shifted {
                    restart_day(&mut cl, day, mon - 1);
                    continue;
                }
            } else {
                let dow = tail(days_of_week, c_dow).or_else(|| first(days_of_week))?;
                let add = days_to(dow);
                if day + add > last_day {
                    restart_day(&mut cl, 1, mon);
                    continue;
                } else if add > 0 {
                    restart_day(&mut cl, day + add, mon - 1);
                    continue;
                }
            }
        } else {
            return None;
        }
        cl.set(Field::DayOfMonth, day);

        // Month.
        mon = cl.get(Field::Month)? + 1;
        let mut year = cl.get(Field::Year)?;
        t = -1;
        if year > MAX_YEAR {
            return None;
        }
        match tail(months, mon) {
            Some(m) => {
                t = mon;
                mon = m;
            }
            None => {
                mon = first(months)?;
                year += 1;
            }
        }
        if mon != t {
            restart_day(&mut cl, 1, mon - 1);
            cl.set(Field::Year, year);
            continue;
        }
        cl.set(Field::Month, mon - 1);

        // Year.
        year = cl.get(Field::Year)?;
        let t = year;
        year = tail(years, year)?;
        if year != t {
            restart_day(&mut cl, 1, 0);
            cl.set(Field::Year, year);
            continue;
        }
        cl.set(Field::Year, year);
        return cl.time();
    }
    None
}
