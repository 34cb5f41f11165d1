//! The plugin set of a session: which groups it sees, where their libraries are, and each
//! group's load state. Libraries load **on demand** (first call, or first listing that must
//! show them), never at start-up; a group that fails to load is reported and its tools answer
//! an error, while every other group keeps serving.
//!
//! Invariant: a tool name routes to exactly one group. A catalog name always belongs to its
//! catalog group; a plugin that declares a name owned by another group is refused.

pub mod catalog;
pub mod host_api;
pub mod loader;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock, RwLock};

use coremcp_plugin_api::ToolSpec;

use crate::config::{Config, GroupSelection};
use crate::pool::Gate;
use catalog::CatalogGroup;
use loader::{Library, LoadError};

/// Plugin libraries are named `libcoremcp_<group>.so` (`.dylib` on macOS).
pub const LIB_PREFIX: &str = "libcoremcp_";

/// The library file name of a group.
pub fn library_file(group: &str) -> String {
    format!("{LIB_PREFIX}{group}{}", std::env::consts::DLL_SUFFIX)
}

/// The group id a library file name declares, if it is a plugin file at all.
pub fn group_of_file(name: &str) -> Option<&str> {
    let id = name
        .strip_prefix(LIB_PREFIX)?
        .strip_suffix(std::env::consts::DLL_SUFFIX)?;
    let valid = !id.is_empty()
        && id
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    valid.then_some(id)
}

/// A loaded group.
pub struct Loaded {
    pub library: Library,
}

impl Loaded {
    pub fn tools(&self) -> &[ToolSpec] {
        &self.library.manifest.tools
    }

    /// Catalog tools of the group that this plugin does not provide.
    pub fn missing_catalog_tools(&self, catalog: Option<&CatalogGroup>) -> Vec<&'static str> {
        catalog
            .map_or(&[][..], |g| g.tools)
            .iter()
            .filter(|name| !self.tools().iter().any(|t| t.name == **name))
            .copied()
            .collect()
    }
}

/// One group of the session.
pub struct Slot {
    pub id: String,
    pub path: PathBuf,
    pub installed: bool,
    pub catalog: Option<&'static CatalogGroup>,
    /// Bounds how many calls of this group run at once.
    pub gate: Arc<Gate>,
    state: OnceLock<Result<Arc<Loaded>, LoadError>>,
}

impl Slot {
    /// The load state, without loading.
    pub fn state(&self) -> Option<&Result<Arc<Loaded>, LoadError>> {
        self.state.get()
    }
}

/// The groups of one session.
pub struct PluginSet {
    dir: PathBuf,
    slots: Vec<Slot>,
    routes: RwLock<HashMap<String, usize>>,
}

