//! Time zones by IANA name from the bundled tz database, and Go `time.Date` arithmetic on them.

use std::fmt;
use std::sync::OnceLock;

use jiff::Timestamp;
use jiff::tz::{TimeZone, TimeZoneDatabase};

use crate::civil::{Wall, local_seconds};
use crate::error::{Error, Result};

/// The tz database compiled into the binary. Always this one, never the host's
/// `/usr/share/zoneinfo`: every replica and every image (distroless included) must agree.
fn database() -> &'static TimeZoneDatabase {
    static DB: OnceLock<TimeZoneDatabase> = OnceLock::new();
    DB.get_or_init(TimeZoneDatabase::bundled)
}

/// A time zone a schedule is evaluated in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Zone {
    name: String,
    tz: TimeZone,
}

impl Zone {
    /// UTC: the zone of a CronJob without `spec.timeZone` (the controller runs in UTC).
    pub fn utc() -> Self {
        Zone { name: "UTC".to_owned(), tz: TimeZone::UTC }
    }

    /// Loads a zone the way Go's `time.LoadLocation` does, as the in-tree controller does:
    /// `""` and `"UTC"` are UTC; `"Local"` is the controller's own zone, which is UTC in its
    /// container; other names must match an IANA name exactly, case included.
    pub fn load(name: &str) -> Result<Self> {
        match name {
            "" | "UTC" | "Local" => return Ok(Zone { name: name.to_owned(), tz: TimeZone::UTC }),
            _ => {}
        }
        let unknown = |reason: &str| Error::UnknownTimeZone { name: name.to_owned(), reason: reason.to_owned() };
        if name.contains("..") || name.starts_with('/') || name.starts_with('\\') {
            return Err(unknown("time: invalid location name"));
        }
        let tz = database().get(name).map_err(|_| unknown(&format!("unknown time zone {name}")))?;
        // jiff matches case-insensitively; Go reads a file by name, so only the exact case exists.
        if tz.iana_name() != Some(name) {
            return Err(unknown(&format!("unknown time zone {name}")));
        }
        Ok(Zone { name: name.to_owned(), tz })
    }

    /// The name this zone was loaded by.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The jiff time zone, for callers that format or convert times.
    pub fn time_zone(&self) -> &TimeZone {
        &self.tz
    }

    /// UTC offset in seconds at a unix second.
    pub(crate) fn offset_at(&self, unix: i64) -> i64 {
        i64::from(self.tz.to_offset(timestamp(unix)).seconds())
    }

    /// Formats an instant as Go's `time.RFC3339` does in this zone: whole seconds, and `Z`
    /// for a zero offset. This is the format of the scheduled-timestamp annotation.
    pub fn format_rfc3339(&self, at: Timestamp) -> String {
        let unix = floor_second(at);
        let offset = self.offset_at(unix);
        let w = Wall::from_local_seconds(unix + offset);
        let mut out =
            format!("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}", w.year, w.month, w.day, w.hour, w.minute, w.second);
        if offset == 0 {
            out.push('Z');
        } else {
            // Go prints hours and minutes of the offset and drops its seconds.
            let sign = if offset < 0 { '-' } else { '+' };
            let abs = offset.abs();
            out.push_str(&format!("{sign}{:02}:{:02}", abs / 3600, abs / 60 % 60));
        }
        out
    }
}

impl fmt::Display for Zone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

/// Whole seconds of an instant, rounded towards the past (Go's `t.Unix()`).
pub(crate) fn floor_second(at: Timestamp) -> i64 {
    let s = at.as_second();
    if at.subsec_nanosecond() < 0 { s - 1 } else { s }
}

/// A unix second as a timestamp, clamped to the range jiff represents (years -9999..=9999).
pub(crate) fn timestamp(unix: i64) -> Timestamp {
    let clamped = unix.clamp(Timestamp::MIN.as_second() + 1, Timestamp::MAX.as_second() - 1);
    Timestamp::from_second(clamped).unwrap_or(Timestamp::UNIX_EPOCH)
}

/// Walks one zone's offsets, caching the period between two transitions so that a forward
/// search does one database lookup per transition crossed rather than one per step.
#[derive(Debug)]
pub(crate) struct Cursor<'z> {
    zone: &'z Zone,
    /// The cached period `[start, end)` in unix seconds, all at `offset`.
    start: i64,
    end: i64,
    offset: i64,
}

impl<'z> Cursor<'z> {
    pub(crate) fn new(zone: &'z Zone) -> Self {
        // An empty period forces a lookup on first use.
        Cursor { zone, start: 0, end: 0, offset: 0 }
    }

