//! Go's `time.ParseDuration`, which `@every` durations are written in.

/// Nanoseconds of a Go duration string, or Go's error text. Follows Go's grammar exactly:
/// `[-+]?([0-9]*(\.[0-9]*)?[a-z]+)+`, plain `0`, units ns us µs μs ms s m h, and overflow
/// beyond an `i64` of nanoseconds.
pub(super) fn parse(text: &str) -> Result<i64, String> {
    let invalid = || format!("time: invalid duration {text:?}");
    let mut s = text;
    let mut negative = false;
    if let Some(rest) = s.strip_prefix('-') {
        negative = true;
        s = rest;
    } else if let Some(rest) = s.strip_prefix('+') {
        s = rest;
    }
    if s == "0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(invalid());
    }
    const LIMIT: u64 = 1 << 63;
    let mut total: u64 = 0;
    while !s.is_empty() {
        let first = s.as_bytes()[0];
        if !(first == b'.' || first.is_ascii_digit()) {
            return Err(invalid());
        }
        let int_len = s.bytes().take_while(u8::is_ascii_digit).count();
        let mut value: u64 = 0;
        for digit in s[..int_len].bytes() {
            if value > LIMIT / 10 {
                return Err(invalid());
            }
            value = value * 10 + u64::from(digit - b'0');
            if value > LIMIT {
                return Err(invalid());
            }
        }
        s = &s[int_len..];
        let mut fraction: u64 = 0;
        let mut scale: f64 = 1.0;
        let mut has_fraction_digits = false;
        if let Some(rest) = s.strip_prefix('.') {
            let frac_len = rest.bytes().take_while(u8::is_ascii_digit).count();
            has_fraction_digits = frac_len > 0;
            let mut overflow = false;
            for digit in rest[..frac_len].bytes() {
                // Go keeps the digits that fit and ignores the rest.
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
            s = &rest[frac_len..];
        }
        if int_len == 0 && !has_fraction_digits {
            return Err(invalid());
        }
        let unit_len = s.find(|c: char| c == '.' || c.is_ascii_digit()).unwrap_or(s.len());
        if unit_len == 0 {
            return Err(format!("time: missing unit in duration {text:?}"));
        }
        let unit_text = &s[..unit_len];
        s = &s[unit_len..];
        let unit: u64 = match unit_text {
            "ns" => 1,
            "us" | "\u{b5}s" | "\u{3bc}s" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return Err(format!("time: unknown unit {unit_text:?} in duration {text:?}")),
        };
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
