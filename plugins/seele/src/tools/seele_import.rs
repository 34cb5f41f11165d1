//! `seele_import`: up to 200 nodes into a subtree in one transaction, matched by path.
//!
//! Invariants:
//! - All or nothing: every node is written by one transaction, so a failure (or a killed
//!   process) leaves the tree as it was.
//! - A node whose content hash is the stored one is `unchanged` and writes nothing, whatever
//!   `on_conflict` says; a changed one is left alone (`skip`), written as one more revision
//!   (`version`) or written as the only revision (`replace`).
//! - `dry_run` runs exactly the same code in the same kind of transaction and rolls it back,
//!   so its report is what a real run would do at that moment, and nothing is written.
//! - Two nodes of one call with the same path are refused before anything runs.

use coremcp_plugin_sdk::args::invalid;
use coremcp_plugin_sdk::budget;
use coremcp_plugin_sdk::prelude::*;
use coremcp_store::plugin::TxError;
use coremcp_store::Tx;

use super::{ProjectKey, SourceRef, Title, MAX_BODY};
use crate::nodes::{self, Content, History, Kind, Stamp};
use crate::path::{self, NodePath};
use crate::SERVICE;

pub const TOOL: Tool = Tool::typed("seele_import", &typed(handler)).hints(Hints::IDEMPOTENT);

/// The most nodes one call imports.
pub const MAX_NODES: usize = 200;
/// The most bytes of bodies and front matter one call imports (UTF-8, as the request carries
/// them): with the JSON around them, one request stays inside the host's 8 MB line limit.
pub const MAX_IMPORT_BYTES: usize = 4_000_000;

/// Import up to 200 documents (4 MB in all) under root_path in one transaction, by path:
/// unchanged skipped, changed per on_conflict; dry_run writes nothing.
#[derive(Debug, Args)]
pub struct Import {
    /// the documents
    #[arg(required, min_items = 1, max_items = 200)]
    nodes: Vec<NodeIn>,
    /// path prefix for all
    root_path: Option<NodePath>,
    /// project key
    project: Option<ProjectKey>,
    /// provenance, PROJECT/name@sha
    source_ref: Option<SourceRef>,
    /// for a changed node (default version)
    on_conflict: Option<OnConflict>,
    /// write nothing
    #[arg(default)]
    dry_run: bool,
}

/// One document to import.
#[derive(Debug, Args)]
pub struct NodeIn {
    /// its path under root_path
    path: NodePath,
    /// Markdown
    #[arg(max_len = 200000)]
    body: String,
    /// default: the first # heading
    title: Option<Title>,
    /// its front matter
    front_matter: Option<Map<String, Value>>,
    /// its tags
    #[arg(max_items = 50)]
    tags: Vec<String>,
}

/// What to do with a node that exists and whose content changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ArgEnum)]
pub enum OnConflict {
    Skip,
    Replace,
    Version,
}

/// What the import did (or would do) to one node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Created,
    Updated,
    Unchanged,
    Skipped,
}

impl Action {
    fn as_str(self) -> &'static str {
        match self {
            Action::Created => "created",
            Action::Updated => "updated",
            Action::Unchanged => "unchanged",
            Action::Skipped => "skipped",
        }
    }
}

/// A node ready to import: its full path and content.
struct Planned {
    path: String,
    content: Content,
}

fn handler(_: &Ctx<'_>, args: Import) -> Result<Value, ToolError> {
    let planned = plan(&args)?;
    let on_conflict = args.on_conflict.unwrap_or(OnConflict::Version);
    let stamp = Stamp::now();
    let mut rehearsed: Option<Value> = None;
    let outcome = SERVICE.run(|tx| {
        let report = import(tx, &args, &planned, on_conflict, &stamp)?;
        if args.dry_run {
            rehearsed = Some(report);
            // Roll back: a dry run writes nothing.
            return Err(ToolError::new(codes::FAILED, "dry run").into());
        }
        Ok(report)
    });
    match (outcome, rehearsed) {
        (Err(_), Some(report)) if args.dry_run => Ok(report),
        (outcome, _) => outcome,
    }
}

