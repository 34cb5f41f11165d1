//! Core MCP's plugin engine: loading, vetting and calling group libraries, and the threads calls
//! run on ([`pool`], [`inline`], [`pace`]).
//!
//! The plugin set of a session ([`PluginSet`]): which groups it sees, where their libraries are,
//! and each group's load state. Libraries load **on demand** (first call, or first listing that
//! must show them), never at start-up; a group that fails to load is reported and its tools answer
//! an error, while every other group keeps serving.
//!
//! A reload ([`PluginSet::reload`], SIGHUP in stdio mode) loads every group whose file changed and
//! routes new calls to the new copy; calls already running finish on the old one, which is never
//! unloaded. A changed file that fails to load is refused in one line and the previous copy keeps
//! serving.
//!
//! A listing needs no plugin code: each library's manifest is kept beside it ([`sidecar`]), and a
//! group whose sidecar describes its library is listed (and its tools routed) from it; the library
//! loads on the first call. A group without a usable sidecar is loaded to be listed, and its
//! sidecar written then, where the folder can be written.
//!
//! Invariants: a tool name routes to exactly one group. A catalog name always belongs to its
//! catalog group; a plugin that declares a name owned by another group is refused. What is mapped
//! is always a vetted copy of the installed bytes ([`vetting::Vetting::vetted_copy`]): a reload
//! never opens a file this process already mapped (the dynamic loader would hand back the old
//! library), and a file changed in place after it was loaded never runs.
//!
//! This crate never reads the configuration or the environment (the binary hands it [`Settings`]),
//! never serves a client, and never imports the relays or the upstream servers: it builds on
//! `coremcp-wire` alone (the policy's caller, the render of a tool's entry).

mod digest;
pub(crate) mod elf;
mod error;
#[cfg(test)]
mod fuzz;
pub mod host_api;
pub mod inline;
pub mod loader;
pub mod pace;
pub mod pool;
mod selection;
pub mod sidecar;
pub mod vetting;

pub use selection::GroupSelection;

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use coremcp_plugin_api::ToolSpec;

use crate::pool::Gate;
use coremcp_catalog::Group as CatalogGroup;
use loader::{Library, LoadError};
use sidecar::ListedTool;
use vetting::Vetting;

/// How long a listing waits for groups to load before it leaves the slow ones out.
pub(crate) const LOAD_WAIT: Duration = Duration::from_secs(5);

/// Plugin libraries are named `libcoremcp_<group>.so` (`.dylib` on macOS).
pub(crate) const LIB_PREFIX: &str = "libcoremcp_";

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

/// The default of the `timeout_s` property of a tool's input schema.
fn declared_timeout(schema: &serde_json::Value) -> Option<u64> {
    schema.pointer("/properties/timeout_s/default")?.as_u64()
}

/// What identifies one version of a file on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fingerprint {
    dev: u64,
    ino: u64,
    len: u64,
    mtime_ns: i128,
}

impl Fingerprint {
    fn of(path: &Path) -> Option<Self> {
        std::fs::metadata(path)
            .ok()
            .map(|meta| Self::of_meta(&meta))
    }

    fn of_meta(meta: &std::fs::Metadata) -> Self {
        Self {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
        }
    }
}

/// A loaded group.
pub struct Loaded {
    pub library: Library,
    /// The file this copy was loaded from, as it was then.
    fingerprint: Option<Fingerprint>,
    /// The tools whose `timeout_s` argument declares a default, with it (few or none).
    timeouts: Vec<(String, u64)>,
    /// A group outside the catalog: its tools' entries as its manifest declares their guards
    /// (a catalog group's come from the catalog, never from the plugin).
    entries: Vec<&'static coremcp_catalog::Entry>,
}

impl Loaded {
    pub fn tools(&self) -> &[ToolSpec] {
        &self.library.manifest.tools
    }

    /// The entry of `tool` of a group outside the catalog: its guard and escalation, as its
    /// manifest declares them.
    pub fn entry(&self, tool: &str) -> Option<&'static coremcp_catalog::Entry> {
        self.entries.iter().copied().find(|e| e.name == tool)
    }

    /// Catalog tools of the group that this plugin does not provide.
    pub fn missing_catalog_tools(&self, catalog: Option<&CatalogGroup>) -> Vec<&'static str> {
        catalog
            .into_iter()
            .flat_map(|g| g.names())
            .filter(|name| !self.tools().iter().any(|t| t.name == *name))
            .collect()
    }
}

