//! Opening a repository inside the roots and turning path arguments into pathspecs.
//!
//! Invariants:
//! - `repo_path` resolves inside the roots (the kit's `Roots::resolve`: no `..`, no absolute
//!   path outside, no symlink out, no symlink loop), and what git finds there lies inside the
//!   roots too: the top level of the work tree, the git directory (a `.git` *file* can point
//!   anywhere: `gitdir: /elsewhere/.git`), the common directory (a worktree's `commondir`) and
//!   every alternate object store (`objects/info/alternates`). Otherwise git would read, and a
//!   commit write (running that repository's hooks), a repository outside the roots.
//!   Repository discovery stops at the roots (`GIT_CEILING_DIRECTORIES`).
//! - Every path argument passes the same checks (`Roots::resolve_new`, so deleted files and
//!   folders are allowed) relative to `repo_path`, must lie inside the work tree, and reaches git as a path
//!   relative to the top level, after `--`, with literal pathspecs.
//! - git always runs in the top level of the work tree.
//! - A read runs no program the repository configures for itself: the filter drivers its own
//!   config declares are switched off ([`git::Guards`]), and `core.fsmonitor` and diff
//!   drivers are off for every read ([`git::invoke_guarded`]). A write (add, commit, push)
//!   runs none of the programs its config names for git itself (fsmonitor, SSH command,
//!   proxy, askpass, a remote's pack programs); its hooks are its own.

use std::path::{Path, PathBuf};

use coremcp_plugin_kit::Roots;
use coremcp_plugin_sdk::ToolError;
use coremcp_plugin_sdk::{codes, Ctx};

use crate::git::{self, Mode, Output};

/// A git work tree inside the roots.
pub struct Repo<'c> {
    ctx: &'c Ctx<'c>,
    roots: Roots,
    /// Where `repo_path` led (a folder inside the work tree); relative paths start here.
    base: PathBuf,
    /// The top level of the work tree, canonical.
    top: PathBuf,
    ceilings: String,
    /// The `-c` settings every run gets (the programs its own config names off).
    guards: git::Guards,
}

impl<'c> Repo<'c> {
    /// Opens the repository at `repo_path` (default: the first root).
    pub fn open(
        ctx: &'c Ctx<'c>,
        roots: Roots,
        repo_path: Option<&str>,
    ) -> Result<Self, ToolError> {
        git::check_environment()?;
        let base = roots.resolve("repo_path", repo_path, None)?;
        if !base.is_dir() {
            return Err(ToolError::new(
                codes::INVALID_ARGUMENTS,
                format!(
                    "argument \"repo_path\" ({}): not a folder",
                    repo_path.unwrap_or_default()
                ),
            ));
        }
        let ceilings = crate::git::ceilings(&roots);
        let shown = repo_path.map_or_else(|| base.display().to_string(), str::to_owned);
        let args = owned(&[
            "rev-parse",
            "--path-format=absolute",
            "--show-toplevel",
            "--git-dir",
            "--git-common-dir",
        ]);
        let out = git::invoke(ctx, &base, &ceilings, Mode::Read, &args)?;
        if !out.success() {
            let said = out.said();
            let why = if said.contains("not a git repository") {
                "not a git repository (inside the roots)".to_owned()
            } else {
                format!("not a git work tree: {said}")
            };
            return Err(ToolError::new(
                codes::INVALID_ARGUMENTS,
                format!("argument \"repo_path\" ({shown}): {why}"),
            ));
        }
        let text = out.text();
        let mut lines = text.lines().map(str::trim);
        let mut next = |what: &str| -> Result<PathBuf, ToolError> {
            let line = lines.next().filter(|l| !l.is_empty()).ok_or_else(|| {
                ToolError::new(
                    codes::FAILED,
                    format!("git rev-parse did not name the {what} of {shown}"),
                )
            })?;
            PathBuf::from(line).canonicalize().map_err(|e| {
                ToolError::new(
                    codes::FAILED,
                    format!("the {what} of {shown} ({line}): {e}"),
                )
            })
        };
        let top = next("work tree")?;
        let git_dir = next("git directory")?;
        let common_dir = next("common git directory")?;
        let outside = |what: &str, path: &Path| {
            ToolError::new(
                codes::INVALID_ARGUMENTS,
                format!(
                    "argument \"repo_path\" ({shown}): not a git repository (inside the roots): \
                     its {what} {} is outside them (work tree {})",
                    path.display(),
                    top.display()
                ),
            )
        };
        if !roots.contains(&top) {
            return Err(ToolError::new(
                codes::INVALID_ARGUMENTS,
                format!(
                    "argument \"repo_path\" ({shown}): not a git repository (inside the roots): \
                     its work tree {} reaches outside them",
                    top.display()
                ),
            ));
        }
        if !roots.contains(&git_dir) {
            return Err(outside("git directory", &git_dir));
        }
        if !roots.contains(&common_dir) {
            return Err(outside("common git directory", &common_dir));
        }
        for store in alternates(&common_dir) {
            match store.canonicalize() {
                Ok(store) if roots.contains(&store) => {}
                // A store that does not exist cannot be read; git ignores it too.
                Err(_) => {}
                Ok(store) => return Err(outside("alternate object store", &store)),
            }
        }
        let guards = git::guards(ctx, &top, &ceilings, &[&git_dir, &common_dir])?;
        Ok(Self {
            ctx,
            roots,
            base,
            top,
            ceilings,
            guards,
        })
    }

    /// The top level of the work tree.
    pub fn top(&self) -> &Path {
        &self.top
    }

