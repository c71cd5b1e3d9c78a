//! Property tests: the fast next-time search against a brute-force minute-by-minute search,
//! the bounded due-time search against a linear walk, and the parser against arbitrary input.

use cronshard_types::schedule::Kind;
use cronshard_types::{CronJobSchedule, DstPolicy, Field, Schedule, Timestamp, Zone};
use jiff::SignedDuration;
use proptest::prelude::*;

/// Zones with the awkward cases: DST at midnight (Sao Paulo, Santiago), 30-minute DST
/// (Lord Howe), 45-minute offsets (Chatham), a skipped day (Apia), 2-hour DST (Troll),
/// DST that pauses for Ramadan (Casablanca), and both hemispheres.
const ZONES: &[&str] = &[
    "UTC",
    "America/New_York",
    "Europe/Berlin",
    "Europe/London",
    "America/Sao_Paulo",
    "America/Santiago",
    "Australia/Lord_Howe",
    "Pacific/Chatham",
    "Pacific/Apia",
    "Antarctica/Troll",
    "Africa/Casablanca",
    "Asia/Kolkata",
    "America/St_Johns",
    "Asia/Tehran",
    "Etc/GMT+5",
];

const MONTHS: [&str; 12] = ["JAN", "feb", "Mar", "apr", "MAY", "jun", "jul", "aug", "SEP", "oct", "nov", "dec"];
const DAYS: [&str; 7] = ["sun", "MON", "tue", "Wed", "thu", "FRI", "sat"];

fn value(field: Field) -> BoxedStrategy<String> {
    let (min, max) = field.bounds();
    let number = (min..=max).prop_map(|v| v.to_string());
    match field {
        Field::Month => prop_oneof![3 => number, 1 => (0..12usize).prop_map(|i| MONTHS[i].to_owned())].boxed(),
        Field::DayOfWeek => prop_oneof![3 => number, 1 => (0..7usize).prop_map(|i| DAYS[i].to_owned())].boxed(),
        _ => number.boxed(),
    }
}

/// One field, from the whole grammar: `*`, `?`, values, names, ranges, steps and lists.
fn field(field: Field) -> BoxedStrategy<String> {
    let (min, max) = field.bounds();
    let range = (min..=max, min..=max).prop_map(|(a, b)| format!("{}-{}", a.min(b), a.max(b)));
    let item = prop_oneof![
        4 => value(field),
        2 => range.clone(),
        2 => (1..=max.max(2)).prop_map(|s| format!("*/{s}")),
        1 => (range, 1..=max.max(2)).prop_map(|(r, s)| format!("{r}/{s}")),
        1 => (min..=max, 1..=max.max(2)).prop_map(|(a, s)| format!("{a}/{s}")),
    ];
    prop_oneof![
        3 => Just("*".to_owned()),
        1 => Just("?".to_owned()),
        4 => prop::collection::vec(item, 1..=3).prop_map(|items| items.join(",")),
    ]
    .boxed()
}

fn five_fields() -> impl Strategy<Value = String> {
    let [a, b, c, d, e] = Field::ALL.map(field);
    (a, b, c, d, e).prop_map(|(a, b, c, d, e)| format!("{a} {b} {c} {d} {e}"))
}

fn zone() -> impl Strategy<Value = Zone> {
    (0..ZONES.len()).prop_map(|i| Zone::load(ZONES[i]).expect("zone in the bundled database"))
}

/// Instants from 1995 to 2040.
fn instant() -> impl Strategy<Value = Timestamp> {
    (788_918_400i64..2_208_988_800).prop_map(|s| Timestamp::from_second(s).expect("in range"))
}

/// The answer by definition: the first instant after `after`, stepping minute by minute in
/// absolute time, whose wall clock in the zone (computed by jiff, independently of the
/// crate's own calendar code) has second 0 and matches every field. `None` past `limit`.
fn brute_next(schedule: &Schedule, after: Timestamp, limit: Timestamp) -> Option<Timestamp> {
    let Kind::Spec(spec) = schedule.kind() else { unreachable!("only five-field schedules") };
    let sets = Field::ALL.map(|f| spec.values(f));
    let has = |f: Field, v: i8| sets[f as usize].contains(&(v as u8));
    let either = !spec.is_star(Field::DayOfMonth) && !spec.is_star(Field::DayOfWeek);
    let tz = schedule.zone().time_zone();
    let mut unix = after.as_second() + 1;
    while unix <= limit.as_second() {
        let wall = Timestamp::from_second(unix).expect("in range").to_zoned_datetime(tz.clone());
        if wall.second() != 0 {
            unix += 60 - i64::from(wall.second());
            continue;
        }
        let dom = has(Field::DayOfMonth, wall.day());
        let dow = has(Field::DayOfWeek, wall.weekday().to_sunday_zero_offset());
        let day = if either { dom || dow } else { dom && dow };
        if has(Field::Minute, wall.minute()) && has(Field::Hour, wall.hour()) && has(Field::Month, wall.month()) && day
        {
            return Some(wall.timestamp());
        }
        unix += 60;
    }
    None
}

