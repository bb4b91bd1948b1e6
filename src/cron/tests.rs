//! Table tests of parsing and of the fire-time search, daylight-saving edges included.

use super::*;

fn at(s: &str) -> DateTime<Utc> {
    s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
}

fn zone(name: &str) -> JobTimeZone {
    JobTimeZone::parse(name).unwrap()
}

fn next(expr: &str, now: &str, tz: &JobTimeZone) -> Option<DateTime<Utc>> {
    CronSchedule::parse(expr)
        .unwrap_or_else(|e| panic!("{e}"))
        .next_fire_after(at(now), tz)
}

fn fires(expr: &str, now: &str, tz: &JobTimeZone, n: usize) -> Vec<DateTime<Utc>> {
    let schedule = CronSchedule::parse(expr).unwrap();
    schedule.fires_after(at(now), tz).take(n).collect()
}

#[test]
fn quartz_expressions_fire_at_the_quartz_times() {
    // (expression, now, next fire), all in UTC. 2025-01-01 is a Wednesday.
    let table: &[(&str, &str, &str)] = &[
        (
            "0/5 * * * * ?",
            "2025-01-01T00:00:03Z",
            "2025-01-01T00:00:05Z",
        ),
        (
            "*/5 * * * * ?",
            "2025-01-01T00:00:55Z",
            "2025-01-01T00:01:00Z",
        ),
        (
            "0 0 12 ? * WED",
            "2025-01-01T13:00:00Z",
            "2025-01-08T12:00:00Z",
        ),
        (
            "0 0 12 ? * wed",
            "2025-01-01T11:00:00Z",
            "2025-01-01T12:00:00Z",
        ),
        (
            "0 15 10 L * ?",
            "2025-02-01T00:00:00Z",
            "2025-02-28T10:15:00Z",
        ),
        (
            "0 15 10 L * ?",
            "2024-02-01T00:00:00Z",
            "2024-02-29T10:15:00Z",
        ),
        // 6L: the last Friday (Quartz 6 = FRI); 2025-01-31 is one.
        (
            "0 15 10 ? * 6L",
            "2025-01-01T00:00:00Z",
            "2025-01-31T10:15:00Z",
        ),
        // 15W: the weekday nearest the 15th; 2025-02-15 is a Saturday, 2025-06-15 a Sunday.
        (
            "0 15 10 15W * ?",
            "2025-02-01T00:00:00Z",
            "2025-02-14T10:15:00Z",
        ),
        (
            "0 15 10 15W * ?",
            "2025-06-01T00:00:00Z",
            "2025-06-16T10:15:00Z",
        ),
        // 6#3: the third Friday (Jan 3, 10, 17).
        (
            "0 15 10 ? * 6#3",
            "2025-01-01T00:00:00Z",
            "2025-01-17T10:15:00Z",
        ),
        (
            "0 0 0 1 1 ? 2030",
            "2025-06-01T00:00:00Z",
            "2030-01-01T00:00:00Z",
        ),
        // Quartz numbering: 1 = SUN, 7 = SAT.
        (
            "0 0 12 ? * 1",
            "2025-01-01T00:00:00Z",
            "2025-01-05T12:00:00Z",
        ),
        (
            "0 0 12 ? * 7",
            "2025-01-01T00:00:00Z",
            "2025-01-04T12:00:00Z",
        ),
        (
            "0 0 12 ? * SUN",
            "2025-01-01T00:00:00Z",
            "2025-01-05T12:00:00Z",
        ),
        (
            "0 0 12 ? * MON-FRI",
            "2025-01-03T13:00:00Z",
            "2025-01-06T12:00:00Z",
        ),
        (
            "0 0 12 1 JUL,DEC ?",
            "2025-01-01T00:00:00Z",
            "2025-07-01T12:00:00Z",
        ),
        (
            "0 30 9 * * ?",
            "2025-01-01T09:30:00Z",
            "2025-01-02T09:30:00Z",
        ),
        // A day-of-week of just L is Saturday (7) in Quartz.
        (
            "0 0 12 ? * L",
            "2025-01-01T00:00:00Z",
            "2025-01-04T12:00:00Z",
        ),
        // LW: the last weekday of the month; 2025-05-31 is a Saturday.
        (
            "0 0 12 LW * ?",
            "2025-05-01T00:00:00Z",
            "2025-05-30T12:00:00Z",
        ),
        (
            "0 0 12 ? * 1-7/2",
            "2025-01-01T00:00:00Z",
            "2025-01-02T12:00:00Z",
        ),
    ];
    for &(expr, now, expected) in table {
        assert_eq!(
            next(expr, now, &JobTimeZone::utc()),
            Some(at(expected)),
            "{expr} after {now}"
        );
    }
}

