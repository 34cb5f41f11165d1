//! The views computed in the database, never by loading a tree into the plugin: the ready
//! queue, a subtree's progress, and ranked search over items and their comments.
//!
//! Invariants:
//! - A subtree (its root included) is reached the fastest way its root's level allows: a
//!   project's is one range of the rollup index (`project_id`: a project counts in itself), a
//!   theme's the ranges of its projects, a lower item's one recursive query over `parent_id`.
//! - Progress counts what is under an item, never the item itself, by status × level ×
//!   assignee: a project's (and a theme's) from the tally
//!   triggers keep of each project, a lower item's by one `GROUP BY` over its walk; the
//!   plugin only adds up those few groups. Labels are a pass over the subtree.
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
use coremcp_store::search::{self, Tier};
use coremcp_store::{BackendKind, Row, StoreError, Tx};
use serde_json::Value;

use std::collections::BTreeMap;

use crate::items::{level_of, CLOSED};
use crate::level::Level;
use crate::schema::{COMMENT_SEARCH, ITEM_SEARCH};

pub use crate::schema::PRIORITY_RANK;

/// The columns a listed item shows.
pub const LISTED: &str = "i.key, i.level, i.title, i.status, i.priority, i.due_date, \
    i.created_at, i.version, \
    (SELECT a.name FROM scrolls_agent a WHERE a.id = i.assignee_id) AS assignee_name";

/// A listed item row (from [`LISTED`]) as JSON.
pub fn listed(row: &Row) -> Result<Value, StoreError> {
    let fields = "key level title status priority assignee=assignee_name? due_date? version:int \
        created_at:ts";
    Ok(Record::of(row, fields)?.done())
}

/// `(a, b, …)` of `levels` bound in `q`.
fn levels_in(q: &mut Query, levels: &[Level]) -> String {
    let names: Vec<String> = levels.iter().map(|l| l.as_str().to_owned()).collect();
    q.in_list(&names)
}

/// Where a walk of the ready queue stands: the sort key of the last item shown, as [`ready`]
/// returns it in its `rank_key`, `undated_key`, `due_key`, `created_key` and `key` columns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadyKey {
    /// The priority's rank (urgent first).
    pub rank: i64,
    /// 1 for an item without a due date (they come after the dated ones).
    pub undated: i64,
    /// The due date, `""` without one.
    pub due: String,
    pub created: String,
    pub key: String,
}

/// The ready queue: at most `limit` open items of `levels` (in the project with id `project`,
/// when given) whose dependencies are all closed and that nobody holds but `agent`, in queue
/// order, after the item whose place is `after` when given. A walk by that key sees an item
/// that stays ready throughout exactly once, whatever is claimed, closed or created between
/// its pages.
pub fn ready(
    tx: &mut Tx<'_>,
    agent: Option<&str>,
    project: Option<&str>,
    levels: &[Level],
    after: Option<&ReadyKey>,
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
    let undated = "CASE WHEN i.due_date IS NULL THEN 1 ELSE 0 END";
    let order =
        format!("({PRIORITY_RANK}), {undated}, COALESCE(i.due_date, ''), i.created_at, i.key");
    if let Some(after) = after {
        let (rank, undated) = (q.bind(after.rank), q.bind(after.undated));
        let (due, created, key) = (
            q.bind(after.due.as_str()),
            q.bind(after.created.as_str()),
            q.bind(after.key.as_str()),
        );
        q.and(format!(
            "({order}) > ({rank}, {undated}, {due}, {created}, {key})"
        ));
    }
    let sql = format!(
        "SELECT {LISTED}, ({PRIORITY_RANK}) AS rank_key, {undated} AS undated_key, \
         COALESCE(i.due_date, '') AS due_key, i.created_at AS created_key \
         FROM scrolls_item i{} ORDER BY {order} LIMIT {limit}",
        q.where_clause()
    );
    tx.query(&sql, q.params())
}

/// An item and everything under it.
#[derive(Debug, Clone)]
pub struct Subtree {
    /// The root's id.
    pub id: String,
    pub level: Level,
}

