//! `repo_setup`: a checkout of a Registry source on this machine — cloned when absent (through
//! the one way Core MCP runs git, `coremcp-git-cli`), its remote, default branch and hooks set,
//! and the checkout recorded in the Registry (`registry_source_update checkout_*`).
//!
//! Invariants:
//! - The checkout path is inside the roots; a path that exists and is not that source's
//!   checkout (another repository, or a folder with files) is refused, never overwritten.
//! - A second run on a present checkout changes nothing in git and only reports (the Registry
//!   record is written again only when it is missing or different).
//! - git never prompts (`GIT_TERMINAL_PROMPT=0`), runs under the call's deadline, and may not
//!   use a remote helper (`ext::` runs a command); the URL is passed after `--`.
//! - A source on this machine (a path or a `file://` URL) is cloned only from inside the roots,
//!   and the checkout never lands inside a `.git` folder.
//! - The repository's own hooks (`.githooks`, through `core.hooksPath`) are enabled only when
//!   the call asks (`hooks: true`), which over HTTP only a grant naming `repo_setup` allows:
//!   they run on every later commit.

use std::path::{Path, PathBuf};

use coremcp_git_cli::{self as git, Mode};
use coremcp_plugin_kit::Roots;
use coremcp_plugin_sdk::args::invalid;
use coremcp_plugin_sdk::{host_call, prelude::*};

pub const TOOL: Tool = Tool::typed("repo_setup", &typed(handler)).hints(Hints::IDEMPOTENT);

/// Set up a checkout of a Registry git source: clone if absent, check out the branch, set origin,
/// install hooks, record it in the Registry. On a present checkout it only reports.
#[derive(Debug, Args)]
pub struct Setup {
    /// source ref, e.g. CORE/core-mcp
    #[arg(min_len = 3, max_len = 200)]
    source: String,
    /// inside the roots (default <first root>/<name>)
    #[arg(min_len = 1, max_len = 4096)]
    path: Option<String>,
    /// default: the source's default
    #[arg(min_len = 1, max_len = 255)]
    branch: Option<String>,
    /// enable its .githooks folder (they run on every commit; over HTTP a grant naming
    /// repo_setup)
    #[arg(default)]
    hooks: bool,
}

fn handler(ctx: &Ctx<'_>, args: Setup) -> Result<Value, ToolError> {
    let roots = Roots::from_host()?;
    let source = find_source(&args.source)?;
    let host = crate::tools::bootstrap::machine_name();
    let out = set_up(ctx, &roots, &args, &source)?;
    record(out, &args.source, &host)
}

/// A Registry source as `repo_setup` needs it.
#[derive(Debug, Clone)]
pub struct Source {
    pub name: String,
    pub url: String,
    pub default_branch: String,
}

fn registry(tool: &str, args: Value) -> Result<Value, ToolError> {
    host_call("registry.call", &json!({"tool": tool, "args": args}))
}

/// The git source `reference` (`PROJECT/name`) from the Registry.
fn find_source(reference: &str) -> Result<Source, ToolError> {
    let Some((project, name)) = reference.split_once('/') else {
        return Err(invalid(
            "source",
            format!("{reference:?} is not a source ref PROJECT/name"),
        ));
    };
    let page = registry(
        "registry_source_list",
        json!({"project": project, "query": name, "status": "all", "limit": 200}),
    )?;
    let found = page["items"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|s| s["ref"] == reference)
        .ok_or_else(|| {
            ToolError::new(
                codes::NOT_FOUND,
                format!("no Registry source {reference} (registry_source_list shows them)"),
            )
        })?;
    if found["kind"] != "git" {
        return Err(invalid(
            "source",
            format!(
                "{reference} is a {} source, not a git repository",
                found["kind"]
            ),
        ));
    }
    let text = |key: &str| found[key].as_str().unwrap_or_default().to_owned();
    Ok(Source {
        name: text("name"),
        url: text("url"),
        default_branch: text("default_branch"),
    })
}