/// One group of the session.
pub struct Slot {
    pub id: String,
    pub path: PathBuf,
    installed: AtomicBool,
    pub catalog: Option<&'static CatalogGroup>,
    /// Bounds how many calls of this group run at once.
    pub gate: Arc<Gate>,
    state: RwLock<Option<Result<Arc<Loaded>, LoadError>>>,
    /// Before the group loads: its manifest from the sidecar, and the library file it
    /// describes (a reload that finds the file changed forgets it).
    listed: RwLock<Option<ListedFrom>>,
    /// Held while this group loads, so that it loads once.
    loading: Mutex<()>,
}

/// A group's tools from its sidecar, and the library file they describe.
type ListedFrom = (Arc<Vec<ListedTool>>, Option<Fingerprint>);

/// What is known of a group's tools: its loaded library, or, before it loads, its sidecar's
/// rendered entries.
#[derive(Clone)]
pub enum Listing {
    Loaded(Arc<Loaded>),
    Listed(Arc<Vec<ListedTool>>),
}

impl Listing {
    /// The entry that says when `tool`'s call runs as a task, for a tool of a group outside
    /// the catalog whose manifest declares it (a catalog tool's is the catalog's).
    pub fn task_entry(&self, tool: &str) -> Option<&'static coremcp_catalog::Entry> {
        match self {
            Self::Loaded(loaded) => loaded.entry(tool).filter(|e| e.task.is_some()),
            Self::Listed(tools) => tools.iter().find(|t| t.name == tool)?.task,
        }
    }

    /// The default of `tool`'s `timeout_s` argument, if it declares one: the time the tool
    /// runs for when the call does not say, which the call's deadline honours.
    pub fn declared_timeout(&self, tool: &str) -> Option<u64> {
        match self {
            Self::Loaded(loaded) => loaded
                .timeouts
                .iter()
                .find(|(name, _)| name == tool)
                .map(|(_, s)| *s),
            // Before the group loads (its first call): the entry is parsed only if it names
            // the argument at all.
            Self::Listed(tools) => {
                let entry = tools.iter().find(|t| t.name == tool)?.entry.as_ref()?;
                if !entry.contains("\"timeout_s\"") {
                    return None;
                }
                let entry: serde_json::Value = serde_json::from_str(entry).ok()?;
                declared_timeout(entry.get("inputSchema")?)
            }
        }
    }

    /// How many tools the group declares.
    pub fn count(&self) -> usize {
        match self {
            Self::Loaded(loaded) => loaded.tools().len(),
            Self::Listed(tools) => tools.len(),
        }
    }
}

