//! The documentation repositories: named folders from local configuration (`--docs DIR`,
//! `COREMCP_DOCS`), which the host passes as the `docs.repos` configuration value, a JSON object
//! of name → path in the order given.
//!
//! Invariants: the first configured repository is the default; every path a tool touches is
//! confined to the selected repository ([`Roots`] with that one folder) and lies outside any
//! `.git` folder (git's own data: hooks and config there would run or leak); `project` (which
//! needs the Registry) is refused as `unavailable`, never guessed.

use std::fmt;
use std::path::{Path, PathBuf};

pub use crate::tools::Choice;
use coremcp_plugin_kit::Roots;
use coremcp_plugin_sdk::ToolError;
use coremcp_plugin_sdk::{self as sdk, codes};
use serde::de::{Deserializer, MapAccess, Visitor};

/// The host configuration key holding the repositories.
pub const CONFIG_KEY: &str = "docs.repos";

/// One selected documentation repository.
#[derive(Debug, Clone)]
pub struct Repo {
    pub name: String,
    /// The repository folder as the only root.
    pub roots: Roots,
}

impl Repo {
    /// Opens a repository folder (it must exist).
    pub fn open(name: &str, dir: &Path) -> Result<Self, ToolError> {
        let roots = Roots::new(vec![dir.to_owned()]).map_err(|e| {
            ToolError::new(
                codes::NOT_CONFIGURED,
                format!(
                    "docs repository \"{name}\" ({}) is not usable: {e}",
                    dir.display()
                ),
            )
        })?;
        Ok(Self {
            name: name.to_owned(),
            roots,
        })
    }

    /// The repository folder, canonical.
    pub fn dir(&self) -> &Path {
        self.roots.default_dir()
    }

    /// Refuses a path inside a `.git` folder, as asked (`shown`) or as resolved (`target`, a
    /// symlink may lead there).
    pub fn outside_git(&self, shown: &str, target: &Path) -> Result<(), ToolError> {
        let is_git = |name: &std::ffi::OsStr| name.eq_ignore_ascii_case(".git");
        let asked = Path::new(shown).components().any(|c| is_git(c.as_os_str()));
        let resolved = target
            .strip_prefix(self.dir())
            .is_ok_and(|rel| rel.components().any(|c| is_git(c.as_os_str())));
        if asked || resolved {
            return Err(ToolError::new(
                codes::INVALID_ARGUMENTS,
                format!(
                    "argument \"path\" ({shown}): it is inside a .git folder, git's own data, \
                     which the docs tools never touch"
                ),
            ));
        }
        Ok(())
    }

    /// A canonical path inside the repository as a repo-relative `/`-separated path (`.` for
    /// the repository itself).
    pub fn relative(&self, path: &Path) -> String {
        match path.strip_prefix(self.dir()) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".to_owned(),
            Ok(rel) => rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/"),
            Err(_) => path.display().to_string(),
        }
    }
}

/// The configured repositories, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Configured(pub Vec<(String, PathBuf)>);

impl Configured {
    /// What the host configured (nothing outside a host).
    pub fn from_host() -> Result<Self, ToolError> {
        match sdk::config(CONFIG_KEY) {
            Some(text) if !text.trim().is_empty() => Self::parse(&text),
            _ => Ok(Self::default()),
        }
    }

    /// Parses the JSON object, keeping its order.
    pub fn parse(text: &str) -> Result<Self, ToolError> {
        let mut de = serde_json::Deserializer::from_str(text);
        let repos = (&mut de)
            .deserialize_map(OrderedRepos)
            .and_then(|r| de.end().map(|()| r))
            .map_err(|e| {
                ToolError::new(
                    codes::NOT_CONFIGURED,
                    format!(
                        "the {CONFIG_KEY} configuration is not a JSON object of name → path: {e}"
                    ),
                )
            })?;
        Ok(repos)
    }