#[test]
fn refused_expressions_say_what_quartz_needs() {
    let table: &[(&str, &str)] = &[
        ("* * * * *", "Quartz cron needs seconds"),
        ("* * * * *", "e.g. \"0 * * * * ?\""),
        ("30 2 * * MON", "e.g. \"0 30 2 ? * MON\""),
        (
            "0 0 12 * * MON",
            "exactly one of day-of-month and day-of-week must be '?'",
        ),
        ("0 0 12 * * *", "both are set"),
        ("0 0 12 ? * ?", "day-of-week field \"?\""),
        ("0 0 25 * * ?", "hours field \"25\""),
        ("0 61 * * * ?", "minutes field \"61\""),
        ("0 0 12 ? * 8", "day-of-week field \"8\""),
        ("0 0 12 ? * 0", "day-of-week field \"0\""),
        ("0 0 12 L-31 * ?", "day-of-month field \"L-31\""),
        ("0 0 12 32 * ?", "day-of-month field \"32\""),
        ("0 0 12 1 13 ?", "month field \"13\""),
        ("0 0 12 1 * ? x20", "year field \"x20\""),
        ("0 0 12", "has 3 fields"),
        ("0 0 12 * * ? 2030 x", "has 8 fields"),
        ("", "has 0 fields"),
        ("? 0 12 * * ?", "seconds field \"?\""),
        ("0 0 12 ? * +MON", "day-of-week field \"+MON\""),
        // The typos, all refused by Quartz 2.3.2 too.
        ("0 0 12 * MON ?", "month field \"MON\""),
        ("0 0 12 MON * ?", "day-of-month field \"MON\""),
        ("0 0 12 ? * L,2", "day-of-week field \"L,2\""),
        ("0 0 12 * , ?", "month field \",\" matches no value"),
        ("0 0 0 30 2 ?", "never fires"),
        ("0 0 12 L-30W * ?", "loop forever"),
    ];
    for &(expr, expected) in table {
        let err = CronSchedule::parse(expr).expect_err(expr).to_string();
        assert!(err.contains(expected), "{expr:?}: {err}");
        assert!(
            err.contains(&format!("{expr:?}")),
            "names the expression: {err}"
        );
    }
}

#[test]
fn a_schedule_displays_and_compares_as_written() {
    let schedule = CronSchedule::parse("0 0 12 ? * WED").unwrap();
    assert_eq!(schedule.to_string(), "0 0 12 ? * WED");
    assert_eq!(schedule.as_str(), "0 0 12 ? * WED");
    assert_eq!(schedule, CronSchedule::parse("0 0 12 ? * WED").unwrap());
    assert_ne!(schedule, CronSchedule::parse("0 0 12 ? * 4").unwrap());
}

#[test]
fn the_next_fire_is_strictly_after_now_even_within_a_second() {
    let utc = JobTimeZone::utc();
    let every_5s = "0/5 * * * * ?";
    let table: &[(&str, &str)] = &[
        ("2025-01-01T00:00:04.500Z", "2025-01-01T00:00:05Z"),
        ("2025-01-01T00:00:05Z", "2025-01-01T00:00:10Z"),
        ("2025-01-01T00:00:05.001Z", "2025-01-01T00:00:10Z"),
        ("2025-01-01T00:00:09.999Z", "2025-01-01T00:00:10Z"),
    ];
    for &(now, expected) in table {
        assert_eq!(next(every_5s, now, &utc), Some(at(expected)), "after {now}");
    }
}

#[test]
fn an_expression_that_never_fires_again_has_no_next_fire() {
    let utc = JobTimeZone::utc();
    assert_eq!(next("0 0 0 1 1 ? 2030", "2030-01-01T00:00:00Z", &utc), None);
    assert_eq!(next("0 0 0 1 1 ? 2020", "2025-01-01T00:00:00Z", &utc), None);
}

