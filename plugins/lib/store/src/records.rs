//! Records in a store-backed group, the same for every group that keeps versioned rows with an
//! `id`, a `version` and `created_at`/`updated_at` (the Registry today; Scrolls and Seele
//! next): their JSON shape, keyset-paged lists, `expected_version` checks and patches, and
//! [`Entity`], which puts them together for a record type with a permanent key.
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
use coremcp_plugin_sdk::budget::MAX_LISTED;
use coremcp_plugin_sdk::page::{
    decode_cursor, encode_cursor, page as sdk_page, page_result, Paging,
};
use coremcp_plugin_sdk::{codes, ToolError};
use serde_json::{Map, Value};

use crate::plugin::{self, TxError};
use crate::query::{bytewise, Query};
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

/// One sort key of a list: a SQL expression, the row column that holds its value, and whether
/// it is text, which both backends then compare byte-wise ([`bytewise`]) so a page lists the
/// same rows whichever database holds them.
#[derive(Debug, Clone, Copy)]
pub struct Key {
    pub expr: &'static str,
    pub column: &'static str,
    pub text: bool,
}

impl Key {
    pub const fn text(expr: &'static str, column: &'static str) -> Self {
        Self {
            expr,
            column,
            text: true,
        }
    }

    /// A timestamp (or number) key.
    pub const fn time(expr: &'static str, column: &'static str) -> Self {
        Self {
            expr,
            column,
            text: false,
        }
    }
}

/// How a list is ordered and paged: its cursor tag, and its sort keys (unique together), all
/// ascending or all descending. Pages are keyset pages: `limit` rows after the cursor, fewer
/// when the result would outgrow the result budget, and a `next_cursor` (the tag and the
/// last row's keys) exactly when rows were left out.
pub struct Order<'a> {
    pub tag: &'a str,
    pub keys: &'a [Key],
    pub descending: bool,
}

impl<'a> Order<'a> {
    /// Ascending on every key.
    pub const fn asc(tag: &'a str, keys: &'a [Key]) -> Self {
        Self {
            tag,
            keys,
            descending: false,
        }
    }

    /// Descending on every key (newest first).
    pub const fn desc(tag: &'a str, keys: &'a [Key]) -> Self {
        Self {
            tag,
            keys,
            descending: true,
        }
    }

    /// Adds "after the cursor" to `q`: `(k1 > $a OR (k1 = $a AND (k2 > $b …)))`, text keys
    /// followed by `bytewise` (what [`bytewise`] answers for the transaction).
    pub fn after(&self, bytewise: &str, q: &mut Query, page: &Paging) -> Result<(), ToolError> {
        let Some(after) = cursor(page, self.tag, self.keys.len())? else {
            return Ok(());
        };
        let marks: Vec<String> = after.iter().map(|v| q.bind(v.as_str())).collect();
        let past = if self.descending { "<" } else { ">" };
        let mut clause = String::new();
        for (i, (key, mark)) in self.keys.iter().zip(&marks).enumerate().rev() {
            let (expr, c) = (key.expr, if key.text { bytewise } else { "" });
            clause = if i + 1 == self.keys.len() {
                format!("{expr}{c} {past} {mark}")
            } else {
                format!("({expr}{c} {past} {mark} OR ({expr} = {mark} AND {clause}))")
            };
        }
        q.and(clause);
        Ok(())
    }

    /// The rows of one page of `select` (a `SELECT … FROM …`) filtered by `q`: up to
    /// `limit + 1`, the extra one saying that more exist.
    pub fn rows(
        &self,
        tx: &mut Tx<'_>,
        select: &str,
        q: &Query,
        page: &Paging,
    ) -> Result<Vec<Row>, TxError> {
        let mut q = q.clone();
        self.after(bytewise(tx), &mut q, page)?;
        let dir = if self.descending { " DESC" } else { "" };
        let order: Vec<String> = self
            .keys
            .iter()
            .map(|k| format!("{}{}{dir}", k.expr, if k.text { bytewise(tx) } else { "" }))
            .collect();
        let sql = format!(
            "{select}{} ORDER BY {} LIMIT {}",
            q.where_clause(),
            order.join(", "),
            page.limit + 1
        );
        Ok(tx.query(&sql, q.params())?)
    }

