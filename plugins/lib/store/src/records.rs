//! Records in a store-backed group, the same for every group that keeps versioned rows with an
//! `id`, a `version` and `created_at`/`updated_at` (the Registry today; Scrolls and Seele
//! next): their JSON shape, keyset-paged lists, `expected_version` checks and patches.
//!
//! Invariants:
//! - A record is a JSON object with its fields; an absent optional field is left out, never
//!   `null` (clients that meet a `null` drop the whole result or tool list).
//! - Lists answer `{"items": [...], "next_cursor"?: "..."}`; `next_cursor` appears only when
//!   another page exists, and it carries the sort key of the last item plus the list's own tag,
//!   so a cursor from another list is refused rather than misread.
//! - No update based on a read version is lost: a patch is one `UPDATE … WHERE id = … AND
//!   version = <read>`, and a patch that changes nothing writes nothing.

use std::collections::HashMap;

use coremcp_plugin_sdk::args::invalid;
use coremcp_plugin_sdk::page::{decode_cursor, encode_cursor, Paging};
use coremcp_plugin_sdk::{codes, ToolError};
use serde_json::{Map, Value};

use crate::plugin::{self, TxError};
use crate::query::Query;
use crate::{Param, Row, StoreError, Tx};

/// The decoded `cursor` argument of list `tag` (its sort-key parts), if one was given.
pub fn cursor(page: &Paging, tag: &str, parts: usize) -> Result<Option<Vec<String>>, ToolError> {
    let Some(text) = page.cursor.as_deref() else {
        return Ok(None);
    };
    let mut decoded = decode_cursor(text, parts + 1)?;
    if decoded.first().map(String::as_str) != Some(tag) {
        return Err(invalid(
            "cursor",
            format!(
                "is a cursor of another list, not of this {tag} list (pass next_cursor unchanged)"
            ),
        ));
    }
    decoded.remove(0);
    Ok(Some(decoded))
}

/// How a list is ordered and paged: its cursor tag and its sort keys, each a SQL expression
/// and the row column that holds it (ascending, unique together).
pub struct Order<'a> {
    pub tag: &'a str,
    pub keys: &'a [(&'a str, &'a str)],
}

impl Order<'_> {
    /// Adds "after the cursor" to `q`: `(k1 > $a OR (k1 = $a AND (k2 > $b …)))`.
    pub fn after(&self, q: &mut Query, page: &Paging) -> Result<(), ToolError> {
        let Some(after) = cursor(page, self.tag, self.keys.len())? else {
            return Ok(());
        };
        let marks: Vec<String> = after.iter().map(|v| q.bind(v.as_str())).collect();
        let mut clause = String::new();
        for (i, ((expr, _), mark)) in self.keys.iter().zip(&marks).enumerate().rev() {
            clause = if i + 1 == self.keys.len() {
                format!("{expr} > {mark}")
            } else {
                format!("({expr} > {mark} OR ({expr} = {mark} AND {clause}))")
            };
        }
        q.and(clause);
        Ok(())
    }

    /// One page of `select` (a `SELECT … FROM …`) filtered by `q`, in this order: the rows and
    /// the cursor of the next page, when there is one.
    pub fn page(
        &self,
        tx: &mut Tx<'_>,
        select: &str,
        q: &Query,
        page: &Paging,
    ) -> Result<(Vec<Row>, Option<String>), StoreError> {
        let order: Vec<&str> = self.keys.iter().map(|(expr, _)| *expr).collect();
        let sql = format!(
            "{select}{} ORDER BY {} LIMIT {}",
            q.where_clause(),
            order.join(", "),
            page.limit + 1
        );
        let rows = tx.query(&sql, q.params())?;
        cut(rows, page.limit, self.tag, |r| {
            self.keys
                .iter()
                .map(|(_, column)| r.get_text(*column))
                .collect()
        })
    }
}

