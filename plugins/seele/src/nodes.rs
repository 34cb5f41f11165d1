//! The node rules that need the store: finding a node, creating one with its missing
//! ancestors as folders, writing a new revision with `expected_version`, and keeping the side
//! tables (tags, links) in step — every one inside the caller's transaction.
//!
//! Invariants:
//! - A node and its revision, tags and links are written by the same transaction, so a reader
//!   never sees one without the others; a revision row exists for every version a node has
//!   had, unless an import replaced the history (`History::Replace`).
//! - Ancestors are created with `ON CONFLICT (path) DO NOTHING`, so two writers creating under
//!   the same new folder at once both succeed and share it.
//! - A write whose content hash equals the node's changes nothing: no version, no revision.

use coremcp_plugin_sdk::args::invalid;
use coremcp_plugin_sdk::{codes, ArgEnum, ToolError};
use coremcp_store::plugin::{self, TxError};
use coremcp_store::{Param, Row, Tx};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use crate::links;
use crate::path;

/// A node's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ArgEnum)]
pub enum Kind {
    Folder,
    Doc,
    Section,
    Note,
    Adr,
    Runbook,
}

impl Kind {
    /// The kind as stored.
    pub fn parse(text: &str) -> Kind {
        Kind::VALUES
            .iter()
            .position(|v| *v == text)
            .map_or(Kind::Doc, |i| KINDS[i])
    }
}

const KINDS: [Kind; 6] = [
    Kind::Folder,
    Kind::Doc,
    Kind::Section,
    Kind::Note,
    Kind::Adr,
    Kind::Runbook,
];

/// What a revision holds.
#[derive(Debug, Clone, PartialEq)]
pub struct Content {
    pub kind: Kind,
    pub title: String,
    pub body: String,
    pub front_matter: Map<String, Value>,
    pub tags: Vec<String>,
    pub project: Option<String>,
}

impl Content {
    /// The theme a node belongs to: its front matter's `theme`, when that is a string.
    pub fn theme(&self) -> Option<&str> {
        self.front_matter.get("theme").and_then(Value::as_str)
    }
}

/// The hash an import compares: of everything a revision holds but its provenance.
pub fn content_hash(c: &Content) -> String {
    let text = json!([
        c.kind.as_str(),
        c.title,
        c.body,
        c.front_matter,
        c.tags,
        c.project
    ])
    .to_string();
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The columns a node is read with.
pub const COLUMNS: &str = "id, parent_id, path, slug, kind, title, body, front_matter, \
    project_key, theme_key, tags, source_ref, content_hash, version, created_by, updated_by, \
    created_at, updated_at";

/// The live node at `path`.
pub fn by_path(tx: &mut Tx<'_>, path: &str) -> Result<Option<Row>, TxError> {
    let sql = format!("SELECT {COLUMNS} FROM seele_node WHERE path = $1 AND deleted_at IS NULL");
    Ok(tx.query_opt(&sql, &[path.into()])?)
}

/// The live node with this id, or `not_found` naming `field`.
pub fn by_id(tx: &mut Tx<'_>, field: &str, id: &str) -> Result<Row, TxError> {
    let sql = format!("SELECT {COLUMNS} FROM seele_node WHERE id = $1 AND deleted_at IS NULL");
    match tx.query_opt(&sql, &[id.into()])? {
        Some(row) => Ok(row),
        None => Err(ToolError::new(
            codes::NOT_FOUND,
            format!("argument \"{field}\": no node has the id {id:?}"),
        )
        .into()),
    }
}

/// The content of a stored node row.
pub fn content_of(row: &Row) -> Result<Content, TxError> {
    let object = |text: String| match serde_json::from_str(&text) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    };
    let tags = serde_json::from_str(&row.get_text("tags")?).unwrap_or_default();
    Ok(Content {
        kind: Kind::parse(&row.get_text("kind")?),
        title: row.get_text("title")?,
        body: row.get_text("body")?,
        front_matter: object(row.get_text("front_matter")?),
        tags,
        project: row.get_opt_text("project_key")?,
    })
}

/// Who writes, and when: the same for every row of one call.
#[derive(Debug, Clone)]
pub struct Stamp {
    pub author: Option<String>,
    pub now: String,
}

impl Stamp {
    pub fn now() -> Self {
        Self {
            author: coremcp_plugin_sdk::caller::who(),
            now: plugin::now(),
        }
    }
}

