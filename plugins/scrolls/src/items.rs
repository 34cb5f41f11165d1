//! Items in the store: finding one by key, creating one under the level rules with its key
//! taken from its project's sequence, and setting what it depends on without a cycle. The tools
//! build on these; every rule about where an item may sit is checked here, in the transaction
//! that writes it.
//!
//! Invariants:
//! - An item's number is taken by one `UPDATE … RETURNING` on its project's sequence row in the
//!   create transaction: concurrent creates get distinct numbers, and a rolled-back create
//!   gives its number back (the row update rolls back too), so numbers have no gaps.
//! - A dependency that would close a cycle is refused with the path that would close it; the
//!   walk is a recursive query over the rows the new dependency reaches (each once).

use std::collections::{HashMap, HashSet, VecDeque};

use coremcp_plugin_sdk::args::invalid;
use coremcp_plugin_sdk::{codes, ToolError};
use coremcp_store::plugin::{new_id, now, TxError};
use coremcp_store::query::Query;
use coremcp_store::{Row, StoreError, Tx};

use crate::key::ItemKey;
use crate::level::{KeyRule, Level};

/// The columns an item is read with.
pub const COLUMNS: &str = "id, level, key, parent_id, project_id, seq, title, status, version";

/// A new item: what the caller gives, checked by the tool's arguments.
#[derive(Debug, Clone)]
pub struct NewItem<'a> {
    pub level: Level,
    /// The key of a theme or a project (given); `None` for the levels numbered on create.
    pub key: Option<&'a str>,
    /// The key of the item it sits under, and the argument that named it.
    pub parent: Option<(&'a str, &'a ItemKey)>,
    pub title: &'a str,
    pub priority: &'a str,
}

/// The item with key `key` (argument `field`), or `not_found` naming it.
pub fn find(tx: &mut Tx<'_>, field: &str, key: &str) -> Result<Row, TxError> {
    let sql = format!("SELECT {COLUMNS} FROM scrolls_item WHERE key = $1");
    let row = tx.query_opt(&sql, &[key.into()])?;
    Ok(row.ok_or_else(|| {
        ToolError::new(
            codes::NOT_FOUND,
            format!("argument \"{field}\": there is no item {key}"),
        )
    })?)
}

/// The level stored in `row`.
pub fn level_of(row: &Row) -> Result<Level, StoreError> {
    let text = row.get_text("level")?;
    Level::VALUES
        .iter()
        .position(|v| *v == text)
        .map(|i| crate::level::LEVELS[i].level)
        .ok_or_else(|| StoreError::Usage(format!("unknown level {text:?} in scrolls_item")))
}

/// Creates `item` and returns its row: checks that it may sit under its parent, takes its
/// number from the project's sequence for the numbered levels, and starts a project's own
/// sequence at 1.
pub fn create(tx: &mut Tx<'_>, item: &NewItem<'_>) -> Result<Row, TxError> {
    let parent = match item.parent {
        Some((field, key)) => Some((field, find(tx, field, &key.text())?)),
        None => None,
    };
    let parent_level = parent.as_ref().map(|(_, row)| level_of(row)).transpose()?;
    if let Err(problem) = item.level.check_parent(parent_level) {
        let field = parent.as_ref().map_or("parent", |(field, _)| *field);
        return Err(invalid(field, problem).into());
    }
    let parent_id = parent
        .as_ref()
        .map(|(_, row)| row.get_text("id"))
        .transpose()?;
    // The owning project: the parent when it is one, else the parent's own project.
    let project = match (&parent, parent_level) {
        (Some((_, row)), Some(Level::Project)) => Some((row.get_text("id")?, row.get_text("key")?)),
        (Some((_, row)), _) => match row.get_opt_text("project_id")? {
            Some(id) => {
                let key = tx.query_one(
                    "SELECT key FROM scrolls_item WHERE id = $1",
                    &[id.as_str().into()],
                )?;
                Some((id, key.get_text("key")?))
            }
            None => None,
        },
        (None, _) => None,
    };
    let (key, seq) = match (item.level.rules().key, item.key, &project) {
        (KeyRule::Sequence, _, Some((project_id, project_key))) => {
            let seq = tx
                .query_one(
                    "UPDATE scrolls_project_seq SET next_seq = next_seq + 1 WHERE project_id = $1 \
                     RETURNING next_seq - 1 AS seq",
                    &[project_id.as_str().into()],
                )?
                .get_i64("seq")?;
            (format!("{project_key}-{seq}"), Some(seq))
        }
        (KeyRule::Slug | KeyRule::ProjectKey, Some(key), _) => (key.to_owned(), None),
        (rule, given, _) => {
            return Err(StoreError::Usage(format!(
                "a {} is keyed {rule:?}; given key {given:?}, project {project:?}",
                item.level.as_str()
            ))
            .into())
        }
    };
    let id = new_id();
    let inserted = tx.query(
        "INSERT INTO scrolls_item (id, level, key, parent_id, project_id, seq, title, status, \
         priority, version, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, 'open', $8, 1, $9, $9) \
         ON CONFLICT (key) DO NOTHING RETURNING id",
        &[
            id.as_str().into(),
            item.level.as_str().into(),
            key.as_str().into(),
            parent_id.into(),
            project.as_ref().map(|(id, _)| id.as_str()).into(),
            seq.into(),
            item.title.into(),
            item.priority.into(),
            now().into(),
        ],
    )?;
    if inserted.is_empty() {
        return Err(ToolError::new(
            codes::CONFLICT,
            format!(
                "{} {key} already exists; change it with scrolls_{}_update",
                item.level.as_str(),
                item.level.as_str()
            ),
        )
        .into());
    }
    if item.level == Level::Project {
        tx.execute(
            "INSERT INTO scrolls_project_seq (project_id, next_seq) VALUES ($1, 1)",
            &[id.as_str().into()],
        )?;
    }
    find(tx, "key", &key)
}