    /// The list result of `items`, the JSON of `rows` (from [`Order::rows`]): as many as fit
    /// `limit` and the result budget, and the cursor after the last one shown.
    pub fn result(
        &self,
        rows: &[Row],
        items: Vec<Value>,
        page: &Paging,
    ) -> Result<Value, StoreError> {
        // Room for the widest cursor its keys (at most 200 characters each) make.
        let widest = vec!["x".repeat(200); self.keys.len() + 1];
        let widest: Vec<&str> = widest.iter().map(String::as_str).collect();
        let base = serde_json::json!({"items": [], "next_cursor": encode_cursor(&widest)});
        let (items, more) = sdk_page(items, page.limit, &base, |_| String::new());
        let next = match (more, items.len().checked_sub(1).and_then(|i| rows.get(i))) {
            (Some(_), Some(last)) => {
                let mut parts = vec![self.tag.to_owned()];
                for key in self.keys {
                    parts.push(last.get_text(key.column)?);
                }
                Some(encode_cursor(
                    &parts.iter().map(String::as_str).collect::<Vec<_>>(),
                ))
            }
            _ => None,
        };
        Ok(page_result(items, next))
    }

    /// One page of `select` filtered by `q`, each row as `json` makes it: a list result.
    pub fn list(
        &self,
        tx: &mut Tx<'_>,
        select: &str,
        q: &Query,
        page: &Paging,
        json: impl Fn(&Row) -> Result<Value, StoreError>,
    ) -> Result<Value, TxError> {
        let rows = self.rows(tx, select, q, page)?;
        let items = rows.iter().map(json).collect::<Result<_, _>>()?;
        Ok(self.result(&rows, items, page)?)
    }
}

/// A clean-up of the rows of `table` that `q` selects, each read as `columns`: with `dry_run`,
/// how many there are and the first [`MAX_LISTED`] in `keys` order; otherwise the statement
/// `change` makes (`DELETE FROM …` or `UPDATE … SET …`, given `q` to bind its own values)
/// applied to all of them at once, and every row it changed, sorted the same way. One
/// statement, so what is reported is exactly what was changed.
pub fn sweep(
    tx: &mut Tx<'_>,
    table: &str,
    q: &Query,
    columns: &str,
    keys: &[Key],
    dry_run: bool,
    change: impl FnOnce(&mut Query) -> String,
) -> Result<(usize, Vec<Row>), TxError> {
    let filter = q.where_clause();
    if dry_run {
        let count = tx.query_one(
            &format!("SELECT COUNT(*) AS n FROM {table}{filter}"),
            q.params(),
        )?;
        let c = bytewise(tx);
        let order: Vec<String> = keys
            .iter()
            .map(|k| format!("{}{}", k.expr, if k.text { c } else { "" }))
            .collect();
        let sql = format!(
            "SELECT {columns} FROM {table}{filter} ORDER BY {} LIMIT {MAX_LISTED}",
            order.join(", ")
        );
        return Ok((count.get_i64("n")? as usize, tx.query(&sql, q.params())?));
    }
    let mut q = q.clone();
    let sql = format!("{}{filter} RETURNING {columns}", change(&mut q));
    let mut rows = tx.query(&sql, q.params())?;
    // `RETURNING` has no order of its own: the dry run's, with times compared as instants.
    let sort_key = |row: &Row| -> Vec<String> {
        keys.iter()
            .map(|k| match k.text {
                true => row.get_text(k.column).unwrap_or_default(),
                false => plugin::ts(row, k.column).unwrap_or_default(),
            })
            .collect()
    };
    rows.sort_by_cached_key(sort_key);
    Ok((rows.len(), rows))
}