impl Subtree {
    /// The subtree under the item in `row` (an `items::SELECT` row).
    pub fn of(row: &Row) -> Result<Self, StoreError> {
        Ok(Self {
            id: row.get_text("id")?,
            level: level_of(row)?,
        })
    }

    /// `(with, condition)`: a `WITH` clause (empty when none is needed) and a condition true
    /// for exactly the subtree's rows of `scrolls_item i`, with `$n` bound in `q`.
    fn rows(&self, q: &mut Query) -> (String, String) {
        let root = q.bind(self.id.as_str());
        match self.level {
            Level::Project => (String::new(), format!("i.project_id = {root}")),
            // A theme holds only projects.
            Level::Theme => (
                String::new(),
                format!(
                    "(i.id = {root} OR i.project_id IN \
                     (SELECT id FROM scrolls_item WHERE parent_id = {root}))"
                ),
            ),
            _ => (
                format!(
                    "WITH RECURSIVE subtree(id) AS (SELECT id FROM scrolls_item WHERE id = {root} \
                     UNION SELECT c.id FROM scrolls_item c JOIN subtree s ON c.parent_id = s.id) "
                ),
                "i.id IN (SELECT id FROM subtree)".to_owned(),
            ),
        }
    }
}

/// The items of one (status, level, assignee) in a subtree, and their summed estimate.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    pub status: String,
    pub level: String,
    /// The assignee's name.
    pub assignee: Option<String>,
    pub count: i64,
    pub estimate: f64,
}

/// A subtree's progress as the database adds it up.
#[derive(Debug, Clone, PartialEq)]
pub struct Rollup {
    pub groups: Vec<Group>,
    /// Not closed, and due before the day given.
    pub overdue: i64,
    /// Closed at or after the time given (0 when none was).
    pub closed_since: i64,
}

/// A subtree counted by (status, level, assignee), `today` a `YYYY-MM-DD` for `overdue`,
/// `since` a stored timestamp for `closed_since`. A project's or a theme's groups are read
/// from the tally of their projects (a few rows however large the project), a lower item's
/// by one `GROUP BY` over its walk; the dated counts come from partial indexes.
pub fn rollup(
    tx: &mut Tx<'_>,
    tree: &Subtree,
    today: &str,
    since: Option<&str>,
) -> Result<Rollup, StoreError> {
    let mut q = Query::new();
    let counted = match tree.level {
        Level::Project | Level::Theme => {
            let root = q.bind(tree.id.as_str());
            let (projects, own) = match tree.level {
                Level::Project => (format!("t.project_id = {root}"), String::new()),
                // A theme holds only projects, and counts itself.
                _ => (
                    format!(
                        "t.project_id IN (SELECT id FROM scrolls_item WHERE parent_id = {root})"
                    ),
                    format!(
                        " UNION ALL SELECT status, level, COALESCE(assignee_id, ''), 1, \
                         COALESCE(estimate, 0) FROM scrolls_item WHERE id = {root}"
                    ),
                ),
            };
            format!(
                "SELECT status, level, assignee_id, CAST(SUM(n) AS BIGINT) AS n, \
                 SUM(estimate) AS estimate \
                 FROM (SELECT t.status, t.level, t.assignee_id, t.n, t.estimate \
                 FROM scrolls_tally t WHERE {projects}{own}) u GROUP BY status, level, assignee_id"
            )
        }
        _ => {
            let (with, within) = tree.rows(&mut q);
            format!(
                "{with}SELECT i.status, i.level, i.assignee_id, COUNT(*) AS n, \
                 COALESCE(SUM(i.estimate), 0) AS estimate FROM scrolls_item i WHERE {within} \
                 GROUP BY i.status, i.level, i.assignee_id"
            )
        }
    };
    let sql = format!(
        "SELECT g.status, g.level, a.name AS assignee, g.n, g.estimate FROM ({counted}) g \
         LEFT JOIN scrolls_agent a ON a.id = g.assignee_id"
    );
    let groups = tx
        .query(&sql, q.params())?
        .iter()
        .map(|r| {
            Ok(Group {
                status: r.get_text("status")?,
                level: r.get_text("level")?,
                assignee: r.get_opt_text("assignee")?,
                count: r.get_i64("n")?,
                // Kept by adding and subtracting: round off the last bits.
                estimate: (r.get_f64("estimate")? * 1e6).round() / 1e6,
            })
        })
        .collect::<Result<_, StoreError>>()?;
    let mut groups: Vec<Group> = groups;
    without_root(tx, tree, &mut groups)?;
    let (overdue, closed_since) = dated(tx, tree, today, since)?;
    Ok(Rollup {
        groups,
        overdue,
        closed_since,
    })
}