/// Every node's full path and content, checked before the store is touched.
fn plan(args: &Import) -> Result<Vec<Planned>, ToolError> {
    let root = args.root_path.as_ref().map(NodePath::normal);
    let total: usize = args
        .nodes
        .iter()
        .map(|n| {
            n.body.len()
                + n.front_matter
                    .as_ref()
                    .map_or(0, |f| Value::Object(f.clone()).to_string().len())
        })
        .sum();
    if total > MAX_IMPORT_BYTES {
        return Err(invalid(
            "nodes",
            format!(
                "{total} bytes of bodies and front matter in one import; at most \
                 {MAX_IMPORT_BYTES} (4 MB) are taken at once, so one request stays inside the \
                 8 MB line limit: import them in several calls"
            ),
        ));
    }
    let mut out: Vec<Planned> = Vec::with_capacity(args.nodes.len());
    for (i, node) in args.nodes.iter().enumerate() {
        let at = format!("nodes[{i}]");
        if node.body.chars().count() > MAX_BODY {
            return Err(invalid(
                &format!("{at}.body"),
                format!("at most {MAX_BODY} characters are allowed"),
            ));
        }
        let full = path::join(root.as_deref(), &node.path.normal())?;
        if let Some(j) = out.iter().position(|p| p.path == full) {
            return Err(invalid(
                &format!("{at}.path"),
                format!("{full} is also nodes[{j}]: each path once"),
            ));
        }
        let front_matter = nodes::merge(
            &Map::new(),
            node.front_matter.as_ref().unwrap_or(&Map::new()),
        );
        let kind = front_matter
            .get("kind")
            .and_then(Value::as_str)
            .filter(|k| Kind::VALUES.contains(k))
            .map_or(Kind::Doc, Kind::parse);
        let title = match &node.title {
            Some(t) => t.0.clone(),
            None => default_title(&node.body, &full),
        };
        out.push(Planned {
            path: full,
            content: Content {
                kind,
                title,
                body: node.body.clone(),
                front_matter,
                tags: nodes::tags(&format!("{at}.tags"), &node.tags)?,
                project: args.project.as_ref().map(|p| p.0.clone()),
            },
        });
    }
    Ok(out)
}

/// The body's first `# ` heading, else the path's last segment.
fn default_title(body: &str, path: &str) -> String {
    body.lines()
        .find_map(|l| l.strip_prefix("# "))
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(|t| t.chars().take(super::MAX_TITLE).collect())
        .unwrap_or_else(|| path::slug(path).to_owned())
}

fn import(
    tx: &mut Tx<'_>,
    args: &Import,
    planned: &[Planned],
    on_conflict: OnConflict,
    stamp: &Stamp,
) -> Result<Value, TxError> {
    let mut folders = Vec::new();
    let mut listed = Vec::with_capacity(planned.len());
    let mut counts = [0usize; 4];
    for node in planned {
        let source_ref = args
            .source_ref
            .as_ref()
            .map(|s| format!("{}:{}", s.as_str(), node.path));
        let (id, version, action) = match nodes::by_path(tx, &node.path)? {
            None => {
                let parent = nodes::ensure_parent(tx, &node.path, stamp, &mut folders)?;
                let id = nodes::insert(
                    tx,
                    &node.path,
                    parent.as_deref(),
                    &node.content,
                    source_ref.as_deref(),
                    stamp,
                )?
                .ok_or(coremcp_store::StoreError::Busy)?;
                (id, 1, Action::Created)
            }
            Some(row) => {
                let id = row.get_text("id")?;
                let version = row.get_i64("version")?;
                if nodes::content_hash(&node.content) == row.get_text("content_hash")? {
                    (id, version, Action::Unchanged)
                } else if on_conflict == OnConflict::Skip {
                    (id, version, Action::Skipped)
                } else {
                    let history = match on_conflict {
                        OnConflict::Replace => History::Replace,
                        _ => History::Keep,
                    };
                    let written = nodes::update(
                        tx,
                        &row,
                        &node.content,
                        source_ref.as_deref(),
                        history,
                        None,
                        stamp,
                    )?;
                    (id, written.unwrap_or(version), Action::Updated)
                }
            }
        };
        counts[action as usize] += 1;
        let mut entry = nodes::written(&id, &node.path, version);
        entry["action"] = action.as_str().into();
        listed.push(entry);
    }
    let mut out = json!({
        "dry_run": args.dry_run,
        "created": counts[Action::Created as usize],
        "updated": counts[Action::Updated as usize],
        "unchanged": counts[Action::Unchanged as usize],
        "skipped": counts[Action::Skipped as usize],
        "folders_created": folders,
    });
    // Every node is listed while the answer fits the result limit; `more` counts the rest.
    let room = budget::result_budget().saturating_sub(budget::chars(&out) + 40);
    let (mut used, mut shown) = (0, Vec::new());
    for entry in listed.iter() {
        used += budget::chars(entry) + 1;
        if used > room {
            break;
        }
        shown.push(entry.clone());
    }
    if shown.len() < listed.len() {
        out["more"] = (listed.len() - shown.len()).into();
    }
    out["nodes"] = shown.into();
    Ok(out)
}