/// Makes the link table `table` hold exactly the rows (`owner` = `id`, `column` = each of
/// `values`): a host's roles, an item's dependencies. `table` and the columns are the caller's
/// constants, never input.
pub fn replace_links(
    tx: &mut Tx<'_>,
    (table, owner, column): (&str, &str, &str),
    id: &str,
    values: &[String],
) -> Result<(), StoreError> {
    tx.execute(
        &format!("DELETE FROM {table} WHERE {owner} = $1"),
        &[id.into()],
    )?;
    let insert = format!("INSERT INTO {table} ({owner}, {column}) VALUES ($1, $2)");
    for value in values {
        tx.execute(&insert, &[id.into(), value.as_str().into()])?;
    }
    Ok(())
}

/// The JSON of each row, and with `related` (a field name, and lists by `id`) that field of
/// each holding the row's list (empty when none).
pub fn with_related(
    rows: &[Row],
    json: impl Fn(&Row) -> Result<Value, StoreError>,
    mut related: Option<(&str, Related)>,
) -> Result<Vec<Value>, StoreError> {
    let mut items = Vec::with_capacity(rows.len());
    for row in rows {
        let mut item = json(row)?;
        if let Some((name, found)) = &mut related {
            let list = found.remove(&row.get_text("id")?).unwrap_or_default();
            item[*name] = Value::Array(list);
            // A record keeps whole related records that fit one answer beside it (a source
            // checked out on many hosts): its description yields first (it shows its start;
            // the list without the related records shows it whole), then `<name>_omitted`
            // counts the related records left out.
            use coremcp_plugin_sdk::budget::{chars, cut_field, fit_array, LISTED_TEXT};
            let room = coremcp_plugin_sdk::budget::result_budget() - 300;
            if chars(&item) > room {
                cut_field(&mut item, "description", LISTED_TEXT);
            }
            let omitted = fit_array(&mut item, name, room);
            if omitted > 0 {
                item[format!("{name}_omitted")] = omitted.into();
            }
        }
        items.push(item);
    }
    Ok(items)
}

/// A record type with a permanent key, kept in one table: how its records are named in
/// messages, looked up, listed, added and patched. A group describes each of its record types
/// once and its list, add and update tools are a few lines each.
pub struct Entity {
    /// Its name in messages and list cursors: `theme`.
    pub noun: &'static str,
    /// What its tools' names start with, for the hints in messages: `registry_theme`
    /// (`…_list`, `…_update`).
    pub tools: &'static str,
    pub table: &'static str,
    /// The unique columns an insert of a taken key collides on: `key`, `project_id, name`.
    pub unique: &'static str,
    /// `SELECT … FROM …` of the columns its JSON needs, `id`, `version` and the timestamps.
    pub select: &'static str,
    /// Its JSON fields, as [`Record::of`] reads them (the stamps are added).
    pub fields: &'static str,
    /// Its key, which is also the order of its lists.
    pub key: &'static [Key],
}

/// The related records of each of a list's rows, by the row's `id`.
pub type Related = HashMap<String, Vec<Value>>;

