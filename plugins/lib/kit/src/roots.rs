//! Confinement of path arguments to the configured roots (`--root`, default the working
//! directory), which the host passes to plugins as the `roots` configuration value.
//!
//! Invariants: a resolved path is canonical (symlinks followed) and inside one of the roots;
//! `..` components are refused before anything touches the file system; every refusal names
//! the argument and the roots.

use std::io;
use std::path::{Component, Path, PathBuf};

use coremcp_plugin_sdk::ToolError;
use coremcp_plugin_sdk::{self as sdk, codes};

/// The host configuration key: canonical root paths, one per line.
pub const CONFIG_KEY: &str = "roots";

/// The folders local tools may reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Roots {
    roots: Vec<PathBuf>,
}

impl Roots {
    /// Canonicalises `roots`; an empty list means the working directory.
    pub fn new(roots: Vec<PathBuf>) -> io::Result<Self> {
        let roots = if roots.is_empty() {
            vec![std::env::current_dir()?]
        } else {
            roots
        };
        let roots = roots
            .iter()
            .map(|r| r.canonicalize())
            .collect::<io::Result<Vec<_>>>()?;
        Ok(Self { roots })
    }

    /// The roots the host configured (the working directory outside a host).
    pub fn from_host() -> Result<Self, ToolError> {
        let configured: Vec<PathBuf> = sdk::config(CONFIG_KEY)
            .map(|v| {
                v.lines()
                    .filter(|l| !l.is_empty())
                    .map(PathBuf::from)
                    .collect()
            })
            .unwrap_or_default();
        Self::new(configured).map_err(|e| {
            ToolError::new(
                codes::NOT_CONFIGURED,
                format!("the configured roots are not usable: {e}"),
            )
        })
    }

    /// The roots, canonical.
    pub fn paths(&self) -> &[PathBuf] {
        &self.roots
    }

    /// The first root: where a tool works when no path is given.
    pub fn default_dir(&self) -> &Path {
        &self.roots[0]
    }

    /// Whether a canonical path is inside one of the roots.
    pub fn contains(&self, canonical: &Path) -> bool {
        self.roots.iter().any(|r| canonical.starts_with(r))
    }