/// Takes the subtree's root out of `groups`: progress counts what is under an item, not the
/// item itself (a project's tally counts the project in itself).
fn without_root(
    tx: &mut Tx<'_>,
    tree: &Subtree,
    groups: &mut Vec<Group>,
) -> Result<(), StoreError> {
    let root = tx.query_one(
        "SELECT i.status, i.level, a.name AS assignee, COALESCE(i.estimate, 0) AS estimate \
         FROM scrolls_item i LEFT JOIN scrolls_agent a ON a.id = i.assignee_id WHERE i.id = $1",
        &[tree.id.as_str().into()],
    )?;
    let (status, level) = (root.get_text("status")?, root.get_text("level")?);
    let assignee = root.get_opt_text("assignee")?;
    let estimate = root.get_f64("estimate")?;
    if let Some(at) = groups
        .iter()
        .position(|g| g.status == status && g.level == level && g.assignee == assignee)
    {
        let group = &mut groups[at];
        group.count -= 1;
        group.estimate = ((group.estimate - estimate) * 1e6).round() / 1e6;
        if group.count == 0 {
            groups.remove(at);
        }
    }
    Ok(())
}

/// The newest items of the subtree (its root left out) closed since `since`, at most `limit`:
/// `(key, title, closed_at)`.
pub fn closed_since(
    tx: &mut Tx<'_>,
    tree: &Subtree,
    since: &str,
    limit: usize,
) -> Result<Vec<Value>, StoreError> {
    let mut q = Query::new();
    let (with, within) = tree.rows(&mut q);
    let root = q.bind(tree.id.as_str());
    let since = q.bind(since);
    let since = match tx.kind() {
        BackendKind::Sqlite => since,
        BackendKind::Postgres => format!("CAST({since} AS TIMESTAMPTZ)"),
    };
    let sql = format!(
        "{with}SELECT i.key, i.title, i.closed_at FROM scrolls_item i WHERE {within} \
         AND i.id <> {root} AND i.closed_at IS NOT NULL AND i.closed_at >= {since} \
         ORDER BY i.closed_at DESC, i.key LIMIT {limit}"
    );
    tx.query(&sql, q.params())?
        .iter()
        .map(|r| Ok(Record::of(r, "key title closed_at:ts")?.done()))
        .collect()
}

/// How many items of the subtree are overdue on `today`, and closed since `since`: each a
/// count over a partial index of the few dated rows.
fn dated(
    tx: &mut Tx<'_>,
    tree: &Subtree,
    today: &str,
    since: Option<&str>,
) -> Result<(i64, i64), StoreError> {
    let mut q = Query::new();
    let (with, within) = tree.rows(&mut q);
    // The root is not counted: progress is of what is under it.
    let within = format!("{within} AND i.id <> {}", q.bind(tree.id.as_str()));
    let today = q.bind(today);
    let overdue = format!(
        "SELECT COUNT(*) FROM scrolls_item i WHERE {within} AND i.due_date IS NOT NULL \
         AND i.status NOT IN {CLOSED} AND i.due_date < CAST({today} AS TEXT)"
    );
    let closed = match since {
        Some(since) => {
            let since = q.bind(since);
            let since = match tx.kind() {
                // SQLite keeps timestamps as text; the cast is PostgreSQL's.
                BackendKind::Sqlite => since,
                BackendKind::Postgres => format!("CAST({since} AS TIMESTAMPTZ)"),
            };
            format!(
                "SELECT COUNT(*) FROM scrolls_item i WHERE {within} \
                 AND i.closed_at IS NOT NULL AND i.closed_at >= {since}"
            )
        }
        None => "SELECT 0".to_owned(),
    };
    let row = tx.query_one(
        &format!("{with}SELECT ({overdue}) AS overdue, ({closed}) AS closed_since"),
        q.params(),
    )?;
    Ok((row.get_i64("overdue")?, row.get_i64("closed_since")?))
}

