//! Timestamps as RFC 3339 UTC text (`2024-05-01T12:00:00Z`), without a date-time crate.

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
}
