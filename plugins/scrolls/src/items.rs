//! Items in the store: finding one by key, creating one under the level rules with its key
//! taken from its project's sequence, setting what it depends on without a cycle, closing and
//! deleting (with `cascade`), moving, claiming, and the activity log. The tools build on these;
//! every rule about items is checked here, in the transaction that writes it.
//!
//! Invariants:
//! - An item's number is taken by one `UPDATE … RETURNING` on its project's sequence row in the
//!   create transaction: concurrent creates get distinct numbers, and a rolled-back create
//!   gives its number back (the row update rolls back too), so numbers have no gaps.
//! - A dependency that would close a cycle is refused with the path that would close it; the
//!   walk is a recursive query over the rows the new dependency reaches (each once).
//! - A close or delete with `cascade` changes the whole subtree in one statement, so it lands
//!   whole or not at all; without it, open descendants (close) or any child (delete) refuse it.
//! - The activity log is only appended to; a deleted item's rows keep its key.

use std::collections::{HashMap, HashSet, VecDeque};

use coremcp_plugin_sdk::args::invalid;
use coremcp_plugin_sdk::{codes, ToolError};
use coremcp_store::plugin::{new_id, now, TxError};
use coremcp_store::query::Query;
use coremcp_store::records::replace_links;
use coremcp_store::{Param, Row, StoreError, Tx};

use crate::key::ItemKey;
use crate::level::{KeyRule, Level};

/// `prefix` before each of the columns, comma separated, as one literal.
macro_rules! columns_of {
    ($prefix:literal; $first:literal $(, $column:literal)*) => {
        concat!($prefix, $first $(, ", ", $prefix, $column)*)
    };
}

/// An item's own columns, as `SELECT` reads them (qualified `i.`) and as a create returns them.
macro_rules! item_columns {
    ($prefix:literal) => {
        columns_of!($prefix; "id", "level", "key", "parent_id", "project_id", "seq", "title",
            "description", "status", "priority", "assignee_id", "labels", "estimate", "due_date",
            "acceptance_criteria", "external_ref", "registry_key", "resolution", "version",
            "created_at", "updated_at", "started_at", "closed_at", "lead_id")
    };
}

/// An item row with the keys and names its JSON shows.
pub const SELECT: &str = concat!(
    "SELECT ",
    item_columns!("i."),
    ", p.key AS parent_key, pr.key AS project_key, a.name AS assignee_name, \
    la.name AS lead_name \
    FROM scrolls_item i LEFT JOIN scrolls_item p ON p.id = i.parent_id \
    LEFT JOIN scrolls_item pr ON pr.id = i.project_id AND pr.id <> i.id \
    LEFT JOIN scrolls_agent a ON a.id = i.assignee_id \
    LEFT JOIN scrolls_agent la ON la.id = i.lead_id"
);

/// An item's JSON fields (see `Record::of`).
const FIELDS: &str = "key level title description? status priority parent=parent_key? \
    project=project_key? assignee=assignee_name? lead=lead_name? labels?:json estimate?:num \
    due_date? \
    acceptance_criteria?:json external_ref? registry_theme=registry_key? resolution? \
    version:int created_at:ts updated_at:ts started_at?:ts closed_at?:ts";

/// An item row (from [`SELECT`]) as JSON.
pub fn json(row: &Row) -> Result<serde_json::Value, StoreError> {
    Ok(coremcp_store::records::Record::of(row, FIELDS)?.done())
}

/// An item as a tool answers it alone (get, create, update, claim, move, close): whole, but
/// for a description longer than the answer may hold, shown from character `offset` and cut
/// with `description_truncated`, `description_total_chars` and `description_next_offset`
/// (the `offset` of the get tool that reads on). `room` is what the answer holds besides.
pub fn answer(row: &Row, offset: usize, room: usize) -> Result<serde_json::Value, StoreError> {
    let mut item = json(row)?;
    coremcp_plugin_sdk::budget::fit_fields(&mut item, &[("description", offset)], room);
    Ok(item)
}

/// An item as a list shows it: its description cut to
/// [`coremcp_plugin_sdk::budget::LISTED_TEXT`] characters (its get tool reads the rest).
pub fn listed_json(row: &Row) -> Result<serde_json::Value, StoreError> {
    let mut item = json(row)?;
    let shown = coremcp_plugin_sdk::budget::LISTED_TEXT;
    coremcp_plugin_sdk::budget::cut_field(&mut item, "description", shown);
    Ok(item)
}

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
    let sql = format!("{SELECT} WHERE i.key = $1");
    let row = tx.query_opt(&sql, &[key.into()])?;
    Ok(row.ok_or_else(|| {
        ToolError::new(
            codes::NOT_FOUND,
            format!(
                "argument \"{field}\": there is no item {key}{}",
                key_hint(key)
            ),
        )
    })?)
}

