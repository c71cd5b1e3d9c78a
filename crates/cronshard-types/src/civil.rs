//! Proleptic Gregorian calendar arithmetic on plain integers, normalising like Go's `time.Date`.

/// Days since 1970-01-01 of a civil date; `month` is 1..=12, `day` may overflow the month.
pub(crate) fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    // Howard Hinnant's algorithm, counting from March so the leap day ends the year.
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468 + (day - 1)
}

/// The civil date (year, month 1..=12, day 1..=31) of a day count since 1970-01-01.
pub(crate) fn civil_from_days(days: i64) -> (i64, u8, u8) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    // Both are bounded by the arithmetic above: day in 1..=31, month in 1..=12.
    (year, month as u8, day as u8)
}

/// Wall-clock fields of a local time expressed as seconds since 1970-01-01T00:00:00 local.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Wall {
    pub(crate) year: i64,
    pub(crate) month: u8,
    pub(crate) day: u8,
    pub(crate) hour: u8,
    pub(crate) minute: u8,
    pub(crate) second: u8,
    /// 0 = Sunday, like Go's `time.Weekday` and cron's day-of-week field.
    pub(crate) weekday: u8,
}

impl Wall {
    pub(crate) fn from_local_seconds(local: i64) -> Self {
        let days = local.div_euclid(86_400);
        let secs = local.rem_euclid(86_400);
        let (year, month, day) = civil_from_days(days);
        Wall {
            year,
            month,
            day,
            hour: (secs / 3600) as u8,
            minute: (secs / 60 % 60) as u8,
            second: (secs % 60) as u8,
            // 1970-01-01 was a Thursday.
            weekday: (days + 4).rem_euclid(7) as u8,
        }
    }
}

/// Local seconds of a wall-clock time, normalising out-of-range months and days like Go's
/// `time.Date` (month 13 is January of the next year, day 32 spills into the next month).
pub(crate) fn local_seconds(year: i64, month: i64, day: i64, hour: i64, minute: i64, second: i64) -> i64 {
    let m0 = month - 1;
    let year = year + m0.div_euclid(12);
    let month = m0.rem_euclid(12) + 1;
    days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_agrees_with_jiff() {
        let epoch = jiff::civil::date(1970, 1, 1);
        for days in (-800_000..800_000).step_by(97) {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, i64::from(m), i64::from(d)), days);
            let expected = epoch.checked_add(jiff::Span::new().days(days)).expect("in range");
            assert_eq!((y, m, d), (i64::from(expected.year()), expected.month() as u8, expected.day() as u8));
        }
    }

    #[test]
    fn normalises_like_go() {
        // time.Date(2023, 13, 1, ...) is 2024-01-01; time.Date(2023, 2, 29, ...) is 2023-03-01.
        assert_eq!(local_seconds(2023, 13, 1, 0, 0, 0), local_seconds(2024, 1, 1, 0, 0, 0));
        assert_eq!(local_seconds(2023, 2, 29, 0, 0, 0), local_seconds(2023, 3, 1, 0, 0, 0));
        assert_eq!(local_seconds(2024, 0, 1, 0, 0, 0), local_seconds(2023, 12, 1, 0, 0, 0));
        let w = Wall::from_local_seconds(local_seconds(2012, 7, 9, 14, 45, 30));
        assert_eq!((w.year, w.month, w.day, w.hour, w.minute, w.second, w.weekday), (2012, 7, 9, 14, 45, 30, 1));
    }
}
