//! What follows a number in a field (`L`, `W`, `#`, a range, a step) and the values an item adds
//! to its field, with Quartz's checks and its quirks.

use super::*;

impl Parser {
    /// Quartz's `checkNext`: what follows a number (`L`, `W`, `#n`, `-end[/step]`, `/step`).
    pub(super) fn after_value(&mut self, pos: usize, s: &[char], val: i64, field: usize) -> Step {
        let mut i = pos;
        if i >= s.len() {
            return self.add(val, -1, -1, field);
        }
        match s[i] {
            suffix @ ('L' | 'W' | '#') => {
                match suffix {
                    'L' => {
                        only_in(field, DAY_OF_WEEK, "'L' after a number", "day-of-week")?;
                        if !(1..=7).contains(&val) {
                            return Err("weekdays are 1 to 7".into());
                        }
                        self.fields.last_day_of_week = true;
                    }
                    'W' => {
                        only_in(field, DAY_OF_MONTH, "'W'", "day-of-month")?;
                        if val > 31 {
                            return Err("'W' needs a day of at most 31".into());
                        }
                        self.fields.nearest_weekday = true;
                    }
                    _ => {
                        only_in(field, DAY_OF_WEEK, "'#'", "day-of-week")?;
                        self.nth(&s[i + 1..])?;
                    }
                }
                self.sets[field].insert(val);
                Ok(())
            }
            '-' => {
                i += 1;
                let first = digit(char_at(s, i)?)?;
                let mut end = first;
                i += 1;
                if i >= s.len() {
                    return self.add(val, end, 1, field);
                }
                if s[i].is_ascii_digit() {
                    (end, i) = value_from(first, s, i)?;
                }
                if i < s.len() && s[i] == '/' {
                    i += 1;
                    let first = digit(char_at(s, i)?)?;
                    i += 1;
                    if i >= s.len() {
                        return self.add(val, end, first, field);
                    }
                    if s[i].is_ascii_digit() {
                        let (step, _) = value_from(first, s, i)?;
                        return self.add(val, end, step, field);
                    }
                    return self.add(val, end, first, field);
                }
                self.add(val, end, 1, field)
            }
            '/' => {
                if i + 1 >= s.len() || s[i + 1] == ' ' || s[i + 1] == '\t' {
                    return Err("'/' must be followed by a number".into());
                }
                i += 1;
                let first = digit(s[i])?;
                i += 1;
                if i >= s.len() {
                    check_step(first, field)?;
                    return self.add(val, -1, first, field);
                }
                if !s[i].is_ascii_digit() {
                    return Err(format!("unexpected {:?} after '/'", s[i]));
                }
                let (step, _) = value_from(first, s, i)?;
                check_step(step, field)?;
                self.add(val, -1, step, field)
            }
            _ => self.add(val, -1, 0, field),
        }
    }

    /// Quartz's `addToSet`: range checks, then the values from `val` to `end` by `step`, wrapping
    /// around the field's maximum when `end` is before `val` (`22-6` in hours, `FRI-MON`).
    pub(super) fn add(&mut self, val: i64, end: i64, step: i64, field: usize) -> Step {
        let (low, high) = match field {
            SECOND | MINUTE => (0, 59),
            HOUR => (0, 23),
            DAY_OF_MONTH => (1, 31),
            MONTH => (1, 12),
            DAY_OF_WEEK => (1, 7),
            _ => (i64::MIN, i64::MAX),
        };
        let exempt =
            val == ALL_SPEC || (val == NO_SPEC && matches!(field, DAY_OF_MONTH | DAY_OF_WEEK));
        let below = if field == DAY_OF_WEEK {
            val == 0
        } else {
            val < low
        };
        if (below || val > high || end > high) && !exempt {
            return Err(format!("values are {low} to {high}"));
        }
        let set = &mut self.sets[field];
        if (step == 0 || step == -1) && val != ALL_SPEC {
            set.insert(if val == -1 { NO_SPEC } else { val });
            return Ok(());
        }
        let mut step = step;
        if val == ALL_SPEC && step <= 0 {
            step = 1;
            set.insert(ALL_SPEC);
        }
        let (first, last) = match field {
            YEAR => (1970, MAX_YEAR),
            _ => (low, high),
        };
        let start = if val == -1 || val == ALL_SPEC {
            first
        } else {
            val
        };
        let mut stop = if end == -1 { last } else { end };
        let mut modulus = None;
        if stop < start {
            let max = match field {
                SECOND | MINUTE => 60,
                HOUR => 24,
                MONTH => 12,
                DAY_OF_WEEK => 7,
                DAY_OF_MONTH => 31,
                _ => return Err("the start year must be before the end year".into()),
            };
            stop += max;
            modulus = Some(max);
        }
        // Years past the search horizon are never reached; leaving them out bounds the set.
        let stop = if field == YEAR {
            stop.min(MAX_YEAR + 1)
        } else {
            stop
        };
        let step = step.max(1);
        let mut value = start;
        while value <= stop {
            let real = match modulus {
                None => value,
                Some(max) => {
                    let v = value % max;
                    if v == 0 && matches!(field, MONTH | DAY_OF_WEEK | DAY_OF_MONTH) {
                        max
                    } else {
                        v
                    }
                }
            };
            set.insert(real);
            value += step;
        }
        Ok(())
    }
}

/// Quartz's `checkIncrementRange`.
/// Refuses `what` in any field but `allowed` (named `name`).
fn only_in(field: usize, allowed: usize, what: &str, name: &str) -> Step {
    if field == allowed {
        Ok(())
    } else {
        Err(format!("{what} is only allowed in {name}"))
    }
}
