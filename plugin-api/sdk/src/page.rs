//! Keyset paging, the same for every list tool: `limit` (default 50, at most 200) and an opaque
//! `cursor` in, `items` and `next_cursor` out.
//!
//! Invariants: a cursor is only ever one this tool returned (anything else names the `cursor`
//! argument); `next_cursor` is present exactly when rows were left out; a page is never empty
//! while rows remain, and never outgrows [`result_budget`].

use serde_json::{Map, Value};

use crate::args::invalid;
use crate::budget::{fitting, put_opt};
use crate::{Args, ToolError};

/// The paging arguments of a list tool; put it in the tool's arguments with
/// `#[arg(flatten)]`.
#[derive(Debug, Clone, Args)]
pub struct Paging {
    /// default 50
    #[arg(min = 1, max = 200, default = 50)]
    pub limit: usize,
    /// next_cursor
    pub cursor: Option<String>,
}

impl Paging {
    /// The cursor's parts, when there is one (`parts` of them, or the `cursor` is refused).
    pub fn after(&self, parts: usize) -> Result<Option<Vec<String>>, ToolError> {
        self.cursor
            .as_deref()
            .map(|c| decode_cursor(c, parts))
            .transpose()
    }
}

/// One page of a keyset-paged list: up to `limit` of `rows` (which holds up to `limit + 1`, the
/// extra one saying that more exist), fewer if the result would outgrow [`result_budget`]
/// (`base` is the result without items). `cursor_of` gives the cursor after an item;
/// `next_cursor` is there only when rows were left out.
pub fn page(
    rows: Vec<Value>,
    limit: usize,
    base: &Value,
    cursor_of: impl Fn(&Value) -> String,
) -> (Vec<Value>, Option<String>) {
    let available = rows.len();
    let mut items = rows;
    items.truncate(limit);
    let fits = fitting(&items, base);
    items.truncate(fits);
    let next = (items.len() < available)
        .then(|| items.last().map(&cursor_of))
        .flatten();
    (items, next)
}

/// Where a ranked list (search results, a queue, whose order is a score rather than a key)
/// resumes: the position its `cursor` names, 0 without one.
pub fn position(cursor: Option<&str>) -> Result<usize, ToolError> {
    let Some(cursor) = cursor else { return Ok(0) };
    let parts = decode_cursor(cursor, 1)?;
    parts[0].parse().map_err(|_| {
        invalid(
            "cursor",
            "is not a cursor this tool returned (pass next_cursor unchanged)",
        )
    })
}

/// One page of a ranked list from position `from`: `rows` are the ranked rows from there (up
/// to `limit + 1` of them, the extra one saying that more exist), cut to `limit` and to the
/// budget like [`page`]; `next_cursor` names the position after the last item shown.
pub fn ranked_page(
    rows: Vec<Value>,
    limit: usize,
    from: usize,
    base: &Value,
) -> (Vec<Value>, Option<String>) {
    let (items, next) = page(rows, limit, base, |_| String::new());
    let next = next.map(|_| encode_cursor(&[&(from + items.len()).to_string()]));
    (items, next)
}

/// `{items, next_cursor?}` around a page.
pub fn page_result(items: Vec<Value>, next_cursor: Option<String>) -> Value {
    let mut map = Map::new();
    map.insert("items".to_owned(), Value::Array(items));
    put_opt(&mut map, "next_cursor", next_cursor);
    Value::Object(map)
}

/// An opaque cursor carrying the sort key of the last row returned (keyset paging).
pub fn encode_cursor(parts: &[&str]) -> String {
    let json = Value::from(parts.to_vec()).to_string();
    json.bytes().map(|b| format!("{b:02x}")).collect()
}

/// The one key a single-key cursor (`encode_cursor(&[key])`) carries, when one is given;
/// anything but such a cursor names the `cursor` argument.
pub fn cursor_key(cursor: Option<&str>) -> Result<Option<String>, ToolError> {
    cursor
        .map(|c| decode_cursor(c, 1))
        .transpose()
        .map(|parts| parts.and_then(|mut p| p.pop()))
}

