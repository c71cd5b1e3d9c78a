//! The robfig/cron v3 `ParseStandard` grammar: five fields, names, steps, `?`, descriptors.

use super::field::Field;
use super::go_duration;
use crate::error::{Error, FieldError, Result};
use crate::zone::Zone;

/// robfig marks a field written as `*` or `?` with this bit; only day-of-month and
/// day-of-week look at it (the OR rule).
const STAR: u64 = 1 << 63;

const MONTH_NAMES: [&str; 12] = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
const WEEKDAY_NAMES: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

/// The five fields of a schedule as bit sets (bit n set = value n matches).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpecFields {
    pub(super) minute: u64,
    pub(super) hour: u64,
    pub(super) dom: u64,
    pub(super) month: u64,
    pub(super) dow: u64,
}

impl SpecFields {
    fn bits(&self, field: Field) -> u64 {
        match field {
            Field::Minute => self.minute,
            Field::Hour => self.hour,
            Field::DayOfMonth => self.dom,
            Field::Month => self.month,
            Field::DayOfWeek => self.dow,
        }
    }

    /// The values a field matches, ascending.
    pub fn values(&self, field: Field) -> Vec<u8> {
        let bits = self.bits(field) & !STAR;
        (0..63).filter(|v| bits & (1 << v) != 0).collect()
    }

    /// Whether the field was written unrestricted (`*`, `?`, `*/1`): decides whether
    /// day-of-month and day-of-week are ANDed (either unrestricted) or ORed (both restricted).
    pub fn is_star(&self, field: Field) -> bool {
        self.bits(field) & STAR != 0
    }

    /// Whether a field matches a value.
    pub(super) fn has(bits: u64, value: u8) -> bool {
        bits & (1 << value) != 0
    }

    pub(super) fn day_matches(&self, day: u8, weekday: u8) -> bool {
        let dom = Self::has(self.dom, day);
        let dow = Self::has(self.dow, weekday);
        if (self.dom | self.dow) & STAR != 0 { dom && dow } else { dom || dow }
    }
}

/// What a parsed schedule fires on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Five fields, or a descriptor such as `@daily` that stands for five fields.
    Spec(SpecFields),
    /// `@every <duration>`: a fixed interval in whole seconds (at least one), counted from
    /// the time asked about, not aligned to the clock.
    Every { seconds: i64 },
}

/// The schedule `expr` stands for, and the zone it is read in.
pub(super) fn parse(expr: &str, default_zone: &Zone) -> Result<(Kind, Zone)> {
    if expr.is_empty() {
        return Err(Error::EmptySchedule);
    }
    let mut zone = default_zone.clone();
    let mut spec = expr;
    let prefix = ["TZ=", "CRON_TZ="].into_iter().find(|p| expr.starts_with(p));
    if let Some(prefix) = prefix {
        // robfig takes the zone up to the first space; without a space Go panics on the
        // slice, so this says what is missing instead.
        let Some(space) = expr.find(' ') else {
            return Err(Error::MissingFieldsAfterZone { schedule: expr.to_owned(), prefix });
        };
        let name = &expr[prefix.len()..space];
        zone = Zone::load(name).map_err(|e| Error::BadScheduleLocation {
            name: name.to_owned(),
            reason: match e {
                Error::UnknownTimeZone { reason, .. } => reason,
                other => other.to_string(),
            },
        })?;
        spec = expr[space..].trim_matches(char::is_whitespace);
    }
    if spec.starts_with('@') {
        return parse_descriptor(spec, zone);
    }
    let fields: Vec<&str> = spec.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(Error::FieldCount { found: fields.len(), schedule: expr.to_owned() });
    }
    let parse = |i: usize| parse_field(fields[i], Field::ALL[i]);
    let spec = SpecFields { minute: parse(0)?, hour: parse(1)?, dom: parse(2)?, month: parse(3)?, dow: parse(4)? };
    Ok((Kind::Spec(spec), zone))
}

fn parse_descriptor(spec: &str, zone: Zone) -> Result<(Kind, Zone)> {
    let all = |f: Field| {
        let (min, max) = f.bounds();
        bits(min, max, 1) | STAR
    };
    let fields = |minute, hour, dom, month, dow| SpecFields { minute, hour, dom, month, dow };
    let spec_fields = match spec {
        "@yearly" | "@annually" => fields(1, 1, 1 << 1, 1 << 1, all(Field::DayOfWeek)),
        "@monthly" => fields(1, 1, 1 << 1, all(Field::Month), all(Field::DayOfWeek)),
        "@weekly" => fields(1, 1, all(Field::DayOfMonth), all(Field::Month), 1),
        "@daily" | "@midnight" => fields(1, 1, all(Field::DayOfMonth), all(Field::Month), all(Field::DayOfWeek)),
        "@hourly" => fields(1, all(Field::Hour), all(Field::DayOfMonth), all(Field::Month), all(Field::DayOfWeek)),
        _ => {
            let Some(text) = spec.strip_prefix("@every ") else {
                return Err(Error::UnknownDescriptor(spec.to_owned()));
            };
            let nanos =
                go_duration::parse(text).map_err(|reason| Error::EveryDuration { text: text.to_owned(), reason })?;
            // robfig's Every: below one second becomes one second (negative ones too), and
            // the rest is truncated to whole seconds.
            let seconds = if nanos < 1_000_000_000 { 1 } else { nanos / 1_000_000_000 };
            return Ok((Kind::Every { seconds }, zone));
        }
    };
    Ok((Kind::Spec(spec_fields), zone))
}