    fn names(&self) -> String {
        self.0
            .iter()
            .map(|(name, _)| name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The repository a call asks for with `repo` and `project` (default: the first one).
    pub fn select(&self, repo: Option<&str>, project: Option<&str>) -> Result<Repo, ToolError> {
        if let Some(project) = project {
            return Err(ToolError::new(
                codes::UNAVAILABLE,
                format!(
                    "project \"{project}\": finding a project's docs repository needs the \
                     Registry, which is not in this build; pass repo with a configured name{}",
                    self.listed_suffix()
                ),
            ));
        }
        let Some((first_name, first_dir)) = self.0.first() else {
            return Err(ToolError::new(
                codes::NOT_CONFIGURED,
                "no documentation repository is configured: start Core MCP with --docs DIR \
                 (repeatable; NAME=DIR to name one) or set COREMCP_DOCS",
            ));
        };
        let Some(wanted) = repo else {
            return Repo::open(first_name, first_dir);
        };
        match self.0.iter().find(|(name, _)| name == wanted) {
            Some((name, dir)) => Repo::open(name, dir),
            None => {
                let registry = if wanted.contains('/') {
                    " (docs source refs like PROJECT/name need the Registry, which is not in \
                     this build)"
                } else {
                    ""
                };
                Err(ToolError::new(
                    codes::INVALID_ARGUMENTS,
                    format!(
                        "argument \"repo\": no docs repository named \"{wanted}\"{registry}; \
                         configured: {}",
                        self.names()
                    ),
                ))
            }
        }
    }

    fn listed_suffix(&self) -> String {
        if self.0.is_empty() {
            " (none is configured: start Core MCP with --docs DIR)".to_owned()
        } else {
            format!(" (configured: {})", self.names())
        }
    }
}

impl Choice {
    /// The repository the call names, from the host's configuration.
    pub fn open(&self) -> Result<Repo, ToolError> {
        Configured::from_host()?.select(self.repo.as_deref(), self.project.as_deref())
    }
}

/// Reads a JSON object of string → string into a list, in document order.
struct OrderedRepos;

impl<'de> Visitor<'de> for OrderedRepos {
    type Value = Configured;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object of docs repository name → folder path")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Configured, A::Error> {
        let mut repos = Vec::new();
        while let Some((name, path)) = map.next_entry::<String, String>()? {
            repos.push((name, PathBuf::from(path)));
        }
        Ok(Configured(repos))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn configured(pairs: &[(&str, &Path)]) -> Configured {
        Configured(
            pairs
                .iter()
                .map(|(n, p)| ((*n).to_owned(), p.to_path_buf()))
                .collect(),
        )
    }

    #[test]
    fn configuration_keeps_its_order() {
        let parsed =
            Configured::parse(r#"{"zeta": "/z", "alpha": "/a", "mid": "/m"}"#).expect("parses");
        let names: Vec<&str> = parsed.0.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["zeta", "alpha", "mid"]);
        assert_eq!(parsed.0[0].1, PathBuf::from("/z"));
        for bad in ["[]", "{\"a\": 1}", "{", "{} x"] {
            let err = Configured::parse(bad).expect_err("refused");
            assert_eq!(err.code.as_str(), codes::NOT_CONFIGURED, "{bad}");
        }
        // Outside a host nothing is configured.
        assert_eq!(
            Configured::from_host().expect("empty"),
            Configured::default()
        );
    }

    #[test]
    fn selection_by_name_default_first_and_clear_refusals() {
        let top = std::env::temp_dir().join(format!("coremcp-docs-select-{}", std::process::id()));
        let (a, b) = (top.join("a"), top.join("b"));
        std::fs::create_dir_all(&a).expect("mkdir");
        std::fs::create_dir_all(&b).expect("mkdir");
        let repos = configured(&[("second", &b), ("first", &a)]);

        let repo = repos.select(None, None).expect("default");
        assert_eq!(repo.name, "second");
        assert!(repo.dir().ends_with("b"));
        assert_eq!(
            repos.select(Some("first"), None).expect("named").name,
            "first"
        );

        let err = repos.select(Some("nope"), None).expect_err("unknown");
        assert_eq!(err.code.as_str(), codes::INVALID_ARGUMENTS);
        assert!(err.message.contains("configured: second, first"), "{err}");
        let err = repos.select(Some("CORE/docs"), None).expect_err("ref");
        assert!(err.message.contains("need the Registry"), "{err}");

        let err = repos.select(None, Some("CORE")).expect_err("project");
        assert_eq!(err.code.as_str(), codes::UNAVAILABLE);
        assert!(err.message.contains("Registry"), "{err}");

        let err = Configured::default().select(None, None).expect_err("none");
        assert_eq!(err.code.as_str(), codes::NOT_CONFIGURED);
        assert!(err.message.contains("--docs DIR"), "{err}");

        let missing = configured(&[("gone", &top.join("missing"))]);
        let err = missing.select(None, None).expect_err("missing folder");
        assert_eq!(err.code.as_str(), codes::NOT_CONFIGURED);
        assert!(err.message.contains("\"gone\""), "{err}");

        assert_eq!(repo.relative(repo.dir()), ".");
        assert_eq!(repo.relative(&repo.dir().join("x/y.md")), "x/y.md");
        std::fs::remove_dir_all(&top).expect("cleanup");
    }
}