/// Counts with the estimate summed, `(value, count, estimate)`, no value first, then by value
/// byte-wise.
pub type Counts = Vec<(Option<String>, i64, f64)>;

/// The subtree's counts by `by`: its `rollup` added up by status, level or assignee, or a pass
/// over the subtree for its labels.
pub fn counts(
    tx: &mut Tx<'_>,
    tree: &Subtree,
    rollup: &Rollup,
    by: By,
) -> Result<Counts, StoreError> {
    if by == By::Label {
        return label_counts(tx, tree);
    }
    let value = |g: &Group| -> Option<String> {
        match by {
            By::Status => Some(g.status.clone()),
            By::Level => Some(g.level.clone()),
            // Labels were counted above.
            By::Assignee | By::Label => g.assignee.clone(),
        }
    };
    let mut sums: BTreeMap<Option<String>, (i64, f64)> = BTreeMap::new();
    for g in &rollup.groups {
        let sum = sums.entry(value(g)).or_default();
        *sum = (sum.0 + g.count, sum.1 + g.estimate);
    }
    Ok(sums
        .into_iter()
        .map(|(value, (n, estimate))| (value, n, estimate))
        .collect())
}

/// The subtree's items counted under each of their labels (an item with two counts under
/// both, one with none under no label), with the estimate summed.
fn label_counts(tx: &mut Tx<'_>, tree: &Subtree) -> Result<Counts, StoreError> {
    let mut q = Query::new();
    let (with, within) = tree.rows(&mut q);
    let within = format!("{within} AND i.id <> {}", q.bind(tree.id.as_str()));
    let c = bytewise(tx);
    // The one JSON array walk the backends spell differently.
    let join = match tx.kind() {
        BackendKind::Sqlite => " LEFT JOIN json_each(i.labels) l",
        BackendKind::Postgres => {
            " LEFT JOIN jsonb_array_elements_text(i.labels) AS l(value) ON true"
        }
    };
    let sql = format!(
        "{with}SELECT l.value AS value, COUNT(*) AS n, \
         COALESCE(SUM(i.estimate), 0) AS estimate FROM scrolls_item i{join} \
         WHERE {within} GROUP BY l.value ORDER BY l.value IS NOT NULL, l.value{c}"
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

impl Within<'_> {
    /// The conditions on the item `i` that keep what a search keeps, bound in `q`.
    fn conditions(&self, q: &mut Query) -> Vec<String> {
        let mut keep = Vec::new();
        if !self.levels.is_empty() {
            keep.push(format!("i.level IN {}", levels_in(q, self.levels)));
        }
        if let Some(project) = self.project {
            keep.push(format!(
                "(i.project_id = {0} OR i.id = {0})",
                q.bind(project)
            ));
        }
        if !self.statuses.is_empty() {
            keep.push(format!("i.status IN {}", q.in_list(self.statuses)));
        } else if !self.include_closed {
            keep.push(format!("i.status NOT IN {CLOSED}"));
        }
        keep
    }
}

/// The listed rows (with `i.id`) of the items `ids` that `within` still keeps, in no order.
pub fn listed_by_ids(
    tx: &mut Tx<'_>,
    ids: &[String],
    within: &Within<'_>,
) -> Result<Vec<Row>, StoreError> {
    let mut q = Query::new();
    let list = q.in_list(ids);
    let mut keep = vec![format!("i.id IN {list}")];
    keep.extend(within.conditions(&mut q));
    tx.query(
        &format!(
            "SELECT i.id, {LISTED} FROM scrolls_item i WHERE {}",
            keep.join(" AND ")
        ),
        q.params(),
    )
}

/// The items best matching `query` (see [`search::words`]) in their title and description or
/// in a comment on them, among those `within` keeps, best first, at most `want`, with the
/// columns `columns` of `i` (the item); empty when the query has no words.
pub fn search(
    tx: &mut Tx<'_>,
    query: &str,
    within: &Within<'_>,
    want: usize,
    columns: &str,
) -> Result<Vec<Row>, StoreError> {
    let words = search::words(query);
    let kind = tx.kind();
    search::prefer_index(tx)?;
    // The exact tier, then (only when it does not fill the page) the forms tier.
    search::tiered(0, want, |tier, limit, offset| {
        // One parameter list for both halves and the filters; each is written with its own
        // condition.
        let mut q = Query::new();
        let (Some(items), Some(comments)) = (
            ITEM_SEARCH.matching(kind, &mut q, &words, tier),
            COMMENT_SEARCH.matching(kind, &mut q, &words, tier),
        ) else {
            return Ok(Vec::new());
        };
        let mut keep = vec!["TRUE".to_owned()];
        if tier == Tier::Forms {
            // An item whose own text or one of whose comments holds the words as typed is
            // in the exact tier already.
            let (Some(own), Some(said)) = (
                ITEM_SEARCH.matching(kind, &mut q, &words, Tier::Exact),
                COMMENT_SEARCH.matching(kind, &mut q, &words, Tier::Exact),
            ) else {
                return Ok(Vec::new());
            };
            keep.push(format!(
                "i.id NOT IN (SELECT scrolls_item.id FROM scrolls_item{} WHERE {} UNION \
                 SELECT scrolls_comment.item_id FROM scrolls_comment{} WHERE {})",
                own.join, own.condition, said.join, said.condition
            ));
        }
        keep.extend(within.conditions(&mut q));
        let sql = format!(
            "SELECT {columns}, m.rank FROM ( \
                 SELECT id, MAX(rank) AS rank FROM ( \
                     SELECT scrolls_item.id AS id, {} AS rank FROM scrolls_item{} WHERE {} \
                     UNION ALL \
                     SELECT scrolls_comment.item_id AS id, {} AS rank FROM scrolls_comment{} \
                     WHERE {}) hits GROUP BY id) m \
             JOIN scrolls_item i ON i.id = m.id WHERE {} ORDER BY m.rank DESC, i.key \
             LIMIT {limit} OFFSET {offset}",
            items.rank,
            items.join,
            items.condition,
            comments.rank,
            comments.join,
            comments.condition,
            keep.join(" AND ")
        );
        tx.query(&sql, q.params())
    })
}

/// The activity feed, newest first and paged by id: what was done to the subtree of item
/// `scope` (deleted items' rows then drop out, their key no longer places them), by
/// `actor`, since `since` (a stored timestamp), of `actions`, as a list result.
pub fn activity(
    tx: &mut Tx<'_>,
    scope: Option<&Subtree>,
    actor: Option<&str>,
    since: Option<&str>,
    actions: &[String],
    page: &Paging,
) -> Result<Value, TxError> {
    const ORDER: Order<'static> = Order::desc("activity", &[Key::text("a.id", "id")]);
    let mut q = Query::new();
    let with = match scope {
        Some(tree) => {
            let (with, within) = tree.rows(&mut q);
            q.and(format!(
                "a.item_id IN (SELECT i.id FROM scrolls_item i WHERE {within})"
            ));
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
        let mut comment = Record::of(row, "id author? body created_at:ts")?.done();
        let shown = coremcp_plugin_sdk::budget::LISTED_TEXT;
        if coremcp_plugin_sdk::budget::cut_field(&mut comment, "body", shown) {
            let id = row.get_text("id")?;
            comment["body_cursor"] = body_cursor(&id, shown).into();
        }
        Ok(comment)
    })
}

/// How many comments item `item_id` has.
pub fn comment_count(tx: &mut Tx<'_>, item_id: &str) -> Result<usize, TxError> {
    let row = tx.query_one(
        "SELECT COUNT(*) AS n FROM scrolls_comment WHERE item_id = $1",
        &[item_id.into()],
    )?;
    Ok(usize::try_from(row.get_i64("n")?).unwrap_or(0))
}

/// The cursor that reads a long comment's body on from character `offset`, passed to
/// `scrolls_comment_list` as its `cursor`.
pub fn body_cursor(comment_id: &str, offset: usize) -> String {
    coremcp_plugin_sdk::page::encode_cursor(&["body", comment_id, &offset.to_string()])
}

/// The comment and offset a [`body_cursor`] names, when `cursor` is one.
pub fn read_body_cursor(cursor: &str) -> Option<(String, usize)> {
    let parts = coremcp_plugin_sdk::page::decode_cursor(cursor, 3).ok()?;
    match parts.as_slice() {
        [body, id, offset] if body == "body" => Some((id.clone(), offset.parse().ok()?)),
        _ => None,
    }
}

/// One comment of item `item_id`, its body shown from character `offset` and cut to the
/// answer's room, with a `body_cursor` while more remains.
pub fn comment_body(
    tx: &mut Tx<'_>,
    item_id: &str,
    comment_id: &str,
    offset: usize,
) -> Result<Value, TxError> {
    let row = tx.query_opt(
        "SELECT c.id, c.author, c.body, c.created_at FROM scrolls_comment c \
         WHERE c.id = $1 AND c.item_id = $2",
        &[comment_id.into(), item_id.into()],
    )?;
    let row = row.ok_or_else(|| {
        coremcp_plugin_sdk::args::invalid(
            "cursor",
            "names a comment this item no longer has (list its comments again)",
        )
    })?;
    let mut comment = Record::of(&row, "id author? body created_at:ts")?.done();
    let room = coremcp_plugin_sdk::budget::result_budget() - 300;
    coremcp_plugin_sdk::budget::fit_fields(&mut comment, &[("body", offset)], room);
    if let Some(next) = comment
        .as_object_mut()
        .and_then(|c| c.remove("body_next_offset"))
        .and_then(|n| n.as_u64())
    {
        comment["body_cursor"] = body_cursor(comment_id, next as usize).into();
    }
    Ok(serde_json::json!({ "items": [comment] }))
}

/// The totals of a subtree's progress (what is under its root, the root left out).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Totals {
    pub total: i64,
    pub done: i64,
    pub cancelled: i64,
    pub blocked: i64,
    pub overdue: i64,
    pub closed_since: i64,
    /// Summed estimates of the items not cancelled, and of the done ones.
    pub estimate: f64,
    pub estimate_done: f64,
}