#[test]
fn fixed_offsets_and_iana_zones_move_the_fire_instant() {
    let noon = "0 0 12 * * ?";
    let now = "2025-01-01T00:00:00Z";
    let table: &[(&str, &str)] = &[
        ("GMT+08:00", "2025-01-01T04:00:00Z"),
        ("Asia/Shanghai", "2025-01-01T04:00:00Z"),
        ("GMT-5", "2025-01-01T17:00:00Z"),
        ("America/New_York", "2025-01-01T17:00:00Z"),
        ("UTC", "2025-01-01T12:00:00Z"),
    ];
    for &(tz, expected) in table {
        assert_eq!(next(noon, now, &zone(tz)), Some(at(expected)), "{tz}");
    }
}

#[test]
fn the_local_zone_fires_at_the_local_wall_clock_time() {
    let local = JobTimeZone::local();
    let fire = next("0 0 12 * * ?", "2025-01-01T00:00:00Z", &local).unwrap();
    assert_eq!(local.wall_clock(fire).time().to_string(), "12:00:00");
}

// The DST expectations below are Java Quartz 2.3.2's own answers (tests/quartz/QuartzOracle.java),
// which these tests pin: mixed Java/Rust clusters must fire together.

#[test]
fn a_fixed_time_in_the_spring_forward_gap_skips_that_day_as_quartz_does() {
    // Europe/Berlin jumps from 02:00 CET to 03:00 CEST at 01:00Z on 2025-03-30.
    let berlin = zone("Europe/Berlin");
    assert_eq!(
        fires("0 30 2 * * ?", "2025-03-29T00:00:00Z", &berlin, 3),
        vec![
            at("2025-03-29T01:30:00Z"), // 02:30 CET
            at("2025-03-31T00:30:00Z"), // 03-30 has no 02:30: no fire that day
            at("2025-04-01T00:30:00Z"),
        ]
    );
    // America/New_York jumps from 02:00 EST to 03:00 EDT at 07:00Z on 2025-03-09.
    let new_york = zone("America/New_York");
    assert_eq!(
        next("0 30 2 * * ?", "2025-03-09T05:00:00Z", &new_york),
        Some(at("2025-03-10T06:30:00Z"))
    );
}

#[test]
fn interval_fires_in_the_spring_forward_gap_are_skipped() {
    let berlin = zone("Europe/Berlin");
    assert_eq!(
        fires("0 0/30 * * * ?", "2025-03-30T00:00:00Z", &berlin, 3),
        vec![
            at("2025-03-30T00:30:00Z"), // 01:30 CET; 02:00 and 02:30 do not exist
            at("2025-03-30T01:00:00Z"), // 03:00 CEST
            at("2025-03-30T01:30:00Z"), // 03:30 CEST
        ]
    );
}

#[test]
fn a_fixed_time_in_the_fall_back_overlap_fires_once_at_its_second_occurrence() {
    // Europe/Berlin goes back from 03:00 CEST to 02:00 CET at 01:00Z on 2025-10-26.
    let berlin = zone("Europe/Berlin");
    assert_eq!(
        fires("0 30 2 * * ?", "2025-10-25T23:00:00Z", &berlin, 2),
        vec![
            at("2025-10-26T01:30:00Z"), // 02:30 CET; 02:30 CEST (00:30Z) is not a fire
            at("2025-10-27T01:30:00Z"),
        ]
    );
    // America/New_York goes back from 02:00 EDT to 01:00 EST at 06:00Z on 2025-11-02.
    let new_york = zone("America/New_York");
    assert_eq!(
        fires("0 30 1 * * ?", "2025-11-02T04:00:00Z", &new_york, 2),
        vec![at("2025-11-02T06:30:00Z"), at("2025-11-03T06:30:00Z")]
    );
}