/// Makes item `id` (key `key`) depend on exactly `on` (item ids, argument `field`), refusing a
/// dependency that would close a cycle with the path that closes it.
pub fn set_dependencies(
    tx: &mut Tx<'_>,
    field: &str,
    (id, key): (&str, &str),
    on: &[String],
) -> Result<(), TxError> {
    if on.iter().any(|d| d == id) {
        return Err(invalid(field, format!("{key} cannot depend on itself")).into());
    }
    if !on.is_empty() {
        if let Some(path) = path_back(tx, on, id)? {
            let cycle = std::iter::once(key.to_owned())
                .chain(path)
                .collect::<Vec<_>>()
                .join(" -> ");
            return Err(invalid(field, format!("would close the cycle {cycle}")).into());
        }
    }
    tx.execute(
        "DELETE FROM scrolls_dependency WHERE item_id = $1",
        &[id.into()],
    )?;
    for target in on {
        tx.execute(
            "INSERT INTO scrolls_dependency (item_id, depends_on_id) VALUES ($1, $2)",
            &[id.into(), target.as_str().into()],
        )?;
    }
    Ok(())
}

/// The keys from one of `from` to `to` along dependencies (both ends included), if `to` is
/// reachable: every item `from` reaches is read once by a recursive query, then the path is
/// found among them.
fn path_back(
    tx: &mut Tx<'_>,
    from: &[String],
    to: &str,
) -> Result<Option<Vec<String>>, StoreError> {
    let mut q = Query::new();
    let starts = q.in_list(from);
    let sql = format!(
        "WITH RECURSIVE reach(id) AS ( \
             SELECT id FROM scrolls_item WHERE id IN {starts} \
             UNION SELECT d.depends_on_id FROM reach r \
                 JOIN scrolls_dependency d ON d.item_id = r.id) \
         SELECT d.item_id, d.depends_on_id FROM scrolls_dependency d \
         WHERE d.item_id IN (SELECT id FROM reach)"
    );
    let mut edges: HashMap<String, Vec<String>> = HashMap::new();
    for row in tx.query(&sql, q.params())? {
        edges
            .entry(row.get_text("item_id")?)
            .or_default()
            .push(row.get_text("depends_on_id")?);
    }
    // Breadth first, so the path shown is a shortest one.
    let mut came_from: HashMap<String, Option<String>> =
        from.iter().map(|f| (f.clone(), None)).collect();
    let mut queue: VecDeque<String> = from.iter().cloned().collect();
    let mut seen: HashSet<String> = from.iter().cloned().collect();
    while let Some(at) = queue.pop_front() {
        if at == to {
            let mut ids = vec![at.clone()];
            while let Some(Some(prev)) = came_from.get(ids.last().map_or("", String::as_str)) {
                ids.push(prev.clone());
            }
            ids.reverse();
            return keys_of(tx, &ids).map(Some);
        }
        for next in edges.get(&at).into_iter().flatten() {
            if seen.insert(next.clone()) {
                came_from.insert(next.clone(), Some(at.clone()));
                queue.push_back(next.clone());
            }
        }
    }
    Ok(None)
}

/// The keys of item `ids`, in their order.
fn keys_of(tx: &mut Tx<'_>, ids: &[String]) -> Result<Vec<String>, StoreError> {
    let mut q = Query::new();
    let list = q.in_list(ids);
    let mut keys: HashMap<String, String> = HashMap::new();
    for row in tx.query(
        &format!("SELECT id, key FROM scrolls_item WHERE id IN {list}"),
        q.params(),
    )? {
        keys.insert(row.get_text("id")?, row.get_text("key")?);
    }
    Ok(ids
        .iter()
        .map(|id| keys.get(id).cloned().unwrap_or_else(|| id.clone()))
        .collect())
}
