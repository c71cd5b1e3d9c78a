//! A request's deadline from its `timeout` query parameter, as kube-apiserver reads it: a Go
//! duration, capped at the server's request timeout (none, zero or negative means the cap).
//! Flow control honours it (a write still waiting for its turn is rejected with 429 at the
//! deadline) and so does storage (past it, 504 and nothing written). Clients use it so that
//! a write the server queued cannot land long after they gave up on it.

use std::collections::HashMap;
use std::time::Duration;

use tokio::time::Instant;

use crate::error::{ApiError, Result};

/// kube-apiserver's `--request-timeout` default.
pub const REQUEST_TIMEOUT_MAX: Duration = Duration::from_secs(60);

/// The deadline of a request received at `received` (long-running ones, watches, have none).
pub fn deadline(query: &HashMap<String, String>, received: Instant) -> Result<Instant> {
    let timeout = match query.get("timeout").filter(|v| !v.is_empty()) {
        None => REQUEST_TIMEOUT_MAX,
        Some(value) => match parse_go_duration(value) {
            Ok(Some(t)) if !t.is_zero() && t < REQUEST_TIMEOUT_MAX => t,
            Ok(_) => REQUEST_TIMEOUT_MAX,
            Err(e) => {
                return Err(ApiError::BadRequest(format!("invalid timeout specified in the request URL - {e}")));
            }
        },
    };
    Ok(received + timeout)
}

/// Go's `time.ParseDuration`: signed decimal numbers, each with a unit (`ns`, `us`, `µs`,
/// `ms`, `s`, `m`, `h`), such as "300ms", "1.5h" or "2h45m". `Ok(None)` for a negative
/// duration; the error text is Go's.
pub fn parse_go_duration(text: &str) -> std::result::Result<Option<Duration>, String> {
    let invalid = || format!("time: invalid duration {text:?}");
    let (negative, mut rest) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if rest == "0" {
        return Ok(Some(Duration::ZERO));
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total = 0.0_f64;
    while !rest.is_empty() {
        let number_len = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        let number = &rest[..number_len];
        if number.is_empty() || number == "." || number.matches('.').count() > 1 {
            return Err(invalid());
        }
        rest = &rest[number_len..];
        let unit_len = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let unit = &rest[..unit_len];
        rest = &rest[unit_len..];
        let nanos_per_unit = match unit {
            "" => return Err(format!("time: missing unit in duration {text:?}")),
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            other => return Err(format!("time: unknown unit {other:?} in duration {text:?}")),
        };
        total += number.parse::<f64>().map_err(|_| invalid())? * nanos_per_unit;
    }
    if total > i64::MAX as f64 {
        return Err(invalid());
    }
    Ok((!negative).then(|| Duration::from_nanos(total as u64)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations_parse_as_go_parses_them() {
        let ok = |s: &str| parse_go_duration(s).expect(s).expect("positive");
        assert_eq!(ok("0"), Duration::ZERO);
        assert_eq!(ok("300ms"), Duration::from_millis(300));
        assert_eq!(ok("1.5h"), Duration::from_secs(5400));
        assert_eq!(ok("2h45m"), Duration::from_secs(9900));
        assert_eq!(ok("+10s"), Duration::from_secs(10));
        assert_eq!(ok("1us"), Duration::from_micros(1));
        assert_eq!(ok("1µs"), Duration::from_micros(1));
        assert_eq!(ok(".5s"), Duration::from_millis(500));
        assert_eq!(parse_go_duration("-1s"), Ok(None));
        assert_eq!(parse_go_duration("10"), Err("time: missing unit in duration \"10\"".into()));
        assert_eq!(parse_go_duration("3x"), Err("time: unknown unit \"x\" in duration \"3x\"".into()));
        for bad in ["", "s", "-", ".s"] {
            assert_eq!(parse_go_duration(bad), Err(format!("time: invalid duration {bad:?}")), "{bad:?}");
        }
    }

    #[test]
    fn the_deadline_is_capped_at_the_request_timeout() {
        let at = Instant::now();
        let query = |v: &str| HashMap::from([("timeout".to_owned(), v.to_owned())]);
        assert_eq!(deadline(&HashMap::new(), at).expect("none"), at + REQUEST_TIMEOUT_MAX);
        assert_eq!(deadline(&query("2500ms"), at).expect("set"), at + Duration::from_millis(2500));
        assert_eq!(deadline(&query("0s"), at).expect("zero"), at + REQUEST_TIMEOUT_MAX);
        assert_eq!(deadline(&query("5m"), at).expect("long"), at + REQUEST_TIMEOUT_MAX);
        let error = deadline(&query("soon"), at).expect_err("bad").to_string();
        assert_eq!(error, "invalid timeout specified in the request URL - time: invalid duration \"soon\"");
    }
}
