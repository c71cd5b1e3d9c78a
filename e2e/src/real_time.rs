//! A scenario replayed on real time, for controllers without a test clock: its schedules are
//! moved by whole minutes, so the hour it is written for falls at a real minute soon.
//!
//! The simulator's arms move the server's clock to just before an hour instead. A controller
//! that reads the machine's clock (kube-controller-manager) cannot follow that, and waiting up
//! to an hour for a real one wastes the machine; moving every schedule `m` minutes later, where
//! `m` is the real minute chosen, keeps every run's place relative to the window. In a time
//! zone the move is one of wall time, exact except across a daylight-saving change.

use cronshard_types::Timestamp;

use crate::scenario::{CronJobSeed, Scenario};

/// The CronJobs of `scenario` replayed on real time: the hour it is written for falls at
/// `herd_at` (a real minute boundary), so its window starts `lead_s` before that.
/// Returns the seeds, with their schedules moved, and the window's start.
pub fn seeds_at(scenario: &Scenario, herd_at: Timestamp) -> Result<(Vec<CronJobSeed>, Timestamp), String> {
    if herd_at.as_second().rem_euclid(60) != 0 || herd_at.subsec_nanosecond() != 0 {
        return Err(format!("{herd_at}: a scenario replays on real time from a minute boundary"));
    }
    let minutes = u32::try_from(herd_at.as_second().rem_euclid(3600) / 60).map_err(|e| e.to_string())?;
    let start = herd_at
        .checked_sub(jiff::SignedDuration::from_secs_f64(scenario.lead_s))
        .map_err(|e| format!("scenario {}: lead {} s: {e}", scenario.name, scenario.lead_s))?;
    let seeds = scenario
        .cronjobs(start)
        .into_iter()
        .map(|s| {
            let schedule = later_by(&s.schedule, minutes)
                .map_err(|e| format!("scenario {}, CronJob {}: {e}", scenario.name, s.name))?;
            Ok(CronJobSeed { schedule, ..s })
        })
        .collect::<Result<_, String>>()?;
    Ok((seeds, start))
}

/// The first minute boundary at least `ahead_s` after `now`.
pub fn next_minute_after(now: Timestamp, ahead_s: f64) -> Timestamp {
    let earliest = now.as_second() + ahead_s.max(0.0).ceil() as i64;
    let minute = earliest.div_euclid(60) * 60 + if earliest.rem_euclid(60) == 0 { 0 } else { 60 };
    Timestamp::from_second(minute).unwrap_or(now)
}

/// `schedule` (five fields) fired `minutes` (0 to 59) later. The forms the scenarios use
/// are moved: a minute field `*`, `*/n` (n dividing 60) or a number; an hour field `*` or a
/// number; the rest as they are. Anything else is refused rather than guessed.
pub fn later_by(schedule: &str, minutes: u32) -> Result<String, String> {
    if minutes == 0 {
        return Ok(schedule.to_owned());
    }
    if minutes >= 60 {
        return Err(format!("a move of {minutes} minutes: at most 59"));
    }
    let fields: Vec<&str> = schedule.split_whitespace().collect();
    let &[minute, hour, day, month, weekday] = fields.as_slice() else {
        return Err(format!("schedule {schedule:?}: only five-field schedules can be moved"));
    };
    let refuse = || format!("schedule {schedule:?} cannot be moved {minutes} minutes later");
    let every_hour = hour == "*";
    let (minute, hour) = if minute == "*" && every_hour {
        ("*".to_owned(), hour.to_owned())
    } else if let Some(step) = minute.strip_prefix("*/") {
        let step: u32 = step.parse().map_err(|_| refuse())?;
        if step == 0 || 60 % step != 0 || !every_hour {
            return Err(refuse());
        }
        let first = minutes % step;
        let minute = if first == 0 { format!("*/{step}") } else { format!("{first}-59/{step}") };
        (minute, hour.to_owned())
    } else {
        let at: u32 = minute.parse().map_err(|_| refuse())?;
        if at >= 60 {
            return Err(refuse());
        }
        let moved = at + minutes;
        if moved < 60 || every_hour {
            (format!("{}", moved % 60), hour.to_owned())
        } else {
            let h: u32 = hour.parse().map_err(|_| refuse())?;
            // Past 23:59 the day moves too: only a schedule for every day can follow it.
            if h >= 24 || (h == 23 && [day, month, weekday] != ["*", "*", "*"]) {
                return Err(refuse());
            }
            (format!("{}", moved - 60), format!("{}", (h + 1) % 24))
        }
    };
    Ok(format!("{minute} {hour} {day} {month} {weekday}"))
}