impl PluginSet {
    /// Finds the plugin files of the selected groups. Loads nothing.
    pub fn discover(config: &Config) -> Result<Self, String> {
        let dir = config.plugins_dir.clone();
        let mut found = discover_files(&dir);
        let mut slots = Vec::new();
        for group in catalog::GROUPS {
            if config.groups.includes(group.id) {
                let installed = found.remove(group.id).is_some();
                slots.push(Slot::new(&dir, group.id, installed, Some(group), config));
            }
        }
        let mut extra: Vec<String> = found.into_keys().collect();
        extra.sort();
        for id in extra {
            if config.groups.includes(&id) {
                slots.push(Slot::new(&dir, &id, true, None, config));
            }
        }
        if let GroupSelection::Only(ids) = &config.groups {
            for id in ids {
                if !slots.iter().any(|s| &s.id == id) {
                    let known: Vec<&str> = catalog::GROUPS
                        .iter()
                        .map(|g| g.id)
                        .chain(
                            slots
                                .iter()
                                .filter(|s| s.catalog.is_none())
                                .map(|s| s.id.as_str()),
                        )
                        .collect();
                    return Err(format!(
                        "--groups: unknown group \"{id}\" (known: {})",
                        known.join(", ")
                    ));
                }
            }
        }
        let mut routes = HashMap::new();
        for (index, slot) in slots.iter().enumerate() {
            for tool in slot.catalog.map_or(&[][..], |g| g.tools) {
                routes.insert((*tool).to_owned(), index);
            }
        }
        Ok(Self {
            dir,
            slots,
            routes: RwLock::new(routes),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn slots(&self) -> &[Slot] {
        &self.slots
    }

    /// The installed groups, in listing order.
    pub fn installed_ids(&self) -> Vec<&str> {
        self.slots
            .iter()
            .filter(|s| s.installed)
            .map(|s| s.id.as_str())
            .collect()
    }

    /// The slot that serves `tool`. A name not in the catalog may belong to a group that is not
    /// loaded yet: those groups are loaded to find out.
    pub fn route(&self, tool: &str) -> Option<usize> {
        if let Some(index) = self.lookup(tool) {
            return Some(index);
        }
        let mut loaded_any = false;
        for (index, slot) in self.slots.iter().enumerate() {
            if slot.catalog.is_none() && slot.installed && slot.state().is_none() {
                let _ = self.load(index);
                loaded_any = true;
            }
        }
        if loaded_any {
            self.lookup(tool)
        } else {
            None
        }
    }

    fn lookup(&self, tool: &str) -> Option<usize> {
        self.routes.read().ok().and_then(|r| r.get(tool).copied())
    }

    /// Loads the group in `index` (once; later calls return the first outcome).
    pub fn load(&self, index: usize) -> Result<&Arc<Loaded>, &LoadError> {
        let slot = &self.slots[index];
        slot.state
            .get_or_init(|| {
                let started = std::time::Instant::now();
                let outcome = self.load_slot(index);
                match &outcome {
                    Ok(loaded) => tracing::info!(
                        group = %slot.id,
                        tools = loaded.tools().len(),
                        elapsed_us = started.elapsed().as_micros() as u64,
                        "plugin loaded"
                    ),
                    Err(LoadError::NotInstalled { .. }) => {}
                    Err(e) => tracing::error!(group = %slot.id, "plugin failed to load: {e}"),
                }
                outcome
            })
            .as_ref()
    }

    fn load_slot(&self, index: usize) -> Result<Arc<Loaded>, LoadError> {
        let slot = &self.slots[index];
        if !slot.installed {
            return Err(LoadError::NotInstalled {
                group: slot.id.clone(),
                file: library_file(&slot.id),
                dir: self.dir.clone(),
            });
        }
        let library = loader::load(&slot.path, &slot.id)?;
        let mut routes = self
            .routes
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for tool in &library.manifest.tools {
            if let Some(owner) = routes.get(&tool.name).filter(|owner| **owner != index) {
                return Err(LoadError::ToolConflict {
                    path: slot.path.clone(),
                    tool: tool.name.clone(),
                    owner: self.slots[*owner].id.clone(),
                });
            }
        }
        for tool in &library.manifest.tools {
            routes.insert(tool.name.clone(), index);
        }
        drop(routes);
        let loaded = Loaded { library };
        let missing = loaded.missing_catalog_tools(slot.catalog);
        if !missing.is_empty() {
            tracing::warn!(
                group = %slot.id,
                "the plugin does not provide these catalog tools: {}",
                missing.join(", ")
            );
        }
        Ok(Arc::new(loaded))
    }

    /// Loads every installed group of the session (for a full listing).
    pub fn load_installed(&self) {
        for (index, slot) in self.slots.iter().enumerate() {
            if slot.installed {
                let _ = self.load(index);
            }
        }
    }
}

impl Slot {
    fn new(
        dir: &Path,
        id: &str,
        installed: bool,
        catalog: Option<&'static CatalogGroup>,
        config: &Config,
    ) -> Self {
        Self {
            id: id.to_owned(),
            path: dir.join(library_file(id)),
            installed,
            catalog,
            gate: Arc::new(Gate::new(config.group_concurrency)),
            state: OnceLock::new(),
        }
    }
}

/// Plugin files in `dir`, by group id. A missing or unreadable folder holds none (reported).
pub fn discover_files(dir: &Path) -> HashMap<String, PathBuf> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => {
            tracing::warn!(
                "plugins folder {}: {e}; no group is installed",
                dir.display()
            );
            return HashMap::new();
        }
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name();
            let group = group_of_file(name.to_str()?)?.to_owned();
            Some((group, entry.path()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names() {
        let so = std::env::consts::DLL_SUFFIX;
        assert_eq!(group_of_file(&format!("libcoremcp_git{so}")), Some("git"));
        assert_eq!(
            group_of_file(&format!("libcoremcp_fixture_two{so}")),
            Some("fixture_two")
        );
        assert_eq!(group_of_file(&format!("libcoremcp_{so}")), None);
        assert_eq!(group_of_file(&format!("libcoremcp_Git{so}")), None);
        assert_eq!(group_of_file(&format!("libother{so}")), None);
        assert_eq!(group_of_file("libcoremcp_git.txt"), None);
        assert_eq!(library_file("git"), format!("libcoremcp_git{so}"));
    }
}
