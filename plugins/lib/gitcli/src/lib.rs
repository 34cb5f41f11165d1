//! Running the `git` CLI: one function, [`invoke`], that every git invocation of Core MCP's
//! plugins goes through (the Git group's tools and Ops' `repo_setup`).
//!
//! Invariants:
//! - git starts only through `coremcp_spawn` (scrubbed environment that keeps only the SSH
//!   agent for a push over SSH, bounded output, killed with its process group at the call's
//!   deadline or when the call is cancelled). Hooks inherit the same environment.
//! - git never waits on a person: stdin is null, `GIT_TERMINAL_PROMPT=0`, no pager, no editor.
//! - Pathspecs are literal (`GIT_LITERAL_PATHSPECS=1`): `:(…)` magic and globs are plain names.
//! - Read-only invocations run with `LC_ALL=C` (messages and `%(upstream:track)` are parsed)
//!   and `GIT_OPTIONAL_LOCKS=0` (a status never takes the index lock); writing ones keep the
//!   user's locale, since hooks run there.
//! - A read-only invocation runs no program a repository configures for itself: no
//!   `core.fsmonitor`, no diff driver (`--no-ext-diff --no-textconv` on `diff`, `log` and
//!   `show`), and — given the repository's [`Guards`] — no filter driver.
//! - A writing invocation given the repository's [`Guards`] runs none of the programs its own
//!   configuration names for git itself (fsmonitor, SSH command, proxy, askpass, a remote's
//!   pack programs): those are set back to the user's own values.
//! - A failure message quotes an excerpt of git's stderr; an unknown revision or object is
//!   `not_found`.

use std::path::Path;

use coremcp_plugin_sdk::ToolError;
use coremcp_plugin_sdk::{codes, Ctx};
use coremcp_spawn::{Captured, Inherit, SpawnError, Spec};

mod guards;
pub use guards::{guards, guards_at, Guards};

/// How much of git's stderr (or hook output) an error quotes.
pub const EXCERPT_CHARS: usize = 2000;

/// Whether an invocation only reads the repository.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Read,
    Write,
}

/// What git printed and how it ended.
#[derive(Debug)]
pub struct Output {
    /// The exit code (`-1` when killed by a signal).
    pub code: i32,
    pub stdout: Captured,
    pub stderr: Captured,
}

impl Output {
    pub fn success(&self) -> bool {
        self.code == 0
    }

    /// Stdout as text (lossy UTF-8).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.stdout.bytes).into_owned()
    }

    /// Stdout, trimmed, as one line of text.
    pub fn line(&self) -> String {
        self.text().trim().to_owned()
    }

    /// What git said on stderr (and stdout, where hooks and some commands speak), trimmed and
    /// cut to [`EXCERPT_CHARS`].
    pub fn said(&self) -> String {
        let stderr = self.stderr.excerpt(EXCERPT_CHARS);
        let stdout = self.stdout.excerpt(EXCERPT_CHARS);
        match (stderr.is_empty(), stdout.is_empty()) {
            (false, true) => stderr,
            (true, false) => stdout,
            (true, true) => String::new(),
            (false, false) => format!("{stderr}\n{stdout}"),
        }
    }
}

/// Variables that would point git at another repository than the one we resolved.
const REDIRECTING_VARS: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_NAMESPACE",
];

/// Refuses to run when the server's own environment redirects git (children inherit it and
/// the spawn crate can only add variables).
pub fn check_environment() -> Result<(), ToolError> {
    for name in REDIRECTING_VARS {
        if std::env::var_os(name).is_some() {
            return Err(ToolError::new(
                codes::NOT_CONFIGURED,
                format!(
                    "the server's environment sets {name}, which would point git at another \
                     repository; start Core MCP without it"
                ),
            ));
        }
    }
    Ok(())
}

/// `GIT_CEILING_DIRECTORIES` for `roots`: the parents of the roots (that are not inside
/// another root), so repository discovery never leaves them.
pub fn ceilings(roots: &coremcp_plugin_kit::Roots) -> String {
    let parents: Vec<String> = roots
        .paths()
        .iter()
        .filter_map(|r| r.parent())
        .filter(|p| !roots.contains(p))
        .map(|p| p.display().to_string())
        .collect();
    parents.join(":")
}