/// A comma-separated list of ranges. Empty list items are skipped, as Go's
/// `strings.FieldsFunc` does (so `,` alone is a valid field that never matches).
pub(crate) fn parse_field(text: &str, field: Field) -> Result<u64> {
    let (min, max) = field.bounds();
    let names: &[&str] = match field {
        Field::Month => &MONTH_NAMES,
        Field::DayOfWeek => &WEEKDAY_NAMES,
        _ => &[],
    };
    let name_base = if field == Field::Month { 1 } else { 0 };
    text.split(',')
        .filter(|item| !item.is_empty())
        .try_fold(0, |acc, item| Ok(acc | parse_range(item, min, max, names, name_base)?))
        .map_err(|reason| Error::Field { field, text: text.to_owned(), reason })
}

/// One `a`, `a-b`, `*`, `?`, with an optional `/step`, within `[min, max]`.
pub(crate) fn parse_range(expr: &str, min: u8, max: u8, names: &[&str], name_base: u8) -> Result<u64, FieldError> {
    let range_and_step: Vec<&str> = expr.split('/').collect();
    let low_and_high: Vec<&str> = range_and_step[0].split('-').collect();
    let (start, mut end, mut extra) = if low_and_high[0] == "*" || low_and_high[0] == "?" {
        // robfig ignores anything after a hyphen here: `*-5` is `*`.
        (u64::from(min), u64::from(max), STAR)
    } else {
        let start = parse_int_or_name(low_and_high[0], names, name_base)?;
        let end = match low_and_high.len() {
            1 => start,
            2 => parse_int_or_name(low_and_high[1], names, name_base)?,
            _ => return Err(FieldError::TooManyHyphens),
        };
        (start, end, 0)
    };
    let step = match range_and_step.len() {
        1 => 1,
        2 => {
            let step = parse_uint(range_and_step[1])?;
            // `a/n` means `a-max/n`.
            if low_and_high.len() == 1 {
                end = u64::from(max);
            }
            if step > 1 {
                extra = 0;
            }
            step
        }
        _ => return Err(FieldError::TooManySlashes),
    };
    if start < u64::from(min) {
        return Err(FieldError::BelowMinimum { start, min });
    }
    if end > u64::from(max) {
        return Err(FieldError::AboveMaximum { end, max });
    }
    if start > end {
        return Err(FieldError::StartAfterEnd { start, end });
    }
    if step == 0 {
        return Err(FieldError::ZeroStep);
    }
    // start and end are now within 0..=max < 64.
    Ok(bits(start as u8, end as u8, step) | extra)
}

fn bits(start: u8, end: u8, step: u64) -> u64 {
    (u64::from(start)..=u64::from(end)).step_by(step.min(64) as usize).fold(0, |acc, v| acc | (1 << v))
}

fn parse_int_or_name(text: &str, names: &[&str], name_base: u8) -> Result<u64, FieldError> {
    let lower = text.to_lowercase();
    if let Some(i) = names.iter().position(|n| *n == lower) {
        return Ok(u64::from(name_base) + i as u64);
    }
    parse_uint(text)
}

