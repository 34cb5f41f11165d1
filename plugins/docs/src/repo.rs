//! The documentation repositories: named folders from local configuration (`--docs DIR`,
//! `COREMCP_DOCS`), which the host passes as the `docs.repos` configuration value, a JSON object
//! of name → path in the order given; and the Registry's `docs` sources, by ref
//! (`PROJECT/name`) or through a project's `docs_source`, at the checkout the Registry records
//! for this machine (what `repo_setup` writes).
//!
//! Invariants: the first configured repository is the default; local configuration wins over
//! the Registry for a name both know; a Registry checkout is used only inside this Core MCP's
//! roots (anyone who may write a Registry record must not be able to point the docs tools at
//! another folder of this machine); every path a tool touches is confined to the selected
//! repository ([`Roots`] with that one folder) and lies outside any `.git` folder (git's own
//! data: hooks and config there would run or leak).

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

    /// The repository a call asks for with `repo` and `project` (default: the first one):
    /// a configured name first, then, for a source ref or a project key, the checkout the
    /// Registry (`registry`) records for this machine.
    pub fn select(
        &self,
        repo: Option<&str>,
        project: Option<&str>,
        registry: &dyn Registry,
    ) -> Result<Repo, ToolError> {
        if let Some(wanted) = repo {
            if let Some((name, dir)) = self.0.iter().find(|(name, _)| name == wanted) {
                return Repo::open(name, dir);
            }
            if wanted.contains('/') {
                return registry.checkout(wanted);
            }
            return Err(ToolError::new(
                codes::INVALID_ARGUMENTS,
                format!(
                    "argument \"repo\": no docs repository named \"{wanted}\"{}; a Registry docs \
                     source is named by its ref, PROJECT/name",
                    self.listed_suffix()
                ),
            ));
        }
        if let Some(project) = project {
            if let Some((name, dir)) = self.0.iter().find(|(name, _)| name == project) {
                return Repo::open(name, dir);
            }
            let source = registry.docs_source(project)?;
            if let Some((name, dir)) = self.0.iter().find(|(name, _)| *name == source) {
                return Repo::open(name, dir);
            }
            return registry.checkout(&source);
        }
        let Some((first_name, first_dir)) = self.0.first() else {
            return Err(ToolError::new(
                codes::NOT_CONFIGURED,
                "no documentation repository is configured: start Core MCP with --docs DIR \
                 (repeatable; NAME=DIR to name one) or set COREMCP_DOCS, or name a Registry docs \
                 source with repo (PROJECT/name) or project",
            ));
        };
        Repo::open(first_name, first_dir)
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
    /// The repository the call names, from the host's configuration or the Registry.
    pub fn open(&self) -> Result<Repo, ToolError> {
        let registry = HostRegistry {
            machine: coremcp_plugin_kit::machine::machine_name(),
        };
        Configured::from_host()?.select(self.repo.as_deref(), self.project.as_deref(), &registry)
    }
}

/// What the docs tools ask of the Registry.
pub trait Registry {
    /// The ref of project `key`'s docs source.
    fn docs_source(&self, key: &str) -> Result<String, ToolError>;
    /// The checkout of docs source `reference` on this machine.
    fn checkout(&self, reference: &str) -> Result<Repo, ToolError>;
}

/// The Registry through the host (`registry.call`), this machine being `machine`.
pub struct HostRegistry {
    pub machine: String,
}

impl HostRegistry {
    fn call(
        &self,
        tool: &str,
        args: serde_json::Value,
        what: &str,
    ) -> Result<serde_json::Value, ToolError> {
        coremcp_plugin_kit::registry::call(tool, args).map_err(|e| {
            // The Registry's own answer (no such project, say) is passed on as it is; only a
            // Registry that cannot be reached is said to be one.
            let answered = matches!(
                e.code.as_str(),
                codes::NOT_FOUND | codes::INVALID_ARGUMENTS | codes::CONFLICT
            );
            let message = if answered {
                format!("{what}: {}", e.message)
            } else {
                format!(
                    "{what}: the Registry could not be asked ({}); pass repo with a configured \
                     docs repository name instead",
                    e.message
                )
            };
            ToolError::new(e.code.as_str(), message)
        })
    }
}

impl Registry for HostRegistry {
    fn docs_source(&self, key: &str) -> Result<String, ToolError> {
        let what = format!("project \"{key}\"");
        let page = self.call(
            "registry_project_list",
            serde_json::json!({"key": key, "status": "all"}),
            &what,
        )?;
        docs_source_of(&page, key)
    }

