//! PostgreSQL wire helpers shared by the store and by `sql_query`: parameters sent as text,
//! binary values decoded to text, and errors described in one line.
//!
//! Invariants: a [`TextParam`] is sent in text format, so PostgreSQL parses it as whatever type
//! it infers for its `$n`; an error description carries the SQLSTATE, the message, the position
//! and any detail or hint, and never the connection string.

use std::error::Error as StdError;

use ::postgres::error::{DbError, ErrorPosition};
use ::postgres::types::{to_sql_checked, Format, IsNull, ToSql, Type};
use coremcp_plugin_sdk::time::civil_from_days;

/// The error type `FromSql`/`ToSql` use.
pub type WireError = Box<dyn StdError + Sync + Send>;

/// A parameter in text format (`None` is NULL).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextParam(pub Option<String>);

impl ToSql for TextParam {
    fn to_sql(
        &self,
        _ty: &Type,
        out: &mut ::postgres::types::private::BytesMut,
    ) -> Result<IsNull, WireError> {
        match &self.0 {
            Some(text) => {
                out.extend_from_slice(text.as_bytes());
                Ok(IsNull::No)
            }
            None => Ok(IsNull::Yes),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    fn encode_format(&self, _ty: &Type) -> Format {
        Format::Text
    }

    to_sql_checked!();
}

/// `42P01: relation "x" does not exist (at character 15); detail: …; hint: …`.
pub fn describe_db_error(db: &DbError) -> String {
    let mut text = format!("{}: {}", db.code().code(), db.message());
    match db.position() {
        Some(ErrorPosition::Original(at)) => text.push_str(&format!(" (at character {at})")),
        Some(ErrorPosition::Internal { position, query }) => text.push_str(&format!(
            " (at character {position} of internal query: {query})"
        )),
        None => {}
    }
    if let Some(detail) = db.detail() {
        text.push_str(&format!("; detail: {detail}"));
    }
    if let Some(hint) = db.hint() {
        text.push_str(&format!("; hint: {hint}"));
    }
    text
}

/// An error and its sources in one line, each source once.
pub fn error_chain(err: &dyn StdError) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(inner) = source {
        let next = inner.to_string();
        if !text.contains(&next) {
            text.push_str(&format!(": {next}"));
        }
        source = inner.source();
    }
    text
}

/// Exactly `N` bytes of a binary value.
pub fn fixed<const N: usize>(raw: &[u8]) -> Result<[u8; N], WireError> {
    raw.try_into()
        .map_err(|_| format!("expected {N} bytes, got {}", raw.len()).into())
}

/// Bytes as lowercase hex.
pub fn hex(raw: &[u8]) -> String {
    raw.iter().map(|b| format!("{b:02x}")).collect()
}

/// A binary UUID as its usual text.
pub fn uuid(raw: &[u8]) -> Result<String, WireError> {
    let h = hex(&fixed::<16>(raw)?);
    Ok(format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    ))
}

/// Days since 2000-01-01 → `YYYY-MM-DD`.
pub fn date(days_since_2000: i32) -> String {
    let (y, m, d) = civil_from_days(i64::from(days_since_2000) + 10_957);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Microseconds since midnight → `HH:MM:SS[.ffffff]` (trailing zeros dropped).
pub fn time_of_day(micros: i64) -> String {
    let secs = micros / 1_000_000;
    let frac = micros % 1_000_000;
    let base = format!("{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60);
    if frac == 0 {
        base
    } else {
        format!("{base}.{}", format!("{frac:06}").trim_end_matches('0'))
    }
}

/// Microseconds since 2000-01-01 → RFC 3339 (with `Z` for timestamptz, UTC on the wire).
pub fn timestamp(micros_since_2000: i64, utc: bool) -> String {
    match micros_since_2000 {
        i64::MAX => return "infinity".into(),
        i64::MIN => return "-infinity".into(),
        _ => {}
    }
    let day = 86_400_000_000i64;
    let days = i32::try_from(micros_since_2000.div_euclid(day)).unwrap_or(i32::MAX);
    let rest = micros_since_2000.rem_euclid(day);
    format!(
        "{}T{}{}",
        date(days),
        time_of_day(rest),
        if utc { "Z" } else { "" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calendar() {
        assert_eq!(date(0), "2000-01-01");
        assert_eq!(date(-1), "1999-12-31");
        assert_eq!(date(59), "2000-02-29");
        assert_eq!(date(9_497), "2026-01-01");
        assert_eq!(timestamp(0, true), "2000-01-01T00:00:00Z");
        assert_eq!(timestamp(-1, false), "1999-12-31T23:59:59.999999");
        assert_eq!(
            timestamp(86_400_000_000 + 3_723_500_000, true),
            "2000-01-02T01:02:03.5Z"
        );
        assert_eq!(timestamp(i64::MAX, true), "infinity");
    }

    #[test]
    fn uuids() {
        let raw: Vec<u8> = (0u8..16).collect();
        assert_eq!(
            uuid(&raw).expect("16 bytes"),
            "00010203-0405-0607-0809-0a0b0c0d0e0f"
        );
        assert!(uuid(&raw[..3]).is_err());
    }
}