/// The id of the node at `path`'s parent, creating every missing ancestor as a `folder`
/// node (`None` for a root path); the paths created are added to `created`.
pub fn ensure_parent(
    tx: &mut Tx<'_>,
    path: &str,
    stamp: &Stamp,
    created: &mut Vec<String>,
) -> Result<Option<String>, TxError> {
    let ancestors = path::ancestors(path);
    if ancestors.is_empty() {
        return Ok(None);
    }
    let mut q = coremcp_store::query::Query::new();
    let owned: Vec<String> = ancestors.iter().map(|a| (*a).to_owned()).collect();
    let list = q.in_list(&owned);
    let found = tx.query(
        &format!("SELECT path, id, kind FROM seele_node WHERE path IN {list}"),
        q.params(),
    )?;
    let mut parent: Option<String> = None;
    for ancestor in ancestors {
        let existing = found
            .iter()
            .find(|r| r.get_text("path").ok().as_deref() == Some(ancestor));
        let id = match existing {
            Some(row) => row.get_text("id")?,
            None => {
                let content = Content {
                    kind: Kind::Folder,
                    title: path::slug(ancestor).to_owned(),
                    body: String::new(),
                    front_matter: Map::new(),
                    tags: Vec::new(),
                    project: None,
                };
                match insert(tx, ancestor, parent.as_deref(), &content, None, stamp)? {
                    Some(id) => {
                        created.push(ancestor.to_owned());
                        id
                    }
                    // Another writer created it a moment ago.
                    None => by_path(tx, ancestor)?
                        .ok_or_else(|| {
                            ToolError::new(codes::FAILED, format!("{ancestor} vanished"))
                        })?
                        .get_text("id")?,
                }
            }
        };
        parent = Some(id);
    }
    Ok(parent)
}

/// Inserts the node at `path` as version 1 with its revision, tags and links; `None` when a
/// node already has the path (nothing is written then).
pub fn insert(
    tx: &mut Tx<'_>,
    path: &str,
    parent: Option<&str>,
    content: &Content,
    source_ref: Option<&str>,
    stamp: &Stamp,
) -> Result<Option<String>, TxError> {
    let id = plugin::new_id();
    let n = tx.execute(
        "INSERT INTO seele_node (id, parent_id, path, slug, kind, title, body, front_matter, \
         project_key, theme_key, tags, tag_text, source_ref, content_hash, version, created_by, \
         updated_by, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, \
         $11, $12, $13, $14, 1, $15, $15, $16, $16) ON CONFLICT (path) DO NOTHING",
        &[
            id.as_str().into(),
            parent.into(),
            path.into(),
            path::slug(path).into(),
            content.kind.as_str().into(),
            content.title.as_str().into(),
            content.body.as_str().into(),
            Value::Object(content.front_matter.clone())
                .to_string()
                .into(),
            content.project.as_deref().into(),
            content.theme().into(),
            json!(content.tags).to_string().into(),
            content.tags.join(" ").into(),
            source_ref.into(),
            content_hash(content).into(),
            stamp.author.as_deref().into(),
            stamp.now.as_str().into(),
        ],
    )?;
    if n == 0 {
        return Ok(None);
    }
    revision(tx, &id, 1, content, source_ref, stamp)?;
    side_tables(tx, &id, path, content, false)?;
    Ok(Some(id))
}

/// How an update treats the node's older revisions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum History {
    /// Kept: the new content is one more revision.
    Keep,
    /// Dropped: the new content is the only revision left.
    Replace,
}