    /// Runs git in the top level; any exit code is returned.
    pub fn run(&self, mode: Mode, args: &[String]) -> Result<Output, ToolError> {
        git::invoke_guarded(
            self.ctx,
            &self.top,
            &self.ceilings,
            mode,
            args,
            &self.guards,
        )
    }

    /// Runs git in the top level; a non-zero exit is an error quoting git's stderr.
    pub fn ok(&self, mode: Mode, args: &[String]) -> Result<Output, ToolError> {
        let out = self.run(mode, args)?;
        if out.success() {
            Ok(out)
        } else {
            Err(git::failure(args, &out))
        }
    }

    /// A read-only git run that must succeed.
    pub fn read(&self, args: &[&str]) -> Result<Output, ToolError> {
        self.ok(Mode::Read, &owned(args))
    }

    /// [`Repo::read`] keeping only `window` of its output, as text.
    pub fn read_window(
        &self,
        args: &[&str],
        window: coremcp_spawn::Window,
    ) -> Result<Output, ToolError> {
        let args = owned(args);
        let out = git::invoke_windowed(
            self.ctx,
            &self.top,
            &self.ceilings,
            Mode::Read,
            &args,
            &self.guards,
            Some(window),
        )?;
        if out.success() {
            Ok(out)
        } else {
            Err(git::failure(&args, &out))
        }
    }

    /// A path argument as a pathspec relative to the top level (`.` for the top itself).
    pub fn pathspec(&self, argument: &str, text: &str) -> Result<String, ToolError> {
        let path = confined(&self.roots, argument, text, &self.base)?;
        let rel = path.strip_prefix(&self.top).map_err(|_| {
            ToolError::new(
                codes::INVALID_ARGUMENTS,
                format!(
                    "argument \"{argument}\" ({text}): outside the repository {}",
                    self.top.display()
                ),
            )
        })?;
        let rel = rel.to_str().ok_or_else(|| {
            ToolError::new(
                codes::INVALID_ARGUMENTS,
                format!("argument \"{argument}\" ({text}): not a UTF-8 path"),
            )
        })?;
        Ok(if rel.is_empty() {
            ".".to_owned()
        } else {
            rel.to_owned()
        })
    }

    /// The current branch, `None` when HEAD is detached.
    pub fn current_branch(&self) -> Result<Option<String>, ToolError> {
        let out = self.run(
            Mode::Read,
            &owned(&["symbolic-ref", "--quiet", "--short", "HEAD"]),
        )?;
        Ok(out.success().then(|| out.line()).filter(|b| !b.is_empty()))
    }
}

/// The alternate object stores a repository borrows objects from (relative ones are relative
/// to its `objects` folder).
fn alternates(common_dir: &Path) -> Vec<PathBuf> {
    let objects = common_dir.join("objects");
    let Ok(text) = std::fs::read_to_string(objects.join("info/alternates")) else {
        return Vec::new();
    };
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| objects.join(l))
        .collect()
}

/// Strings for an argument list.
pub fn owned(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| (*a).to_owned()).collect()
}

/// `GIT_CEILING_DIRECTORIES` for the roots: the parent of each root that is not itself inside
/// another root, so discovery never climbs out of the roots.
/// Resolves a path argument inside the roots, as git should see it: the kit's checks decide
/// what is refused; the last component is kept as named (git stages a symlink itself, not its
/// target), and missing folders are allowed (a file deleted with its folder).
fn confined(roots: &Roots, argument: &str, text: &str, base: &Path) -> Result<PathBuf, ToolError> {
    let joined = base.join(text);
    let resolved = roots.resolve_new(argument, text, Some(base))?;
    let is_link = joined
        .symlink_metadata()
        .is_ok_and(|m| m.file_type().is_symlink());
    match (is_link, joined.parent(), joined.file_name()) {
        (true, Some(parent), Some(name)) => {
            // The link itself; its folder is canonical and inside (resolve checked the
            // target, the parent is an ancestor of the link).
            let parent = roots.resolve(argument, Some(&parent.to_string_lossy()), None)?;
            Ok(parent.join(name))
        }
        _ => Ok(resolved),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn confined_paths() {
        let top = std::env::temp_dir().join(format!("coremcp-git-confined-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&top);
        let root = top.join("root");
        std::fs::create_dir_all(root.join("sub")).expect("mkdir");
        std::fs::create_dir_all(top.join("outside")).expect("mkdir");
        symlink(top.join("outside"), root.join("out")).expect("symlink");
        symlink(root.join("sub"), root.join("inner")).expect("symlink");
        symlink(root.join("l2"), root.join("l1")).expect("symlink");
        symlink(root.join("l1"), root.join("l2")).expect("symlink");
        let roots = Roots::new(vec![root.clone()]).expect("roots");
        let root = roots.default_dir().to_owned();
        let check = |text: &str, expected: Result<&str, &str>| match (
            confined(&roots, "paths", text, &root),
            expected,
        ) {
            (Ok(p), Ok(want)) => assert_eq!(p, root.join(want), "{text}"),
            (Err(e), Err(needle)) => assert!(e.message.contains(needle), "{text}: {e}"),
            (got, want) => panic!("{text}: got {got:?}, want {want:?}"),
        };
        check("sub", Ok("sub"));
        check("inner", Ok("inner"));
        check("inner/x.txt", Ok("sub/x.txt"));
        check("gone/deeper/x.txt", Ok("gone/deeper/x.txt"));
        check(".", Ok(""));
        check("../outside", Err("\"..\" is not allowed"));
        check("/etc/passwd", Err("an absolute path outside the roots"));
        check("out", Err("leads outside the roots"));
        check("out/new/file", Err("leads outside the roots"));
        check("l1", Err("a symlink loop"));
        let _ = std::fs::remove_dir_all(&top);
    }
}