    pub(crate) fn offset(&mut self, unix: i64) -> i64 {
        if unix < self.start || unix >= self.end {
            let tz = &self.zone.tz;
            self.offset = self.zone.offset_at(unix);
            // Transitions fall on whole seconds, so "strictly before unix + 1" is "at or before unix".
            self.start =
                tz.preceding(timestamp(unix.saturating_add(1))).next().map_or(i64::MIN, |t| t.timestamp().as_second());
            self.end = tz.following(timestamp(unix)).next().map_or(i64::MAX, |t| t.timestamp().as_second());
        }
        self.offset
    }

    /// The first unix second after `unix` at which the offset may change.
    pub(crate) fn period_end(&mut self, unix: i64) -> i64 {
        self.offset(unix);
        self.end
    }

    pub(crate) fn wall(&mut self, unix: i64) -> Wall {
        Wall::from_local_seconds(unix + self.offset(unix))
    }

    /// Go's `time.Date(year, month, day, hour, minute, second, 0, loc)`: out-of-range fields
    /// normalise, and a wall time that does not exist or exists twice resolves exactly as Go
    /// resolves it (robfig's DST behaviour depends on this; it is not jiff's disambiguation).
    pub(crate) fn date(&mut self, year: i64, month: i64, day: i64, hour: i64, minute: i64, second: i64) -> i64 {
        let wall_as_utc = local_seconds(year, month, day, hour, minute, second);
        // Go guesses the offset at the wall time read as UTC, then re-reads it at the
        // corrected instant; the second reading is the one used.
        let guess = wall_as_utc - self.offset(wall_as_utc);
        wall_as_utc - self.offset(guess)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unix(s: &str) -> i64 {
        s.parse::<Timestamp>().expect("valid timestamp").as_second()
    }

    #[test]
    fn load_follows_go_load_location() {
        assert_eq!(Zone::load("").expect("utc").time_zone(), &TimeZone::UTC);
        assert_eq!(Zone::load("Europe/Berlin").expect("berlin").name(), "Europe/Berlin");
        for bad in ["europe/berlin", "Mars/Olympus", "../etc/passwd", "/etc/localtime", "Europe/../UTC"] {
            assert!(Zone::load(bad).is_err(), "{bad} should not load");
        }
        let err = Zone::load("America/Nowhere").expect_err("unknown").to_string();
        assert!(err.contains("America/Nowhere"), "{err}");
    }

    #[test]
    fn date_resolves_gaps_and_folds_like_go() {
        let ny = Zone::load("America/New_York").expect("ny");
        let mut c = Cursor::new(&ny);
        // Go: time.Date(2012, 3, 11, 2, 30, 0, 0, NY) is 01:30 EST (the gap maps backwards for
        // zones west of Greenwich) ...
        assert_eq!(c.date(2012, 3, 11, 2, 30, 0), unix("2012-03-11T01:30:00-05:00"));
        // ... and a repeated hour resolves to the first (daylight) occurrence.
        assert_eq!(c.date(2012, 11, 4, 1, 30, 0), unix("2012-11-04T01:30:00-04:00"));
        let berlin = Zone::load("Europe/Berlin").expect("berlin");
        let mut c = Cursor::new(&berlin);
        // East of Greenwich the gap maps forwards: 02:30 becomes 03:30 CEST.
        assert_eq!(c.date(2012, 3, 25, 2, 30, 0), unix("2012-03-25T03:30:00+02:00"));
        // A repeated hour east of Greenwich resolves to the second (standard) occurrence.
        assert_eq!(c.date(2012, 10, 28, 2, 30, 0), unix("2012-10-28T02:30:00+01:00"));
    }

    #[test]
    fn formats_like_go_rfc3339() {
        let at: Timestamp = "2016-05-19T10:00:00Z".parse().expect("ts");
        assert_eq!(Zone::utc().format_rfc3339(at), "2016-05-19T10:00:00Z");
        assert_eq!(Zone::load("Europe/Rome").expect("rome").format_rfc3339(at), "2016-05-19T12:00:00+02:00");
        assert_eq!(Zone::load("America/St_Johns").expect("nf").format_rfc3339(at), "2016-05-19T07:30:00-02:30");
        let london_winter: Timestamp = "2016-01-19T10:00:00.7Z".parse().expect("ts");
        assert_eq!(Zone::load("Europe/London").expect("london").format_rfc3339(london_winter), "2016-01-19T10:00:00Z");
    }
}