/// Runs `git ARGS` in `cwd` and returns its output whatever the exit code.
///
/// `ceilings` is `GIT_CEILING_DIRECTORIES` (repository discovery stops at the roots).
pub fn invoke(
    ctx: &Ctx<'_>,
    cwd: &Path,
    ceilings: &str,
    mode: Mode,
    args: &[String],
) -> Result<Output, ToolError> {
    invoke_guarded(ctx, cwd, ceilings, mode, args, &Guards::default())
}

/// Subcommands that can run diff drivers, and so get `--no-ext-diff --no-textconv` to read.
const DIFFING: &[&str] = &["diff", "log", "show"];

/// [`invoke`], with the repository's [`Guards`] for `mode`.
pub fn invoke_guarded(
    ctx: &Ctx<'_>,
    cwd: &Path,
    ceilings: &str,
    mode: Mode,
    args: &[String],
    guards: &Guards,
) -> Result<Output, ToolError> {
    invoke_windowed(ctx, cwd, ceilings, mode, args, guards, None)
}

/// [`invoke_guarded`], keeping only `window` of stdout as text when one is given (a file read
/// from an offset: the rest is counted, never held).
pub fn invoke_windowed(
    ctx: &Ctx<'_>,
    cwd: &Path,
    ceilings: &str,
    mode: Mode,
    args: &[String],
    guards: &Guards,
    window: Option<coremcp_spawn::Window>,
) -> Result<Output, ToolError> {
    // A repository's config cannot turn the `ext::` transport (which runs a command) back on.
    let mut spec = Spec::new("git").args([
        "--no-pager",
        "-c",
        "color.ui=false",
        "-c",
        "protocol.ext.allow=never",
    ]);
    match mode {
        Mode::Read => {
            spec = spec.args(["-c", "core.fsmonitor=false"]);
            for guard in &guards.read {
                spec = spec.args(["-c", guard.as_str()]);
            }
            match args.split_first() {
                Some((sub, rest)) if DIFFING.contains(&sub.as_str()) => {
                    spec = spec
                        .args([sub.as_str(), "--no-ext-diff", "--no-textconv"])
                        .args(rest);
                }
                _ => spec = spec.args(args),
            }
        }
        // Nothing a call starts outlives it (`coremcp-spawn`), so git's automatic
        // housekeeping runs before it returns rather than detached (and killed half done).
        Mode::Write => {
            spec = spec.args([
                "-c",
                "gc.autoDetach=false",
                "-c",
                "maintenance.autoDetach=false",
            ]);
            for guard in &guards.write {
                spec = spec.args(["-c", guard.as_str()]);
            }
            spec = spec.args(guards.write_args(args)?)
        }
    }
    spec.cwd = Some(cwd.to_owned());
    // A push over SSH needs the agent; nothing else that could be a credential is passed.
    spec.inherit = Inherit::ScrubbedWithSsh;
    spec.stdin = None;
    spec.stdout_window = window;
    spec.timeout = ctx.remaining();
    let mut env = vec![
        ("GIT_TERMINAL_PROMPT", "0"),
        ("GIT_LITERAL_PATHSPECS", "1"),
        ("GIT_PAGER", "cat"),
        ("PAGER", "cat"),
        ("GIT_EDITOR", "true"),
        ("GIT_CEILING_DIRECTORIES", ceilings),
    ];
    if mode == Mode::Read {
        env.extend([("LC_ALL", "C"), ("GIT_OPTIONAL_LOCKS", "0")]);
    }
    spec.env = env.into_iter().map(|(k, v)| (k.into(), v.into())).collect();
    let done = coremcp_spawn::run(&spec, Some(ctx.raw().cancelled)).map_err(spawn_error)?;
    Ok(Output {
        code: done.status.code().unwrap_or(-1),
        stdout: done.stdout,
        stderr: done.stderr,
    })
}

