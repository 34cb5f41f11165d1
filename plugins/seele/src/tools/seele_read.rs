//! `seele_read`: one node by id or path, its current content or an older revision, with its
//! links and, when asked, an outline of the nodes under it.
//!
//! Invariants: exactly one of `id` and `path`; the body is shown from `offset`, cut at
//! `max_chars` (and further if the whole answer would pass the result limit) with
//! `body_truncated`, `body_total_chars` and `body_next_offset` (the `offset` that reads on);
//! the outline lists at most [`MAX_OUTLINE`] nodes, in path order from `children_offset`,
//! whole nodes in the room the body leaves, with `children_truncated`, `children_omitted`
//! and `children_next_offset` when there were more; the front matter takes a quarter of the
//! answer, keys in order, and `keys_offset` (`front_matter_next_offset`) reads its other keys; the links (by rel, then path)
//! take at most half the answer, whole ones from `links_offset`, and `links_next_offset` reads
//! on, so an index page's hundreds of links are all reached.

use coremcp_plugin_sdk::args::invalid;
use coremcp_plugin_sdk::budget;
use coremcp_plugin_sdk::prelude::*;
use coremcp_store::plugin::TxError;
use coremcp_store::records::Record;
use coremcp_store::Tx;

use crate::nodes;
use crate::path::{self, NodePath};
use crate::SERVICE;

pub const TOOL: Tool = Tool::typed("seele_read", &typed(handler)).hints(Hints::READ);

/// The most nodes an outline lists.
pub const MAX_OUTLINE: usize = 200;

/// Read one node by id or path: front matter, tags, body, links, version; or an older version.
/// include_children adds an outline below it.
#[derive(Debug, Args)]
pub struct Read {
    /// the node's id
    id: Option<String>,
    /// the node's path
    path: Option<NodePath>,
    /// add the nodes below
    #[arg(default)]
    include_children: bool,
    /// levels (default 1)
    #[arg(min = 1, max = 3, default = 1)]
    depth: usize,
    /// an older revision
    #[arg(min = 1)]
    version: Option<u64>,
    /// cut at (default 20000)
    #[arg(min = 100, default = 20000)]
    max_chars: usize,
    /// body from this char
    #[arg(min = 0, default = 0)]
    offset: usize,
    /// links from
    #[arg(min = 0, default = 0)]
    links_offset: usize,
    /// outline from
    #[arg(min = 0, default = 0)]
    children_offset: usize,
    /// front matter keys from
    #[arg(min = 0, default = 0)]
    keys_offset: usize,
}

fn handler(_: &Ctx<'_>, args: Read) -> Result<Value, ToolError> {
    if args.id.is_some() == args.path.is_some() {
        return Err(invalid("id", "give exactly one of id and path"));
    }
    SERVICE.read(|tx| read(tx, &args))
}