impl Slot {
    /// The load state, without loading.
    #[inline]
    pub fn state(&self) -> Option<Result<Arc<Loaded>, LoadError>> {
        self.state
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn set_state(&self, state: Result<Arc<Loaded>, LoadError>) {
        *self.state.write().unwrap_or_else(PoisonError::into_inner) = Some(state);
    }

    /// Whether the group's library file was there at the last look.
    pub fn installed(&self) -> bool {
        self.installed.load(Ordering::Relaxed)
    }

    /// The group's tools as far as they are known without loading: the loaded library's, or
    /// the sidecar's before it loads. `None` when neither is known, or the load failed.
    pub fn listing(&self) -> Option<Listing> {
        if let Some(state) = self.state() {
            return state.ok().map(Listing::Loaded);
        }
        self.listed
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map(|(tools, _)| Listing::Listed(Arc::clone(tools)))
    }

    fn forget_listed(&self) -> Option<ListedFrom> {
        self.listed
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }
}

/// What a reload did.
#[derive(Debug, Default)]
pub struct ReloadReport {
    /// Groups now served by a new copy (or withdrawn).
    pub changed: Vec<String>,
    /// Groups whose new file was refused; their previous copy keeps serving.
    pub refused: Vec<(String, LoadError)>,
}

/// Tool name to slot index. Looked up on every call and at every listing; the keys are tool
/// names from the catalog and from the libraries in the plugins folder, so a quick (seeded)
/// hash serves.
type Routes = HashMap<String, usize, foldhash::fast::RandomState>;

/// What the engine needs of the configuration, built from it in one place (the binary's
/// `config.rs`).
#[derive(Debug, Clone)]
pub struct Settings {
    /// The folder of the installed libraries and their sidecars.
    pub plugins_dir: PathBuf,
    pub groups: GroupSelection,
    /// Service mode: a group that runs on the agent's machine is never even looked at.
    pub service_mode: bool,
    /// Calls one group may run at once.
    pub group_concurrency: usize,
    pub vetting: vetting::Vetting,
    /// The values plugins read through the host's `config` callback.
    pub values: Vec<(String, String)>,
    /// Told each time a library loaded, with how long it took (the binary's metrics).
    pub on_loaded: fn(&str, Duration),
}

/// The groups of one session.
pub struct PluginSet {
    dir: PathBuf,
    vetting: Vetting,
    on_loaded: fn(&str, Duration),
    slots: Vec<Slot>,
    routes: RwLock<Routes>,
    /// Bumped when a loaded library's tools differ from what its sidecar listed, so that
    /// sessions list again.
    generation: AtomicU64,
    /// Set once writing a sidecar found the folder read-only: no further attempts.
    read_only: AtomicBool,
}

impl PluginSet {
    /// Finds the plugin files of the selected groups. Loads nothing. Sets the values plugins
    /// read through the host's `config` callback, so every command's plugins see the same.
    pub fn discover(config: &Settings) -> Result<Self, String> {
        host_api::set_config(config.values.clone());
        let dir = config.plugins_dir.clone();
        let mut found = discover_files(&dir);
        let mut slots = Vec::new();
        for &group in coremcp_catalog::GROUPS {
            // A service-mode Core MCP never even looks at a local group's library.
            if config.service_mode && !coremcp_catalog::served_in_service_mode(group.runs) {
                found.remove(group.id);
                continue;
            }
            if config.groups.includes(group.id) {
                let installed = found.remove(group.id).is_some();
                slots.push(Slot::new(&dir, group.id, installed, Some(group), config));
            }
        }
        // Groups outside the catalog say where they run only once loaded: service mode, which
        // must never load a local group, leaves them out.
        let mut extra: Vec<String> = if config.service_mode {
            Vec::new()
        } else {
            found.into_keys().collect()
        };
        extra.sort();
        for id in extra {
            if config.groups.includes(&id) {
                slots.push(Slot::new(&dir, &id, true, None, config));
            }
        }
        if let Some(ids) = config.groups.named() {
            for id in ids {
                let local = coremcp_catalog::group(id)
                    .is_some_and(|g| !coremcp_catalog::served_in_service_mode(g.runs));
                if config.service_mode && local {
                    return Err(format!(
                        "--groups: \"{id}\" is a group that runs on the agent's machine, which a \
                         service-mode Core MCP (serve --service) never serves; leave it out"
                    ));
                }
                if !slots.iter().any(|s| &s.id == id) {
                    let known: Vec<&str> = coremcp_catalog::GROUPS
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
        let names = slots
            .iter()
            .filter_map(|slot| slot.catalog)
            .map(|g| g.tools.len())
            .sum();
        let mut routes = Routes::with_capacity_and_hasher(names, Default::default());
        for (index, slot) in slots.iter().enumerate() {
            for tool in slot.catalog.into_iter().flat_map(|g| g.names()) {
                routes.insert(tool.to_owned(), index);
            }
        }
        Ok(Self {
            dir,
            vetting: config.vetting.clone(),
            on_loaded: config.on_loaded,
            slots,
            routes: RwLock::new(routes),
            generation: AtomicU64::new(0),
            read_only: AtomicBool::new(false),
        })
    }

    /// Changes when a group's loaded tools turned out to differ from its sidecar's.
    #[inline]
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// How this set vets a plugin file before mapping it.
    pub fn vetting(&self) -> &Vetting {
        &self.vetting
    }

    #[inline]
    pub fn slots(&self) -> &[Slot] {
        &self.slots
    }

    /// The installed groups, in listing order.
    pub fn installed_ids(&self) -> Vec<&str> {
        self.slots
            .iter()
            .filter(|s| s.installed())
            .map(|s| s.id.as_str())
            .collect()
    }

    /// The slot that serves `tool`. A name not in the catalog may belong to a group that is not
    /// loaded yet: those groups are loaded to find out.
    #[inline]
    pub fn route(self: &Arc<Self>, tool: &str) -> Option<usize> {
        if let Some(index) = self.lookup(tool) {
            return Some(index);
        }
        let unknown: Vec<usize> = (0..self.slots.len())
            .filter(|i| {
                let slot = &self.slots[*i];
                slot.catalog.is_none() && slot.installed() && slot.listing().is_none()
            })
            .collect();
        if unknown.is_empty() {
            return None;
        }
        self.know(unknown.into_iter());
        self.lookup(tool)
    }

    /// The slot of `tool` if its group is already loaded and serving: routing it then never
    /// loads or waits for anything.
    pub fn loaded_route(&self, tool: &str) -> Option<usize> {
        self.lookup(tool)
            .filter(|i| matches!(self.slots[*i].state(), Some(Ok(_))))
    }

    #[inline]
    fn lookup(&self, tool: &str) -> Option<usize> {
        self.routes.read().ok().and_then(|r| r.get(tool).copied())
    }

    /// The group in `index`, loaded on first use (later calls return the current copy).
    #[inline]
    pub fn load(&self, index: usize) -> Result<Arc<Loaded>, LoadError> {
        let slot = &self.slots[index];
        if let Some(state) = slot.state() {
            return state;
        }
        let _loading = slot.loading.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(state) = slot.state() {
            return state;
        }
        let outcome = self.load_slot(index);
        slot.set_state(outcome.clone());
        outcome
    }

    /// Loads the group's file (a copy of its vetted bytes), registers its tools and logs
    /// the outcome.
    fn load_slot(&self, index: usize) -> Result<Arc<Loaded>, LoadError> {
        let slot = &self.slots[index];
        let started = std::time::Instant::now();
        let fingerprint = Fingerprint::of(&slot.path);
        slot.installed
            .store(fingerprint.is_some(), Ordering::Relaxed);
        if fingerprint.is_none() {
            return Err(LoadError::NotInstalled {
                group: slot.id.clone(),
                file: library_file(&slot.id),
                dir: self.dir.clone(),
            });
        }
        // Every load maps a vetted copy of the installed bytes — new bytes a new file, the same
        // bytes a private one — so a reload never opens a file this process already mapped,
        // and the installed file can change without touching what runs.
        let outcome = loader::load(&slot.path, &slot.id, &self.vetting)
            .and_then(|library| self.register(index, library, fingerprint));
        if let Ok(loaded) = &outcome {
            (self.on_loaded)(&slot.id, started.elapsed());
            self.after_load(slot, loaded);
        }
        match &outcome {
            Ok(loaded) => tracing::info!(
                group = %slot.id,
                version = %loaded.library.manifest.plugin_version,
                tools = loaded.tools().len(),
                elapsed_us = started.elapsed().as_micros() as u64,
                "plugin loaded"
            ),
            Err(e) => tracing::error!(group = %slot.id, "plugin failed to load: {e}"),
        }
        outcome
    }

    /// After a load: the sidecar is forgotten (the library now answers for itself) and written
    /// anew if it did not hold this manifest; sessions list again if it listed other tools.
    fn after_load(&self, slot: &Slot, loaded: &Loaded) {
        let manifest = &loaded.library.manifest;
        if let Some((listed, _)) = slot.forget_listed() {
            if !ListedTool::same(&listed, &ListedTool::render(manifest)) {
                tracing::warn!(
                    group = %slot.id,
                    "the library's tools differ from its sidecar manifest's; listing the library's"
                );
                self.generation.fetch_add(1, Ordering::AcqRel);
            }
        }
        // Only for the file as it was loaded (a reload loads a copy of the same bytes).
        if loaded.fingerprint.is_none()
            || Fingerprint::of(&slot.path) != loaded.fingerprint
            || self.read_only.load(Ordering::Relaxed)
            || sidecar::holds(&slot.path, manifest)
        {
            return;
        }
        match sidecar::write(&slot.path, manifest, sidecar::Writer::Host) {
            Ok(()) => tracing::debug!(group = %slot.id, "sidecar manifest written"),
            Err(sidecar::WriteError::ReadOnly(e)) => {
                self.read_only.store(true, Ordering::Relaxed);
                tracing::debug!(group = %slot.id, "sidecar manifest not written: {e}");
            }
            Err(e) => tracing::debug!(group = %slot.id, "sidecar manifest not written: {e}"),
        }
    }

    /// Routes `tools` to `index`, unless one belongs to another group: then nothing changes.
    /// Names that routed here and are not in `tools` stop routing here (catalog names always
    /// route to their group).
    fn claim(&self, index: usize, tools: &[&str]) -> Result<(), LoadError> {
        let slot = &self.slots[index];
        let mut routes = self.routes.write().unwrap_or_else(PoisonError::into_inner);
        let mut routed_here = 0;
        for tool in tools {
            match routes.get(*tool) {
                Some(owner) if *owner != index => {
                    return Err(LoadError::ToolConflict {
                        path: slot.path.clone(),
                        tool: (*tool).to_owned(),
                        owner: self.slots[*owner].id.clone(),
                    })
                }
                Some(_) => routed_here += 1,
                None => {}
            }
        }
        // The usual case: exactly these names route here already (the catalog's).
        if routed_here == tools.len()
            && routes.values().filter(|owner| **owner == index).count() == routed_here
        {
            return Ok(());
        }
        let catalog = slot.catalog;
        routes.retain(|name, owner| {
            *owner != index
                || catalog.is_some_and(|g| g.entry(name).is_some())
                || tools.contains(&name.as_str())
        });
        for tool in tools {
            // Most are routed here already (the catalog's names): no new key for those.
            if routes.get(*tool) != Some(&index) {
                routes.insert((*tool).to_owned(), index);
            }
        }
        Ok(())
    }

    /// Routes the library's tools to `index`, unless one belongs to another group.
    fn register(
        &self,
        index: usize,
        library: Library,
        fingerprint: Option<Fingerprint>,
    ) -> Result<Arc<Loaded>, LoadError> {
        let slot = &self.slots[index];
        let names: Vec<&str> = library
            .manifest
            .tools
            .iter()
            .map(|t| t.name.as_str())
            .collect();
        self.claim(index, &names)?;
        let timeouts = library
            .manifest
            .tools
            .iter()
            .filter_map(|t| Some((t.name.clone(), declared_timeout(&t.input_schema)?)))
            .collect();
        let entries = match slot.catalog {
            Some(_) => Vec::new(),
            None => library
                .manifest
                .tools
                .iter()
                .map(coremcp_catalog::entry_from_manifest)
                .collect(),
        };
        let loaded = Loaded {
            library,
            fingerprint,
            timeouts,
            entries,
        };
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

    /// Looks at every group's file again: a group whose file changed is loaded anew (new calls
    /// go to the new copy), a group whose file went away is withdrawn, and a new file that fails
    /// to load is refused while the previous copy keeps serving.
    pub fn reload(&self) -> ReloadReport {
        let mut report = ReloadReport::default();
        for (index, slot) in self.slots.iter().enumerate() {
            let _loading = slot.loading.lock().unwrap_or_else(PoisonError::into_inner);
            let now = Fingerprint::of(&slot.path);
            let Some(current) = slot.state() else {
                // Never loaded: the first use loads whatever is there then. A listing from a
                // sidecar of another version of the file is forgotten.
                slot.installed.store(now.is_some(), Ordering::Relaxed);
                let stale = slot
                    .listed
                    .read()
                    .unwrap_or_else(PoisonError::into_inner)
                    .as_ref()
                    .is_some_and(|(_, was)| *was != now);
                if stale {
                    slot.forget_listed();
                    self.withdraw_names(index);
                    report.changed.push(slot.id.clone());
                }
                continue;
            };
            let was = current.as_ref().ok().and_then(|l| l.fingerprint);
            if now == was {
                continue;
            }
            if now.is_none() {
                slot.installed.store(false, Ordering::Relaxed);
                self.withdraw_names(index);
                tracing::info!(group = %slot.id, "plugin file removed; group withdrawn");
                slot.set_state(Err(LoadError::NotInstalled {
                    group: slot.id.clone(),
                    file: library_file(&slot.id),
                    dir: self.dir.clone(),
                }));
                report.changed.push(slot.id.clone());
                continue;
            }
            match (self.load_slot(index), current) {
                (Ok(fresh), _) => {
                    slot.set_state(Ok(fresh));
                    report.changed.push(slot.id.clone());
                }
                (Err(e), Ok(_previous)) => report.refused.push((slot.id.clone(), e)),
                (Err(e), Err(_)) => {
                    slot.set_state(Err(e.clone()));
                    report.refused.push((slot.id.clone(), e));
                }
            }
        }
        report
    }

    /// Stops routing to `index` the names outside its catalog group.
    fn withdraw_names(&self, index: usize) {
        let catalog = self.slots[index].catalog;
        self.routes
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|name, owner| {
                *owner != index || catalog.is_some_and(|g| g.entry(name).is_some())
            });
    }

    /// Makes the tools of the installed groups `keep` names known, for a listing: from each
    /// group's sidecar where it describes the library, by loading the group otherwise (see
    /// [`Self::load_installed`] for the wait).
    pub fn know_where(self: &Arc<Self>, keep: &dyn Fn(&str) -> bool) {
        self.know(
            (0..self.slots.len())
                .filter(|i| self.slots[*i].installed() && keep(&self.slots[*i].id)),
        );
    }

    fn know(self: &Arc<Self>, indexes: impl Iterator<Item = usize>) {
        let unlisted: Vec<usize> = indexes.filter(|i| !self.list_from_sidecar(*i)).collect();
        self.load_within(unlisted.into_iter(), LOAD_WAIT);
    }

    /// Lists the group in `index` from its sidecar; `false` if it has no usable one (or is
    /// loaded already, or its load failed: nothing to list from a sidecar then).
    fn list_from_sidecar(&self, index: usize) -> bool {
        let slot = &self.slots[index];
        if slot.listing().is_some() {
            return true;
        }
        let _loading = slot.loading.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.state().is_some() {
            return slot.listing().is_some();
        }
        let Ok(meta) = std::fs::metadata(&slot.path) else {
            return false;
        };
        let fingerprint = Some(Fingerprint::of_meta(&meta));
        let Some(tools) = sidecar::read_for(&slot.path, &meta, &slot.id) else {
            return false;
        };
        // Tools another group owns: loading the group reports the conflict.
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        if self.claim(index, &names).is_err() {
            return false;
        }
        tracing::debug!(group = %slot.id, tools = tools.len(), "listed from its sidecar");
        *slot.listed.write().unwrap_or_else(PoisonError::into_inner) =
            Some((Arc::new(tools), fingerprint));
        true
    }

    /// Loads every installed group of the session (for a full listing), waiting at most
    /// [`LOAD_WAIT`] for all of them: a plugin whose loading hangs (its `init`, say) is left out
    /// of this listing and keeps loading on its own thread, so it never stalls the caller.
    pub fn load_installed(self: &Arc<Self>) {
        self.load_within(
            (0..self.slots.len()).filter(|i| self.slots[*i].installed()),
            LOAD_WAIT,
        );
    }

    /// Loads the groups in `indexes` side by side, waiting at most `limit` for them.
    fn load_within(self: &Arc<Self>, indexes: impl Iterator<Item = usize>, limit: Duration) {
        let (done, finished) = mpsc::channel();
        let mut waiting = Vec::new();
        for index in indexes.filter(|i| self.slots[*i].state().is_none()) {
            let (set, done) = (Arc::clone(self), done.clone());
            let started = std::thread::Builder::new()
                .name(format!("coremcp-load-{}", self.slots[index].id))
                .spawn(move || {
                    let _ = set.load(index);
                    let _ = done.send(index);
                });
            match started {
                Ok(_) => waiting.push(index),
                Err(e) => tracing::error!("cannot start a loading thread: {e}"),
            }
        }
        let deadline = Instant::now() + limit;
        while !waiting.is_empty() {
            match finished.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(index) => waiting.retain(|i| *i != index),
                Err(_) => break,
            }
        }
        for index in waiting {
            tracing::warn!(
                group = %self.slots[index].id,
                "still loading after {} s; left out for now",
                limit.as_secs()
            );
        }
    }
}

impl Slot {
    fn new(
        dir: &Path,
        id: &str,
        installed: bool,
        catalog: Option<&'static CatalogGroup>,
        config: &Settings,
    ) -> Self {
        Self {
            id: id.to_owned(),
            path: dir.join(library_file(id)),
            installed: AtomicBool::new(installed),
            catalog,
            gate: Arc::new(Gate::new(config.group_concurrency)),
            state: RwLock::new(None),
            listed: RwLock::new(None),
            loading: Mutex::new(()),
        }
    }
}

/// The groups outside the catalog installed in `dir`, and their tools' names as their sidecar
/// manifests list them: names grants may give although the catalog does not know them.
pub fn installed_names(dir: &Path) -> Vec<String> {
    let mut names = Vec::new();
    for (id, path) in discover_files(dir) {
        if coremcp_catalog::group(&id).is_some() {
            continue;
        }
        if let Some(tools) = sidecar::read(&path, &id) {
            names.extend(tools.into_iter().map(|t| t.name));
        }
        names.push(id);
    }
    names
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
