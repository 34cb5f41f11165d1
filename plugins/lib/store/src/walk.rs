//! A ranked list's walk: the order a search found at its first page, kept in the store, so the
//! pages after it go on through that order whatever is created, changed or deleted meanwhile —
//! an item that stays in the list throughout a walk is seen exactly once. A ranked order cannot
//! be paged by a key the way a sorted list is: a rank moves when other rows change (SQLite's
//! bm25 weighs the whole index), so an offset or a rank bound would skip or repeat rows.
//!
//! Invariants: a walk holds at most [`MAX_IDS`] ids, in order; it lasts [`TTL_S`] seconds from
//! its first page, and expired walks are removed whenever a new one is kept; a token is a new
//! id, and a walk is read only by its token. Each service that walks declares its table in a
//! migration: `<service>_walk (token TEXT PRIMARY KEY, created_ms BIGINT NOT NULL, ids TEXT
//! NOT NULL)`.

use serde_json::Value;

use crate::plugin::{new_id, TxError};
use crate::Tx;

/// The most ids a walk keeps: the pages of a search that finds more end there, and say so.
pub const MAX_IDS: usize = 10_000;
/// How long a walk lasts, in seconds.
pub const TTL_S: i64 = 3_600;

/// Keeps `ids` (in order, at most [`MAX_IDS`]) as a new walk in `table`; its token. Walks past
/// their time are removed first.
pub fn keep(tx: &mut Tx<'_>, table: &str, ids: &[String]) -> Result<String, TxError> {
    let now = coremcp_plugin_sdk::time::now_ms();
    tx.execute(
        &format!("DELETE FROM {table} WHERE created_ms < $1"),
        &[(now - TTL_S * 1000).into()],
    )?;
    let token = new_id();
    let ids = &ids[..ids.len().min(MAX_IDS)];
    let list = Value::from(ids.to_vec()).to_string();
    tx.execute(
        &format!("INSERT INTO {table} (token, created_ms, ids) VALUES ($1, $2, $3)"),
        &[token.as_str().into(), now.into(), list.into()],
    )?;
    Ok(token)
}

/// The ids of the walk `token` in `table`, or `None` when there is none (never kept, or past
/// its time).
pub fn ids(tx: &mut Tx<'_>, table: &str, token: &str) -> Result<Option<Vec<String>>, TxError> {
    let now = coremcp_plugin_sdk::time::now_ms();
    let row = tx.query_opt(
        &format!("SELECT ids FROM {table} WHERE token = $1 AND created_ms >= $2"),
        &[token.into(), (now - TTL_S * 1000).into()],
    )?;
    let Some(row) = row else {
        return Ok(None);
    };
    let ids: Vec<String> = serde_json::from_str(&row.get_text("ids")?).unwrap_or_default();
    Ok(Some(ids))
}

/// What a page of a walk shows: the ids from `pos`, at most `want`, and where the next page
/// starts (`None`: this is the last).
pub fn page(ids: &[String], pos: usize, want: usize) -> (&[String], Option<usize>) {
    let start = pos.min(ids.len());
    let end = (start + want).min(ids.len());
    (&ids[start..end], (end < ids.len()).then_some(end))
}

/// The walk and the position in it a cursor of [`present`] names.
pub fn cursor(cursor: &str) -> Result<(String, usize), coremcp_plugin_sdk::ToolError> {
    let mut parts = coremcp_plugin_sdk::page::decode_cursor(cursor, 2)?;
    let pos = parts.pop().and_then(|p| p.parse::<usize>().ok());
    match (parts.pop(), pos) {
        (Some(token), Some(pos)) => Ok((token, pos)),
        _ => Err(coremcp_plugin_sdk::args::invalid(
            "cursor",
            "is not a cursor this tool returned (pass next_cursor unchanged)",
        )),
    }
}

