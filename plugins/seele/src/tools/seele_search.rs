//! `seele_search`: ranked full-text search over nodes' titles, bodies and tags, on the store
//! layer's search index (FTS5 on SQLite, `tsvector` on PostgreSQL).
//!
//! Invariants: the query is searched as words (every word must appear, in any of its forms, the
//! last also as a prefix; no syntax), through `coremcp_store::search`; results order by rank,
//! then path, so equal ranks list the same on both backends; a snippet is cut around the first
//! word found in any of its forms, the same on both. A search that finds more than its first
//! page keeps the order it found (`coremcp_store::walk`) and pages through it, so a walk sees
//! a node that stays exactly once, whatever is written meanwhile.

use coremcp_plugin_sdk::args::invalid;
use coremcp_plugin_sdk::page::{page_result, ranked_page};
use coremcp_plugin_sdk::prelude::*;
use coremcp_store::records::Record;
use coremcp_store::{search, walk};

use super::{ProjectKey, ThemeKey};
use crate::nodes::Kind;
use crate::path::NodePath;
use crate::schema::NODE_SEARCH;
use crate::SERVICE;

pub const TOOL: Tool = Tool::typed("seele_search", &typed(handler)).hints(Hints::READ);

/// How many characters a snippet shows.
const SNIPPET: usize = 240;

/// Ranked search over nodes (title, body, tags): every word, in any form (the last may be a
/// prefix). Returns id, path, title, kind and a snippet.
#[derive(Debug, Args)]
pub struct Search {
    /// words, all must match
    #[arg(min_len = 1, max_len = 500)]
    query: String,
    /// project key
    project: Option<ProjectKey>,
    /// theme key
    theme: Option<ThemeKey>,
    /// only these kinds
    #[arg(max_items = 6)]
    kinds: Vec<Kind>,
    /// all must match
    #[arg(max_items = 20)]
    tags: Vec<String>,
    /// path prefix
    path_prefix: Option<NodePath>,
    /// default 10
    #[arg(min = 1, max = 50, default = 10)]
    limit: usize,
    /// next_cursor
    cursor: Option<String>,
}

/// The walks of this service's searches (`coremcp_store::walk`).
const WALK: &str = "seele_walk";
/// What a search shows of a node.
const SHOWN: &str = "seele_node.id, seele_node.path, seele_node.title, seele_node.kind, \
    seele_node.project_key, seele_node.tags, seele_node.body, seele_node.version";

fn handler(_: &Ctx<'_>, args: Search) -> Result<Value, ToolError> {
    let words = search::words(&args.query);
    if words.is_empty() {
        return Err(invalid(
            "query",
            format!(
                "{:?} has no words to search (letters or digits)",
                args.query
            ),
        ));
    }
    // A snippet is cut around the first word found in any of its forms (by its roots).
    let around: Vec<String> = words.iter().flat_map(|w| search::roots(w)).collect();
    if let Some(cursor) = args.cursor.as_deref() {
        let (token, pos) = walk::cursor(cursor)?;
        return SERVICE.read(|tx| {
            let ids = walk::ids(tx, WALK, &token)?.ok_or_else(walk::expired)?;
            walk_page(tx, &ids, pos, &token, args.limit, &around)
        });
    }
    // The first page: when every match fits it, no walk is kept.
    let first = SERVICE.read(|tx| {
        search::prefer_index(tx)?;
        let rows = ranked(tx, &args, &words, args.limit + 1, SHOWN)?;
        let items = rows
            .iter()
            .map(|row| item(row, &around))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ranked_page(items, args.limit, 0, &json!({"items": []})))
    })?;
    if first.1.is_none() {
        return Ok(page_result(first.0, None));
    }
    // More than a page: the order found now is kept, and every page goes through it.
    SERVICE.run(|tx| {
        search::prefer_index(tx)?;
        let rows = ranked(tx, &args, &words, walk::MAX_IDS, "seele_node.id")?;
        let ids = rows
            .iter()
            .map(|r| r.get_text("id"))
            .collect::<Result<Vec<_>, _>>()?;
        let token = walk::keep(tx, WALK, &ids)?;
        walk_page(tx, &ids, 0, &token, args.limit, &around)
    })
}