/// The error for a git invocation that exited non-zero.
pub fn failure(args: &[String], out: &Output) -> ToolError {
    let sub = args
        .iter()
        .find(|a| !a.starts_with('-'))
        .map_or("git", String::as_str);
    let said = out.said();
    let code = if looks_not_found(&said) {
        codes::NOT_FOUND
    } else {
        codes::FAILED
    };
    let how = match out.code {
        -1 => "was killed".to_owned(),
        n => format!("failed (exit {n})"),
    };
    let message = if said.is_empty() {
        format!("git {sub} {how}")
    } else {
        format!("git {sub} {how}: {said}")
    };
    ToolError::new(code, message)
}

/// Whether git's message says a revision, object or ref does not exist (C locale).
pub fn looks_not_found(said: &str) -> bool {
    let lower = said.to_ascii_lowercase();
    [
        "unknown revision",
        "bad revision",
        "ambiguous argument",
        "not a valid object name",
        "invalid object name",
        "malformed object name",
        "bad object",
        "needed a single revision",
        "does not exist in",
        "exists on disk, but not in",
        "no such ref",
        "not a valid ref",
    ]
    .iter()
    .any(|needle| lower.contains(needle))
}

fn spawn_error(err: SpawnError) -> ToolError {
    let code = match &err {
        SpawnError::NotFound { .. } | SpawnError::PermissionDenied { .. } => {
            return ToolError::new(
                codes::NOT_CONFIGURED,
                format!("{err}: the Git tools need the git CLI on PATH"),
            )
        }
        SpawnError::TimedOut { .. } => codes::TIMEOUT,
        SpawnError::Cancelled { .. } => codes::CANCELLED,
        SpawnError::Start { .. } | SpawnError::Wait { .. } => codes::FAILED,
    };
    let mut message = err.to_string();
    if let SpawnError::TimedOut { stderr, .. } = &err {
        let said = stderr.excerpt(EXCERPT_CHARS);
        if !said.is_empty() {
            message.push_str(&format!("; git said: {said}"));
        }
    }
    ToolError::new(code, message)
}

/// Where a git URL leads, as git itself tells it apart (`url_is_local_not_ssh`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UrlKind<'a> {
    /// Another machine: `scheme://…` (but `file://`) or scp-like `host:path`.
    Network,
    /// A repository on this machine: a path, or a `file://` URL's path.
    Local(&'a str),
    /// `transport::address`: a remote helper (`ext::` runs a command).
    Helper,
}

/// What kind of place `url` is.
pub fn url_kind(url: &str) -> UrlKind<'_> {
    if let Some(rest) = url.strip_prefix("file://") {
        // `file://localhost/path` and `file:///path` alike.
        let path = rest.strip_prefix("localhost").unwrap_or(rest);
        return UrlKind::Local(path);
    }
    if url.contains("://") {
        return UrlKind::Network;
    }
    if url.contains("::") {
        return UrlKind::Helper;
    }
    match (url.find(':'), url.find('/')) {
        (Some(colon), Some(slash)) if slash < colon => UrlKind::Local(url),
        (Some(_), _) => UrlKind::Network,
        (None, _) => UrlKind::Local(url),
    }
}

