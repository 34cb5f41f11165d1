//! `seele_write`: create a node (no `id`) or update one (`id`); every change is a revision.
//!
//! Invariants: a create at a taken path is a conflict naming the node's id and version (an
//! update needs the id, so two writers never overwrite each other by path); a write that
//! changes nothing makes no revision and says `changed: false`; an update with a different
//! `path` moves the node and its whole subtree in the same transaction, and the stored links
//! of every node that pointed into it follow; on update an absent field is unchanged, and an
//! empty `body` empties a node only with `clear_body`.

use coremcp_plugin_sdk::args::invalid;
use coremcp_plugin_sdk::prelude::*;
use coremcp_store::plugin::TxError;
use coremcp_store::records;
use coremcp_store::Tx;

use super::{ProjectKey, Title, MAX_BODY};
use crate::nodes::{self, Content, History, Kind, Stamp};
use crate::path::{self, NodePath};
use crate::SERVICE;

pub const TOOL: Tool = Tool::typed("seele_write", &typed(handler)).hints(Hints::IDEMPOTENT);

/// Create a node (no id; path, title) or update one by id (omitted fields stay); each change
/// is a revision; missing parents are created; front_matter merges (null removes).
#[derive(Debug, Args)]
pub struct Write {
    /// omit to create
    id: Option<String>,
    /// parent/slug; on update, moves the subtree
    path: Option<NodePath>,
    /// required on create
    title: Option<Title>,
    /// Markdown
    #[arg(max_len = 200000)]
    body: Option<String>,
    /// let body "" empty the node
    #[arg(default)]
    clear_body: bool,
    /// default doc
    kind: Option<Kind>,
    /// merged in
    front_matter: Option<Map<String, Value>>,
    /// replaces all
    #[arg(max_items = 50)]
    tags: Option<Vec<String>>,
    /// project key
    project: Option<ProjectKey>,
    /// conflict unless at it
    expected_version: Option<u64>,
}

fn handler(_: &Ctx<'_>, args: Write) -> Result<Value, ToolError> {
    let body = args.body.as_deref().unwrap_or_default();
    if body.chars().count() > MAX_BODY {
        return Err(invalid(
            "body",
            format!("at most {MAX_BODY} characters are allowed"),
        ));
    }
    let tags = args
        .tags
        .as_deref()
        .map(|t| nodes::tags("tags", t))
        .transpose()?;
    let stamp = Stamp::now();
    SERVICE.run(|tx| match &args.id {
        None => create(tx, &args, tags.clone(), &stamp),
        Some(id) => update(tx, id, &args, tags.clone(), &stamp),
    })
}

fn create(
    tx: &mut Tx<'_>,
    args: &Write,
    tags: Option<Vec<String>>,
    stamp: &Stamp,
) -> Result<Value, TxError> {
    let Some(path) = args.path.as_ref().map(NodePath::normal) else {
        return Err(invalid(
            "path",
            "is required to create a node (or pass id to update one)",
        )
        .into());
    };
    let Some(title) = &args.title else {
        return Err(invalid("title", "is required to create a node").into());
    };
    if args.expected_version.is_some() {
        return Err(invalid("expected_version", "applies to an update: pass id as well").into());
    }
    if let Some(row) = nodes::by_path(tx, &path)? {
        return Err(records::duplicate(
            &format!("node {path} (id {})", row.get_text("id")?),
            row.get_i64("version")?,
            "pass its id to update it",
        )
        .into());
    }
    let content = Content {
        kind: args.kind.unwrap_or(Kind::Doc),
        title: title.0.clone(),
        body: args.body.clone().unwrap_or_default(),
        front_matter: nodes::merge(
            &Map::new(),
            args.front_matter.as_ref().unwrap_or(&Map::new()),
        ),
        tags: tags.unwrap_or_default(),
        project: args.project.as_ref().map(|p| p.0.clone()),
    };
    let mut folders = Vec::new();
    let parent = nodes::ensure_parent(tx, &path, stamp, &mut folders)?;
    let Some(id) = nodes::insert(tx, &path, parent.as_deref(), &content, None, stamp)? else {
        // Created by another writer since the check above: rerun to report it.
        return Err(coremcp_store::StoreError::Busy.into());
    };
    let mut out = nodes::written(&id, &path, 1);
    out["created"] = true.into();
    out["changed"] = true.into();
    out["folders_created"] = json!(folders);
    Ok(out)
}

