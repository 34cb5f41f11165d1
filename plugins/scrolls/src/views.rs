//! The views computed in the database, never by loading a tree into the plugin: the ready
//! queue, a subtree's progress, and ranked search over items and their comments.
//!
//! Invariants:
//! - A subtree is one recursive query over `parent_id` from its root (the root included);
//!   counts are `GROUP BY` over it.
//! - The ready queue holds open items whose every dependency is closed, unassigned or the
//!   given agent's, ordered by priority (urgent first), due date (dated first), age, key.
//! - Search ranks an item by its best match, in its own title and description or in one of its
//!   comments, through the store layer's search indexes.
//! - The activity feed pages by id, newest first; ids made by one process sort in the order of
//!   the writes, so a page never reorders them.

use coremcp_plugin_sdk::page::Paging;
use coremcp_store::plugin::TxError;
use coremcp_store::query::{bytewise, Query};
use coremcp_store::records::{Key, Order, Record};
use coremcp_store::search;
use coremcp_store::{BackendKind, Row, StoreError, Tx};
use serde_json::Value;

use crate::items::CLOSED;
use crate::level::Level;
use crate::schema::{COMMENT_SEARCH, ITEM_SEARCH};

/// Priority as a sort rank, urgent first.
pub const PRIORITY_RANK: &str = "CASE i.priority WHEN 'urgent' THEN 0 WHEN 'high' THEN 1 \
    WHEN 'medium' THEN 2 WHEN 'low' THEN 3 ELSE 4 END";

/// The columns a listed item shows.
pub const LISTED: &str = "i.key, i.level, i.title, i.status, i.priority, i.due_date, \
    i.created_at, i.version";

/// A listed item row (from [`LISTED`]) as JSON.
pub fn listed(row: &Row) -> Result<Value, StoreError> {
    let fields = "key level title status priority due_date? version:int created_at:ts";
    Ok(Record::of(row, fields)?.done())
}

/// `(a, b, …)` of `levels` bound in `q`.
fn levels_in(q: &mut Query, levels: &[Level]) -> String {
    let names: Vec<String> = levels.iter().map(|l| l.as_str().to_owned()).collect();
    q.in_list(&names)
}

/// The ready queue: at most `limit` open items of `levels` (in the project with id `project`,
/// when given) whose dependencies are all closed and that nobody holds but `agent`.
pub fn ready(
    tx: &mut Tx<'_>,
    agent: Option<&str>,
    project: Option<&str>,
    levels: &[Level],
    limit: usize,
) -> Result<Vec<Row>, StoreError> {
    let mut q = Query::new();
    q.and("i.status = 'open'");
    let levels = levels_in(&mut q, levels);
    q.and(format!("i.level IN {levels}"));
    q.and(format!(
        "NOT EXISTS (SELECT 1 FROM scrolls_dependency d \
         JOIN scrolls_item x ON x.id = d.depends_on_id \
         WHERE d.item_id = i.id AND x.status NOT IN {CLOSED})"
    ));
    match agent {
        Some(agent) => {
            let p = q.bind(agent);
            q.and(format!(
                "(i.assignee_id IS NULL OR i.assignee_id = \
                 (SELECT id FROM scrolls_agent WHERE name = {p}))"
            ));
        }
        None => q.and("i.assignee_id IS NULL"),
    }
    q.eq_opt("i.project_id", project);
    let sql = format!(
        "SELECT {LISTED} FROM scrolls_item i{} ORDER BY {PRIORITY_RANK}, \
         i.due_date IS NULL, i.due_date, i.created_at, i.key LIMIT {limit}",
        q.where_clause()
    );
    tx.query(&sql, q.params())
}

/// The subtree of item `root_id` (itself included), as a `WITH RECURSIVE subtree(id)` clause
/// whose `$n` is bound in `q`.
fn subtree(q: &mut Query, root_id: &str) -> String {
    let root = q.bind(root_id);
    format!(
        "WITH RECURSIVE subtree(id) AS (SELECT id FROM scrolls_item WHERE id = {root} \
         UNION SELECT i.id FROM scrolls_item i JOIN subtree s ON i.parent_id = s.id) "
    )
}

/// Item counts of the subtree of `root_id` by `by` (status, level, the assignee's name, or each
/// label: an item with two labels counts under both, one with none under no label), with the
/// estimate summed: `(value, count, estimate)`, no value first, then by value.
pub fn counts(
    tx: &mut Tx<'_>,
    root_id: &str,
    by: By,
) -> Result<Vec<(Option<String>, i64, f64)>, StoreError> {
    let mut q = Query::new();
    let with = subtree(&mut q, root_id);
    // No value first, then by value byte-wise, on both backends.
    let c = bytewise(tx);
    let (column, join) = match by {
        By::Status => ("i.status", ""),
        By::Level => ("i.level", ""),
        By::Assignee => (
            "a.name",
            " LEFT JOIN scrolls_agent a ON a.id = i.assignee_id",
        ),
        // The one JSON array walk the backends spell differently.
        By::Label => match tx.kind() {
            BackendKind::Sqlite => ("l.value", " LEFT JOIN json_each(i.labels) l"),
            BackendKind::Postgres => (
                "l.value",
                " LEFT JOIN jsonb_array_elements_text(i.labels) AS l(value) ON true",
            ),
        },
    };
    let sql = format!(
        "{with}SELECT {column} AS value, COUNT(*) AS n, \
         COALESCE(SUM(i.estimate), 0) AS estimate FROM scrolls_item i{join} \
         WHERE i.id IN (SELECT id FROM subtree) GROUP BY {column} \
         ORDER BY {column} IS NOT NULL, {column}{c}"
    );
    tx.query(&sql, q.params())?
        .iter()
        .map(|r| {
            Ok((
                r.get_opt_text("value")?,
                r.get_i64("n")?,
                r.get_f64("estimate")?,
            ))
        })
        .collect()
}