/// The first `limit` of `rows` (fetched with `limit + 1`), and a cursor from `key` of the
/// last of them when more rows exist.
fn cut(
    mut rows: Vec<Row>,
    limit: usize,
    tag: &str,
    key: impl Fn(&Row) -> Result<Vec<String>, StoreError>,
) -> Result<(Vec<Row>, Option<String>), StoreError> {
    let more = rows.len() > limit;
    rows.truncate(limit);
    let next = match (more, rows.last()) {
        (true, Some(last)) => {
            let mut parts = vec![tag.to_owned()];
            parts.extend(key(last)?);
            let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
            Some(encode_cursor(&refs))
        }
        _ => None,
    };
    Ok((rows, next))
}

/// The JSON of each row, and with `related` (a field name, and lists by `id`) that field of
/// each holding the row's list (empty when none).
pub fn with_related(
    rows: &[Row],
    json: fn(&Row) -> Result<Value, StoreError>,
    mut related: Option<(&str, HashMap<String, Vec<Value>>)>,
) -> Result<Vec<Value>, StoreError> {
    let mut items = Vec::with_capacity(rows.len());
    for row in rows {
        let mut item = json(row)?;
        if let Some((name, found)) = &mut related {
            let list = found.remove(&row.get_text("id")?).unwrap_or_default();
            item[*name] = Value::Array(list);
        }
        items.push(item);
    }
    Ok(items)
}

/// The `id`s of `rows`.
pub fn ids(rows: &[Row]) -> Result<Vec<String>, StoreError> {
    rows.iter().map(|r| r.get_text("id")).collect()
}

/// A record under construction: optional fields are only ever inserted when present.
#[derive(Debug, Default)]
pub struct Record(pub Map<String, Value>);

impl Record {
    pub fn set(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.0.insert(key.to_owned(), value.into());
        self
    }

    pub fn opt(mut self, key: &str, value: Option<impl Into<Value>>) -> Self {
        if let Some(value) = value {
            self.0.insert(key.to_owned(), value.into());
        }
        self
    }

    /// `version`, `created_at` and `updated_at` of `row`, timestamps normalised.
    pub fn stamps(self, row: &Row) -> Result<Self, StoreError> {
        Ok(self
            .set("version", row.get_i64("version")?)
            .set("created_at", plugin::ts(row, "created_at")?)
            .set("updated_at", plugin::ts(row, "updated_at")?))
    }

    pub fn done(self) -> Value {
        Value::Object(self.0)
    }
}

/// The `expected_version` argument as the stores compare it.
pub fn expected(version: Option<u64>) -> Option<i64> {
    version.map(|v| i64::try_from(v).unwrap_or(i64::MAX))
}

/// Optimistic concurrency before a patch: `expected` (if given) must be `current`.
pub fn check_expected(what: &str, current: i64, expected: Option<i64>) -> Result<(), ToolError> {
    match expected {
        Some(expected) if expected != current => Err(plugin::conflict(what, current, expected)),
        _ => Ok(()),
    }
}

/// Runs a guarded `UPDATE … WHERE id = … AND version = <read>`. When it changes nothing,
/// another writer moved the row on between our read and our write (PostgreSQL's read
/// committed allows that; SQLite's `BEGIN IMMEDIATE` does not): a caller who gave
/// `expected_version` gets a conflict with the version the row has now, any other caller's
/// patch is re-run on the new row (`Busy` makes the store run the transaction again).
pub fn guarded_update(
    tx: &mut Tx<'_>,
    sql: &str,
    params: &[Param],
    table: &str,
    id: &str,
    what: &str,
    expected: Option<i64>,
) -> Result<(), TxError> {
    if tx.execute(sql, params)? == 1 {
        return Ok(());
    }
    let Some(expected) = expected else {
        return Err(StoreError::Busy.into());
    };
    let now = tx
        .query_opt(
            &format!("SELECT version FROM {table} WHERE id = $1"),
            &[id.into()],
        )?
        .map(|row| row.get_i64("version"))
        .transpose()?
        .unwrap_or(0);
    Err(plugin::conflict(what, now, expected).into())
}

