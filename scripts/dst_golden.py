#!/usr/bin/env python3
"""An independent implementation of cronshard's default daylight-saving policy (cron's), for
golden vectors: crates/cronshard-types/tests/golden/dst.json.

It shares no code or method with the Rust engine: it walks every minute of UTC from the
question's time, reads each minute's wall clock with Python's zoneinfo (the host's tz
database), and applies cron's rule to what it sees:

- a schedule whose hour field is not `*` fires at a minute whose wall clock matches, unless
  that wall clock already came once (the second pass of a repeated interval), and once at the
  first minute after a skipped interval in which it has a matching wall clock;
- a schedule whose hour field is `*` fires at every minute whose wall clock matches;
- transitions of more than three hours are not special: only matching wall clocks fire.

Usage: scripts/dst_golden.py            prints the JSON
       scripts/dst_golden.py --check F  exits 1 unless F holds exactly what it would print
"""

import json
import sys
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

SPECIAL_UP_TO = timedelta(hours=3)
DESCRIPTORS = {
    "@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
}
BOUNDS = [(0, 59), (0, 23), (1, 31), (1, 12), (0, 6)]

# (schedule, spec.timeZone or None, after (UTC), how many fire times, what it shows)
CASES = [
    ("30 1 * * *", "America/New_York", "2026-10-31T12:00:00Z", 3, "fixed hour in the repeated hour: once"),
    ("30 2 * * *", "America/New_York", "2026-03-07T12:00:00Z", 2, "fixed hour in the skipped hour: right after it"),
    ("0,30 2 * * *", "America/New_York", "2026-03-07T12:00:00Z", 3, "two fire times in one gap: one run"),
    ("0 2,3 * * *", "America/New_York", "2026-03-08T00:00:00Z", 2, "the gap's run and 03:00's are one"),
    ("15 0-3 * * *", "America/New_York", "2026-11-01T03:00:00Z", 4, "ranged hours across the repeated hour"),
    ("15 1-3 * * *", "America/New_York", "2026-03-08T05:00:00Z", 3, "ranged hours across the gap"),
    ("0 */2 * * *", "America/New_York", "2026-03-08T04:30:00Z", 3, "stepped hours across the gap"),
    ("*/30 * * * *", "America/New_York", "2026-11-01T05:00:00Z", 4, "wildcard hour: both passes"),
    ("*/30 * * * *", "America/New_York", "2026-03-08T06:30:00Z", 2, "wildcard hour: not in the gap"),
    ("5 * * * *", "America/New_York", "2026-11-01T05:00:00Z", 3, "hourly at :05, both passes"),
    ("@hourly", "America/New_York", "2026-11-01T05:30:00Z", 3, "@hourly, both passes"),
    ("@daily", "America/Santiago", "2026-09-05T12:00:00Z", 2, "@daily where midnight is skipped"),
    ("@daily", "America/Santiago", "2026-04-04T12:00:00Z", 2, "@daily where midnight repeats"),
    ("30 2 * * *", "Australia/Sydney", "2026-10-03T12:00:00Z", 2, "southern hemisphere, skipped hour"),
    ("30 2 * * *", "Australia/Sydney", "2026-04-04T12:00:00Z", 2, "southern hemisphere, repeated hour"),
    ("15 2 * * *", "Australia/Lord_Howe", "2026-10-03T12:00:00Z", 2, "a 30-minute gap"),
    ("45 1 * * *", "Australia/Lord_Howe", "2026-04-04T12:00:00Z", 2, "a 30-minute repeat"),
    ("30 1 * * *", "Europe/London", "2026-03-28T12:00:00Z", 2, "London's skipped 01:00"),
    ("30 1 * * *", "Europe/London", "2026-10-24T12:00:00Z", 2, "London's repeated 01:00"),
    ("CRON_TZ=America/New_York 30 2 * * *", None, "2026-03-07T12:00:00Z", 2, "CRON_TZ= in the schedule"),
    ("30 2 8 3 *", "America/New_York", "2026-03-01T00:00:00Z", 2, "a yearly run in the gap runs that year"),
    ("0 0 * * *", "Pacific/Apia", "2011-12-28T12:00:00Z", 3, "a skipped day (24 h): not special"),
    ("30 2 * * *", "UTC", "2026-03-07T12:00:00Z", 2, "no transitions"),
]