    fn listed(&self) -> String {
        self.roots
            .iter()
            .map(|r| r.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn refuse(&self, argument: &str, path: &str, why: &str) -> ToolError {
        ToolError::new(
            codes::INVALID_ARGUMENTS,
            format!(
                "argument \"{argument}\" ({path}): {why}; tools here may reach only these roots: {}",
                self.listed()
            ),
        )
    }

    /// Resolves an existing path argument: `None` is the first root, a relative path is taken
    /// from `base` (default the first root). The result is canonical and inside the roots.
    pub fn resolve(
        &self,
        argument: &str,
        path: Option<&str>,
        base: Option<&Path>,
    ) -> Result<PathBuf, ToolError> {
        let base = base.unwrap_or(self.default_dir());
        let Some(text) = path else {
            return Ok(base.to_owned());
        };
        let joined = self.join_checked(argument, text, base)?;
        let canonical = joined
            .canonicalize()
            .map_err(|e| self.io_refusal(argument, text, &e))?;
        if !self.contains(&canonical) {
            return Err(self.refuse(
                argument,
                text,
                "it leads outside the roots (through a symlink)",
            ));
        }
        Ok(canonical)
    }

    /// Like [`Roots::resolve`], for a path that may not exist (yet, or any more — a deleted
    /// file, a new folder): the nearest existing ancestor is resolved and checked, and the
    /// missing components (which hold no `..`) are appended. The result is inside the roots.
    pub fn resolve_new(
        &self,
        argument: &str,
        path: &str,
        base: Option<&Path>,
    ) -> Result<PathBuf, ToolError> {
        let base = base.unwrap_or(self.default_dir());
        let joined = self.join_checked(argument, path, base)?;
        if joined.symlink_metadata().is_ok() {
            return self.resolve(argument, Some(path), Some(base));
        }
        let mut missing = Vec::new();
        let mut at = joined.as_path();
        while at.symlink_metadata().is_err() {
            let (Some(parent), Some(name)) = (at.parent(), at.file_name()) else {
                return Err(self.refuse(argument, path, "it names no file"));
            };
            missing.push(name.to_owned());
            at = parent;
        }
        let mut resolved = at
            .canonicalize()
            .map_err(|e| self.io_refusal(argument, path, &e))?;
        if !self.contains(&resolved) {
            return Err(self.refuse(
                argument,
                path,
                "it leads outside the roots (through a symlink)",
            ));
        }
        resolved.extend(missing.iter().rev());
        Ok(resolved)
    }

    fn join_checked(&self, argument: &str, text: &str, base: &Path) -> Result<PathBuf, ToolError> {
        if text.is_empty() {
            return Err(self.refuse(argument, "\"\"", "an empty path"));
        }
        let path = Path::new(text);
        if path.components().any(|c| c == Component::ParentDir) {
            return Err(self.refuse(argument, text, "\"..\" is not allowed"));
        }
        if path.is_absolute() && !self.roots.iter().any(|r| path.starts_with(r)) {
            // Compare canonical forms too: the caller may name a root through a symlink.
            let inside = path.canonicalize().is_ok_and(|c| self.contains(&c));
            if !inside {
                return Err(self.refuse(argument, text, "an absolute path outside the roots"));
            }
        }
        Ok(base.join(path))
    }

    fn io_refusal(&self, argument: &str, path: &str, err: &io::Error) -> ToolError {
        // ELOOP: a symlink loop.
        if err.raw_os_error() == Some(40) {
            return self.refuse(argument, path, "a symlink loop");
        }
        match err.kind() {
            io::ErrorKind::NotFound => ToolError::new(
                codes::NOT_FOUND,
                format!("argument \"{argument}\" ({path}): no such file or directory"),
            ),
            _ => ToolError::new(
                codes::FAILED,
                format!("argument \"{argument}\" ({path}): {err}"),
            ),
        }
    }
}

/// `path` with its longest existing ancestor made canonical (symlinks resolved) and the
/// missing rest appended: where a path that may not exist yet would be, for a containment
/// check ([`Roots::contains`]). A path none of whose ancestors resolves is returned as given.
pub fn canonical_prefix(path: &Path) -> PathBuf {
    let mut missing = Vec::new();
    let mut at = path;
    loop {
        if let Ok(canonical) = at.canonicalize() {
            let mut out = canonical;
            out.extend(missing.iter().rev());
            return out;
        }
        match (at.parent(), at.file_name()) {
            (Some(parent), Some(name)) => {
                missing.push(name.to_owned());
                at = parent;
            }
            _ => return path.to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    struct Tree {
        top: PathBuf,
    }

    impl Drop for Tree {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.top);
        }
    }

    /// top/root/{a.txt, sub/b.txt, out -> ../outside, loop1 <-> loop2, inner -> sub}, top/outside/
    fn tree(label: &str) -> (Tree, Roots) {
        let top =
            std::env::temp_dir().join(format!("coremcp-roots-{label}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&top);
        let root = top.join("root");
        std::fs::create_dir_all(root.join("sub")).expect("mkdir");
        std::fs::create_dir_all(top.join("outside")).expect("mkdir");
        std::fs::write(root.join("a.txt"), "a").expect("write");
        std::fs::write(root.join("sub/b.txt"), "b").expect("write");
        std::fs::write(top.join("outside/secret"), "s").expect("write");
        symlink(top.join("outside"), root.join("out")).expect("symlink");
        symlink(root.join("loop2"), root.join("loop1")).expect("symlink");
        symlink(root.join("loop1"), root.join("loop2")).expect("symlink");
        symlink(root.join("sub"), root.join("inner")).expect("symlink");
        let roots = Roots::new(vec![root]).expect("roots");
        (Tree { top }, roots)
    }

    fn check(roots: &Roots, path: Option<&str>, expected: Result<&str, &str>) {
        let got = roots.resolve("path", path, None);
        match (got, expected) {
            (Ok(p), Ok(suffix)) => assert!(p.ends_with(suffix), "{path:?} → {}", p.display()),
            (Err(e), Err(needle)) => assert!(e.message.contains(needle), "{path:?} → {e}"),
            (got, want) => panic!("{path:?}: got {got:?}, want {want:?}"),
        }
    }

    #[test]
    fn resolution_and_escapes() {
        let (tree, roots) = tree("resolve");
        let root = roots.default_dir().to_owned();
        check(&roots, None, Ok("root"));
        check(&roots, Some("a.txt"), Ok("root/a.txt"));
        check(&roots, Some("sub/b.txt"), Ok("root/sub/b.txt"));
        check(&roots, Some("inner/b.txt"), Ok("root/sub/b.txt"));
        check(
            &roots,
            Some(&root.join("a.txt").to_string_lossy()),
            Ok("root/a.txt"),
        );
        check(
            &roots,
            Some("../outside/secret"),
            Err("\"..\" is not allowed"),
        );
        check(
            &roots,
            Some("sub/../../outside"),
            Err("\"..\" is not allowed"),
        );
        check(
            &roots,
            Some("/etc/passwd"),
            Err("an absolute path outside the roots"),
        );
        check(
            &roots,
            Some(&tree.top.join("outside/secret").to_string_lossy()),
            Err("an absolute path outside the roots"),
        );
        check(&roots, Some("out/secret"), Err("leads outside the roots"));
        check(&roots, Some("out"), Err("leads outside the roots"));
        check(&roots, Some("loop1"), Err("a symlink loop"));
        check(
            &roots,
            Some("missing.txt"),
            Err("no such file or directory"),
        );
        check(&roots, Some(""), Err("an empty path"));
        let err = roots
            .resolve("path", Some("/etc"), None)
            .expect_err("refused");
        assert!(
            err.message.contains(&root.display().to_string()),
            "names the roots: {err}"
        );
    }

    #[test]
    fn a_path_is_placed_by_its_nearest_existing_ancestor() {
        let (_tree, roots) = tree("prefix");
        let inside = roots.default_dir().to_owned();
        assert_eq!(canonical_prefix(&inside), inside);
        assert_eq!(
            canonical_prefix(&inside.join("new/deeper")),
            inside.join("new/deeper")
        );
        // Through a symlink (`out` leads outside) the real place counts.
        let placed = canonical_prefix(&inside.join("out/new.git"));
        assert!(!roots.contains(&placed), "{}", placed.display());
        assert_eq!(
            canonical_prefix(Path::new("relative/none")),
            PathBuf::from("relative/none")
        );
    }

    #[test]
    fn new_paths() {
        let (_tree, roots) = tree("new");
        let p = roots
            .resolve_new("path", "sub/new.txt", None)
            .expect("inside");
        assert!(p.ends_with("root/sub/new.txt"));
        assert!(roots.resolve_new("path", "out/new.txt", None).is_err());
        assert!(roots.resolve_new("path", "../new.txt", None).is_err());
        let p = roots
            .resolve_new("path", "nodir/deeper/new.txt", None)
            .expect("inside");
        assert!(p.ends_with("root/nodir/deeper/new.txt"));
        assert!(roots
            .resolve_new("path", "out/nodir/new.txt", None)
            .is_err());
        assert!(roots.resolve_new("path", "loop1/new.txt", None).is_err());
    }
}