/// Whether a zone changes its offset near or between two instants. robfig's search starts
/// from the beginning of the month (or day) it is in, so a transition up to a month before
/// `from` (a skipped midnight on June 1, say) already shapes the answer.
fn transition_between(zone: &Zone, from: Timestamp, to: Timestamp) -> bool {
    let look_back = from.checked_sub(SignedDuration::from_hours(24 * 32)).unwrap_or(from);
    zone.time_zone().following(look_back).next().is_some_and(|t| t.timestamp() <= to)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    /// Away from DST transitions, robfig's field-by-field search finds exactly the first
    /// matching minute.
    #[test]
    fn next_agrees_with_brute_force(expr in five_fields(), zone in zone(), after in instant()) {
        let schedule =
            Schedule::parse(&expr, &zone).expect("generated schedules are valid").with_dst_policy(DstPolicy::Upstream);
        let limit = after.checked_add(SignedDuration::from_hours(24 * 366)).expect("in range");
        let fast = schedule.next_after(after);
        let brute = brute_next(&schedule, after, limit);
        let horizon = fast.or(brute).unwrap_or(limit);
        if !transition_between(&zone, after, horizon) {
            match brute {
                Some(b) => prop_assert_eq!(fast, Some(b), "{} in {} after {}", expr, zone, after),
                None => prop_assert!(fast.is_none_or(|f| f > limit), "{} in {}: fast {:?}", expr, zone, fast),
            }
        }
    }

    /// Across DST transitions robfig keeps its own rules (see the golden tests), but every
    /// answer is a later instant, and one whose wall clock matches the schedule unless a clock
    /// change just before it skipped the matching minute: robfig adds a minute to 00:00 where
    /// 00:01 does not exist (America/St_Johns, 2001-04-01) and answers 01:01, as Go's
    /// `time.Add` lands there.
    #[test]
    fn next_always_matches_the_fields(expr in five_fields(), zone in zone(), after in instant()) {
        let schedule =
            Schedule::parse(&expr, &zone).expect("generated schedules are valid").with_dst_policy(DstPolicy::Upstream);
        if let Some(next) = schedule.next_after(after) {
            prop_assert!(next > after);
            let two_hours_before = next.checked_sub(SignedDuration::from_hours(2)).expect("in range");
            let just_after_a_change =
                zone.time_zone().following(two_hours_before).next().is_some_and(|t| t.timestamp() <= next);
            if !just_after_a_change {
                prop_assert_eq!(brute_next(&schedule, next.checked_sub(SignedDuration::from_secs(1)).expect("in range"), next), Some(next),
                    "{} in {} after {}: {} does not match", expr, zone, after, next);
            }
        }
    }

    /// The bounded due-time search (101 steps, then bisection) equals walking every fire time
    /// (away from DST transitions, where robfig's next() is not monotone and a walk can step
    /// over a time that the bisection's next() still returns).
    #[test]
    fn due_agrees_with_a_linear_walk(
        expr in prop_oneof![4 => five_fields(), 1 => (1u32..200).prop_map(|m| format!("@every {m}m"))],
        zone in (0..ZONES.len()).prop_map(|i| ZONES[i]),
        earliest in instant(),
        window_minutes in 0i64..(60 * 24 * 40),
        deadline in proptest::option::of(0i64..200_000),
    ) {
        let cronjob = CronJobSchedule::new(&expr, Some(zone)).expect("valid").with_dst_policy(DstPolicy::Upstream);
        let now = earliest.checked_add(SignedDuration::from_mins(window_minutes)).expect("in range")
            .checked_add(SignedDuration::from_millis(437)).expect("in range");
        let Ok(due) = cronjob.due(earliest, now, deadline) else { return Ok(()) };
        if transition_between(cronjob.schedule().zone(), earliest, now) {
            return Ok(());
        }
        let start = deadline.map(|d| now.checked_sub(SignedDuration::from_secs(d)).expect("in range"))
            .filter(|d| *d > earliest).unwrap_or(earliest);
        prop_assert_eq!(due.earliest, start);
        let fires: Vec<Timestamp> = cronjob.schedule().iter_after(start).take_while(|t| *t <= now).take(200_000).collect();
        prop_assert_eq!(due.due, fires.last().copied(), "{} in {}", expr, zone);
        prop_assert_eq!(due.too_many_missed, fires.len() > 100, "{} in {}: {} fires", expr, zone, fires.len());
    }

}

proptest! {
    #![proptest_config(ProptestConfig { cases: 5000, ..ProptestConfig::default() })]

    /// No input makes the parser panic, and whatever parses can be asked every question.
    #[test]
    fn parser_never_panics(input in prop_oneof![
        any::<String>(),
        "[ \t*?/,0-9a-zA-Z@=_+\\-.]{0,40}",
        "(TZ|CRON_TZ)=[A-Za-z_/]{0,20} [ *?/,0-9a-z\\-]{0,30}",
        "@every [0-9.]{0,5}(ns|us|µs|ms|s|m|h|d|){0,3}",
    ], at in instant()) {
        if let Ok(s) = CronJobSchedule::new(&input, None) {
            let next = s.schedule().next_after(at);
            let _ = s.due(at, at.checked_add(SignedDuration::from_hours(24 * 400)).expect("in range"), Some(30));
            let _ = s.requeue_at(at, at);
            if let Some(n) = next {
                prop_assert!(n > at);
            }
        }
    }
}