/// Clones or inspects the checkout; the report, without the Registry's part.
pub fn set_up(
    ctx: &Ctx<'_>,
    roots: &Roots,
    args: &Setup,
    source: &Source,
) -> Result<Value, ToolError> {
    git::check_environment()?;
    if source.url.is_empty() || source.url.starts_with('-') {
        return Err(ToolError::new(
            codes::FAILED,
            format!("the source's URL {:?} cannot be cloned", source.url),
        ));
    }
    let branch = args
        .branch
        .clone()
        .unwrap_or_else(|| source.default_branch.clone());
    if branch.is_empty()
        || branch.starts_with('-')
        || branch.contains(['\0', ' ', '~', '^', ':', '\\'])
    {
        return Err(invalid(
            "branch",
            format!("{branch:?} is not a branch name"),
        ));
    }
    let default_path = source.name.clone();
    let path = roots.resolve_new("path", args.path.as_deref().unwrap_or(&default_path), None)?;
    if path.components().any(|c| c.as_os_str() == ".git") {
        return Err(invalid(
            "path",
            format!(
                "{} is inside a .git folder, where a checkout must never go",
                path.display()
            ),
        ));
    }
    let ceilings = git::ceilings(roots);
    let run = |cwd: &Path, mode: Mode, argv: &[&str]| -> Result<git::Output, ToolError> {
        let all: Vec<String> = argv.iter().map(|a| (*a).to_owned()).collect();
        let out = git::invoke(ctx, cwd, &ceilings, mode, &all)?;
        if out.success() {
            Ok(out)
        } else {
            Err(git::failure(&all, &out))
        }
    };
    let shown = path.display().to_string();
    let mut out = json!({"source": args.source, "url": source.url, "path": shown});
    let present = path.exists();
    if present {
        let empty = path.is_dir()
            && std::fs::read_dir(&path)
                .map(|mut d| d.next().is_none())
                .unwrap_or(false);
        if !empty {
            return report_present(&path, &run, source, out);
        }
    }
    let parent = path
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("/"));
    git::check_url(roots, &source.url, &parent, "the source's URL")?;
    std::fs::create_dir_all(&parent).map_err(|e| {
        ToolError::new(codes::FAILED, format!("creating {}: {e}", parent.display()))
    })?;
    run(
        &parent,
        Mode::Write,
        &[
            "clone",
            "--origin",
            "origin",
            "--branch",
            &branch,
            "--",
            &source.url,
            &shown,
        ],
    )?;
    run(
        &path,
        Mode::Write,
        &[
            "remote",
            "set-head",
            "origin",
            &source.default_branch_or(&branch),
        ],
    )?;
    out["action"] = "cloned".into();
    out["changed"] = true.into();
    out["branch"] = branch.into();
    out["hooks"] = hooks(&path, args.hooks, &run)?;
    Ok(out)
}

impl Source {
    fn default_branch_or(&self, branch: &str) -> String {
        if self.default_branch.is_empty() {
            branch.to_owned()
        } else {
            self.default_branch.clone()
        }
    }
}

type Git<'a> = dyn Fn(&Path, Mode, &[&str]) -> Result<git::Output, ToolError> + 'a;

/// A checkout already there: what it is, changing nothing; refused when it is not this
/// source's.
fn report_present(
    path: &Path,
    run: &Git<'_>,
    source: &Source,
    mut out: Value,
) -> Result<Value, ToolError> {
    let shown = path.display().to_string();
    let top = run(path, Mode::Read, &["rev-parse", "--show-toplevel"]).map_err(|_| {
        ToolError::new(
            codes::CONFLICT,
            format!("{shown} exists and is not a git checkout; choose another path or empty it"),
        )
    })?;
    let top = PathBuf::from(top.line());
    let canonical = path.canonicalize().unwrap_or_else(|_| path.to_owned());
    if top != canonical {
        return Err(ToolError::new(
            codes::CONFLICT,
            format!(
                "{shown} is inside another checkout ({}); choose another path",
                top.display()
            ),
        ));
    }
    let origin = run(path, Mode::Read, &["remote", "get-url", "origin"])
        .map(|o| o.line())
        .ok();
    if origin.as_deref() != Some(source.url.as_str()) {
        return Err(ToolError::new(
            codes::CONFLICT,
            format!(
                "{shown} is a checkout of {} , not of {}; set its origin by hand or choose another path",
                origin.as_deref().unwrap_or("a repository without origin"),
                source.url
            ),
        ));
    }
    let branch = run(
        path,
        Mode::Read,
        &["symbolic-ref", "--quiet", "--short", "HEAD"],
    )
    .map(|o| o.line())
    .ok();
    let hooks_path = run(path, Mode::Read, &["config", "--get", "core.hooksPath"])
        .map(|o| o.line())
        .ok();
    out["action"] = "present".into();
    out["changed"] = false.into();
    if let Some(branch) = branch {
        out["branch"] = branch.into();
    }
    out["origin"] = source.url.as_str().into();
    out["hooks"] = match hooks_path {
        Some(hooks) => json!({"installed": true, "path": hooks}),
        None => json!({"installed": false}),
    };
    Ok(out)
}

/// Points git at the repository's `.githooks` folder when there is one and `wanted`.
fn hooks(path: &Path, wanted: bool, run: &Git<'_>) -> Result<Value, ToolError> {
    if !wanted {
        return Ok(json!({"installed": false, "note": "hooks: false"}));
    }
    if !path.join(".githooks").is_dir() {
        return Ok(json!({"installed": false, "note": "the repository has no .githooks folder"}));
    }
    run(
        path,
        Mode::Write,
        &["config", "core.hooksPath", ".githooks"],
    )?;
    Ok(json!({"installed": true, "path": ".githooks"}))
}

/// Adds the Registry's record of the checkout to `out`: written when missing or different.
fn record(mut out: Value, reference: &str, host: &str) -> Result<Value, ToolError> {
    let path = out["path"].as_str().unwrap_or_default().to_owned();
    let branch = out["branch"].as_str().map(str::to_owned);
    let mut args = json!({"source": reference, "checkout_host": host, "checkout_path": path});
    if let Some(branch) = &branch {
        args["checkout_branch"] = branch.as_str().into();
    }
    let recorded = registry("registry_source_update", args);
    out["registry"] = match recorded {
        Ok(_) => json!({"recorded": true, "host": host}),
        Err(e) if e.code.as_str() == codes::NOT_FOUND => json!({
            "recorded": false, "host": host,
            "note": format!("this machine is not a Registry host ({}); run bootstrap with register_host first", e.message),
        }),
        Err(e) => return Err(e),
    };
    Ok(out)
}