/// Patches `row` of `table`: sets each `(column, Some(new))` (`None`: the patch leaves the
/// column alone), with `version` + 1 and `updated_at` now, guarded by the version read (see
/// [`guarded_update`]). Returns whether anything changed: a patch whose values are all the
/// row's writes nothing. A column whose stored form may differ from the text given (JSON) is
/// compared by the caller, who passes `None` when it is unchanged.
pub fn patch(
    tx: &mut Tx<'_>,
    table: &str,
    row: &Row,
    what: &str,
    expected: Option<i64>,
    changes: Vec<(&str, Option<Param>)>,
) -> Result<bool, TxError> {
    let mut sets = Vec::new();
    let mut params = Vec::new();
    let mut changed = false;
    for (column, new) in changes {
        let Some(new) = new else { continue };
        let same = match &new {
            // SQLite keeps booleans as 0/1.
            Param::Bool(b) => row.get_bool(column)? == *b,
            other => row.get(column)? == other,
        };
        changed |= !same;
        params.push(new);
        sets.push(format!("{column} = ${}", params.len()));
    }
    if !changed {
        return Ok(false);
    }
    let id = row.get_text("id")?;
    let n = params.len();
    params.extend([
        plugin::now().into(),
        id.as_str().into(),
        row.get_i64("version")?.into(),
    ]);
    let sql = format!(
        "UPDATE {table} SET {}, version = version + 1, updated_at = ${} WHERE id = ${} AND \
         version = ${}",
        sets.join(", "),
        n + 1,
        n + 2,
        n + 3
    );
    guarded_update(tx, &sql, &params, table, &id, what, expected)?;
    Ok(true)
}

/// `not_found` naming the argument and the value it referred to.
pub fn not_found(field: &str, problem: impl std::fmt::Display) -> ToolError {
    ToolError::new(codes::NOT_FOUND, format!("argument \"{field}\": {problem}"))
}

/// `conflict` for a key that is taken.
pub fn duplicate(what: &str, version: i64, hint: &str) -> ToolError {
    ToolError::new(
        codes::CONFLICT,
        format!("{what} already exists (it is at version {version}); {hint}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use coremcp_plugin_sdk::page::encode_cursor;

    #[test]
    fn records_leave_out_absent_fields() {
        let value = Record::default()
            .set("key", "a")
            .opt("description", None::<String>)
            .opt("theme", Some("x"))
            .done();
        assert_eq!(value, serde_json::json!({"key": "a", "theme": "x"}));
        let listed = coremcp_plugin_sdk::page::page_result(vec![value], None);
        assert!(listed.get("next_cursor").is_none());
    }

    #[test]
    fn cursors_carry_their_list() {
        let text = encode_cursor(&["theme", "abc"]);
        let page = |c: Option<&str>| Paging {
            limit: 50,
            cursor: c.map(str::to_owned),
        };
        assert_eq!(
            cursor(&page(Some(&text)), "theme", 1).expect("ours"),
            Some(vec!["abc".to_owned()])
        );
        let err = cursor(&page(Some(&text)), "host", 1).expect_err("another list's");
        assert!(err.message.contains("\"cursor\""), "{err}");
        assert_eq!(cursor(&page(None), "theme", 1).expect("none"), None);
    }

    #[test]
    fn an_order_pages_after_its_own_cursor_on_every_key() {
        let order = Order {
            tag: "source",
            keys: &[("p.key", "project_key"), ("s.name", "name")],
        };
        let page = Paging {
            limit: 50,
            cursor: Some(encode_cursor(&["source", "CORE", "api"])),
        };
        let mut q = Query::new();
        q.eq("s.kind", "git");
        order.after(&mut q, &page).expect("our cursor");
        assert_eq!(
            q.where_clause(),
            " WHERE s.kind = $1 AND (p.key > $2 OR (p.key = $2 AND s.name > $3))"
        );
        let theirs = Paging {
            limit: 50,
            cursor: Some(encode_cursor(&["host", "a", "b"])),
        };
        let err = order
            .after(&mut Query::new(), &theirs)
            .expect_err("another list's");
        assert!(err.message.contains("another list"), "{err}");
    }
}
