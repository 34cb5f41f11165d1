//! `coremcp plugins`: every plugin file in the plugins folder, loaded, with its group,
//! version, API version, compiled features, tool count and load status; and
//! `coremcp plugins install FILE`, which puts a new build of a group in place safely; and
//! `coremcp plugins index`, which writes each library's sidecar manifest.

use std::fs::File;
use std::path::Path;
use std::process::ExitCode;

use super::Failure;
use crate::config::Config;
use coremcp_engine::loader::{self, LoadError};
use coremcp_engine::GroupSelection;
use coremcp_engine::{discover_files, library_file, sidecar, Loaded, PluginSet};

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
    let plugins =
        std::sync::Arc::new(PluginSet::discover(&config.engine()).map_err(Failure::usage)?);
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

/// Checks `file` (whole, opens in a probe, API version, layout, manifest) and installs it as its
/// group's library: the bytes are copied once to a temporary file in the plugins folder, that
/// copy is what gets checked, and it is synced and renamed over the target — so the installed
/// bytes are exactly the checked ones, and a library a running host has loaded is never
/// overwritten in place.
pub fn install(config: &Config, file: &Path) -> Result<ExitCode, Failure> {
    let dir = &config.plugins_dir;
    std::fs::create_dir_all(dir)
        .map_err(|e| Failure::runtime(format!("plugins folder {}: {e}", dir.display())))?;
    let temporary = dir.join(format!(".coremcp-install.{}.tmp", std::process::id()));
    let outcome = stage(config, file, &temporary);
    if outcome.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    let (manifest, target) = outcome?;
    let mut text = format!(
        "installed {} {} (plugin API {}, {} tools) as {}\nrunning hosts use it after a reload (SIGHUP for `coremcp stdio`) or a restart\n",
        manifest.group,
        manifest.plugin_version,
        manifest.api_version,
        manifest.tools.len(),
        target.display()
    );
    // Without it the library still serves; the first listing loads it and writes the sidecar.
    if let Err(e) = sidecar::write(&target, &manifest, sidecar::Writer::Install) {
        text.push_str(&format!(
            "its manifest was not written beside it ({e}): listings load it until it is\n"
        ));
    }
    super::print(&text).map_err(|e| Failure::runtime(format!("stdout: {e}")))?;
    Ok(ExitCode::SUCCESS)
}

/// Checks each plugin file of the plugins folder as an install does and writes its sidecar
/// manifest; one line per file. Exits 1 if any file was refused or its sidecar not written.
pub fn index(config: &Config) -> Result<ExitCode, Failure> {
    let dir = &config.plugins_dir;
    let mut files: Vec<_> = discover_files(dir).into_iter().collect();
    files.sort();
    let vetting = config.vetting();
    let mut text = String::new();
    let mut failed = 0;
    for (group, path) in &files {
        let outcome = loader::inspect(path, path, &vetting)
            .map_err(|e| e.to_string())
            .and_then(|manifest| match manifest.group == *group {
                true => Ok(manifest),
                false => Err(format!(
                    "{}: declares group \"{}\" but its file name says \"{group}\"",
                    path.display(),
                    manifest.group
                )),
            })
            .and_then(|manifest| {
                sidecar::write(path, &manifest, sidecar::Writer::Install)
                    .map(|()| manifest)
                    .map_err(|e| format!("{}: manifest not written: {e}", path.display()))
            });
        match outcome {
            Ok(manifest) => text.push_str(&format!(
                "indexed {group} {} ({} tools)\n",
                manifest.plugin_version,
                manifest.tools.len()
            )),
            Err(e) => {
                failed += 1;
                text.push_str(&format!("not indexed: {e}\n"));
            }
        }
    }
    if files.is_empty() {
        text.push_str(&format!(
            "no plugin files in {} (libcoremcp_<group>.so)\n",
            dir.display()
        ));
    }
    super::print(&text).map_err(|e| Failure::runtime(format!("stdout: {e}")))?;
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Copies `file` to `temporary`, checks the copy and renames it into place.
fn stage(
    config: &Config,
    file: &Path,
    temporary: &Path,
) -> Result<(coremcp_plugin_api::Manifest, std::path::PathBuf), Failure> {
    let copied = std::fs::File::open(file).and_then(|mut from| {
        let mut out = File::create(temporary)?;
        std::io::copy(&mut from, &mut out)?;
        out.sync_all()
    });
    copied.map_err(|e| Failure::usage(format!("not installed: {}: {e}", file.display())))?;
    let manifest = loader::inspect(temporary, file, &config.vetting())
        .map_err(|e: LoadError| Failure::usage(format!("not installed: {e}")))?;
    let group = manifest.group.as_str();
    if coremcp_engine::group_of_file(&library_file(group)) != Some(group) {
        return Err(Failure::usage(format!(
            "not installed: {} declares group \"{group}\", which is not a valid group id",
            file.display()
        )));
    }
    let dir = &config.plugins_dir;
    let target = dir.join(library_file(group));
    std::fs::rename(temporary, &target)
        .and_then(|()| File::open(dir)?.sync_all())
        .map_err(|e| Failure::runtime(format!("installing {}: {e}", target.display())))?;
    Ok((manifest, target))
}
