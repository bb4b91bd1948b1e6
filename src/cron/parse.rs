//! Quartz 2.3.2's cron grammar, rule for rule: what `org.quartz.CronExpression` accepts is
//! accepted with the same meaning, and what it refuses is refused, with the field named.
//!
//! Quartz's grammar has quirks a cleaner parser would not reproduce, and each of them is a cron
//! line that works in a Java instance of the same job, so they are kept on purpose:
//!
//! - a value may be followed by characters Quartz does not read (`12X` is `12`, `MONDAY` is `MON`,
//!   a step after a name range is ignored: `MON-FRI/2` is `MON-FRI`);
//! - a step of 0 after a start value keeps only the start (`5/0` is `5`, `1-5/0` is `1`);
//! - `99` is Quartz's "every value" marker and `98` its `?` marker, and written as a value they act
//!   as such (`99 * * * * ?` fires every second);
//! - `W` and `#` take the day without range checks (`0W` is the last day of the previous month).
//!
//! What Quartz accepts only to fail when asked for a fire time (an empty list `,`, `L` in the
//! seconds) is refused here, naming the field.
//!
//! Here the fields and their items; in `values.rs` what follows a number and the values an item
//! adds to its field.

mod values;

use std::collections::BTreeSet;

/// Quartz's marker for `?` inside a value set.
pub(super) const NO_SPEC: i64 = 98;
/// Quartz's marker for `*` inside a value set.
const ALL_SPEC: i64 = 99;
/// The last year a fire time is searched in (Quartz 2.3.2: the current year + 100; module docs of
/// `cron` say why a fixed year).
pub(super) const MAX_YEAR: i64 = 2999;

/// Field indices, in Quartz's order.
pub(super) const SECOND: usize = 0;
pub(super) const MINUTE: usize = 1;
pub(super) const HOUR: usize = 2;
pub(super) const DAY_OF_MONTH: usize = 3;
pub(super) const MONTH: usize = 4;
pub(super) const DAY_OF_WEEK: usize = 5;
pub(super) const YEAR: usize = 6;

const MONTHS: [&str; 12] = [
    "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
];
const DAYS: [&str; 7] = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];

/// A parsed expression: the value set of each field plus Quartz's day flags.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) struct Fields {
    /// Sorted values of each field (with Quartz's 98/99 markers where it keeps them).
    pub(super) sets: [Vec<i64>; 7],
    /// `nL` in day-of-week: the last such weekday of the month.
    pub(super) last_day_of_week: bool,
    /// `n#k` in day-of-week: the k-th such weekday (0 when absent).
    pub(super) nth_day_of_week: i64,
    /// `L` in day-of-month.
    pub(super) last_day_of_month: bool,
    /// `W` in day-of-month.
    pub(super) nearest_weekday: bool,
    /// `L-n` in day-of-month.
    pub(super) last_day_offset: i64,
}

/// Why Quartz refuses one field: its index and the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct FieldError {
    pub(super) field: usize,
    pub(super) problem: String,
}

/// How a whole expression was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum GrammarError {
    /// Fewer than six fields, or more than seven.
    FieldCount(usize),
    /// One field is refused.
    Field(FieldError),
    /// Both day fields are `?` or neither is.
    BothDays { both_unspecified: bool },
}

/// The tokens of an expression as Quartz splits it: on spaces and tabs only, each trimmed of
/// control characters (Java's `String.trim`).
pub(super) fn tokens(expr: &str) -> Vec<&str> {
    expr.split([' ', '\t'])
        .filter(|t| !t.is_empty())
        .map(|t| t.trim_matches(|c: char| c <= ' '))
        .collect()
}

/// Parses an expression with Quartz's grammar (module docs).
pub(super) fn parse(expr: &str) -> Result<Fields, GrammarError> {
    let upper = expr.to_uppercase();
    let tokens = tokens(&upper);
    if !(6..=7).contains(&tokens.len()) {
        return Err(GrammarError::FieldCount(tokens.len()));
    }
    let mut parser = Parser {
        sets: Default::default(),
        fields: Fields::default(),
    };
    for (field, token) in tokens.iter().enumerate() {
        parser
            .field(field, token)
            .map_err(|problem| GrammarError::Field(FieldError { field, problem }))?;
    }
    if tokens.len() == 6 {
        parser.item(YEAR, &['*']).map_err(|problem| {
            GrammarError::Field(FieldError {
                field: YEAR,
                problem,
            })
        })?;
    }
    let dom_set = !parser.sets[DAY_OF_MONTH].contains(&NO_SPEC);
    let dow_set = !parser.sets[DAY_OF_WEEK].contains(&NO_SPEC);
    if dom_set == dow_set {
        return Err(GrammarError::BothDays {
            both_unspecified: !dom_set,
        });
    }
    let Parser { sets, mut fields } = parser;
    for (index, set) in sets.into_iter().enumerate() {
        fields.sets[index] = set.into_iter().collect();
    }
    Ok(fields)
}