fn read(tx: &mut Tx<'_>, args: &Read) -> Result<Value, TxError> {
    let row = match (&args.id, &args.path) {
        (Some(id), _) => nodes::by_id(tx, "id", id)?,
        (None, Some(p)) => {
            let p = p.normal();
            nodes::by_path(tx, &p)?.ok_or_else(|| {
                coremcp_store::records::not_found("path", format!("no node has the path {p:?}"))
            })?
        }
        (None, None) => return Err(invalid("id", "give exactly one of id and path").into()),
    };
    let id = row.get_text("id")?;
    let node_path = row.get_text("path")?;
    let current = row.get_i64("version")?;
    let spec = "id path kind title front_matter:json tags:json project=project_key? \
                theme=theme_key? source_ref? version:int created_by? updated_by? \
                created_at:ts updated_at:ts";
    let mut out = Record::of(&row, spec)?.done();
    let mut body = row.get_text("body")?;
    if let Some(version) = args.version {
        let version = i64::try_from(version).unwrap_or(i64::MAX);
        let Some(rev) = tx.query_opt(
            "SELECT version, kind, title, body, front_matter, tags, source_ref, author, \
             created_at FROM seele_revision WHERE node_id = $1 AND version = $2",
            &[id.as_str().into(), version.into()],
        )?
        else {
            let problem = match version > current {
                true => format!("node {node_path} is at version {current}; version {version} does not exist yet"),
                false => format!("revision {version} of node {node_path} is not kept (an import replaced its history)"),
            };
            return Err(coremcp_store::records::not_found("version", problem).into());
        };
        let r = Record::of(&rev, "version:int kind title front_matter:json tags:json source_ref? author? written_at=created_at:ts")?;
        for (k, v) in r.0 {
            out[k.as_str()] = v;
        }
        out["current_version"] = current.into();
        body = rev.get_text("body")?;
    }
    // The front matter takes a quarter of the answer beside the links and the body (half when
    // a read goes on through its keys), keys in order with whole values; `keys_offset` reads
    // on.
    if let Some(front) = out.get_mut("front_matter").map(Value::take) {
        let front = match front {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        let (keys, from) = (front.len(), args.keys_offset);
        let room = budget::result_budget() / if from > 0 { 2 } else { 4 };
        let (kept, next) = budget::object_page(front, from, room);
        out["front_matter"] = Value::Object(kept);
        if from > 0 {
            out["front_matter_offset"] = from.into();
        }
        if let Some(next) = next {
            out["front_matter_keys"] = keys.into();
            out["front_matter_next_offset"] = next.into();
        }
    }
    // A link resolves to the node at its path, else to the node that moved from there (its
    // path then shows where the node is now).
    let links = tx.query(
        "SELECT COALESCE(n.path, m.path, l.to_path) AS path, l.rel, COALESCE(n.id, m.id) AS id \
         FROM seele_link l \
         LEFT JOIN seele_node n ON n.path = l.to_path AND n.deleted_at IS NULL \
         LEFT JOIN seele_alias a ON a.path = l.to_path \
         LEFT JOIN seele_node m ON m.id = a.node_id AND m.deleted_at IS NULL \
         WHERE l.from_id = $1 ORDER BY l.rel, path",
        &[id.as_str().into()],
    )?;
    let from = args.links_offset.min(links.len());
    out["links"] = links[from..]
        .iter()
        .map(|l| Ok(Record::of(l, "path rel id?")?.done()))
        .collect::<Result<Vec<Value>, TxError>>()?
        .into();
    // The links whole beside the body (an index page holds hundreds): half the answer at
    // most, whole ones from `links_offset`, the rest counted and read on by offset.
    let links_total = links.len();
    let mut shed = budget::fit_array(&mut out, "links", budget::result_budget() / 2);
    if shed > 0 && out["links"].as_array().is_some_and(Vec::is_empty) {
        // A read by offset always moves on: the first link stays.
        out["links"] = json!([Record::of(&links[from], "path rel id?")?.done()]);
        shed -= 1;
    }
    if shed > 0 || from > 0 {
        out["links_total"] = links_total.into();
    }
    if from > 0 {
        out["links_offset"] = from.into();
    }
    if shed > 0 {
        out["links_omitted"] = shed.into();
        out["links_next_offset"] = (links_total - shed).into();
    }
    // The body first (what a read is for), cut to max_chars and to the answer's room; then
    // the outline in the room that is left, whole nodes only.
    out["body"] = body.into();
    budget::fit_windows(
        &mut out,
        &[("body", args.offset, args.max_chars)],
        budget::result_budget() - 100,
    );
    if args.include_children {
        let from = args.children_offset;
        let (children, total) = outline(tx, &node_path, args.depth, from)?;
        out["children"] = children.into();
        // Room for the counts of what was left out.
        budget::fit_array(&mut out, "children", budget::result_budget() - 150);
        let shown = out["children"].as_array().map_or(0, Vec::len);
        if from > 0 {
            out["children_offset"] = from.into();
        }
        let after = from + shown;
        if after < total {
            out["children_truncated"] = true.into();
            out["children_omitted"] = (total - after).into();
            out["children_next_offset"] = after.into();
        }
    }
    Ok(out)
}

/// The nodes below `at`, at most `depth` levels down, in path order from the `from`th: at most
/// [`MAX_OUTLINE`] of them, and how many there are in all.
fn outline(
    tx: &mut Tx<'_>,
    at: &str,
    depth: usize,
    from: usize,
) -> Result<(Vec<Value>, usize), TxError> {
    let base = path::depth(at);
    let n = at.chars().count() + 1;
    // A path's depth is its count of '/' plus one, the same on both backends.
    let below = format!(
        "FROM seele_node WHERE substr(path, 1, {n}) = $1 AND deleted_at IS NULL \
         AND length(path) - length(replace(path, '/', '')) < $2"
    );
    let params = [
        format!("{at}/").into(),
        i64::try_from(base + depth).unwrap_or(i64::MAX).into(),
    ];
    let rows = tx.query(
        &format!(
            "SELECT id, path, kind, title, version {below} ORDER BY path \
             LIMIT {MAX_OUTLINE} OFFSET {from}"
        ),
        &params,
    )?;
    let total = if rows.len() < MAX_OUTLINE && (from == 0 || !rows.is_empty()) {
        from + rows.len()
    } else {
        let count = tx.query_one(&format!("SELECT COUNT(*) AS n {below}"), &params)?;
        usize::try_from(count.get_i64("n")?).unwrap_or(0)
    };
    let mut items = Vec::new();
    for row in &rows {
        let p = row.get_text("path")?;
        let level = path::depth(&p) - base;
        items.push(
            Record::of(row, "id path kind title version:int")?
                .set("level", level)
                .done(),
        );
    }
    Ok((items, total))
}
