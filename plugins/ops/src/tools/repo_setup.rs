//! `repo_setup`: a checkout of a Registry source (a git or a docs repository) on this machine —
//! cloned when absent (through the one way Core MCP runs git, `coremcp-git-cli`), reconciled
//! when present (its `origin` remote set back to the URL the checkout was made from, and
//! `origin/HEAD` to the source's default branch), hooks enabled only when asked, and the
//! checkout recorded in the Registry with that URL (`registry_source_update checkout_*`), where
//! the docs tools find a docs source's checkout.
//!
//! Invariants:
//! - The checkout path is inside the roots; a path that exists and is not a checkout (a folder
//!   with files, or a folder inside another checkout) is refused, never overwritten.
//! - One checkout per source and machine: without `path` the recorded one is used; a `path`
//!   other than the recorded one is refused unless the call says `move` (the old folder is left
//!   as it is).
//! - Reconciling is idempotent: a run on a checkout already as the source says changes nothing
//!   and reports `changed: false`; each change made is listed in `changes`. The working tree
//!   and its branch are never touched (work in progress stays).
//! - A checkout's origin follows the URL it was made from (recorded with the checkout), never
//!   a source URL changed in the Registry since: whoever changed it, pushes keep going where
//!   they went. Moving origin to the new URL takes `follow_url` naming that URL, and the
//!   answer names the Registry's URL either way (`source_url_changed` when not followed).
//! - git never prompts (`GIT_TERMINAL_PROMPT=0`), runs under the call's deadline, and may not
//!   use a remote helper (`ext::` runs a command); the URL is passed after `--`. A fetch in a
//!   checkout found in place runs no program that checkout's own config names
//!   (`coremcp_git_cli::Guards`).
//! - A source on this machine (a path or a `file://` URL) is cloned only from inside the roots,
//!   and the checkout never lands inside a `.git` folder.
//! - The repository's own hooks (`.githooks`, through `core.hooksPath`) are enabled only when
//!   the call asks (`hooks: true`), which over HTTP only a grant naming `repo_setup` allows:
//!   they run on every later commit.

use std::path::{Path, PathBuf};

use coremcp_git_cli::{self as git, Mode};
use coremcp_plugin_kit::Roots;
use coremcp_plugin_sdk::args::invalid;
use coremcp_plugin_sdk::prelude::*;

pub const TOOL: Tool = Tool::typed("repo_setup", &typed(handler)).hints(Hints::IDEMPOTENT);

/// This machine's checkout of a Registry git/docs source: cloned if absent, else origin reset
/// to its URL, default branch set (changes listed); recorded.
#[derive(Debug, Args)]
pub struct Setup {
    /// source ref, e.g. CORE/core-mcp
    #[arg(min_len = 3, max_len = 200)]
    source: String,
    /// in the roots (default: recorded checkout, else <root>/<name>)
    #[arg(min_len = 1, max_len = 4096)]
    path: Option<String>,
    /// record path in place of the recorded checkout
    #[arg(default)]
    r#move: bool,
    /// default: the source's default
    #[arg(min_len = 1, max_len = 255)]
    branch: Option<String>,
    /// enable its .githooks (run each commit; HTTP: the tool's grant)
    #[arg(default)]
    hooks: bool,
    /// move origin to this new source URL
    #[arg(min_len = 1, max_len = 2000)]
    follow_url: Option<String>,
}

fn handler(ctx: &Ctx<'_>, args: Setup) -> Result<Value, ToolError> {
    let roots = Roots::from_host()?;
    let host = crate::tools::bootstrap::machine_name();
    let source = find_source(&args.source, &host)?;
    let out = set_up(ctx, &roots, &args, &source)?;
    record(out, &args.source, &host, source.recorded.as_deref())
}

/// A Registry source as `repo_setup` needs it.
#[derive(Debug, Clone)]
pub struct Source {
    pub name: String,
    pub url: String,
    pub default_branch: String,
    /// Where the Registry records its checkout on this machine.
    pub recorded: Option<String>,
    /// The URL that checkout was made from, as recorded with it.
    pub recorded_url: Option<String>,
}

fn registry(tool: &str, args: Value) -> Result<Value, ToolError> {
    coremcp_plugin_kit::registry::call(tool, args)
}