/// Go's `strconv.Atoi` followed by robfig's check for negative numbers.
fn parse_uint(text: &str) -> Result<u64, FieldError> {
    let not_a_number = |reason| FieldError::NotANumber { text: text.to_owned(), reason };
    let (negative, digits) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(not_a_number("invalid syntax"));
    }
    let magnitude: u64 = digits.parse().map_err(|_| not_a_number("value out of range"))?;
    if negative {
        return match magnitude {
            0 => Ok(0),
            m if m <= 1 << 63 => Err(FieldError::Negative((m as i128).wrapping_neg() as i64)),
            _ => Err(not_a_number("value out of range")),
        };
    }
    if magnitude > i64::MAX as u64 {
        return Err(not_a_number("value out of range"));
    }
    Ok(magnitude)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::Schedule;

    fn spec(expr: &str) -> SpecFields {
        match Schedule::parse(expr, &Zone::utc()).expect("parses").kind {
            Kind::Spec(s) => s,
            Kind::Every { .. } => panic!("not a spec"),
        }
    }

    #[test]
    fn names_steps_and_question_mark() {
        let s = spec("*/15 9-17 ? JAN,jul-Sep mon-FRI");
        assert_eq!(s.values(Field::Minute), vec![0, 15, 30, 45]);
        assert_eq!(s.values(Field::Hour), (9..=17).collect::<Vec<_>>());
        assert!(s.is_star(Field::DayOfMonth));
        assert_eq!(s.values(Field::Month), vec![1, 7, 8, 9]);
        assert_eq!(s.values(Field::DayOfWeek), vec![1, 2, 3, 4, 5]);
        assert_eq!(spec("5/20 * * * *").values(Field::Minute), vec![5, 25, 45]);
        assert!(!spec("* * */2 * *").is_star(Field::DayOfMonth));
        assert!(spec("* * */1 * *").is_star(Field::DayOfMonth));
    }

    #[test]
    fn go_quirks_are_kept() {
        // Atoi accepts a plus sign; robfig never sees the `-` of `-0` inside a range.
        assert_eq!(spec("+5 * * * *").values(Field::Minute), vec![5]);
        // `*-5` is read as `*`.
        assert!(spec("*-5 * * * *").is_star(Field::Minute));
        // Empty list items vanish; a field of only commas matches nothing.
        assert_eq!(spec("1,,2 * * * *").values(Field::Minute), vec![1, 2]);
        assert!(spec(", * * * *").values(Field::Minute).is_empty());
    }

    #[test]
    fn errors_name_the_field_and_text() {
        let err = |expr: &str| Schedule::parse(expr, &Zone::utc()).expect_err(expr).to_string();
        assert_eq!(err("61 * * * *"), "invalid minute field \"61\": end of range (61) above maximum (59)");
        assert_eq!(err("* * * * 7"), "invalid day-of-week field \"7\": end of range (7) above maximum (6)");
        assert_eq!(err("* * 0 * *"), "invalid day-of-month field \"0\": beginning of range (0) below minimum (1)");
        assert_eq!(
            err("* * * JANUARY *"),
            "invalid month field \"JANUARY\": failed to parse int from JANUARY: invalid syntax"
        );
        assert_eq!(err("* * * * L"), "invalid day-of-week field \"L\": failed to parse int from L: invalid syntax");
        assert_eq!(err("*/0 * * * *"), "invalid minute field \"*/0\": step of range should be a positive number");
        assert_eq!(err("5-1 * * * *"), "invalid minute field \"5-1\": beginning of range (5) beyond end of range (1)");
        assert_eq!(err("0 0 * * * *"), "expected exactly 5 fields, found 6: \"0 0 * * * *\"");
        assert_eq!(err("@reboot"), "unrecognized descriptor: @reboot");
        assert_eq!(err("TZ=Mars/Base * * * * *"), "provided bad location Mars/Base: unknown time zone Mars/Base");
        assert!(err("@every 5x").contains("unknown unit"));
        assert!(err("TZ=UTC").contains("no fields"));
        assert_eq!(err(""), "empty spec string");
    }

    #[test]
    fn descriptors_and_every() {
        let every = |expr: &str| match Schedule::parse(expr, &Zone::utc()).expect(expr).kind {
            Kind::Every { seconds } => seconds,
            Kind::Spec(_) => panic!("not every"),
        };
        assert_eq!(every("@every 1h30m"), 5400);
        assert_eq!(every("@every 1500ms"), 1);
        assert_eq!(every("@every 90.9s"), 90);
        assert_eq!(every("@every -5m"), 1);
        let weekly = spec("@weekly");
        assert_eq!(weekly.values(Field::DayOfWeek), vec![0]);
        assert!(weekly.is_star(Field::DayOfMonth));
        assert_eq!(
            Schedule::parse("CRON_TZ=Asia/Tokyo  @daily", &Zone::utc()).expect("tz").zone().name(),
            "Asia/Tokyo"
        );
    }
}

#[cfg(test)]
mod golden {
    //! robfig/cron's TestRange and TestField, which exercise ranges with arbitrary bounds.
    use super::*;

    #[derive(serde::Deserialize)]
    struct RangeCase {
        source: String,
        expr: String,
        min: u8,
        max: u8,
        values: Vec<u8>,
        star: bool,
        error: Option<String>,
    }

    #[derive(serde::Deserialize)]
    struct File {
        range: Vec<RangeCase>,
        field: Vec<RangeCase>,
    }

    #[test]
    fn robfig_range_and_field() {
        let file: File = serde_json::from_str(include_str!("../../tests/golden/robfig.json")).expect("golden json");
        let mut checked = 0;
        for case in file.range.iter().chain(&file.field) {
            // robfig's getField splits on commas and ORs the ranges, as parse_field does.
            let result = case
                .expr
                .split(',')
                .filter(|item| !item.is_empty())
                .try_fold(0, |acc, item| Ok::<_, FieldError>(acc | parse_range(item, case.min, case.max, &[], 0)?));
            match (&case.error, result) {
                (None, Ok(bits)) => {
                    let values: Vec<u8> = (0..63).filter(|v| bits & (1 << v) != 0).collect();
                    assert_eq!(values, case.values, "{}: {}", case.source, case.expr);
                    assert_eq!(bits & STAR != 0, case.star, "{}: {}", case.source, case.expr);
                }
                (Some(expected), Err(err)) => {
                    assert!(err.to_string().contains(expected.as_str()), "{}: {err} lacks {expected}", case.source)
                }
                (expected, got) => panic!("{}: {:?} expected {expected:?}, got {got:?}", case.source, case.expr),
            }
            checked += 1;
        }
        assert_eq!(checked, 24);
    }
}