impl Totals {
    /// A [`rollup`] added up.
    pub fn of(rollup: &Rollup) -> Self {
        let mut t = Totals {
            overdue: rollup.overdue,
            closed_since: rollup.closed_since,
            ..Totals::default()
        };
        for g in &rollup.groups {
            t.total += g.count;
            match g.status.as_str() {
                "done" => {
                    (t.done, t.estimate_done) = (t.done + g.count, t.estimate_done + g.estimate)
                }
                "cancelled" => t.cancelled += g.count,
                "blocked" => t.blocked += g.count,
                _ => {}
            }
            if g.status != "cancelled" {
                t.estimate += g.estimate;
            }
        }
        t
    }
}

/// A board: the items under `scope` (not its root) of `levels`, assigned to the agent
/// with id `assignee` when given, in status columns of at most `per_column` items each (by
/// priority, then age), with each column's full count.
pub fn board(
    tx: &mut Tx<'_>,
    scope: &Subtree,
    levels: &[Level],
    assignee: Option<&str>,
    per_column: usize,
) -> Result<Vec<(String, i64, Vec<Value>)>, StoreError> {
    let mut q = Query::new();
    let (with, within) = scope.rows(&mut q);
    let root = q.bind(scope.id.as_str());
    let levels = levels_in(&mut q, levels);
    let mut filter = format!("{within} AND i.id <> {root} AND i.level IN {levels}");
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
