//! Times as RFC 3339 UTC text, without a date-time crate: to the second for files and git
//! (`2024-05-01T12:00:00Z`), and fixed-width with milliseconds for stored rows
//! (`2026-12-02T14:04:06.123Z`), so SQLite's text comparison orders them.

use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds since the Unix epoch as RFC 3339 UTC, to the second.
pub fn rfc3339(unix_seconds: i64) -> String {
    let days = unix_seconds.div_euclid(86_400);
    let secs = unix_seconds.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}

/// Days since 1970-01-01 as a proleptic Gregorian (year, month, day): Howard Hinnant's
/// civil_from_days.
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = (if mp < 10 { mp + 3 } else { mp - 9 }) as u32;
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// A point in time as RFC 3339 UTC (times before the epoch count back from it).
pub fn rfc3339_of(time: SystemTime) -> String {
    let secs = match time.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_secs()).unwrap_or(i64::MAX),
    };
    rfc3339(secs)
}

/// Now, as RFC 3339 UTC.
pub fn now_rfc3339() -> String {
    rfc3339_of(SystemTime::now())
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Now as a fixed-width RFC 3339 UTC timestamp with milliseconds.
pub fn now() -> String {
    timestamp(now_ms())
}

/// Milliseconds since the epoch as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
///
/// Written digit by digit: every stored row carries timestamps, and the formatting machinery
/// costs more than the query that reads them.
pub fn timestamp(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let (year, month, day) = civil_from_days(secs.div_euclid(86_400));
    if !(0..=9999).contains(&year) {
        let base = rfc3339(secs);
        // `rfc3339` ends in `Z`: put the milliseconds before it.
        return format!("{}.{:03}Z", &base[..base.len() - 1], ms.rem_euclid(1000));
    }
    let of_day = secs.rem_euclid(86_400);
    let mut text = *b"0000-00-00T00:00:00.000Z";
    let mut put = |at: usize, width: usize, mut value: i64| {
        for slot in text[at..at + width].iter_mut().rev() {
            *slot = b'0' + (value % 10) as u8;
            value /= 10;
        }
    };
    put(0, 4, year);
    put(5, 2, i64::from(month));
    put(8, 2, i64::from(day));
    put(11, 2, of_day / 3600);
    put(14, 2, of_day % 3600 / 60);
    put(17, 2, of_day % 60);
    put(20, 3, ms.rem_euclid(1000));
    // ASCII digits and separators only: always valid, so never lossy.
    String::from_utf8_lossy(&text).into_owned()
}

/// Whether `text` is already a timestamp as [`timestamp`] writes it: the fixed-width form, with
/// every field in its range, so reading it and writing it again would give it back unchanged.
fn is_normal(text: &str) -> bool {
    let b = text.as_bytes();
    let shape = b.len() == 24
        && b.iter().enumerate().all(|(i, &c)| match i {
            4 | 7 => c == b'-',
            10 => c == b'T',
            13 | 16 => c == b':',
            19 => c == b'.',
            23 => c == b'Z',
            _ => c.is_ascii_digit(),
        });
    if !shape {
        return false;
    }
    let num = |from: usize, to: usize| {
        b[from..to]
            .iter()
            .fold(0i64, |n, &c| n * 10 + i64::from(c - b'0'))
    };
    let (year, month, day) = (num(0, 4), num(5, 7), num(8, 10));
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days_in_month = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days_in_month).contains(&day) && num(11, 13) < 24 && num(14, 16) < 60 && num(17, 19) < 60
}