/// What adds related records to a list's rows: given their `id`s, the records of each.
pub type Relate = fn(&mut Tx<'_>, &[String]) -> Result<Related, StoreError>;

/// The rows `sql` selects for `ids` (written in it as `{ids}`, which becomes their `IN` list),
/// each as `json` makes it, grouped by their column `by` (the id they relate to), in the order
/// `sql` gives.
pub fn related(
    tx: &mut Tx<'_>,
    sql: &str,
    ids: &[String],
    by: &str,
    json: impl Fn(&Row) -> Result<Value, StoreError>,
) -> Result<Related, StoreError> {
    let mut q = Query::new();
    let sql = sql.replace("{ids}", &q.in_list(ids));
    let mut out = Related::new();
    for row in tx.query(&sql, q.params())? {
        out.entry(row.get_text(by)?).or_default().push(json(&row)?);
    }
    Ok(out)
}

impl Entity {
    /// The JSON of a record's row.
    pub fn json(&self, row: &Row) -> Result<Value, StoreError> {
        Ok(Record::of(row, self.fields)?.stamps(row)?.done())
    }

    /// The record `key` in messages: `theme "ops"`, `source "CORE/api"`.
    pub fn what(&self, key: &[&str]) -> String {
        format!("{} \"{}\"", self.noun, key.join("/"))
    }

    pub fn get(&self, tx: &mut Tx<'_>, key: &[&str]) -> Result<Option<Row>, StoreError> {
        let mut q = Query::new();
        for (k, part) in self.key.iter().zip(key) {
            q.eq(k.expr, *part);
        }
        tx.query_opt(&format!("{}{}", self.select, q.where_clause()), q.params())
    }

    /// The record `key` in any status, which argument `field` names; a missing one is
    /// `not_found`.
    pub fn find(&self, tx: &mut Tx<'_>, field: &str, key: &[&str]) -> Result<Row, TxError> {
        let row = self.get(tx, key)?;
        let see = format!("see {}_list status all", self.tools);
        Ok(row.ok_or_else(|| not_found(field, format!("there is no {} ({see})", self.what(key))))?)
    }

    /// The `id` of the record `key`; with `active`, an archived one is `invalid_arguments`
    /// (new work never lands in an archive).
    pub fn id(
        &self,
        tx: &mut Tx<'_>,
        field: &str,
        key: &[&str],
        active: bool,
    ) -> Result<String, TxError> {
        let row = self.find(tx, field, key)?;
        if active && row.get_text("status")? != "active" {
            let again = format!("{}_update status active", self.tools);
            let problem = format!(
                "{} is archived; re-activate it first ({again})",
                self.what(key)
            );
            return Err(invalid(field, problem).into());
        }
        Ok(row.get_text("id")?)
    }

    /// Adds the record `key` with `columns` (a new `id`, version 1 and its timestamps are
    /// added); a taken key is a `conflict` naming the record's version. Returns the new row.
    pub fn add(
        &self,
        tx: &mut Tx<'_>,
        key: &[&str],
        columns: &[(&str, Param)],
    ) -> Result<Row, TxError> {
        let names: Vec<&str> = columns.iter().map(|(name, _)| *name).collect();
        let marks: Vec<String> = (2..=columns.len() + 1).map(|n| format!("${n}")).collect();
        let now = columns.len() + 2;
        let sql = format!(
            "INSERT INTO {} (id, {}, version, created_at, updated_at) VALUES ($1, {}, 1, ${now}, \
             ${now}) ON CONFLICT ({}) DO NOTHING RETURNING id",
            self.table,
            names.join(", "),
            marks.join(", "),
            self.unique
        );
        let mut params = vec![plugin::new_id().into()];
        params.extend(columns.iter().map(|(_, value)| value.clone()));
        params.push(plugin::now().into());
        let inserted = !tx.query(&sql, &params)?.is_empty();
        let row = self.find(tx, "key", key)?;
        if !inserted {
            let hint = format!("change it with {}_update", self.tools);
            return Err(duplicate(&self.what(key), row.get_i64("version")?, &hint).into());
        }
        Ok(row)
    }

    /// Patches the record `key` (argument `field`) with what `changes` computes from its row
    /// (see [`patch`]), after checking `expected_version`; answers its JSON as it then is.
    pub fn update<'c>(
        &self,
        tx: &mut Tx<'_>,
        field: &str,
        key: &[&str],
        expected_version: Option<u64>,
        changes: impl FnOnce(&mut Tx<'_>, &Row) -> Result<Vec<(&'c str, Option<Param>)>, TxError>,
    ) -> Result<Value, TxError> {
        let row = self.find(tx, field, key)?;
        let (what, expected) = (self.what(key), expected(expected_version));
        check_expected(&what, row.get_i64("version")?, expected)?;
        let changes = changes(tx, &row)?;
        if !patch(tx, self.table, &row, &what, expected, changes)? {
            return Ok(self.json(&row)?);
        }
        Ok(self.json(&self.find(tx, field, key)?)?)
    }

    /// One page of the records `q` selects, in key order after `page`'s cursor, as a list
    /// result; `related` adds each record's related list under its name.
    pub fn list(
        &self,
        tx: &mut Tx<'_>,
        q: &Query,
        page: &Paging,
        related: Option<(&str, Relate)>,
    ) -> Result<Value, TxError> {
        let order = Order::asc(self.noun, self.key);
        let rows = order.rows(tx, self.select, q, page)?;
        let related = match related {
            Some((name, fetch)) if !rows.is_empty() => Some((name, fetch(tx, &ids(&rows)?)?)),
            _ => None,
        };
        let items = with_related(&rows, |row| self.json(row), related)?;
        Ok(order.result(&rows, items, page)?)
    }
}