/// What progress counts group by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum By {
    Status,
    Level,
    Assignee,
    Label,
}

/// What a search keeps of the items it finds.
#[derive(Debug, Default)]
pub struct Within<'a> {
    pub levels: &'a [Level],
    /// The owning project's id.
    pub project: Option<&'a str>,
    pub statuses: &'a [String],
    pub include_closed: bool,
}

/// The items best matching `query` (see [`search::words`]) in their title and description or
/// in a comment on them, among those `within` keeps, best first, at most `limit`; empty when
/// the query has no words.
pub fn search(
    tx: &mut Tx<'_>,
    query: &str,
    within: &Within<'_>,
    limit: usize,
) -> Result<Vec<Row>, StoreError> {
    let words = search::words(query);
    let kind = tx.kind();
    // One parameter list for both halves and the filters; each is written with its own
    // condition.
    let mut q = Query::new();
    let (Some(items), Some(comments)) = (
        ITEM_SEARCH.matching(kind, &mut q, &words),
        COMMENT_SEARCH.matching(kind, &mut q, &words),
    ) else {
        return Ok(Vec::new());
    };
    let mut keep = vec!["TRUE".to_owned()];
    if !within.levels.is_empty() {
        keep.push(format!("i.level IN {}", levels_in(&mut q, within.levels)));
    }
    if let Some(project) = within.project {
        keep.push(format!(
            "(i.project_id = {0} OR i.id = {0})",
            q.bind(project)
        ));
    }
    if !within.statuses.is_empty() {
        keep.push(format!("i.status IN {}", q.in_list(within.statuses)));
    } else if !within.include_closed {
        keep.push(format!("i.status NOT IN {CLOSED}"));
    }
    let sql = format!(
        "SELECT {LISTED}, m.rank FROM ( \
             SELECT id, MAX(rank) AS rank FROM ( \
                 SELECT scrolls_item.id AS id, {} AS rank FROM scrolls_item{} WHERE {} \
                 UNION ALL \
                 SELECT scrolls_comment.item_id AS id, {} AS rank FROM scrolls_comment{} \
                 WHERE {}) hits GROUP BY id) m \
         JOIN scrolls_item i ON i.id = m.id WHERE {} ORDER BY m.rank DESC, i.key LIMIT {limit}",
        items.rank,
        items.join,
        items.condition,
        comments.rank,
        comments.join,
        comments.condition,
        keep.join(" AND ")
    );
    tx.query(&sql, q.params())
}

/// The activity feed, newest first and paged by id: what was done to the subtree of item
/// `scope` (its id; deleted items' rows then drop out, their key no longer places them), by
/// `actor`, since `since` (a stored timestamp), of `actions`, as a list result.
pub fn activity(
    tx: &mut Tx<'_>,
    scope: Option<&str>,
    actor: Option<&str>,
    since: Option<&str>,
    actions: &[String],
    page: &Paging,
) -> Result<Value, TxError> {
    const ORDER: Order<'static> = Order::desc("activity", &[Key::text("a.id", "id")]);
    let mut q = Query::new();
    let with = match scope {
        Some(root) => {
            let with = subtree(&mut q, root);
            q.and("a.item_id IN (SELECT id FROM subtree)");
            with
        }
        None => String::new(),
    };
    q.eq_opt("a.actor", actor);
    if let Some(since) = since {
        let p = q.bind(since);
        q.and(format!("a.at >= {p}"));
    }
    if !actions.is_empty() {
        let list = q.in_list(actions);
        q.and(format!("a.action IN {list}"));
    }
    let select = format!(
        "{with}SELECT a.id, a.at, a.actor, a.item_key, a.action, a.changes FROM scrolls_activity a"
    );
    ORDER.list(tx, &select, &q, page, |row| {
        let fields = "id at:ts actor? item=item_key? action changes?:json";
        Ok(Record::of(row, fields)?.done())
    })
}

/// The comments on item `item_id`, newest first, paged by id, as a list result.
pub fn comments(tx: &mut Tx<'_>, item_id: &str, page: &Paging) -> Result<Value, TxError> {
    const ORDER: Order<'static> = Order::desc("comments", &[Key::text("c.id", "id")]);
    let mut q = Query::new();
    q.eq("c.item_id", item_id);
    let select = "SELECT c.id, c.author, c.body, c.created_at FROM scrolls_comment c";
    ORDER.list(tx, select, &q, page, |row| {
        Ok(Record::of(row, "id author? body created_at:ts")?.done())
    })
}

