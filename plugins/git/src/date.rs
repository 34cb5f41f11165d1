//! The dates `git_log`'s `since` and `until` take, checked before git sees them: git reads any
//! text as a date and silently takes one it cannot read as "now", so a typo would answer "no
//! commits" instead of naming the mistake.
//!
//! Accepted: an RFC 3339 time; `YYYY-MM-DD`, optionally with ` HH:MM[:SS]`; `@<unix seconds>`;
//! `now`, `today`, `yesterday`; and `N <unit>[s] ago` (units second, minute, hour, day, week,
//! month, year; `.` may stand for the spaces, as git allows). Each is a form git reads alike.

use coremcp_plugin_sdk::args::invalid;
use coremcp_plugin_sdk::ToolError;

const UNITS: [&str; 7] = ["second", "minute", "hour", "day", "week", "month", "year"];

/// `value` as a git date for argument `field`, or an error that names it and the forms taken.
pub fn check(field: &str, value: &str) -> Result<(), ToolError> {
    if is_git_date(value.trim()) {
        return Ok(());
    }
    Err(invalid(
        field,
        format!(
            "{value:?} is not a date git_log reads: use 2026-05-01, 2026-05-01 14:30, an RFC 3339 \
             time, @<unix seconds>, yesterday, or \"<N> <{}>s ago\" (e.g. \"2 weeks ago\")",
            UNITS.join("|")
        ),
    ))
}

fn is_git_date(text: &str) -> bool {
    if coremcp_plugin_sdk::time::parse_timestamp(text).is_some() {
        return true;
    }
    if matches!(text, "now" | "today" | "yesterday") {
        return true;
    }
    if let Some(seconds) = text.strip_prefix('@') {
        return !seconds.is_empty() && seconds.bytes().all(|b| b.is_ascii_digit());
    }
    calendar(text) || relative(text)
}

/// `YYYY-MM-DD`, optionally followed by ` HH:MM` or ` HH:MM:SS`.
fn calendar(text: &str) -> bool {
    let (date, time) = text.split_once(' ').unwrap_or((text, ""));
    let d: Vec<&str> = date.split('-').collect();
    let numbers = |parts: &[&str], widths: &[usize]| {
        parts.len() == widths.len()
            && parts
                .iter()
                .zip(widths)
                .all(|(p, w)| p.len() == *w && p.bytes().all(|b| b.is_ascii_digit()))
    };
    if !numbers(&d, &[4, 2, 2]) {
        return false;
    }
    let (month, day): (u32, u32) = (d[1].parse().unwrap_or(0), d[2].parse().unwrap_or(0));
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return false;
    }
    if time.is_empty() {
        return true;
    }
    let t: Vec<&str> = time.split(':').collect();
    let ok = numbers(&t, &[2, 2]) || numbers(&t, &[2, 2, 2]);
    ok && t[0].parse::<u32>().is_ok_and(|h| h < 24)
        && t[1..]
            .iter()
            .all(|x| x.parse::<u32>().is_ok_and(|v| v < 60))
}

/// `N unit ago`, `N units ago`, or the same with dots.
fn relative(text: &str) -> bool {
    let words: Vec<&str> = text.split([' ', '.']).filter(|w| !w.is_empty()).collect();
    let [count, unit, "ago"] = words.as_slice() else {
        return false;
    };
    let unit = unit.strip_suffix('s').unwrap_or(unit);
    !count.is_empty() && count.bytes().all(|b| b.is_ascii_digit()) && UNITS.contains(&unit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_dates_are_taken_and_anything_else_is_named() {
        for good in [
            "2026-05-01",
            "2026-05-01 14:30",
            "2026-05-01 14:30:59",
            "2026-05-01T14:30:00Z",
            "2026-05-01T14:30:00+02:00",
            "@1700000000",
            "yesterday",
            "now",
            "2 weeks ago",
            "1 day ago",
            "3.days.ago",
            "10 months ago",
        ] {
            assert!(check("since", good).is_ok(), "{good}");
        }
        for bad in [
            "garbage-date",
            "",
            "2026-13-01",
            "2026-5-1",
            "2026-05-01 25:00",
            "two weeks ago",
            "2 fortnights ago",
            "2 weeks",
            "@",
            "@12a",
            "--all",
        ] {
            let err = check("since", bad).expect_err(bad);
            assert!(
                err.message.contains("since") && err.message.contains("2 weeks ago"),
                "{bad}: {}",
                err.message
            );
        }
    }
}