/// What a missing key may have meant: the form item keys take, and the capitals a key that
/// was typed in lower case needs.
fn key_hint(key: &str) -> String {
    let upper = key.to_uppercase();
    let numbered = upper.rsplit_once('-').is_some_and(|(p, n)| {
        !p.is_empty() && !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())
    });
    if upper != key && numbered {
        return format!(" (item keys are in capitals: did you mean {upper}?)");
    }
    " (a key is a theme's slug such as reliability, a project's key such as CORE, or PROJECT-n \
     such as CORE-42)"
        .to_owned()
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

/// Creates `item` with `columns` set besides (a `None` value leaves a column alone; a given
/// `status` or `priority` wins over the defaults) and returns its row as [`SELECT`] reads it:
/// checks that it may sit under its parent, takes its number from the project's sequence for
/// the numbered levels, and starts a project's own sequence at 1. One `INSERT` writes the row
/// whole and returns it.
pub fn create(
    tx: &mut Tx<'_>,
    item: &NewItem<'_>,
    columns: Vec<(&str, Option<Param>)>,
) -> Result<Row, TxError> {
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
    // The owning project: the parent's (a project's own is itself).
    let project = match &parent {
        Some((_, row)) => match row.get_opt_text("project_id")? {
            Some(id) => {
                let key = match row.get_opt_text("project_key")? {
                    Some(key) => key,
                    None => row.get_text("key")?,
                };
                Some((id, key))
            }
            None => None,
        },
        None => None,
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
    let (own_project, project_key) = match (item.level, project) {
        (Level::Project, _) => (Some(id.clone()), None),
        (_, Some((id, key))) => (Some(id), Some(key)),
        (_, None) => (None, None),
    };
    let parent_key = match &parent {
        Some((_, row)) => Some(row.get_text("key")?),
        None => None,
    };
    let at = now();
    let mut row: Vec<(&str, Param)> = vec![
        ("id", id.as_str().into()),
        ("level", item.level.as_str().into()),
        ("key", key.as_str().into()),
        ("parent_id", parent_id.into()),
        ("project_id", own_project.into()),
        ("seq", seq.into()),
        ("title", item.title.into()),
        ("status", "open".into()),
        ("priority", item.priority.into()),
        ("version", 1i64.into()),
        ("created_at", at.as_str().into()),
        ("updated_at", at.as_str().into()),
    ];
    for (column, value) in columns {
        let Some(value) = value else { continue };
        match row.iter_mut().find(|(c, _)| *c == column) {
            Some(given) => given.1 = value,
            None => row.push((column, value)),
        }
    }
    let mut q = Query::new();
    let names: Vec<&str> = row.iter().map(|(c, _)| *c).collect();
    let values: Vec<String> = row.into_iter().map(|(_, v)| q.bind(v)).collect();
    let (parent_key, project_key) = (q.bind(parent_key), q.bind(project_key));
    let inserted = tx.query_opt(
        &format!(
            "INSERT INTO scrolls_item ({}) VALUES ({}) ON CONFLICT (key) DO NOTHING \
             RETURNING {}, CAST({parent_key} AS TEXT) AS parent_key, \
             CAST({project_key} AS TEXT) AS project_key, \
             (SELECT name FROM scrolls_agent WHERE id = assignee_id) AS assignee_name, \
             (SELECT name FROM scrolls_agent WHERE id = lead_id) AS lead_name",
            names.join(", "),
            values.join(", "),
            item_columns!("")
        ),
        q.params(),
    )?;
    let Some(inserted) = inserted else {
        return Err(ToolError::new(
            codes::CONFLICT,
            format!(
                "{} {key} already exists; change it with scrolls_{}_update",
                item.level.as_str(),
                item.level.as_str()
            ),
        )
        .into());
    };
    if item.level == Level::Project {
        tx.execute(
            "INSERT INTO scrolls_project_seq (project_id, next_seq) VALUES ($1, 1)",
            &[id.as_str().into()],
        )?;
    }
    Ok(inserted)
}

/// The ids `id` depends on, sorted.
pub fn dependency_ids(tx: &mut Tx<'_>, id: &str) -> Result<Vec<String>, TxError> {
    let rows = tx.query(
        "SELECT depends_on_id FROM scrolls_dependency WHERE item_id = $1",
        &[id.into()],
    )?;
    let mut ids = rows
        .iter()
        .map(|row| row.get_text("depends_on_id"))
        .collect::<Result<Vec<_>, _>>()?;
    // Sorted here, not by the database, whose collation may not be byte order.
    ids.sort();
    ids.dedup();
    Ok(ids)
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
    let links = ("scrolls_dependency", "item_id", "depends_on_id");
    Ok(replace_links(tx, links, id, on)?)
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

/// How a close ends an item (`resolution`): `done` makes it `done`, the others `cancelled`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, coremcp_plugin_sdk::ArgEnum)]
pub enum Resolution {
    Done,
    Cancelled,
    Duplicate,
    WontDo,
}

impl Resolution {
    /// The status a closed item gets.
    pub fn status(self) -> &'static str {
        match self {
            Resolution::Done => "done",
            Resolution::Cancelled | Resolution::Duplicate | Resolution::WontDo => "cancelled",
        }
    }
}

/// The statuses of a closed item.
pub const CLOSED: &str = "('done', 'cancelled')";

/// Appends one row to the activity log: who did `action` to item `id` (key `key`).
pub fn log(
    tx: &mut Tx<'_>,
    action: &str,
    item: (Option<&str>, &str),
    actor: Option<&str>,
    changes: Option<&serde_json::Value>,
) -> Result<(), StoreError> {
    log_each(tx, action, &[(item, changes.cloned())], actor)
}

/// Rows of the activity log a statement writes at most (7 parameters each, under every
/// backend's limit on parameters).
const LOG_ROWS_PER_INSERT: usize = 500;

/// One activity row to write: the item's (id, key), and what changed.
pub type Logged<'a> = ((Option<&'a str>, &'a str), Option<serde_json::Value>);

/// Appends one row per item of `items` to the activity log, a few hundred per statement.
pub fn log_each(
    tx: &mut Tx<'_>,
    action: &str,
    items: &[Logged<'_>],
    actor: Option<&str>,
) -> Result<(), StoreError> {
    let at = now();
    for chunk in items.chunks(LOG_ROWS_PER_INSERT) {
        let mut q = Query::new();
        let rows: Vec<String> = chunk
            .iter()
            .map(|((id, key), changes)| {
                let values = [
                    q.bind(new_id()),
                    q.bind(at.as_str()),
                    q.bind(actor),
                    q.bind(*id),
                    q.bind(*key),
                    q.bind(action),
                    q.bind(changes.as_ref().map(coremcp_store::plugin::json_text)),
                ];
                format!("({})", values.join(", "))
            })
            .collect();
        tx.execute(
            &format!(
                "INSERT INTO scrolls_activity (id, at, actor, item_id, item_key, action, changes) \
                 VALUES {}",
                rows.join(", ")
            ),
            q.params(),
        )?;
    }
    Ok(())
}

/// `WITH RECURSIVE tree(id)`: the items under item `$1`, at any depth.
const TREE: &str = "WITH RECURSIVE tree(id) AS ( \
    SELECT id FROM scrolls_item WHERE parent_id = $1 \
    UNION SELECT i.id FROM scrolls_item i JOIN tree t ON i.parent_id = t.id) ";

/// An item under another: its id, key and status.
#[derive(Debug, Clone)]
pub struct Under {
    pub id: String,
    pub key: String,
    pub status: String,
}

/// The items under item `id` at any depth, `open_only` those not closed, in key order: one
/// recursive query over `parent_id`.
pub fn descendants(tx: &mut Tx<'_>, id: &str, open_only: bool) -> Result<Vec<Under>, StoreError> {
    let open = if open_only {
        format!(" AND status NOT IN {CLOSED}")
    } else {
        String::new()
    };
    let sql = format!(
        "{TREE}SELECT id, key, status FROM scrolls_item WHERE id IN (SELECT id FROM tree){open}"
    );
    let mut out: Vec<Under> = tx
        .query(&sql, &[id.into()])?
        .iter()
        .map(|r| {
            Ok(Under {
                id: r.get_text("id")?,
                key: r.get_text("key")?,
                status: r.get_text("status")?,
            })
        })
        .collect::<Result<_, StoreError>>()?;
    out.sort_by(|a, b| a.key.cmp(&b.key));
    Ok(out)
}

/// Some of `keys` as an error shows them.
fn listed(keys: &[Under]) -> String {
    let shown: Vec<&str> = keys.iter().take(5).map(|u| u.key.as_str()).collect();
    let more = keys.len().saturating_sub(shown.len());
    match more {
        0 => shown.join(", "),
        n => format!("{}, and {n} more", shown.join(", ")),
    }
}

/// Closes item `key` with `resolution`: refused while it has open descendants, unless
/// `cascade`, which closes them too in the same transaction. Closing a closed item changes
/// nothing. Returns the keys it closed.
pub fn close(
    tx: &mut Tx<'_>,
    key: &str,
    resolution: Resolution,
    cascade: bool,
    actor: Option<&str>,
) -> Result<Vec<String>, TxError> {
    let row = find(tx, "id", key)?;
    let id = row.get_text("id")?;
    if matches!(row.get_text("status")?.as_str(), "done" | "cancelled") {
        return Ok(Vec::new());
    }
    let open = descendants(tx, &id, true)?;
    if !open.is_empty() && !cascade {
        return Err(ToolError::new(
            codes::CONFLICT,
            format!(
                "{key} has {} open descendants ({}): close them first, or pass cascade: true to \
                 close them with it",
                open.len(),
                listed(&open)
            ),
        )
        .into());
    }
    // One statement over the same subtree, so the close lands whole or not at all whatever
    // its size.
    tx.execute(
        &format!(
            "{TREE}UPDATE scrolls_item SET status = $2, resolution = $3, closed_at = $4, \
             updated_at = $4, version = version + 1 \
             WHERE id = $1 OR (id IN (SELECT id FROM tree) AND status NOT IN {CLOSED})"
        ),
        &[
            id.as_str().into(),
            resolution.status().into(),
            resolution.as_str().into(),
            now().into(),
        ],
    )?;
    let root = Under {
        id,
        key: key.to_owned(),
        status: row.get_text("status")?,
    };
    let closing: Vec<Under> = std::iter::once(root).chain(open).collect();
    let logged: Vec<_> = closing
        .iter()
        .map(|u| {
            let changes = serde_json::json!({"status": [u.status, resolution.status()]});
            ((Some(u.id.as_str()), u.key.as_str()), Some(changes))
        })
        .collect();
    log_each(tx, "closed", &logged, actor)?;
    Ok(closing.into_iter().map(|u| u.key).collect())
}

/// Deletes item `key`: refused while it has children, unless `cascade`, which deletes its whole
/// subtree in the same statement. The activity log keeps a `deleted` row of each. Returns the
/// keys it deleted.
pub fn delete(
    tx: &mut Tx<'_>,
    key: &str,
    cascade: bool,
    actor: Option<&str>,
) -> Result<Vec<String>, TxError> {
    let row = find(tx, "id", key)?;
    let id = row.get_text("id")?;
    let under = descendants(tx, &id, false)?;
    if !under.is_empty() && !cascade {
        return Err(ToolError::new(
            codes::CONFLICT,
            format!(
                "{key} has {} items under it ({}): delete or move them first, or pass cascade: \
                 true to delete them with it",
                under.len(),
                listed(&under)
            ),
        )
        .into());
    }
    let keys: Vec<String> = std::iter::once(key.to_owned())
        .chain(under.into_iter().map(|u| u.key))
        .collect();
    // The history of what is removed stays in the feed of every scope above it: its rows,
    // and one `deleted` row per removed item, point at the nearest surviving ancestor (the
    // key each carries still names the item).
    let survivor = row.get_opt_text("parent_id")?;
    tx.execute(
        &format!(
            "{TREE}UPDATE scrolls_activity SET item_id = $2 \
             WHERE item_id = $1 OR item_id IN (SELECT id FROM tree)"
        ),
        &[id.as_str().into(), survivor.as_deref().into()],
    )?;
    let logged: Vec<_> = keys
        .iter()
        .map(|k| ((survivor.as_deref(), k.as_str()), None))
        .collect();
    log_each(tx, "deleted", &logged, actor)?;
    tx.execute(
        &format!("{TREE}DELETE FROM scrolls_item WHERE id = $1 OR id IN (SELECT id FROM tree)"),
        &[id.as_str().into()],
    )?;
    Ok(keys)
}

/// Moves item `key` under `new_parent` (argument `field`), keeping its key: the level rules
/// hold, and a numbered item stays in its project (its key carries the project's).
pub fn move_to(
    tx: &mut Tx<'_>,
    key: &str,
    field: &str,
    new_parent: &str,
    actor: Option<&str>,
) -> Result<(), TxError> {
    let row = find(tx, "id", key)?;
    let (id, level) = (row.get_text("id")?, level_of(&row)?);
    let parent = find(tx, field, new_parent)?;
    let (parent_id, parent_level) = (parent.get_text("id")?, level_of(&parent)?);
    if let Err(problem) = level.check_parent(Some(parent_level)) {
        return Err(invalid(field, problem).into());
    }
    // Every level sits only under higher ones, so the rule above already keeps an item from
    // going under itself or its own subtree.
    // A project counts in itself; anything else stays in its project.
    let parent_project = parent.get_opt_text("project_id")?;
    if level != Level::Project
        && row.get_opt_text("project_id")?.is_some()
        && row.get_opt_text("project_id")? != parent_project
    {
        let problem = format!(
            "{new_parent} is in another project: {key} keeps its key, which names its project, so \
             it moves only within it"
        );
        return Err(invalid(field, problem).into());
    }
    tx.execute(
        "UPDATE scrolls_item SET parent_id = $1, updated_at = $2, version = version + 1 \
         WHERE id = $3",
        &[parent_id.as_str().into(), now().into(), id.as_str().into()],
    )?;
    let old_parent = match row.get_opt_text("parent_id")? {
        Some(old) => tx
            .query_opt(
                "SELECT key FROM scrolls_item WHERE id = $1",
                &[old.as_str().into()],
            )?
            .map(|r| r.get_text("key"))
            .transpose()?,
        None => None,
    };
    let changes = serde_json::json!({"parent": [old_parent, new_parent]});
    log(tx, "moved", (Some(&id), key), actor, Some(&changes))?;
    Ok(())
}

/// Gives item `key` to agent `agent` and sets it `in_progress`, in one conditional update: it
/// must not be closed, and be held by nobody else (or by anyone, with `force`), so of two
/// agents claiming at once exactly one wins; an agent may claim again what it holds. A lost
/// race or a held item is a `conflict` naming the holder.
pub fn claim(tx: &mut Tx<'_>, key: &str, agent: &str, force: bool) -> Result<(), TxError> {
    let agent_id = crate::agents::assignable(tx, "agent", agent)?;
    let held = if force {
        ""
    } else {
        " AND (assignee_id IS NULL OR assignee_id = $2)"
    };
    let claimed = tx.query_opt(
        &format!(
            "UPDATE scrolls_item SET assignee_id = $2, status = 'in_progress', \
             started_at = COALESCE(started_at, $3), updated_at = $3, version = version + 1 \
             WHERE key = $1 AND status IN ('open', 'blocked', 'in_progress'){held} RETURNING id"
        ),
        &[key.into(), agent_id.as_str().into(), now().into()],
    )?;
    if let Some(row) = claimed {
        let id = row.get_text("id")?;
        log(tx, "claimed", (Some(&id), key), Some(agent), None)?;
        return Ok(());
    }
    // Why not: no such item, a closed one, or another agent's.
    let row = tx.query_opt(
        "SELECT i.status, a.name AS holder FROM scrolls_item i \
         LEFT JOIN scrolls_agent a ON a.id = i.assignee_id WHERE i.key = $1",
        &[key.into()],
    )?;
    let Some(row) = row else {
        return Err(find(tx, "id", key)
            .err()
            .unwrap_or_else(|| StoreError::Busy.into()));
    };
    let status = row.get_text("status")?;
    let message = match row.get_opt_text("holder")? {
        Some(holder) if status != "done" && status != "cancelled" => {
            format!("{key} is held by {holder}; pass force: true to take it over")
        }
        _ => format!("{key} is {status}: only an open or blocked item can be claimed"),
    };
    Err(ToolError::new(codes::CONFLICT, message).into())
}

/// Adds a comment by `author` to item `key`, logged as `commented`; returns its id.
pub fn comment(
    tx: &mut Tx<'_>,
    key: &str,
    author: Option<&str>,
    body: &str,
) -> Result<String, TxError> {
    let item = find(tx, "id", key)?.get_text("id")?;
    let id = new_id();
    tx.execute(
        "INSERT INTO scrolls_comment (id, item_id, author, body, created_at) \
         VALUES ($1, $2, $3, $4, $5)",
        &[
            id.as_str().into(),
            item.as_str().into(),
            author.into(),
            body.into(),
            now().into(),
        ],
    )?;
    log(tx, "commented", (Some(&item), key), author, None)?;
    Ok(id)
}