/// Refuses `url` when it names a repository on this machine outside the roots (taken from
/// `base` when relative), or a remote helper; `what` says whose URL it is.
pub fn check_url(
    roots: &coremcp_plugin_kit::Roots,
    url: &str,
    base: &Path,
    what: &str,
) -> Result<(), ToolError> {
    match url_kind(url) {
        UrlKind::Network => Ok(()),
        UrlKind::Helper => Err(ToolError::new(
            codes::INVALID_ARGUMENTS,
            format!(
                "{what} {url:?} is a remote helper (transport::address), which is not used here"
            ),
        )),
        UrlKind::Local(path) => {
            // A repository that does not exist yet is placed by its nearest existing folder;
            // a `..` after a missing folder leads nowhere git could reach, and is refused.
            let placed = coremcp_plugin_kit::canonical_prefix(&base.join(path));
            let inside = !placed
                .components()
                .any(|c| c == std::path::Component::ParentDir)
                && roots.contains(&placed);
            if inside {
                Ok(())
            } else {
                Err(ToolError::new(
                    codes::INVALID_ARGUMENTS,
                    format!(
                        "{what} {url:?} is a repository on this machine outside the roots; \
                         local repositories are reached only inside the roots ({})",
                        roots
                            .paths()
                            .iter()
                            .map(|p| p.display().to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ))
            }
        }
    }
}

/// Refuses a revision-like value git could read as an option.
pub fn not_an_option(argument: &str, value: &str) -> Result<(), ToolError> {
    if value.is_empty() {
        return Err(ToolError::new(
            codes::INVALID_ARGUMENTS,
            format!("argument \"{argument}\" must not be empty"),
        ));
    }
    if value.starts_with('-') {
        return Err(ToolError::new(
            codes::INVALID_ARGUMENTS,
            format!("argument \"{argument}\" ({value}) must not start with \"-\""),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_local_url_is_judged_where_it_leads() {
        let top = std::env::temp_dir().join(format!("coremcp-check-url-{}", std::process::id()));
        let root = top.join("root");
        std::fs::create_dir_all(root.join("repo.git")).expect("mkdir");
        std::fs::create_dir_all(top.join("outside.git")).expect("mkdir");
        let roots = coremcp_plugin_kit::Roots::new(vec![root.clone()]).expect("roots");
        let ok = |url: &str| check_url(&roots, url, &root, "url").is_ok();
        assert!(ok("repo.git"));
        assert!(ok("new.git"), "not there yet, but inside");
        assert!(ok("https://example.com/a.git"));
        assert!(!ok("../outside.git"));
        assert!(!ok(&format!(
            "file://{}",
            top.join("outside.git").display()
        )));
        assert!(
            !ok("missing/../../outside.git"),
            "a .. after a missing folder"
        );
        assert!(!ok("ext::sh -c x"));
        let _ = std::fs::remove_dir_all(&top);
    }

    #[test]
    fn urls_are_told_apart_as_git_does() {
        for (url, kind) in [
            ("https://github.com/a/b.git", UrlKind::Network),
            ("ssh://git@host/a.git", UrlKind::Network),
            ("git@github.com:a/b.git", UrlKind::Network),
            ("host:repo", UrlKind::Network),
            ("file:///srv/repo.git", UrlKind::Local("/srv/repo.git")),
            ("file://localhost/srv/r", UrlKind::Local("/srv/r")),
            ("/srv/repo.git", UrlKind::Local("/srv/repo.git")),
            ("../sibling", UrlKind::Local("../sibling")),
            ("./a:b", UrlKind::Local("./a:b")),
            ("repo", UrlKind::Local("repo")),
            ("ext::sh -c touch% /tmp/x", UrlKind::Helper),
            ("fd::3", UrlKind::Helper),
        ] {
            assert_eq!(url_kind(url), kind, "{url}");
        }
    }

    fn check(said: &str, expected: bool) {
        assert_eq!(looks_not_found(said), expected, "{said}");
    }

    #[test]
    fn not_found_messages() {
        check(
            "fatal: ambiguous argument 'nope': unknown revision or path not in the working tree.",
            true,
        );
        check("fatal: bad revision 'x..y'", true);
        check("fatal: Not a valid object name nope", true);
        check("fatal: path 'a.txt' does not exist in 'HEAD'", true);
        check("fatal: malformed object name deadbeef", true);
        check(
            "error: pathspec 'x' did not match any file(s) known to git",
            false,
        );
        check("fatal: not a git repository", false);
    }

    #[test]
    fn option_like_values_are_refused() {
        assert!(not_an_option("rev", "HEAD~2").is_ok());
        assert!(not_an_option("rev", "a..b").is_ok());
        let err = not_an_option("rev", "--output=/tmp/x").expect_err("refused");
        assert_eq!(err.code.as_str(), codes::INVALID_ARGUMENTS);
        assert!(not_an_option("rev", "").is_err());
    }
}