struct Parser {
    sets: [BTreeSet<i64>; 7],
    fields: Fields,
}

type Step = Result<(), String>;

/// Java's `String.charAt`: past the end is an error (Quartz catches the exception and refuses).
fn char_at(s: &[char], i: usize) -> Result<char, String> {
    s.get(i)
        .copied()
        .ok_or_else(|| "ends where a value was expected".to_owned())
}

/// Java's `Integer.parseInt` (an optional sign, then ASCII digits, within 32 bits).
fn parse_int(s: &[char]) -> Result<i64, String> {
    let text: String = s.iter().collect();
    text.parse::<i32>()
        .map(i64::from)
        .map_err(|_| format!("{text:?} is not a number"))
}

fn digit(c: char) -> Result<i64, String> {
    c.to_digit(10)
        .map(i64::from)
        .ok_or_else(|| format!("{c:?} is not a digit"))
}

/// Quartz's `getValue`: `first` then the digits from `i`, and the position after them.
fn value_from(first: i64, s: &[char], i: usize) -> Result<(i64, usize), String> {
    char_at(s, i)?;
    let mut text = first.to_string();
    let mut end = i;
    while end < s.len() && s[end].is_ascii_digit() {
        text.push(s[end]);
        end += 1;
    }
    let value = text
        .parse::<i32>()
        .map_err(|_| format!("{text} is too large"))?;
    let pos = if end < s.len() { end } else { end + 1 };
    Ok((i64::from(value), pos))
}

fn is_last_offset(s: &[char]) -> bool {
    // `^L-[0-9]*W?$`
    let rest = match s {
        ['L', '-', rest @ ..] => rest,
        _ => return false,
    };
    let rest = rest.strip_suffix(&['W']).unwrap_or(rest);
    rest.iter().all(char::is_ascii_digit)
}

impl Parser {
    fn field(&mut self, field: usize, token: &str) -> Step {
        let has_list = token.contains(',');
        if field == DAY_OF_MONTH && token.contains('L') && token.len() > 1 && has_list {
            return Err("'L' and 'LW' cannot be combined with other days of the month".into());
        }
        if field == DAY_OF_WEEK && token.contains('L') && token.len() > 1 && has_list {
            return Err("'L' cannot be combined with other days of the week".into());
        }
        if field == DAY_OF_WEEK && token.matches('#').count() > 1 {
            return Err("only one '#' (n-th weekday) is supported".into());
        }
        for item in token.split(',').filter(|item| !item.is_empty()) {
            let chars: Vec<char> = item.chars().collect();
            self.item(field, &chars)?;
        }
        Ok(())
    }

    /// Quartz's `storeExpressionVals` for one list item.
    fn item(&mut self, field: usize, s: &[char]) -> Step {
        let Some(&c) = s.first() else { return Ok(()) };
        let is_l = s == ['L'] || s == ['L', 'W'] || is_last_offset(s);
        if c.is_ascii_uppercase() && !is_l {
            return self.name(field, s);
        }
        match c {
            '?' => {
                if s.len() > 2 && s[1] != ' ' && s[2] != '\t' {
                    return Err(format!("unexpected {:?} after '?'", s[1]));
                }
                if field != DAY_OF_WEEK && field != DAY_OF_MONTH {
                    return Err("'?' is only allowed in day-of-month or day-of-week".into());
                }
                if field == DAY_OF_WEEK && !self.fields.last_day_of_month {
                    match self.sets[DAY_OF_MONTH].last() {
                        None => return Err("day-of-month has no value".into()),
                        Some(&NO_SPEC) => {
                            return Err("'?' may be in day-of-month or day-of-week, not both".into())
                        }
                        Some(_) => {}
                    }
                }
                self.add(NO_SPEC, -1, 0, field)
            }
            '*' | '/' => self.every(field, s),
            'L' => {
                if field == DAY_OF_MONTH {
                    self.fields.last_day_of_month = true;
                }
                if field == DAY_OF_WEEK {
                    self.add(7, 7, 0, field)?;
                }
                let mut i = 1;
                if field == DAY_OF_MONTH && s.len() > i {
                    if s[i] == '-' {
                        let (offset, pos) = value_from(0, s, i + 1)?;
                        if offset > 30 {
                            return Err("the offset from the last day must be at most 30".into());
                        }
                        self.fields.last_day_offset = offset;
                        i = pos;
                    }
                    if s.len() > i && s[i] == 'W' {
                        self.fields.nearest_weekday = true;
                    }
                }
                Ok(())
            }
            '0'..='9' => {
                let mut val = digit(c)?;
                if s.len() == 1 {
                    return self.add(val, -1, -1, field);
                }
                let mut i = 1;
                if s[i].is_ascii_digit() {
                    (val, i) = value_from(val, s, i)?;
                }
                self.after_value(i, s, val, field)
            }
            other => Err(format!("unexpected character {other:?}")),
        }
    }