    fn checkout(&self, reference: &str) -> Result<Repo, ToolError> {
        let (project, name) = split_ref(reference)?;
        let page = self.call(
            "registry_source_list",
            serde_json::json!({"project": project, "query": name, "status": "all",
                               "include_checkouts": true, "limit": 200}),
            &format!("docs source {reference}"),
        )?;
        let dir = checkout_of(&page, reference, &self.machine)?;
        let roots = Roots::from_host()?;
        if !roots.contains(&dir) {
            return Err(ToolError::new(
                codes::UNAVAILABLE,
                format!(
                    "the Registry records {reference}'s checkout on {} at {}, which is outside \
                     this Core MCP's roots; the docs tools use a Registry checkout only inside \
                     the roots (run repo_setup there, or configure it with --docs)",
                    self.machine,
                    dir.display()
                ),
            ));
        }
        Repo::open(reference, &dir)
    }
}

/// `reference` as its project key and source name.
fn split_ref(reference: &str) -> Result<(&str, &str), ToolError> {
    reference
        .split_once('/')
        .filter(|(p, n)| !p.is_empty() && !n.is_empty() && !n.contains('/'))
        .ok_or_else(|| {
            ToolError::new(
                codes::INVALID_ARGUMENTS,
                format!("argument \"repo\": {reference:?} is not a source ref PROJECT/name"),
            )
        })
}

/// Project `key`'s docs source, from a `registry_project_list` page.
pub fn docs_source_of(page: &serde_json::Value, key: &str) -> Result<String, ToolError> {
    let project = page["items"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["key"] == key)
        .ok_or_else(|| {
            ToolError::new(
                codes::NOT_FOUND,
                format!(
                    "argument \"project\": no Registry project {key} (registry_project_list \
                     shows them)"
                ),
            )
        })?;
    project["docs_source"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| {
            ToolError::new(
                codes::NOT_FOUND,
                format!(
                    "project {key} has no docs source: set one with registry_project_update \
                     {{\"key\": \"{key}\", \"docs_source\": \"{key}/<name>\"}}, or pass repo"
                ),
            )
        })
}