/// The rows that match `words` and the filters, best first (ties by path), at most `want`,
/// with the columns `columns`.
fn ranked(
    tx: &mut coremcp_store::Tx<'_>,
    args: &Search,
    words: &[String],
    want: usize,
    columns: &str,
) -> Result<Vec<coremcp_store::Row>, coremcp_store::StoreError> {
    let kind = tx.kind();
    // The exact tier, then (only when it does not fill the page) the forms tier.
    search::tiered(0, want, |tier, limit, offset| {
        let mut q = coremcp_store::query::Query::new();
        let Some(m) = NODE_SEARCH.matching(kind, &mut q, words, tier) else {
            return Ok(Vec::new());
        };
        filter(&mut q, args);
        let sql = format!(
            "SELECT {columns}, {} AS rank FROM seele_node{}{} ORDER BY rank DESC, \
             seele_node.path LIMIT {limit} OFFSET {offset}",
            m.rank,
            m.join,
            q.where_clause(),
        );
        tx.query(&sql, q.params())
    })
}

/// One listed node of a search.
fn item(row: &coremcp_store::Row, around: &[String]) -> Result<Value, coremcp_store::StoreError> {
    let body = row.get_text("body")?;
    let title = row.get_text("title")?;
    let text = match body.trim().is_empty() {
        true => title,
        false => body,
    };
    Ok(Record::of(
        row,
        "id path title kind project=project_key? tags:json version:int",
    )?
    .set("snippet", search::snippet(&text, around, SNIPPET))
    .done())
}

/// The page of the walk `token` (its `ids`) from `pos`: the nodes still there, in the walk's
/// order, as many as fit.
fn walk_page(
    tx: &mut coremcp_store::Tx<'_>,
    ids: &[String],
    pos: usize,
    token: &str,
    limit: usize,
    around: &[String],
) -> Result<Value, coremcp_store::plugin::TxError> {
    walk::present(ids, (token, pos), limit, |slice| {
        let mut q = coremcp_store::query::Query::new();
        q.and("seele_node.deleted_at IS NULL");
        let list = q.in_list(slice);
        q.and(format!("seele_node.id IN {list}"));
        let rows = tx.query(
            &format!("SELECT {SHOWN} FROM seele_node{}", q.where_clause()),
            q.params(),
        )?;
        rows.iter()
            .map(|row| Ok((row.get_text("id")?, item(row, around)?)))
            .collect::<Result<Vec<_>, coremcp_store::plugin::TxError>>()
    })
}

/// The search's filters besides the words, added to `q`.
fn filter(q: &mut coremcp_store::query::Query, args: &Search) {
    q.and("seele_node.deleted_at IS NULL");
    q.eq_opt(
        "seele_node.project_key",
        args.project.as_ref().map(|p| p.as_str()),
    );
    q.eq_opt(
        "seele_node.theme_key",
        args.theme.as_ref().map(|t| t.as_str()),
    );
    if !args.kinds.is_empty() {
        let kinds: Vec<String> = args.kinds.iter().map(|k| k.as_str().to_owned()).collect();
        let list = q.in_list(&kinds);
        q.and(format!("seele_node.kind IN {list}"));
    }
    for tag in &args.tags {
        let p = q.bind(tag.as_str());
        q.and(format!(
            "EXISTS (SELECT 1 FROM seele_tag t WHERE t.node_id = seele_node.id AND t.tag = {p})"
        ));
    }
    if let Some(prefix) = args.path_prefix.as_ref().map(NodePath::normal) {
        let (exact, under) = (q.bind(prefix.as_str()), q.bind(format!("{prefix}/")));
        let n = prefix.chars().count() + 1;
        q.and(format!(
            "(seele_node.path = {exact} OR substr(seele_node.path, 1, {n}) = {under})"
        ));
    }
}