fn update(
    tx: &mut Tx<'_>,
    id: &str,
    args: &Write,
    tags: Option<Vec<String>>,
    stamp: &Stamp,
) -> Result<Value, TxError> {
    let row = nodes::by_id(tx, "id", id)?;
    let old = nodes::content_of(&row)?;
    // An empty body on an update is a mistake unless asked for: a title-only change that sent
    // "" would empty the node.
    if args.body.as_deref() == Some("") && !args.clear_body && !old.body.is_empty() {
        return Err(invalid(
            "body",
            "is empty, which would empty the node: leave body out to keep it, or pass \
             clear_body: true to empty it",
        )
        .into());
    }
    let content = Content {
        kind: args.kind.unwrap_or(old.kind),
        title: args
            .title
            .as_ref()
            .map_or(old.title.clone(), |t| t.0.clone()),
        body: args.body.clone().unwrap_or(old.body.clone()),
        front_matter: match &args.front_matter {
            Some(given) => nodes::merge(&old.front_matter, given),
            None => old.front_matter.clone(),
        },
        tags: tags.unwrap_or(old.tags.clone()),
        project: args
            .project
            .as_ref()
            .map(|p| p.0.clone())
            .or(old.project.clone()),
    };
    let expected = records::expected(args.expected_version);
    let mut folders = Vec::new();
    let mut path = row.get_text("path")?;
    let mut moved = false;
    if let Some(to) = args
        .path
        .as_ref()
        .map(NodePath::normal)
        .filter(|to| *to != path)
    {
        records::check_expected(&format!("node {path}"), row.get_i64("version")?, expected)?;
        move_subtree(tx, &row, &path, &to, stamp, &mut folders)?;
        path = to;
        moved = true;
    }
    let row = match moved {
        true => nodes::by_id(tx, "id", id)?,
        false => row,
    };
    let version = nodes::update(tx, &row, &content, None, History::Keep, expected, stamp)?;
    let changed = version.is_some() || moved;
    let version = match version {
        Some(v) => v,
        None => row.get_i64("version")?,
    };
    let mut out = nodes::written(id, &path, version);
    out["created"] = false.into();
    out["changed"] = changed.into();
    out["folders_created"] = json!(folders);
    Ok(out)
}

/// Moves the node `row` at `from` and everything under it to `to`, creating `to`'s missing
/// ancestors; refuses a taken path and a move into the node's own subtree.
fn move_subtree(
    tx: &mut Tx<'_>,
    row: &coremcp_store::Row,
    from: &str,
    to: &str,
    stamp: &Stamp,
    folders: &mut Vec<String>,
) -> Result<(), TxError> {
    if to.starts_with(&format!("{from}/")) {
        return Err(invalid("path", format!("cannot move {from} under itself ({to})")).into());
    }
    if let Some(taken) = nodes::by_path(tx, to)? {
        return Err(records::duplicate(
            &format!("node {to} (id {})", taken.get_text("id")?),
            taken.get_i64("version")?,
            "choose another path",
        )
        .into());
    }
    let parent = nodes::ensure_parent(tx, to, stamp, folders)?;
    let n = from.chars().count();
    // Every moved node's old path leads to it from now on (a link written with it in a body
    // not edited since), until a node is put at that path.
    tx.execute(
        &format!(
            "INSERT INTO seele_alias (path, node_id) SELECT path, id FROM seele_node \
             WHERE path = CAST($1 AS TEXT) OR substr(path, 1, {}) = CAST($1 AS TEXT) || '/' \
             ON CONFLICT (path) DO UPDATE SET node_id = excluded.node_id",
            n + 1
        ),
        &[from.into()],
    )?;
    tx.execute(
        &format!(
            "UPDATE seele_node SET path = CAST($1 AS TEXT) || substr(path, {}) \
             WHERE substr(path, 1, {}) = $2",
            n + 1,
            n + 1
        ),
        &[to.into(), format!("{from}/").into()],
    )?;
    // Links into the moved subtree follow it: each stored link is written at its new path
    // (once: a node that already links there keeps its one link) and the old one removed.
    let moved = |p: &str| {
        format!(
            "(to_path = CAST({p} AS TEXT) OR substr(to_path, 1, {}) = CAST({p} AS TEXT) || '/')",
            n + 1
        )
    };
    tx.execute(
        &format!(
            "INSERT INTO seele_link (from_id, to_path, rel) \
             SELECT from_id, CAST($1 AS TEXT) || substr(to_path, {}), rel FROM seele_link \
             WHERE {} ON CONFLICT DO NOTHING",
            n + 1,
            moved("$2")
        ),
        &[to.into(), from.into()],
    )?;
    tx.execute(
        &format!("DELETE FROM seele_link WHERE {}", moved("$1")),
        &[from.into()],
    )?;
    tx.execute(
        "UPDATE seele_node SET path = $1, slug = $2, parent_id = $3, updated_at = $4 WHERE id = $5",
        &[
            to.into(),
            path::slug(to).into(),
            parent.as_deref().into(),
            stamp.now.as_str().into(),
            row.get_text("id")?.into(),
        ],
    )?;
    Ok(())
}
