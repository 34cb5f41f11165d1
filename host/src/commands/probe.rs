//! `coremcp probe-plugin FILE` (hidden): opens one plugin library in this short-lived process —
//! the structural check, the dynamic loader, the version gate, the layout check and the
//! manifest, but never `init` — and prints one line saying what it found. Core MCP runs it
//! before it maps a file it has not seen pass ([`coremcp_engine::vetting`]): a damaged
//! library that crashes the loader kills only this process.
//!
//! Exit 0 means the library could be opened without harm (whether or not it is a usable
//! plugin: the caller finds that out itself); anything else, a signal above all, means it
//! must not be mapped.

use std::path::Path;
use std::process::ExitCode;

use coremcp_engine::loader;
use coremcp_engine::vetting::Vetting;

pub fn run(file: &Path) -> ExitCode {
    let line = match loader::inspect(file, file, &Vetting::structure_only()) {
        Ok(manifest) => format!(
            "ok: group {} {} (plugin API {}, {} tools)\n",
            manifest.group,
            manifest.plugin_version,
            manifest.api_version,
            manifest.tools.len()
        ),
        Err(e) => format!("opened, but refused: {e}\n"),
    };
    match super::print(&line) {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::from(3),
    }
}
