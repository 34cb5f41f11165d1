//! One module per tool, each exporting its table entry as `TOOL`, and what they share: the
//! `repo_path` argument ([`RepoPath`]) and opening the repository it names.
//!
//! Invariants: every handler opens its repository through [`open`] (roots from the host), so
//! no tool touches a path before it is confined; results are JSON objects with a `repo` field
//! (the work tree's top level) and no `null`s.

pub mod git_add;
pub mod git_branch_list;
pub mod git_commit;
pub mod git_diff;
pub mod git_log;
pub mod git_push;
pub mod git_show;
pub mod git_status;

use coremcp_plugin_kit::Roots;
use coremcp_plugin_sdk::{Args, Ctx, ToolError};

use crate::repo::Repo;

/// The `repo_path` argument every tool takes (`#[arg(flatten)]`).
#[derive(Debug, Clone, Args)]
pub struct RepoPath {
    /// default first root
    pub repo_path: Option<String>,
}

/// Opens the repository `at` names inside the host's roots.
pub fn open<'c>(ctx: &'c Ctx<'c>, at: &RepoPath) -> Result<Repo<'c>, ToolError> {
    Repo::open(ctx, Roots::from_host()?, at.repo_path.as_deref())
}

pub use coremcp_plugin_sdk::to_json as json;