/// Where docs source `reference` is checked out on host `machine`, from a
/// `registry_source_list` page with its checkouts.
pub fn checkout_of(
    page: &serde_json::Value,
    reference: &str,
    machine: &str,
) -> Result<PathBuf, ToolError> {
    use coremcp_plugin_kit::registry;
    let source = registry::source(page, reference, "argument \"repo\": ")?;
    if source["kind"] != "docs" {
        return Err(ToolError::new(
            codes::INVALID_ARGUMENTS,
            format!(
                "argument \"repo\": {reference} is a {} source, not a docs repository",
                source["kind"].as_str().unwrap_or("different")
            ),
        ));
    }
    if let Some(path) = registry::checkout_on(source, machine) {
        return Ok(PathBuf::from(path));
    }
    let elsewhere = registry::checkout_hosts(source);
    let elsewhere = if elsewhere.is_empty() {
        String::new()
    } else {
        format!(
            " (it is checked out on {}; pass remote_host to read it there)",
            elsewhere.join(", ")
        )
    };
    Err(ToolError::new(
        codes::NOT_FOUND,
        format!(
            "{reference} has no checkout on this machine ({machine}) in the Registry{elsewhere}; \
             run repo_setup {{\"source\": \"{reference}\"}} here to clone and record it, or \
             configure a folder with --docs"
        ),
    ))
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

    /// A Registry that knows one project, CORE, whose docs source CORE/docs is checked out
    /// at `dir` on host `here` (and on `other`).
    struct Known {
        dir: PathBuf,
    }

    impl Registry for Known {
        fn docs_source(&self, key: &str) -> Result<String, ToolError> {
            let page = serde_json::json!({"items": [
                {"key": "CORE", "docs_source": "CORE/docs"},
                {"key": "BARE"},
            ]});
            docs_source_of(&page, key)
        }

        fn checkout(&self, reference: &str) -> Result<Repo, ToolError> {
            let page = serde_json::json!({"items": [
                {"ref": "CORE/docs", "kind": "docs", "checkouts": [
                    {"host": "other", "path": "/elsewhere"},
                    {"host": "here", "path": self.dir},
                ]},
                {"ref": "CORE/code", "kind": "git", "checkouts": []},
                {"ref": "CORE/away", "kind": "docs", "checkouts": [{"host": "other", "path": "/x"}]},
            ]});
            let dir = checkout_of(&page, reference, "here")?;
            Repo::open(reference, &dir)
        }
    }

    #[test]
    fn registry_sources_resolve_to_this_machines_checkout_after_local_names() {
        let top = std::env::temp_dir().join(format!("coremcp-docs-reg-{}", std::process::id()));
        let (local, checkout) = (top.join("local"), top.join("checkout"));
        std::fs::create_dir_all(&local).expect("mkdir");
        std::fs::create_dir_all(&checkout).expect("mkdir");
        let registry = Known {
            dir: checkout.clone(),
        };
        let none = Configured::default();
        let by_ref = none
            .select(Some("CORE/docs"), None, &registry)
            .expect("ref");
        assert_eq!(by_ref.name, "CORE/docs");
        assert!(by_ref.dir().ends_with("checkout"));
        let by_project = none.select(None, Some("CORE"), &registry).expect("project");
        assert!(by_project.dir().ends_with("checkout"));
        // Local configuration first: a configured name equal to the ref or the project key.
        let local_ref = configured(&[("CORE/docs", &local)]);
        let got = local_ref
            .select(None, Some("CORE"), &registry)
            .expect("local");
        assert!(got.dir().ends_with("local"));
        let local_key = configured(&[("CORE", &local)]);
        let got = local_key
            .select(None, Some("CORE"), &registry)
            .expect("local");
        assert!(got.dir().ends_with("local"));
        // Each refusal names what was wrong and what to do.
        for (repo, project, code, says) in [
            (
                None,
                Some("BARE"),
                codes::NOT_FOUND,
                "registry_project_update",
            ),
            (
                None,
                Some("NOPE"),
                codes::NOT_FOUND,
                "no Registry project NOPE",
            ),
            (
                Some("CORE/code"),
                None,
                codes::INVALID_ARGUMENTS,
                "git source",
            ),
            (Some("CORE/away"), None, codes::NOT_FOUND, "repo_setup"),
            (
                Some("CORE/away"),
                None,
                codes::NOT_FOUND,
                "checked out on other",
            ),
            (
                Some("CORE/none"),
                None,
                codes::NOT_FOUND,
                "no Registry source CORE/none",
            ),
        ] {
            let err = none.select(repo, project, &registry).expect_err(says);
            assert_eq!(err.code.as_str(), code, "{err}");
            assert!(err.message.contains(says), "{says}: {err}");
        }
        let _ = std::fs::remove_dir_all(&top);
    }

    #[test]
    fn selection_by_name_default_first_and_clear_refusals() {
        let top = std::env::temp_dir().join(format!("coremcp-docs-select-{}", std::process::id()));
        let (a, b) = (top.join("a"), top.join("b"));
        std::fs::create_dir_all(&a).expect("mkdir");
        std::fs::create_dir_all(&b).expect("mkdir");
        let repos = configured(&[("second", &b), ("first", &a)]);
        let none = Known {
            dir: top.join("unused"),
        };

        let repo = repos.select(None, None, &none).expect("default");
        assert_eq!(repo.name, "second");
        assert!(repo.dir().ends_with("b"));
        assert_eq!(
            repos
                .select(Some("first"), None, &none)
                .expect("named")
                .name,
            "first"
        );

        let err = repos
            .select(Some("nope"), None, &none)
            .expect_err("unknown");
        assert_eq!(err.code.as_str(), codes::INVALID_ARGUMENTS);
        assert!(err.message.contains("configured: second, first"), "{err}");
        assert!(err.message.contains("PROJECT/name"), "{err}");

        let err = Configured::default()
            .select(None, None, &none)
            .expect_err("none");
        assert_eq!(err.code.as_str(), codes::NOT_CONFIGURED);
        assert!(err.message.contains("--docs DIR"), "{err}");

        let missing = configured(&[("gone", &top.join("missing"))]);
        let err = missing
            .select(None, None, &none)
            .expect_err("missing folder");
        assert_eq!(err.code.as_str(), codes::NOT_CONFIGURED);
        assert!(err.message.contains("\"gone\""), "{err}");

        assert_eq!(repo.relative(repo.dir()), ".");
        assert_eq!(repo.relative(&repo.dir().join("x/y.md")), "x/y.md");
        std::fs::remove_dir_all(&top).expect("cleanup");
    }
}