/// The git or docs source `reference` (`PROJECT/name`) from the Registry, with its checkout
/// on `host`.
fn find_source(reference: &str, host: &str) -> Result<Source, ToolError> {
    let Some((project, name)) = reference.split_once('/') else {
        return Err(invalid(
            "source",
            format!("{reference:?} is not a source ref PROJECT/name"),
        ));
    };
    let page = registry(
        "registry_source_list",
        json!({"project": project, "query": name, "status": "all", "limit": 200,
               "include_checkouts": true}),
    )?;
    let found = coremcp_plugin_kit::registry::source(&page, reference, "")?;
    if found["kind"] != "git" && found["kind"] != "docs" {
        return Err(invalid(
            "source",
            format!(
                "{reference} is a {} source; repo_setup checks out git and docs repositories",
                found["kind"]
            ),
        ));
    }
    let text = |key: &str| found[key].as_str().unwrap_or_default().to_owned();
    let checkout = coremcp_plugin_kit::registry::checkout_record(found, host);
    let recorded = checkout.and_then(|c| c["path"].as_str()).map(str::to_owned);
    let recorded_url = checkout.and_then(|c| c["url"].as_str()).map(str::to_owned);
    Ok(Source {
        name: text("name"),
        url: text("url"),
        default_branch: text("default_branch"),
        recorded,
        recorded_url,
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
    let default_path = source
        .recorded
        .clone()
        .unwrap_or_else(|| source.name.clone());
    let path = roots.resolve_new("path", args.path.as_deref().unwrap_or(&default_path), None)?;
    if let Some(recorded) = &source.recorded {
        let same = Path::new(recorded) == path
            || Path::new(recorded).canonicalize().is_ok_and(|r| r == path);
        if !same && !args.r#move {
            return Err(ToolError::new(
                codes::CONFLICT,
                format!(
                    "{} is already checked out on this machine at {recorded} (the Registry's \
                     record); omit path to use that checkout, or pass move: true to record {} \
                     instead (the old folder is left as it is)",
                    args.source,
                    path.display()
                ),
            ));
        }
    }
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
        // A checkout found in place has a config anyone who writes files there wrote: a
        // fetch runs none of the programs it names.
        let guards = match mode {
            Mode::Write => git::guards_at(ctx, cwd, &ceilings)?,
            Mode::Read => git::Guards::default(),
        };
        let out = git::invoke_guarded(ctx, cwd, &ceilings, mode, &all, &guards)?;
        if out.success() {
            Ok(out)
        } else {
            Err(git::failure(&all, &out))
        }
    };
    if let Some(follow) = args.follow_url.as_deref().filter(|f| *f != source.url) {
        return Err(invalid(
            "follow_url",
            format!(
                "{follow:?} is not {}'s URL in the Registry, which is {:?}: follow_url names \
                 the URL origin moves to, and it must be the one the Registry holds now",
                args.source, source.url
            ),
        ));
    }
    let shown = path.display().to_string();
    let mut out = json!({"source": args.source, "url": source.url, "path": shown});
    let present = path.exists();
    if present {
        let empty = path.is_dir()
            && std::fs::read_dir(&path)
                .map(|mut d| d.next().is_none())
                .unwrap_or(false);
        if !empty {
            let follow = args.follow_url.is_some();
            let reconciled = reconcile(roots, &path, &run, source, follow, out)?;
            return with_hooks(reconciled, &path, args.hooks, &run);
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
    out["origin"] = source.url.as_str().into();
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

/// A checkout already there, brought back to what it was made as: its `origin` set to the URL
/// it was made from (`follow`: to the source's current URL instead), and `origin/HEAD` to the
/// source's default branch (fetched first when that branch was never fetched). Refused when
/// the folder is not a checkout of its own.
fn reconcile(
    roots: &Roots,
    path: &Path,
    run: &Git<'_>,
    source: &Source,
    follow: bool,
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
    let mut changes: Vec<String> = Vec::new();
    let origin = run(path, Mode::Read, &["remote", "get-url", "origin"])
        .map(|o| o.line())
        .ok();
    // Where origin belongs: the URL the checkout was made from (the recorded checkout from
    // before URLs were recorded: its origin as it is), unless the call follows the source's
    // current one; a folder not recorded as the checkout is taken on with the source's URL
    // (and must share its history, below).
    let recorded_here = source.recorded.as_deref().is_some_and(|r| {
        Path::new(r) == path || Path::new(r).canonicalize().is_ok_and(|r| r == path)
    });
    let made_from = match (follow, &source.recorded_url, &origin) {
        (true, _, _) => source.url.clone(),
        (false, Some(recorded), _) if recorded_here => recorded.clone(),
        (false, None, Some(origin)) if recorded_here => origin.clone(),
        (false, _, _) => source.url.clone(),
    };
    if made_from != source.url {
        out["source_url_changed"] = json!({
            "registry": source.url,
            "origin": made_from,
            "note": format!(
                "the Registry's URL of this source is not the one this checkout was made from; \
                 origin stays {made_from}. Pass follow_url: {:?} to move origin there",
                source.url
            ),
        });
    }
    let source = &Source {
        url: made_from,
        ..source.clone()
    };
    if origin.as_deref() != Some(source.url.as_str()) {
        git::check_url(roots, &source.url, path, "the source's URL")?;
        match &origin {
            Some(was) => {
                run(
                    path,
                    Mode::Write,
                    &["remote", "set-url", "origin", "--", &source.url],
                )?;
                changes.push(format!("origin: {was} → {}", source.url));
            }
            None => {
                run(
                    path,
                    Mode::Write,
                    &["remote", "add", "origin", "--", &source.url],
                )?;
                changes.push(format!("origin: added {}", source.url));
            }
        }
        // A checkout with commits must share history with the source: otherwise it is another
        // repository, which keeps its origin.
        let related = run(path, Mode::Write, &["fetch", "--quiet", "origin"]).and_then(|_| {
            let has_commits = run(
                path,
                Mode::Read,
                &["rev-parse", "--verify", "--quiet", "HEAD"],
            )
            .is_ok();
            if !has_commits {
                return Ok(true);
            }
            let fetched = run(
                path,
                Mode::Read,
                &[
                    "for-each-ref",
                    "--format=%(refname)",
                    "refs/remotes/origin/",
                ],
            )?;
            let mut any = false;
            for reference in fetched.text().lines().filter(|l| !l.ends_with("/HEAD")) {
                if run(path, Mode::Read, &["merge-base", "HEAD", reference.trim()]).is_ok() {
                    any = true;
                    break;
                }
            }
            Ok(any)
        });
        if !matches!(related, Ok(true)) {
            let restored = match &origin {
                Some(was) => run(
                    path,
                    Mode::Write,
                    &["remote", "set-url", "origin", "--", was],
                ),
                None => run(path, Mode::Write, &["remote", "remove", "origin"]),
            };
            let why = match related {
                Ok(_) => format!(
                    "its history shares no commit with {}, so it is a checkout of another \
                     repository",
                    source.url
                ),
                Err(e) => format!("fetching {} failed: {}", source.url, e.message),
            };
            let kept = if restored.is_ok() {
                "its origin was left as it was"
            } else {
                "restoring its origin failed too; check `git remote -v` there"
            };
            return Err(ToolError::new(
                codes::CONFLICT,
                format!("{shown}: {why}; {kept}. Choose another path"),
            ));
        }
        changes.push("fetched origin".to_owned());
    }
    if !source.default_branch.is_empty() {
        let wanted = format!("refs/remotes/origin/{}", source.default_branch);
        let head = run(
            path,
            Mode::Read,
            &["symbolic-ref", "--quiet", "refs/remotes/origin/HEAD"],
        )
        .map(|o| o.line())
        .ok();
        if head.as_deref() != Some(wanted.as_str()) {
            let known = |run: &Git<'_>| {
                run(
                    path,
                    Mode::Read,
                    &["rev-parse", "--verify", "--quiet", &wanted],
                )
                .is_ok()
            };
            if !known(run) && !changes.iter().any(|c| c == "fetched origin") {
                git::check_url(roots, &source.url, path, "the source's URL")?;
                run(path, Mode::Write, &["fetch", "--quiet", "origin"])?;
                changes.push("fetched origin".to_owned());
            }
            if known(run) {
                run(
                    path,
                    Mode::Write,
                    &["remote", "set-head", "origin", &source.default_branch],
                )?;
                changes.push(format!(
                    "origin/HEAD: {} → origin/{}",
                    head.as_deref()
                        .map_or("unset", |h| h.trim_start_matches("refs/remotes/")),
                    source.default_branch
                ));
            } else {
                out["note"] = format!(
                    "origin has no branch {}, the source's default branch; origin/HEAD is left \
                     as it was (correct the source with registry_source_update default_branch)",
                    source.default_branch
                )
                .into();
            }
        }
    }
    let branch = run(
        path,
        Mode::Read,
        &["symbolic-ref", "--quiet", "--short", "HEAD"],
    )
    .map(|o| o.line())
    .ok();
    out["action"] = if changes.is_empty() {
        "present"
    } else {
        "reconciled"
    }
    .into();
    out["changed"] = (!changes.is_empty()).into();
    out["changes"] = changes.into();
    if let Some(branch) = branch {
        out["branch"] = branch.into();
    }
    out["origin"] = source.url.as_str().into();
    Ok(out)
}

/// `out` with the checkout's hooks: enabled now when `wanted`, else as they are.
fn with_hooks(
    mut out: Value,
    path: &Path,
    wanted: bool,
    run: &Git<'_>,
) -> Result<Value, ToolError> {
    let current = run(path, Mode::Read, &["config", "--get", "core.hooksPath"])
        .map(|o| o.line())
        .ok();
    if wanted && current.as_deref() != Some(".githooks") {
        out["hooks"] = hooks(path, true, run)?;
        if out["hooks"]["installed"] == true {
            out["changed"] = true.into();
            if let Some(changes) = out["changes"].as_array_mut() {
                changes.push("hooks: core.hooksPath → .githooks".into());
            }
        }
        return Ok(out);
    }
    out["hooks"] = match current {
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

/// Adds the Registry's record of the checkout to `out`: written when missing or different
/// (`recorded`: the path recorded before, which a `move` replaces).
fn record(
    mut out: Value,
    reference: &str,
    host: &str,
    recorded: Option<&str>,
) -> Result<Value, ToolError> {
    let path = out["path"].as_str().unwrap_or_default().to_owned();
    let branch = out["branch"].as_str().map(str::to_owned);
    let mut args = json!({"source": reference, "checkout_host": host, "checkout_path": path});
    if let Some(branch) = &branch {
        args["checkout_branch"] = branch.as_str().into();
    }
    // The URL the checkout's origin now follows: what a later plain run restores.
    if let Some(url) = out["origin"].as_str().filter(|u| !u.is_empty()) {
        args["checkout_url"] = url.into();
    }
    let mut added = false;
    let written = match registry("registry_source_update", args.clone()) {
        // This machine is no Registry host yet (a stdio machine no relay reaches): its record
        // is added under its name, with no Core MCP URL (bootstrap's register_host adds one
        // where one is advertised), so the checkout it holds is known.
        Err(e) if e.code.as_str() == codes::NOT_FOUND && e.message.contains("checkout_host") => {
            let address = host;
            match registry(
                "registry_host_add",
                json!({"name": host, "address": address}),
            ) {
                Ok(_) => {
                    added = true;
                    registry("registry_source_update", args)
                }
                Err(add) => Err(ToolError::new(
                    add.code.as_str(),
                    format!(
                        "this machine is no Registry host and could not be added as one ({}); \
                         add it with registry_host_add {{\"name\": \"{host}\", \"address\": \
                         \"{address}\"}} and run repo_setup again",
                        add.message
                    ),
                )),
            }
        }
        other => other,
    };
    out["registry"] = match written {
        Ok(_) => {
            let mut recorded_here = json!({"recorded": true, "host": host});
            if let Some(before) = recorded.filter(|r| *r != path) {
                recorded_here["moved_from"] = before.into();
            }
            if added {
                recorded_here["host_added"] = true.into();
            }
            recorded_here
        }
        Err(e) if e.code.as_str() == codes::NOT_FOUND => json!({
            "recorded": false, "host": host,
            "note": format!("the checkout could not be recorded ({})", e.message),
        }),
        Err(e) => json!({"recorded": false, "host": host, "note": e.message}),
    };
    Ok(out)
}