/// Writes `content` as the next version of node `row`, if it differs from the current one
/// (else returns `None` and writes nothing), guarded by `expected` or the version read.
pub fn update(
    tx: &mut Tx<'_>,
    row: &Row,
    content: &Content,
    source_ref: Option<&str>,
    history: History,
    expected: Option<i64>,
    stamp: &Stamp,
) -> Result<Option<i64>, TxError> {
    let id = row.get_text("id")?;
    let path = row.get_text("path")?;
    let current = row.get_i64("version")?;
    coremcp_store::records::check_expected(&format!("node {path}"), current, expected)?;
    let hash = content_hash(content);
    if hash == row.get_text("content_hash")? {
        return Ok(None);
    }
    let version = current + 1;
    let params: Vec<Param> = vec![
        content.kind.as_str().into(),
        content.title.as_str().into(),
        content.body.as_str().into(),
        Value::Object(content.front_matter.clone())
            .to_string()
            .into(),
        content.project.as_deref().into(),
        content.theme().into(),
        json!(content.tags).to_string().into(),
        content.tags.join(" ").into(),
        source_ref.into(),
        hash.into(),
        stamp.author.as_deref().into(),
        stamp.now.as_str().into(),
        id.as_str().into(),
        current.into(),
    ];
    let sql = "UPDATE seele_node SET kind = $1, title = $2, body = $3, front_matter = $4, \
        project_key = $5, theme_key = $6, tags = $7, tag_text = $8, \
        source_ref = COALESCE($9, source_ref), content_hash = $10, updated_by = $11, \
        updated_at = $12, version = version + 1 WHERE id = $13 AND version = $14";
    let what = format!("node {path}");
    coremcp_store::records::guarded_update(tx, sql, &params, "seele_node", &id, &what, expected)?;
    if history == History::Replace {
        tx.execute(
            "DELETE FROM seele_revision WHERE node_id = $1",
            &[id.as_str().into()],
        )?;
    }
    revision(tx, &id, version, content, source_ref, stamp)?;
    side_tables(tx, &id, &path, content, true)?;
    Ok(Some(version))
}

fn revision(
    tx: &mut Tx<'_>,
    id: &str,
    version: i64,
    content: &Content,
    source_ref: Option<&str>,
    stamp: &Stamp,
) -> Result<(), TxError> {
    tx.execute(
        "INSERT INTO seele_revision (node_id, version, kind, title, body, front_matter, tags, \
         source_ref, author, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        &[
            id.into(),
            version.into(),
            content.kind.as_str().into(),
            content.title.as_str().into(),
            content.body.as_str().into(),
            Value::Object(content.front_matter.clone())
                .to_string()
                .into(),
            json!(content.tags).to_string().into(),
            source_ref.into(),
            stamp.author.as_deref().into(),
            stamp.now.as_str().into(),
        ],
    )?;
    Ok(())
}

/// Rewrites the node's tag rows and link rows from `content` (after clearing them when
/// `existing`), each set in one statement.
fn side_tables(
    tx: &mut Tx<'_>,
    id: &str,
    path: &str,
    content: &Content,
    existing: bool,
) -> Result<(), TxError> {
    if existing {
        tx.execute("DELETE FROM seele_tag WHERE node_id = $1", &[id.into()])?;
        tx.execute("DELETE FROM seele_link WHERE from_id = $1", &[id.into()])?;
    }
    if !content.tags.is_empty() {
        let mut params: Vec<Param> = vec![id.into()];
        let rows: Vec<String> = content
            .tags
            .iter()
            .map(|t| {
                params.push(t.as_str().into());
                format!("($1, ${})", params.len())
            })
            .collect();
        tx.execute(
            &format!(
                "INSERT INTO seele_tag (node_id, tag) VALUES {}",
                rows.join(", ")
            ),
            &params,
        )?;
    }
    let links = links::parse(path, &content.body, &content.front_matter);
    if !links.is_empty() {
        let mut params: Vec<Param> = vec![id.into()];
        let rows: Vec<String> = links
            .iter()
            .map(|(to, rel)| {
                params.push(to.as_str().into());
                params.push(rel.as_str().into());
                format!("($1, ${}, ${})", params.len() - 1, params.len())
            })
            .collect();
        tx.execute(
            &format!(
                "INSERT INTO seele_link (from_id, to_path, rel) VALUES {}",
                rows.join(", ")
            ),
            &params,
        )?;
    }
    Ok(())
}

/// `front_matter` merged into `base`: a given key takes its new value in its old place, a new
/// key goes last, a key given as `null` is removed; the other keys stay as and where they were.
pub fn merge(base: &Map<String, Value>, given: &Map<String, Value>) -> Map<String, Value> {
    let mut out = base.clone();
    for (key, value) in given {
        match value {
            Value::Null => {
                out.shift_remove(key);
            }
            value => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    out
}

/// Tags as given, each checked and kept once, in order.
pub fn tags(field: &str, given: &[String]) -> Result<Vec<String>, ToolError> {
    let mut out: Vec<String> = Vec::new();
    for tag in given {
        coremcp_plugin_sdk::rules::token(field, tag, 100)?;
        if !out.contains(tag) {
            out.push(tag.clone());
        }
    }
    if out.len() > 50 {
        return Err(invalid(field, "at most 50 tags are allowed"));
    }
    Ok(out)
}

/// The node as a write or import reports it.
pub fn written(id: &str, path: &str, version: i64) -> Value {
    json!({"id": id, "path": path, "version": version})
}