    /// A month or weekday name, possibly a range of names, `#n` or `L`.
    fn name(&mut self, field: usize, s: &[char]) -> Step {
        let three = |i: usize| -> Result<String, String> {
            s.get(i..i + 3)
                .map(|c| c.iter().collect())
                .ok_or_else(|| format!("{:?} is not a name", s.iter().collect::<String>()))
        };
        let lookup = |names: &[&str], sub: &str| names.iter().position(|n| *n == sub);
        let sub = three(0)?;
        let (start, end) = match field {
            MONTH => {
                let start = lookup(&MONTHS, &sub).ok_or(format!("{sub:?} is not a month"))?;
                let mut end = -1;
                if s.len() > 3 && s[3] == '-' {
                    let sub = three(4)?;
                    end =
                        lookup(&MONTHS, &sub).ok_or(format!("{sub:?} is not a month"))? as i64 + 1;
                }
                (start as i64 + 1, end)
            }
            DAY_OF_WEEK => {
                let start = lookup(&DAYS, &sub).ok_or(format!("{sub:?} is not a weekday"))?;
                let mut end = -1;
                if s.len() > 3 {
                    match s[3] {
                        '-' => {
                            let sub = three(4)?;
                            end = lookup(&DAYS, &sub).ok_or(format!("{sub:?} is not a weekday"))?
                                as i64
                                + 1;
                        }
                        '#' => self.nth(&s[4..])?,
                        'L' => self.fields.last_day_of_week = true,
                        _ => {}
                    }
                }
                (start as i64 + 1, end)
            }
            _ => return Err(format!("names such as {sub:?} are not allowed here")),
        };
        let step = if end == -1 { 0 } else { 1 };
        self.add(start, end, step, field)
    }

    fn nth(&mut self, rest: &[char]) -> Step {
        match parse_int(rest) {
            Ok(n) if (1..=5).contains(&n) => {
                self.fields.nth_day_of_week = n;
                Ok(())
            }
            _ => Err("'#' must be followed by a number from 1 to 5".into()),
        }
    }

    /// `*`, `*/n` and `/n`.
    fn every(&mut self, field: usize, s: &[char]) -> Step {
        if s == ['*'] {
            return self.add(ALL_SPEC, -1, 0, field);
        }
        let mut i = 0;
        if s[0] == '/' && (s.len() == 1 || s[1] == ' ' || s[1] == '\t') {
            return Err("'/' must be followed by a number".into());
        }
        if s[0] == '*' {
            i = 1;
        }
        let step = if char_at(s, i)? == '/' {
            i += 1;
            if i >= s.len() {
                return Err("'/' must be followed by a number".into());
            }
            let step = parse_int(&s[i..])?;
            check_step(step, field)?;
            step
        } else {
            1
        };
        self.add(ALL_SPEC, -1, step, field)
    }
}

fn check_step(step: i64, field: usize) -> Step {
    let max = match field {
        SECOND | MINUTE => 59,
        HOUR => 23,
        DAY_OF_MONTH => 31,
        DAY_OF_WEEK => 7,
        MONTH => 12,
        _ => return Ok(()),
    };
    if step > max {
        return Err(format!("the step {step} is larger than {max}"));
    }
    Ok(())
}