#[test]
fn interval_fires_skip_the_first_pass_of_the_fall_back_hour_as_quartz_does() {
    let berlin = zone("Europe/Berlin");
    assert_eq!(
        fires("0 0/30 * * * ?", "2025-10-26T00:00:00Z", &berlin, 4),
        vec![
            at("2025-10-26T01:30:00Z"), // 02:30 CET: 02:30 CEST and 02:00 CET are passed over
            at("2025-10-26T02:00:00Z"), // 03:00 CET
            at("2025-10-26T02:30:00Z"),
            at("2025-10-26T03:00:00Z"),
        ]
    );
}

#[test]
fn wrap_around_ranges_and_offsets_from_the_last_day_fire_as_in_quartz() {
    let utc = JobTimeZone::utc();
    // 22-6 in hours is 22, 23, 0 .. 6.
    assert_eq!(
        fires("0 0 22-6/4 * * ?", "2026-03-01T00:00:00Z", &utc, 3),
        vec![
            at("2026-03-01T02:00:00Z"),
            at("2026-03-01T06:00:00Z"),
            at("2026-03-01T22:00:00Z"),
        ]
    );
    // FRI-MON: Friday, Saturday, Sunday, Monday. 2026-03-03 is a Tuesday.
    assert_eq!(
        fires("0 0 14 ? * FRI-MON", "2026-03-03T00:00:00Z", &utc, 4),
        vec![
            at("2026-03-06T14:00:00Z"),
            at("2026-03-07T14:00:00Z"),
            at("2026-03-08T14:00:00Z"),
            at("2026-03-09T14:00:00Z"),
        ]
    );
    // NOV-FEB.
    assert_eq!(
        next("0 0 0 1 NOV-FEB ?", "2026-03-01T00:00:00Z", &utc),
        Some(at("2026-11-01T00:00:00Z"))
    );
    // L-3: three days before the last; L-2W: the weekday nearest it (2026-05-29 is a Friday).
    assert_eq!(
        next("0 0 15 L-3 * ?", "2026-02-01T00:00:00Z", &utc),
        Some(at("2026-02-25T15:00:00Z"))
    );
    assert_eq!(
        next("0 0 15 L-2W * ?", "2026-05-01T00:00:00Z", &utc),
        Some(at("2026-05-29T15:00:00Z"))
    );
}

#[test]
fn schedules_written_the_same_way_share_one_parsed_pattern() {
    let a = CronSchedule::parse("0/7 * * * * ?").expect("valid");
    let b = CronSchedule::parse("0/7 * * * * ?").expect("valid");
    let other = CronSchedule::parse("0/8 * * * * ?").expect("valid");
    assert!(
        std::sync::Arc::ptr_eq(&a.cron, &b.cron),
        "one pattern for both"
    );
    assert!(!std::sync::Arc::ptr_eq(&a.cron, &other.cron));
    drop((a, b));
    let again = CronSchedule::parse("0/7 * * * * ?").expect("a dropped pattern is parsed again");
    assert_eq!(
        again.next_fire_after(at("2025-01-01T00:00:00Z"), &JobTimeZone::utc()),
        Some(at("2025-01-01T00:00:07Z"))
    );
}

#[test]
fn a_memo_answers_exactly_what_the_search_answers_whatever_was_asked_before() {
    let every_10s = CronSchedule::parse("0/10 * * * * ?").unwrap();
    let hourly = CronSchedule::parse("0 0 * * * ?").unwrap();
    let (utc, tokyo) = (JobTimeZone::utc(), zone("Asia/Tokyo"));
    let mut memo = NextFireMemo::default();
    // (schedule, zone, instant): repeats, and each part changed alone.
    let questions = [
        (&every_10s, &utc, "2025-01-01T00:00:03Z"),
        (&every_10s, &utc, "2025-01-01T00:00:03Z"),
        (&every_10s, &utc, "2025-01-01T00:00:13Z"),
        (&hourly, &utc, "2025-01-01T00:00:13Z"),
        (&hourly, &tokyo, "2025-01-01T00:00:13Z"),
        (&every_10s, &tokyo, "2025-01-01T00:00:13Z"),
        (&every_10s, &tokyo, "2025-01-01T00:00:13Z"),
    ];
    for (schedule, tz, now) in questions {
        assert_eq!(
            schedule.next_fire_after_memo(at(now), tz, &mut memo),
            schedule.next_fire_after(at(now), tz),
            "{schedule} in {tz:?} after {now}"
        );
    }
}