def parse_field(text, bounds):
    """The values of one field and whether it is `*` (robfig: `*` or `?`, or `*/1`)."""
    lo, hi = bounds
    values, star = set(), False
    for part in text.split(","):
        rng, _, step = part.partition("/")
        step = int(step) if step else 1
        if rng in ("*", "?"):
            start, end = lo, hi
            star = star or step == 1
        elif "-" in rng:
            start, end = (int(x) for x in rng.split("-"))
        else:
            start = int(rng)
            end = hi if step > 1 else start
        values.update(range(start, end + 1, step))
    return values, star


def parse(schedule, zone_name):
    zone = ZoneInfo(zone_name or "UTC")
    if schedule.startswith("CRON_TZ=") or schedule.startswith("TZ="):
        prefix, schedule = schedule.split(" ", 1)
        zone = ZoneInfo(prefix.split("=", 1)[1])
    schedule = DESCRIPTORS.get(schedule.strip(), schedule)
    fields = [parse_field(f, b) for f, b in zip(schedule.split(), BOUNDS)]
    return zone, fields


def matches(fields, wall):
    (minutes, _), (hours, _), (doms, dom_star), (months, _), (dows, dow_star) = fields
    weekday = (wall.weekday() + 1) % 7  # Sunday is 0
    dom, dow = wall.day in doms, weekday in dows
    day = (dom and dow) if (dom_star or dow_star) else (dom or dow)
    return wall.minute in minutes and wall.hour in hours and wall.month in months and day


def fires(schedule, zone_name, after, count):
    zone, fields = parse(schedule, zone_name)
    hour_star = fields[1][1]
    t = datetime.fromisoformat(after.replace("Z", "+00:00"))
    t = t.replace(second=0, microsecond=0) + timedelta(minutes=1)
    wall_at = lambda u: u.astimezone(zone).replace(tzinfo=None)
    # Each wall clock of the last day, with the first instant it was seen at.
    first_seen = {}
    for back in range(24 * 60, 0, -1):
        first_seen.setdefault(wall_at(t - timedelta(minutes=back)), t - timedelta(minutes=back))
    prev_offset = (t - timedelta(minutes=1)).astimezone(zone).utcoffset()
    out, limit = [], t + timedelta(days=800)
    while len(out) < count and t < limit:
        local = t.astimezone(zone)
        wall, offset = local.replace(tzinfo=None), local.utcoffset()
        change = offset - prev_offset
        fire = False
        if not hour_star and timedelta(0) < change <= SPECIAL_UP_TO:
            # The wall clocks the jump skipped: from the old offset's view of now, up to now.
            skipped = wall - change
            while skipped < wall and not fire:
                fire = matches(fields, skipped)
                skipped += timedelta(minutes=1)
        if matches(fields, wall):
            came = first_seen.get(wall)
            repeat = came is not None and t - came <= SPECIAL_UP_TO
            fire = fire or hour_star or not repeat
        if fire:
            out.append(local.isoformat())
        first_seen.setdefault(wall, t)
        if t.minute == 0 and t.hour == 0:
            first_seen = {w: u for w, u in first_seen.items() if t - u <= timedelta(days=1)}
        prev_offset = offset
        t += timedelta(minutes=1)
    return out


def golden():
    cases = []
    for schedule, zone, after, count, why in CASES:
        cases.append({"why": why, "schedule": schedule, "time_zone": zone, "after": after,
                      "expected": fires(schedule, zone, after, count)})
    return {"policy": "cron", "cases": cases}


def main():
    text = json.dumps(golden(), indent=2) + "\n"
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        with open(sys.argv[2], encoding="utf-8") as f:
            if f.read() != text:
                print(f"{sys.argv[2]} differs from scripts/dst_golden.py's answers", file=sys.stderr)
                return 1
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