/// Parses an RFC 3339 timestamp (any offset, any fraction) into milliseconds since the epoch.
pub fn parse_timestamp(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let num = |from: usize, to: usize| -> Option<i64> {
        let s = text.get(from..to)?;
        if s.bytes().all(|c| c.is_ascii_digit()) {
            s.parse().ok()
        } else {
            None
        }
    };
    let (year, month, day) = (num(0, 4)?, num(5, 7)?, num(8, 10)?);
    let (hour, minute, second) = (num(11, 13)?, num(14, 16)?, num(17, 19)?);
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut rest = &text[19..];
    let mut millis = 0;
    if let Some(fraction) = rest.strip_prefix('.') {
        let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        let padded = format!("{:0<3}", &fraction[..digits.min(3)]);
        millis = padded.parse::<i64>().ok()?;
        rest = &fraction[digits..];
    }
    let offset_s = match rest {
        "Z" | "z" => 0,
        _ => {
            let sign = match rest.as_bytes().first()? {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let rb = rest.as_bytes();
            if rest.len() != 6 || rb[3] != b':' {
                return None;
            }
            let h: i64 = rest[1..3].parse().ok()?;
            let m: i64 = rest[4..6].parse().ok()?;
            sign * (h * 3600 + m * 60)
        }
    };
    let days = days_from_civil(year, month, day);
    Some(((days * 86_400 + hour * 3600 + minute * 60 + second) - offset_s) * 1000 + millis)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (the inverse of `civil_from_days`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// A timestamp read from either backend, in the groups' fixed-width form.
pub fn timestamp_out(stored: &str) -> String {
    if is_normal(stored) {
        return stored.to_owned();
    }
    parse_timestamp(stored).map_or_else(|| stored.to_owned(), timestamp)
}

/// The stored timestamp `seconds` (argument `field`) before `at_ms`; a span too long to
/// represent is refused by name.
pub fn seconds_before(at_ms: i64, seconds: u64, field: &str) -> Result<String, crate::ToolError> {
    i64::try_from(seconds)
        .ok()
        .and_then(|s| s.checked_mul(1000))
        .map(|ms| timestamp(at_ms.saturating_sub(ms).max(0)))
        .ok_or_else(|| crate::args::invalid(field, format!("{seconds} seconds is too long")))
}

/// An RFC 3339 time argument (`2026-01-31T09:00:00Z`, any offset or fraction), refused by name
/// when it is not one; [`Time::stored`] is the fixed-width form the stores compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Time {
    /// Milliseconds since the epoch.
    pub ms: i64,
}

impl Time {
    /// The stored form, `YYYY-MM-DDTHH:MM:SS.mmmZ`.
    pub fn stored(&self) -> String {
        timestamp(self.ms)
    }
}

impl crate::args::ArgType for Time {
    fn schema() -> serde_json::Value {
        serde_json::json!({"type": "string"})
    }

    fn from_value(value: serde_json::Value, at: &str) -> Result<Self, crate::args::ArgError> {
        let text = match value {
            serde_json::Value::String(text) => text,
            other => {
                return Err(crate::args::ArgError::new(
                    at,
                    format!("expected an RFC 3339 time, got {other}"),
                ))
            }
        };
        // A date alone is its first moment, UTC.
        let whole = match text.len() == 10 && text.as_bytes().get(4) == Some(&b'-') {
            true => format!("{text}T00:00:00Z"),
            false => text.clone(),
        };
        let parsed = parse_timestamp(&whole)
            // A date that does not exist (2026-02-30) is refused, not moved to another day.
            .filter(|&ms| whole == text || timestamp(ms).starts_with(&text));
        parsed.map(|ms| Time { ms }).ok_or_else(|| {
            crate::args::ArgError::new(
                at,
                format!(
                    "{text:?} is neither an RFC 3339 time such as 2026-01-31T09:00:00Z nor a date \
                     such as 2026-01-31"
                ),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn rfc3339_utc() {
        let cases = [
            (0, "1970-01-01T00:00:00Z"),
            (951_782_400, "2000-02-29T00:00:00Z"),
            (1_714_564_800, "2024-05-01T12:00:00Z"),
            (-1, "1969-12-31T23:59:59Z"),
        ];
        for (secs, text) in cases {
            assert_eq!(rfc3339(secs), text);
        }
        assert_eq!(
            rfc3339_of(UNIX_EPOCH + Duration::from_secs(1_714_564_800)),
            "2024-05-01T12:00:00Z"
        );
        assert_eq!(
            rfc3339_of(UNIX_EPOCH - Duration::from_secs(1)),
            "1969-12-31T23:59:59Z"
        );
        let now = now_rfc3339();
        assert_eq!(now.len(), 20, "{now}");
        assert!(now.ends_with('Z') && now.as_bytes()[10] == b'T', "{now}");
    }

    #[test]
    fn timestamps_are_fixed_width_and_round_trip() {
        assert_eq!(timestamp(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(timestamp(1_764_684_246_123), "2025-12-02T14:04:06.123Z");
        assert_eq!(now().len(), 24);
        for text in [
            "2025-12-02T14:04:06.123Z",
            "1999-12-31T23:59:59.999Z",
            "2000-02-29T00:00:00.000Z",
        ] {
            assert_eq!(timestamp(parse_timestamp(text).expect(text)), text);
        }
        // What PostgreSQL hands back (trimmed fractions), and offsets.
        assert_eq!(
            timestamp_out("2025-12-02T14:04:06.1Z"),
            "2025-12-02T14:04:06.100Z"
        );
        assert_eq!(
            timestamp_out("2025-12-02T14:04:06Z"),
            "2025-12-02T14:04:06.000Z"
        );
        assert_eq!(
            timestamp_out("2025-12-02T16:04:06.5+02:00"),
            "2025-12-02T14:04:06.500Z"
        );
        assert_eq!(
            timestamp_out("2025-12-02T14:04:06.123456Z"),
            "2025-12-02T14:04:06.123Z"
        );
        for bad in [
            "",
            "2025-12-02",
            "2025-13-02T00:00:00Z",
            "2025-12-02T14:04:06",
            "2025-12-02T14:04:06.Z",
            "x025-12-02T14:04:06Z",
        ] {
            assert_eq!(parse_timestamp(bad), None, "{bad}");
        }
    }

    /// The fast paths give what the general ones gave: formatting through `rfc3339`, and
    /// normalising through a parse and a format.
    #[test]
    fn the_fast_paths_agree_with_the_general_ones() {
        let slow = |ms: i64| {
            let base = rfc3339(ms.div_euclid(1000));
            format!("{}.{:03}Z", &base[..base.len() - 1], ms.rem_euclid(1000))
        };
        let mut ms: i64 = -62_167_219_200_000; // 0000-01-01
        let mut step: i64 = 1;
        while ms < 253_402_300_800_000 {
            assert_eq!(timestamp(ms), slow(ms), "{ms}");
            ms += step;
            step = step * 3 + 7;
        }
        for text in [
            "2026-12-02T14:04:06.123Z",
            "2024-02-29T23:59:59.999Z",
            "2023-02-29T00:00:00.000Z",
            "2026-02-30T00:00:00.000Z",
            "2026-13-01T00:00:00.000Z",
            "2026-00-10T00:00:00.000Z",
            "2026-04-31T00:00:00.000Z",
            "2026-04-00T00:00:00.000Z",
            "2026-01-01T24:00:00.000Z",
            "2026-01-01T23:60:00.000Z",
            "2026-01-01T23:59:60.000Z",
            "1900-02-29T00:00:00.000Z",
            "2000-02-29T00:00:00.000Z",
            "2026-01-01 00:00:00.000Z",
            "2026-01-01T00:00:00.000+00:00",
            "not a time at all, no...",
        ] {
            let general = parse_timestamp(text).map_or_else(|| text.to_owned(), timestamp);
            assert_eq!(timestamp_out(text), general, "{text}");
        }
    }

    #[test]
    fn a_time_argument_takes_a_date_as_its_first_moment() {
        use crate::args::ArgType;
        let at = |v: &str| Time::from_value(serde_json::json!(v), "since");
        assert_eq!(
            at("2026-01-01").expect("date").stored(),
            "2026-01-01T00:00:00.000Z"
        );
        assert_eq!(
            at("2026-01-01T09:30:00+02:00").expect("time").stored(),
            "2026-01-01T07:30:00.000Z"
        );
        for bad in ["2026-02-30", "2026-1-01", "yesterday", "2026-01-01T"] {
            let err = at(bad).expect_err(bad);
            assert!(err.to_string().contains("\"since\""), "{err}");
            assert!(err.to_string().contains("a date such as"), "{err}");
        }
    }

    #[test]
    fn a_span_before_now_is_a_stored_timestamp_or_refused_by_name() {
        assert_eq!(
            seconds_before(86_400_000, 3600, "older_than_s").expect("an hour"),
            "1970-01-01T23:00:00.000Z"
        );
        assert_eq!(
            seconds_before(1000, 3600, "older_than_s").expect("clamped"),
            "1970-01-01T00:00:00.000Z"
        );
        let err = seconds_before(0, u64::MAX, "older_than_s").expect_err("too long");
        assert!(err.message.contains("\"older_than_s\""), "{err}");
    }
}
