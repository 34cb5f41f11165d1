//! `registry_source_add`: a new source in an active project.

use coremcp_plugin_sdk::prelude::*;
use coremcp_store::plugin::json_text;

use crate::args::{Branch, Description, ProjectKey, SourceName, Url};
use crate::common::SERVICE;
use crate::project::PROJECT;
use crate::source::{self, Kind, SOURCE};

pub const TOOL: Tool = Tool::typed("registry_source_add", &typed(handler)).hints(Hints::ADD);

/// Add a source (git repo, docs repo, package, service or URL) to an active project; its ref is
/// PROJECT/name.
#[derive(Debug, Args)]
pub struct Add {
    /// project key, e.g. CORE
    #[arg(min_len = 1)]
    project: ProjectKey,
    /// ^[a-z0-9][a-z0-9._-]*$, unique in the project
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
    /// JSON object
    metadata: Option<Map<String, Value>>,
}

fn handler(_: &Ctx<'_>, args: Add) -> Result<Value, ToolError> {
    let branch = args.default_branch.as_ref().map_or("main", Branch::as_str);
    let metadata = args.metadata.map(Value::Object);
    if let Some(m) = &metadata {
        source::check_metadata_size(m)?;
    }
    let key = [args.project.as_str(), args.name.as_str()];
    SERVICE.run(|tx| {
        let columns = [
            (
                "project_id",
                PROJECT.id(tx, "project", &key[..1], true)?.into(),
            ),
            ("name", (&args.name).into()),
            ("kind", args.kind.into()),
            ("url", (&args.url).into()),
            ("default_branch", branch.into()),
            ("description", args.description.as_ref().into()),
            ("metadata", metadata.as_ref().map(json_text).into()),
            ("status", "active".into()),
        ];
        Ok(SOURCE.json(&SOURCE.add(tx, &key, &columns)?)?)
    })
}