#[cfg(test)]
mod tests {
    use cronshard_types::{CronJobSchedule, Timestamp};

    use super::*;

    fn at(s: &str) -> Timestamp {
        s.parse().expect("timestamp")
    }

    /// The moved schedule fires exactly at the original's times plus the move, over a day.
    fn fires_later(schedule: &str, zone: Option<&str>, minutes: u32) {
        let moved = later_by(schedule, minutes).expect("movable");
        let original = CronJobSchedule::new(schedule, zone).expect("valid");
        let shifted = CronJobSchedule::new(&moved, zone).expect("moved is valid");
        let from = at("2026-12-03T00:00:00Z");
        let to = at("2026-12-05T00:00:00Z");
        let delta = jiff::SignedDuration::from_mins(i64::from(minutes));
        let expected: Vec<Timestamp> = original
            .schedule()
            .iter_after(from)
            .take_while(|t| *t <= to)
            .map(|t| t.checked_add(delta).expect("in range"))
            .collect();
        let lo = from.checked_add(delta).expect("in range");
        let hi = to.checked_add(delta).expect("in range");
        let got: Vec<Timestamp> = shifted.schedule().iter_after(lo).take_while(|t| *t <= hi).collect();
        assert_eq!(got, expected, "{schedule:?} moved {minutes} min is {moved:?}");
    }

    #[test]
    fn the_scenarios_schedules_fire_later_by_the_move() {
        for minutes in [0, 1, 3, 5, 17, 30, 59] {
            for schedule in ["* * * * *", "*/1 * * * *", "*/5 * * * *", "*/15 * * * *", "0 * * * *", "45 * * * *"] {
                fires_later(schedule, None, minutes);
            }
            for zone in ["Etc/UTC", "America/New_York", "Europe/Berlin", "Asia/Kolkata"] {
                fires_later("0 0 * * *", Some(zone), minutes);
                fires_later("50 23 * * *", Some(zone), minutes);
            }
        }
    }

    #[test]
    fn forms_it_cannot_move_are_refused() {
        for schedule in
            ["@hourly", "*/7 * * * *", "0-30 * * * *", "*/5 3 * * *", "50 23 * * 1", "50 1-2 * * *", "0 0 *"]
        {
            assert!(later_by(schedule, 20).is_err(), "{schedule:?} should be refused");
        }
        assert_eq!(later_by("@hourly", 0).as_deref(), Ok("@hourly"), "no move, nothing to refuse");
        assert!(later_by("0 * * * *", 60).is_err());
    }

    #[test]
    fn the_window_starts_lead_before_the_chosen_minute() {
        let scenario =
            Scenario::load(&crate::scenario::builtin_path("incident")).expect("incident").scaled(Some(200), None);
        let herd_at = at("2026-12-03T07:42:00Z");
        let (seeds, start) = seeds_at(&scenario, herd_at).expect("movable");
        assert_eq!(start, at("2026-12-03T07:41:40Z"));
        assert!(seeds.iter().any(|s| s.schedule == "42 * * * *"), "hourly runs at the chosen minute");
        assert!(seeds.iter().any(|s| s.schedule == "2-59/5 * * * *"));
        assert!(seeds_at(&scenario, at("2026-12-03T07:42:30Z")).is_err(), "not a minute boundary");
        assert_eq!(next_minute_after(at("2026-12-03T07:41:00Z"), 0.0), at("2026-12-03T07:41:00Z"));
        assert_eq!(next_minute_after(at("2026-12-03T07:41:00Z"), 25.5), at("2026-12-03T07:42:00Z"));
        assert_eq!(next_minute_after(at("2026-12-03T07:41:50Z"), 25.0), at("2026-12-03T07:43:00Z"));
    }
}