/// The parts of a cursor this tool returned; anything else names the `cursor` argument.
pub fn decode_cursor(cursor: &str, parts: usize) -> Result<Vec<String>, ToolError> {
    let bad = || {
        invalid(
            "cursor",
            "is not a cursor this tool returned (pass next_cursor unchanged)",
        )
    };
    if cursor.len() % 2 != 0 {
        return Err(bad());
    }
    let bytes: Option<Vec<u8>> = (0..cursor.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(cursor.get(i..i + 2)?, 16).ok())
        .collect();
    let decoded: Vec<String> = bytes
        .and_then(|b| serde_json::from_slice(&b).ok())
        .ok_or_else(bad)?;
    if decoded.len() != parts {
        return Err(bad());
    }
    Ok(decoded)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codes;
    use serde_json::json;

    use crate::budget::tests::rows;
    use crate::budget::{chars, result_budget};

    fn cursor(v: &Value) -> String {
        v["key"].as_str().unwrap_or_default().to_owned()
    }

    #[test]
    fn a_single_key_cursor_round_trips_and_nothing_else_passes() {
        let cursor = encode_cursor(&["shop-web-0007"]);
        assert_eq!(
            cursor_key(Some(&cursor)).expect("cursor").as_deref(),
            Some("shop-web-0007")
        );
        assert_eq!(cursor_key(None).expect("none"), None);
        for bad in ["zz", "7b", &encode_cursor(&["a", "b"])] {
            let e = cursor_key(Some(bad)).expect_err(bad);
            assert!(e.message.contains("cursor"), "{}", e.message);
        }
    }

    #[test]
    fn a_page_has_a_cursor_only_when_rows_were_left_out() {
        let base = json!({"items": []});
        let (items, next) = page(rows(3, 1), 3, &base, cursor);
        assert_eq!((items.len(), next), (3, None));
        let (items, next) = page(rows(4, 1), 3, &base, cursor);
        assert_eq!((items.len(), next.as_deref()), (3, Some("k2")));
    }

    #[test]
    fn a_page_stops_at_the_budget_but_never_comes_back_empty() {
        let base = json!({"items": []});
        let (items, next) = page(rows(50, 1000), 50, &base, cursor);
        assert!(items.len() < 20 && !items.is_empty(), "{}", items.len());
        assert_eq!(next, Some(format!("k{}", items.len() - 1)));
        assert!(chars(&page_result(items, next)) <= result_budget());
        let (items, _) = page(rows(2, 30_000), 50, &base, cursor);
        assert_eq!(items.len(), 1);
    }

    #[test]
    fn a_ranked_list_pages_by_position_and_reaches_every_row_once() {
        let all = rows(45, 900);
        let base = json!({"items": []});
        let (mut seen, mut cursor) = (Vec::new(), None::<String>);
        loop {
            let from = position(cursor.as_deref()).expect("position");
            let window: Vec<Value> = all.iter().skip(from).take(31).cloned().collect();
            let (items, next) = ranked_page(window, 30, from, &base);
            assert!(chars(&page_result(items.clone(), next.clone())) <= result_budget());
            seen.extend(items);
            match next {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        assert_eq!(seen, all);
        assert!(position(Some("zz")).is_err());
        assert!(position(Some(&encode_cursor(&["x"]))).is_err());
    }

    #[test]
    fn cursors_round_trip_and_refuse_anything_else() {
        let c = encode_cursor(&["global", "a/b"]);
        assert_eq!(decode_cursor(&c, 2).expect("round trip"), ["global", "a/b"]);
        for bad in ["", "zz", "abc", &encode_cursor(&["one"])] {
            let err = decode_cursor(bad, 2).expect_err(bad);
            assert_eq!(err.code.as_str(), codes::INVALID_ARGUMENTS);
            assert!(err.message.contains("\"cursor\""), "{err}");
        }
        assert_eq!(page_result(vec![], None), json!({"items": []}));
    }
}
