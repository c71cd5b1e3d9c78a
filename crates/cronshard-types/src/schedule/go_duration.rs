//! Go's `time.ParseDuration`, which `@every` durations are written in.

/// A Go duration's range: its magnitude, before the sign, fits in 2^63.
const LIMIT: u64 = 1 << 63;

/// Nanoseconds of a Go duration string, or Go's error text. Follows Go's grammar exactly:
/// `[-+]?([0-9]*(\.[0-9]*)?[a-z]+)+`, plain `0`, units ns us µs μs ms s m h, and overflow
/// beyond an `i64` of nanoseconds.
pub(crate) fn parse(text: &str) -> Result<i64, String> {
    let invalid = || format!("time: invalid duration {text:?}");
    let (negative, mut s) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    if s == "0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(invalid());
    }
    let mut total: u64 = 0;
    while !s.is_empty() {
        let value = component(&mut s, text)?;
        // Go adds in uint64 and lets 2^63 + 2^63 wrap to 0 before its range check; so do we.
        total = total.wrapping_add(value);
        if total > LIMIT {
            return Err(invalid());
        }
    }
    if negative {
        // -(1<<63) is representable.
        return Ok((total as i128).wrapping_neg() as i64);
    }
    if total > LIMIT - 1 {
        return Err(invalid());
    }
    Ok(total as i64)
}

/// Consumes one `[0-9]*(\.[0-9]*)?unit` from the front of `s`; its value in nanoseconds.
fn component(s: &mut &str, text: &str) -> Result<u64, String> {
    let invalid = || format!("time: invalid duration {text:?}");
    if !s.starts_with(|c: char| c == '.' || c.is_ascii_digit()) {
        return Err(invalid());
    }
    let (mut value, int_len) = leading_int(s).ok_or_else(invalid)?;
    *s = &s[int_len..];
    let (fraction, scale, fraction_len) = match s.strip_prefix('.') {
        Some(rest) => {
            let (fraction, scale, len) = leading_fraction(rest);
            *s = &rest[len..];
            (fraction, scale, len)
        }
        None => (0, 1.0, 0),
    };
    if int_len == 0 && fraction_len == 0 {
        return Err(invalid());
    }
    let unit_len = s.find(|c: char| c == '.' || c.is_ascii_digit()).unwrap_or(s.len());
    if unit_len == 0 {
        return Err(format!("time: missing unit in duration {text:?}"));
    }
    let unit_text = &s[..unit_len];
    *s = &s[unit_len..];
    let unit = unit_nanos(unit_text).ok_or_else(|| format!("time: unknown unit {unit_text:?} in duration {text:?}"))?;
    if value > LIMIT / unit {
        return Err(invalid());
    }
    value *= unit;
    if fraction > 0 {
        // Go converts through float64 here; so do we, for identical rounding.
        value += (fraction as f64 * (unit as f64 / scale)) as u64;
        if value > LIMIT {
            return Err(invalid());
        }
    }
    Ok(value)
}

/// Go's `leadingInt`: the leading digits' value and length; `None` beyond 2^63.
fn leading_int(s: &str) -> Option<(u64, usize)> {
    let len = s.bytes().take_while(u8::is_ascii_digit).count();
    let mut value: u64 = 0;
    for digit in s[..len].bytes() {
        if value > LIMIT / 10 {
            return None;
        }
        value = value * 10 + u64::from(digit - b'0');
        if value > LIMIT {
            return None;
        }
    }
    Some((value, len))
}

/// Go's `leadingFraction`: the digits that fit, the power of ten they are scaled by, and
/// the length of all the digits (those that do not fit are ignored, as Go does).
fn leading_fraction(s: &str) -> (u64, f64, usize) {
    let len = s.bytes().take_while(u8::is_ascii_digit).count();
    let (mut fraction, mut scale, mut overflow) = (0u64, 1.0f64, false);
    for digit in s[..len].bytes() {
        if overflow || fraction > (LIMIT - 1) / 10 {
            overflow = true;
            continue;
        }
        let next = fraction * 10 + u64::from(digit - b'0');
        if next > LIMIT {
            overflow = true;
            continue;
        }
        fraction = next;
        scale *= 10.0;
    }
    (fraction, scale, len)
}

fn unit_nanos(unit: &str) -> Option<u64> {
    Some(match unit {
        "ns" => 1,
        "us" | "\u{b5}s" | "\u{3bc}s" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn accepts_what_go_accepts() {
        // Cases from Go's time package documentation and tests.
        let cases: &[(&str, i64)] = &[
            ("0", 0),
            ("5s", 5_000_000_000),
            ("+5s", 5_000_000_000),
            ("-5s", -5_000_000_000),
            ("1.5h", 5_400_000_000_000),
            ("1h15m30.918273645s", 4_530_918_273_645),
            (".5s", 500_000_000),
            ("1.s", 1_000_000_000),
            ("100ms", 100_000_000),
            ("10\u{b5}s", 10_000),
            ("10\u{3bc}s", 10_000),
            ("10us", 10_000),
            ("3h30m", 12_600_000_000_000),
            ("9223372036854775807ns", i64::MAX),
            // Go's uint64 sum wraps to zero here and passes its range check.
            ("9223372036854775808ns9223372036854775808ns", 0),
            ("-9223372036854775808ns", i64::MIN),
        ];
        for (text, nanos) in cases {
            assert_eq!(parse(text), Ok(*nanos), "{text}");
        }
    }

    #[test]
    fn rejects_what_go_rejects() {
        for text in
            ["", "3", "-", "s", ".", ".s", "+.s", "1d", "5m ", " 5m", "9223372036854775808ns", "1..2s", "3000000h"]
        {
            assert!(parse(text).is_err(), "{text:?} should fail");
        }
        assert_eq!(parse("1d"), Err("time: unknown unit \"d\" in duration \"1d\"".to_owned()));
        assert_eq!(parse("3"), Err("time: missing unit in duration \"3\"".to_owned()));
    }
}