/// The page of the walk `token` (its `ids`) from `pos`, as a list result: `fetch` gives the
/// listed items of those of at most `limit` ids that are still there, each with its id; they
/// are shown in the walk's order, as many as fit the answer, and `next_cursor` goes on after
/// the last one shown.
pub fn present<E>(
    ids: &[String],
    (token, pos): (&str, usize),
    limit: usize,
    fetch: impl FnOnce(&[String]) -> Result<Vec<(String, Value)>, E>,
) -> Result<Value, E> {
    let (slice, _) = page(ids, pos, limit);
    let mut found: Vec<(usize, Value)> = fetch(slice)?
        .into_iter()
        .filter_map(|(id, item)| Some((slice.iter().position(|s| *s == id)?, item)))
        .collect();
    found.sort_by_key(|(at, _)| *at);
    let items: Vec<Value> = found.iter().map(|(_, v)| v.clone()).collect();
    let room = serde_json::json!({"items": [], "next_cursor": "x".repeat(token.len() * 2 + 40)});
    let shown = coremcp_plugin_sdk::budget::fitting(&items, &room);
    // The next page starts after the last item shown, or after this page's ids.
    let after = match shown < found.len() {
        true => pos + found[shown.saturating_sub(1)].0 + 1,
        false => pos + slice.len(),
    };
    let next = (after < ids.len())
        .then(|| coremcp_plugin_sdk::page::encode_cursor(&[token, &after.to_string()]));
    Ok(coremcp_plugin_sdk::page::page_result(
        items.into_iter().take(shown).collect(),
        next,
    ))
}

/// The error of a cursor whose walk is gone.
pub fn expired() -> coremcp_plugin_sdk::ToolError {
    coremcp_plugin_sdk::args::invalid(
        "cursor",
        format!(
            "belongs to a walk that has ended (a walk lasts {} minutes from its first page): \
             search again without cursor",
            TTL_S / 60
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_of_a_walk_goes_on_where_the_last_ended() {
        let ids: Vec<String> = (0..25).map(|i| format!("id{i}")).collect();
        let (first, next) = page(&ids, 0, 10);
        assert_eq!((first.len(), next), (10, Some(10)));
        let (last, next) = page(&ids, 20, 10);
        assert_eq!((last.len(), next), (5, None));
        let (none, next) = page(&ids, 99, 10);
        assert_eq!((none.len(), next), (0, None));
        assert!(expired().message.contains("search again"));
    }

    #[test]
    fn a_walk_shows_what_is_still_there_in_its_order_and_goes_on_after_it() {
        let ids: Vec<String> = (0..30).map(|i| format!("id{i:02}")).collect();
        let item = |id: &str| serde_json::json!({"id": id});
        // The store answers in its own order and without id03 (deleted since).
        let page = present(&ids, ("T", 0), 10, |slice| {
            Ok::<_, ()>(
                slice
                    .iter()
                    .rev()
                    .filter(|id| *id != "id03")
                    .map(|id| (id.clone(), item(id)))
                    .collect(),
            )
        })
        .expect("page");
        let shown: Vec<&str> = page["items"]
            .as_array()
            .expect("items")
            .iter()
            .filter_map(|i| i["id"].as_str())
            .collect();
        assert_eq!(
            shown,
            ["id00", "id01", "id02", "id04", "id05", "id06", "id07", "id08", "id09"]
        );
        let (token, pos) = cursor(page["next_cursor"].as_str().expect("next")).expect("cursor");
        assert_eq!((token.as_str(), pos), ("T", 10));
        // Items too large for one answer: the page stops at what fits and goes on from there.
        let big = |id: &str| serde_json::json!({"id": id, "text": "t".repeat(4_000)});
        let page = present(&ids, ("T", 20), 10, |slice| {
            Ok::<_, ()>(slice.iter().map(|id| (id.clone(), big(id))).collect())
        })
        .expect("page");
        let n = page["items"].as_array().map_or(0, Vec::len);
        assert!(n > 0 && n < 10, "{n}");
        let (_, pos) = cursor(page["next_cursor"].as_str().expect("next")).expect("cursor");
        assert_eq!(pos, 20 + n);
        assert!(cursor("zz").is_err());
    }
}