/// The totals of a subtree's progress (the root included).
#[derive(Debug, Clone, PartialEq)]
pub struct Totals {
    pub total: i64,
    pub done: i64,
    pub cancelled: i64,
    pub blocked: i64,
    /// Not closed, and due before `today`.
    pub overdue: i64,
    /// Closed at or after `since`, when one was given.
    pub closed_since: Option<i64>,
    /// Summed estimates of the items not cancelled, and of the done ones.
    pub estimate: f64,
    pub estimate_done: f64,
}

/// The totals of the subtree of `root_id`: one aggregate query over it.
pub fn totals(
    tx: &mut Tx<'_>,
    root_id: &str,
    today: &str,
    since: Option<&str>,
) -> Result<Totals, StoreError> {
    let mut q = Query::new();
    let with = subtree(&mut q, root_id);
    let today = q.bind(today);
    let given = since.is_some();
    let since = q.bind(since);
    let count =
        |condition: &str| format!("COALESCE(SUM(CASE WHEN {condition} THEN 1 ELSE 0 END), 0)");
    let sql = format!(
        "{with}SELECT COUNT(*) AS total, {} AS done, {} AS cancelled, {} AS blocked, \
         {} AS overdue, {} AS closed_since, \
         COALESCE(SUM(CASE WHEN i.status <> 'cancelled' THEN i.estimate END), 0) AS estimate, \
         COALESCE(SUM(CASE WHEN i.status = 'done' THEN i.estimate END), 0) AS estimate_done \
         FROM scrolls_item i WHERE i.id IN (SELECT id FROM subtree)",
        count("i.status = 'done'"),
        count("i.status = 'cancelled'"),
        count("i.status = 'blocked'"),
        count(&format!(
            "i.due_date < CAST({today} AS TEXT) AND i.status NOT IN {CLOSED}"
        )),
        count(&format!("i.closed_at >= CAST({since} AS TIMESTAMPTZ)")),
    );
    let sql = match tx.kind() {
        // SQLite keeps timestamps as text; the cast is PostgreSQL's.
        BackendKind::Sqlite => sql.replace(&format!("CAST({since} AS TIMESTAMPTZ)"), &since),
        BackendKind::Postgres => sql,
    };
    let row = tx.query_one(&sql, q.params())?;
    Ok(Totals {
        total: row.get_i64("total")?,
        done: row.get_i64("done")?,
        cancelled: row.get_i64("cancelled")?,
        blocked: row.get_i64("blocked")?,
        overdue: row.get_i64("overdue")?,
        closed_since: given.then(|| row.get_i64("closed_since")).transpose()?,
        estimate: row.get_f64("estimate")?,
        estimate_done: row.get_f64("estimate_done")?,
    })
}

/// A board: the items under item `scope_id` (not itself) of `levels`, assigned to the agent
/// with id `assignee` when given, in status columns of at most `per_column` items each (by
/// priority, then age), with each column's full count.
pub fn board(
    tx: &mut Tx<'_>,
    scope_id: &str,
    levels: &[Level],
    assignee: Option<&str>,
    per_column: usize,
) -> Result<Vec<(String, i64, Vec<Value>)>, StoreError> {
    let mut q = Query::new();
    let with = subtree(&mut q, scope_id);
    let root = q.bind(scope_id);
    let levels = levels_in(&mut q, levels);
    let mut filter =
        format!("i.id IN (SELECT id FROM subtree) AND i.id <> {root} AND i.level IN {levels}");
    if let Some(assignee) = assignee {
        filter.push_str(&format!(" AND i.assignee_id = {}", q.bind(assignee)));
    }
    let counts = tx.query(
        &format!(
            "{with}SELECT i.status, COUNT(*) AS n FROM scrolls_item i WHERE {filter} \
             GROUP BY i.status"
        ),
        q.params(),
    )?;
    let sql = format!(
        "{with}SELECT * FROM (SELECT {LISTED}, ROW_NUMBER() OVER (PARTITION BY i.status \
         ORDER BY {PRIORITY_RANK}, i.id) AS place FROM scrolls_item i WHERE {filter}) ranked \
         WHERE place <= {per_column} ORDER BY place"
    );
    let rows = tx.query(&sql, q.params())?;
    let mut columns = Vec::new();
    for status in crate::args::Status::VALUES {
        let n = counts
            .iter()
            .find(|r| r.get_text("status").is_ok_and(|s| s == *status))
            .map(|r| r.get_i64("n"))
            .transpose()?
            .unwrap_or(0);
        let items = rows
            .iter()
            .filter(|r| r.get_text("status").is_ok_and(|s| s == *status))
            .map(listed)
            .collect::<Result<Vec<_>, _>>()?;
        columns.push(((*status).to_owned(), n, items));
    }
    Ok(columns)
}