/// The `id`s of `rows`.
pub fn ids(rows: &[Row]) -> Result<Vec<String>, StoreError> {
    rows.iter().map(|r| r.get_text("id")).collect()
}

/// A record under construction: optional fields are only ever inserted when present.
#[derive(Debug, Default)]
pub struct Record(pub Map<String, Value>);

impl Record {
    /// The fields of `row` that `spec` lists, space-separated, each `name[=column][?][:type]`:
    /// the JSON name, the column when it differs, `?` when NULL leaves the field out, and the
    /// type — `text` (the default), `int`, `num`, `bool`, `ts` (a timestamp, normalised) or
    /// `json` (JSON text, parsed; a JSON `null` is left out too). E.g. `"key name description?
    /// version:int created_at:ts"`. A spec that names a column the row lacks is an error.
    pub fn of(row: &Row, spec: &str) -> Result<Self, StoreError> {
        let mut record = Self::default();
        for item in spec.split_whitespace() {
            let (item, kind) = item.split_once(':').unwrap_or((item, "text"));
            let (item, optional) = match item.strip_suffix('?') {
                Some(item) => (item, true),
                None => (item, false),
            };
            let (name, column) = item.split_once('=').unwrap_or((item, item));
            let value = match (optional, kind) {
                (true, "json") => {
                    Some(plugin::json_value(row.get_opt_text(column)?)).filter(|v| !v.is_null())
                }
                (false, "json") => Some(plugin::json_value(Some(row.get_text(column)?))),
                (true, "ts") => plugin::ts_opt(row, column)?.map(Value::from),
                (false, "ts") => Some(plugin::ts(row, column)?.into()),
                (true, "num") => row.get_opt_f64(column)?.map(Value::from),
                (false, "num") => Some(row.get_f64(column)?.into()),
                (true, "int") => row.get_opt_i64(column)?.map(Value::from),
                (false, "int") => Some(row.get_i64(column)?.into()),
                (false, "bool") => Some(row.get_bool(column)?.into()),
                (true, "text") => row.get_opt_text(column)?.map(Value::from),
                (false, "text") => Some(row.get_text(column)?.into()),
                _ => return Err(StoreError::Usage(format!("record spec: {item}:{kind}"))),
            };
            if let Some(value) = value {
                record.0.insert(name.to_owned(), value);
            }
        }
        Ok(record)
    }

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

/// Holds `row` as it was read, for a change that may turn out to change nothing (a link table
/// set to what it holds): the row is locked for the rest of the transaction and its version
/// must still be the one read, guarded like [`patch`], so what the transaction reads next is
/// what the next writer at that version would have to wait for.
pub fn hold(
    tx: &mut Tx<'_>,
    table: &str,
    row: &Row,
    what: &str,
    expected: Option<i64>,
) -> Result<(), TxError> {
    guard_row(tx, (table, row, what), expected, false)
}

/// Moves `row`'s `version` and `updated_at` for a change kept outside its own columns (a link
/// table: an item's dependencies), guarded by the version read like [`patch`]: of two writers
/// at one `expected_version`, exactly one wins, whichever field they touched.
pub fn touch(
    tx: &mut Tx<'_>,
    table: &str,
    row: &Row,
    what: &str,
    expected: Option<i64>,
) -> Result<(), TxError> {
    guard_row(tx, (table, row, what), expected, true)
}

/// [`hold`], or with `bump` [`touch`]: one guarded statement on the row as it was read.
fn guard_row(
    tx: &mut Tx<'_>,
    (table, row, what): (&str, &Row, &str),
    expected: Option<i64>,
    bump: bool,
) -> Result<(), TxError> {
    let id = row.get_text("id")?;
    let read = row.get_i64("version")?;
    let (sql, params): (String, Vec<Param>) = match bump {
        true => (
            format!(
                "UPDATE {table} SET version = version + 1, updated_at = $1 WHERE id = $2 AND \
                 version = $3"
            ),
            vec![plugin::now().into(), id.as_str().into(), read.into()],
        ),
        false => (
            format!("UPDATE {table} SET version = version WHERE id = $1 AND version = $2"),
            vec![id.as_str().into(), read.into()],
        ),
    };
    guarded_update(tx, &sql, &params, table, &id, what, expected)
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
    fn a_spec_reads_named_typed_and_optional_columns() {
        let row = Row::new(
            std::sync::Arc::from(["id", "n", "note", "at", "meta", "none", "on"].map(String::from)),
            vec![
                "x1".into(),
                7_i64.into(),
                Param::Null,
                "2026-01-02T03:04:05Z".into(),
                r#"{"a":1}"#.into(),
                Param::Null,
                true.into(),
            ],
        );
        let record = Record::of(
            &row,
            "key=id n:int note? at:ts meta:json none?:json on:bool n2=n:num",
        )
        .expect("spec");
        assert_eq!(
            record.done(),
            serde_json::json!({"key": "x1", "n": 7, "at": "2026-01-02T03:04:05.000Z",
                "meta": {"a": 1}, "on": true, "n2": 7.0})
        );
        assert!(Record::of(&row, "id:float").is_err());
        assert!(Record::of(&row, "missing").is_err());
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
        const KEYS: &[Key] = &[
            Key::text("p.key", "project_key"),
            Key::text("s.name", "name"),
        ];
        let order = Order::asc("source", KEYS);
        let page = Paging {
            limit: 50,
            cursor: Some(encode_cursor(&["source", "CORE", "api"])),
        };
        let mut q = Query::new();
        q.eq("s.kind", "git");
        order.after("", &mut q, &page).expect("our cursor");
        assert_eq!(
            q.where_clause(),
            " WHERE s.kind = $1 AND (p.key > $2 OR (p.key = $2 AND s.name > $3))"
        );
        let theirs = Paging {
            limit: 50,
            cursor: Some(encode_cursor(&["host", "a", "b"])),
        };
        let err = order
            .after("", &mut Query::new(), &theirs)
            .expect_err("another list's");
        assert!(err.message.contains("another list"), "{err}");
    }

    #[test]
    fn a_newest_first_order_pages_backwards_and_compares_text_bytewise() {
        const KEYS: &[Key] = &[Key::time("at", "at"), Key::text("id", "id")];
        let page = Paging {
            limit: 10,
            cursor: Some(encode_cursor(&[
                "active",
                "2026-01-01T00:00:00.000Z",
                "01J",
            ])),
        };
        let mut q = Query::new();
        Order::desc("active", KEYS)
            .after(" COLLATE \"C\"", &mut q, &page)
            .expect("our cursor");
        assert_eq!(
            q.where_clause(),
            " WHERE (at < $1 OR (at = $1 AND id COLLATE \"C\" < $2))"
        );
    }
}
