//! Building results that keep their structured content: optional fields are left out instead of
//! sent as `null`, and long pages and texts are cut so the whole result stays under the host's
//! 20 000-character limit (past it the host truncates the text and drops `structuredContent`).

use coremcp_store::plugin::timestamp_out;
use coremcp_store::{Row, StoreError};
use serde_json::{json, Map, Value};

/// What a whole result may serialise to, in characters, leaving room under the host's 20 000.
pub const RESULT_BUDGET: usize = 19_500;
/// The most items a cleanup-style result lists; the rest are counted in `more`.
pub const MAX_LISTED: usize = 200;

/// The characters `value` serialises to (what the host counts).
pub fn chars(value: &Value) -> usize {
    serde_json::to_string(value).map_or(usize::MAX, |s| s.chars().count())
}

/// Inserts `value` under `key` when there is one: absent stays absent, never `null`.
pub fn put_opt(map: &mut Map<String, Value>, key: &str, value: Option<impl Into<Value>>) {
    if let Some(value) = value {
        map.insert(key.to_owned(), value.into());
    }
}

/// A timestamp column, normalised to the fixed-width form whichever backend stored it.
pub fn ts(row: &Row, column: &str) -> Result<String, StoreError> {
    row.get_text(column).map(|t| timestamp_out(&t))
}

/// A nullable timestamp column, normalised.
pub fn ts_opt(row: &Row, column: &str) -> Result<Option<String>, StoreError> {
    Ok(row.get_opt_text(column)?.map(|t| timestamp_out(&t)))
}

/// One page of a keyset-paged list: up to `limit` of `rows` (which holds up to `limit + 1`, the
/// extra one saying that more exist), fewer if the result would outgrow [`RESULT_BUDGET`]
/// (`base` is the result without items). `cursor_of` gives the cursor after an item;
/// `next_cursor` is there only when rows were left out.
pub fn page(
    rows: Vec<Value>,
    limit: usize,
    base: &Value,
    cursor_of: impl Fn(&Value) -> String,
) -> (Vec<Value>, Option<String>) {
    let available = rows.len();
    let mut size = chars(base);
    let mut items = Vec::with_capacity(available.min(limit));
    for row in rows.into_iter().take(limit) {
        // One separator comma per item besides its own text.
        let cost = chars(&row) + 1;
        if !items.is_empty() && size + cost > RESULT_BUDGET {
            break;
        }
        size += cost;
        items.push(row);
    }
    let next = (items.len() < available)
        .then(|| items.last().map(&cursor_of))
        .flatten();
    (items, next)
}

/// `{items, next_cursor?}` around a page.
pub fn page_result(items: Vec<Value>, next_cursor: Option<String>) -> Value {
    let mut map = Map::new();
    map.insert("items".to_owned(), Value::Array(items));
    put_opt(&mut map, "next_cursor", next_cursor);
    Value::Object(map)
}

/// At most [`MAX_LISTED`] items, and how many more there were (`more`, only when some).
pub fn capped(mut items: Vec<Value>) -> (Vec<Value>, Option<usize>) {
    let more = items.len().saturating_sub(MAX_LISTED);
    items.truncate(MAX_LISTED);
    (items, (more > 0).then_some(more))
}

/// Puts `text` into `result` under `place(result)[field]`, cut at `max_chars` characters or
/// fewer so the whole result fits [`RESULT_BUDGET`], with `truncated` and `total_chars` beside
/// it. Escapes make a character cost more than one in the result, so the cut shrinks in
/// proportion for a few rounds.
pub fn fit_text(
    result: &mut Value,
    place: fn(&mut Value) -> &mut Value,
    field: &str,
    text: &str,
    max_chars: usize,
) {
    let total = text.chars().count();
    let mut limit = max_chars.min(total);
    for _ in 0..16 {
        set_cut(place(result), field, text, limit, total);
        let size = chars(result);
        if size <= RESULT_BUDGET || limit == 0 {
            return;
        }
        let scaled = (limit as u128 * RESULT_BUDGET as u128 / size as u128) as usize;
        limit = scaled.min(limit - 1);
    }
    set_cut(place(result), field, text, 0, total);
}

fn set_cut(target: &mut Value, field: &str, text: &str, limit: usize, total: usize) {
    let end = text
        .char_indices()
        .nth(limit)
        .map_or(text.len(), |(i, _)| i);
    target[field] = Value::from(&text[..end]);
    target["truncated"] = Value::Bool(limit < total);
    target["total_chars"] = json!(total);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(n: usize, width: usize) -> Vec<Value> {
        (0..n)
            .map(|i| json!({"key": format!("k{i}"), "value": "v".repeat(width)}))
            .collect()
    }

    fn cursor(v: &Value) -> String {
        v["key"].as_str().unwrap_or_default().to_owned()
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
        assert!(chars(&page_result(items, next)) <= RESULT_BUDGET);
        let (items, _) = page(rows(2, 30_000), 50, &base, cursor);
        assert_eq!(items.len(), 1);
    }

    #[test]
    fn optional_fields_are_left_out() {
        let mut map = Map::new();
        put_opt(&mut map, "a", None::<String>);
        put_opt(&mut map, "b", Some(1));
        assert_eq!(Value::Object(map), json!({"b": 1}));
        assert_eq!(page_result(vec![], None), json!({"items": []}));
    }

    #[test]
    fn capped_counts_the_rest() {
        let (items, more) = capped(rows(MAX_LISTED + 5, 1));
        assert_eq!((items.len(), more), (MAX_LISTED, Some(5)));
        assert_eq!(capped(rows(2, 1)).1, None);
    }

    #[test]
    fn text_is_cut_at_max_chars_and_to_the_budget() {
        fn inner(v: &mut Value) -> &mut Value {
            &mut v["recording"]
        }
        let mut result = json!({"recording": {}});
        fit_text(&mut result, inner, "transcript", "abcdef", 4);
        assert_eq!(result["recording"]["transcript"], "abcd");
        assert_eq!(result["recording"]["truncated"], true);
        assert_eq!(result["recording"]["total_chars"], 6);
        fit_text(&mut result, inner, "transcript", "abc", 4);
        assert_eq!(result["recording"]["truncated"], false);
        // Quotes double in JSON: the cut goes below max_chars to stay in the budget.
        let quotes = "\"".repeat(30_000);
        fit_text(&mut result, inner, "transcript", &quotes, 30_000);
        assert!(chars(&result) <= RESULT_BUDGET, "{}", chars(&result));
        assert!(chars(&result) > RESULT_BUDGET - 500, "{}", chars(&result));
        assert_eq!(result["recording"]["truncated"], true);
    }
}
