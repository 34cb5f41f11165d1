//! `registry_source_add`: a new source in an active project.

use coremcp_plugin_sdk::{typed, Args, Ctx, Hints, Tool, ToolError};
use coremcp_store::plugin::{json_text, new_id, now};
use serde_json::{Map, Value};

use crate::args::{Branch, Description, ProjectKey, SourceName, Url};
use crate::common::{duplicate, SERVICE};
use crate::project;
use crate::source::{self, Kind};

pub const TOOL: Tool = Tool::new(
    "registry_source_add",
    "Add a source to a project: a git repo, docs repo, package, service or URL. \
        Its ref is PROJECT/name (unique in the project; an existing one is a conflict). The \
        project must exist and be active. Returns the source.",
    &typed(handler),
)
.hints(Hints::ADD);

#[derive(Debug, Args)]
pub struct Add {
    /// project key, e.g. CORE
    #[arg(min_len = 1)]
    project: ProjectKey,
    /// ^[a-z0-9][a-z0-9._-]*$, unique in the project, e.g. core-mcp
    #[arg(min_len = 1)]
    name: SourceName,
    /// what it is (permanent)
    kind: Kind,
    /// clone, package or service URL
    #[arg(min_len = 1, max_len = 2000)]
    url: Url,
    /// default main
    #[arg(min_len = 1, max_len = 255)]
    default_branch: Option<Branch>,
    /// what it holds
    #[arg(max_len = 4000)]
    description: Option<Description>,
    /// free-form JSON object (at most 16000 characters)
    metadata: Option<Map<String, Value>>,
}

fn handler(_: &Ctx<'_>, args: Add) -> Result<Value, ToolError> {
    let (project_key, name) = (args.project.as_str(), args.name.as_str());
    let branch = args.default_branch.as_ref().map_or("main", Branch::as_str);
    let metadata = args.metadata.map(Value::Object);
    if let Some(m) = &metadata {
        source::check_metadata_size(m)?;
    }
    let source_ref = format!("{project_key}/{name}");
    SERVICE.run(|tx| {
        let project_id = project::active_id(tx, "project", project_key)?;
        let inserted = tx.query(
            "INSERT INTO registry_source (id, project_id, name, kind, url, default_branch, \
             description, metadata, status, version, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'active', 1, $9, $9) \
             ON CONFLICT (project_id, name) DO NOTHING RETURNING id",
            &[
                new_id().into(),
                project_id.as_str().into(),
                name.into(),
                args.kind.as_str().into(),
                args.url.as_str().into(),
                branch.into(),
                args.description.as_ref().map(Description::as_str).into(),
                metadata.as_ref().map(json_text).into(),
                now().into(),
            ],
        )?;
        if inserted.is_empty() {
            let existing = source::find(tx, "source", &source_ref)?;
            return Err(duplicate(
                &format!("source \"{source_ref}\""),
                existing.get_i64("version")?,
                "change it with registry_source_update",
            )
            .into());
        }
        Ok(source::json(&source::find(tx, "source", &source_ref)?)?)
    })
}
