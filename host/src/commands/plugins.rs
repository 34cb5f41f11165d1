//! `coremcp plugins`: every plugin file in the plugins folder, loaded, with its group,
//! version, API version, compiled features, tool count and load status; and
//! `coremcp plugins install FILE`, which puts a new build of a group in place safely.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use crate::cli::Failure;
use crate::config::{Config, GroupSelection};
use crate::plugins::loader::{self, LoadError};
use crate::plugins::{library_file, Loaded, PluginSet};

/// One line of the table (the header uses it too, so the columns line up).
fn row(group: &str, version: &str, api: &str, features: &str, tools: &str, status: &str) -> String {
    format!("{group:<22} {version:<9} {api:<5} {features:<22} {tools:>5}  {status}\n")
}

/// The cargo features a plugin was built with, from its tools' gates.
fn features(loaded: &Loaded) -> String {
    let mut names: Vec<&str> = loaded
        .tools()
        .iter()
        .filter_map(|t| t.feature.as_ref())
        .filter(|f| f.enabled)
        .map(|f| f.name.as_str())
        .collect();
    names.sort_unstable();
    names.dedup();
    if names.is_empty() {
        let gated = loaded.tools().iter().any(|t| t.feature.is_some());
        (if gated { "(none)" } else { "-" }).to_owned()
    } else {
        names.join(",")
    }
}

pub fn run(mut config: Config) -> Result<ExitCode, Failure> {
    config.groups = GroupSelection::All;
    let plugins = std::sync::Arc::new(PluginSet::discover(&config).map_err(Failure::usage)?);
    plugins.load_installed();
    let mut text = format!("plugins folder: {}\n", plugins.dir().display());
    text.push_str(&row(
        "GROUP", "VERSION", "API", "FEATURES", "TOOLS", "STATUS",
    ));
    let mut files = 0;
    for slot in plugins.slots().iter().filter(|s| s.installed()) {
        files += 1;
        text.push_str(&match slot.state() {
            Some(Ok(loaded)) => {
                let m = &loaded.library.manifest;
                row(
                    &slot.id,
                    &m.plugin_version,
                    &m.api_version,
                    &features(&loaded),
                    &m.tools.len().to_string(),
                    "loaded",
                )
            }
            Some(Err(e)) => row(&slot.id, "-", "-", "-", "-", &format!("failed: {e}")),
            None => row(&slot.id, "-", "-", "-", "-", "not loaded"),
        });
    }
    if files == 0 {
        text.push_str("(no plugin files: libcoremcp_<group>.so)\n");
    }
    super::print(&text).map_err(|e| Failure::runtime(format!("stdout: {e}")))?;
    Ok(ExitCode::SUCCESS)
}

/// Checks `file` (API version, layout, manifest) and installs it as its group's library: the
/// bytes go to a temporary file beside the target, are synced, and the temporary file is
/// renamed over the target — a library a running host has loaded is never overwritten in place.
pub fn install(config: &Config, file: &Path) -> Result<ExitCode, Failure> {
    let manifest = loader::inspect(file)
        .map_err(|e: LoadError| Failure::usage(format!("not installed: {e}")))?;
    let group = manifest.group.as_str();
    if crate::plugins::group_of_file(&library_file(group)) != Some(group) {
        return Err(Failure::usage(format!(
            "not installed: {} declares group \"{group}\", which is not a valid group id",
            file.display()
        )));
    }
    let dir = &config.plugins_dir;
    std::fs::create_dir_all(dir)
        .map_err(|e| Failure::runtime(format!("plugins folder {}: {e}", dir.display())))?;
    let target = dir.join(library_file(group));
    let temporary = dir.join(format!(
        ".{}.{}.tmp",
        library_file(group),
        std::process::id()
    ));
    let written = std::fs::read(file)
        .and_then(|bytes| {
            let mut out = File::create(&temporary)?;
            out.write_all(&bytes)?;
            out.sync_all()
        })
        .and_then(|()| std::fs::rename(&temporary, &target))
        .and_then(|()| File::open(dir)?.sync_all());
    if let Err(e) = written {
        let _ = std::fs::remove_file(&temporary);
        return Err(Failure::runtime(format!(
            "installing {}: {e}",
            target.display()
        )));
    }
    let text = format!(
        "installed {group} {} (plugin API {}, {} tools) as {}\nrunning hosts use it after a reload (SIGHUP for `coremcp stdio`) or a restart\n",
        manifest.plugin_version,
        manifest.api_version,
        manifest.tools.len(),
        target.display()
    );
    super::print(&text).map_err(|e| Failure::runtime(format!("stdout: {e}")))?;
    Ok(ExitCode::SUCCESS)
}
