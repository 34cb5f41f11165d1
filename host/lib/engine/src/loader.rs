//! Loads one plugin library: the vetting of the file ([`super::vetting`]), the version gate,
//! abi_stable's layout check, the manifest and `init`, in that order.
//!
//! Invariants:
//! - No file is mapped before it passed its vetting (a truncated or damaged library is refused,
//!   never mapped); to serve, what is mapped is a vetted copy of the installed bytes (shared by
//!   content, or private), never the installed file itself, so nothing done to that file later
//!   reaches the loaded code.
//! - The ABI version is read from the library header, and an incompatible plugin refused,
//!   before any plugin function runs.
//! - Every failure is one line that names the file; abi_stable's multi-KB layout report is
//!   condensed.
//! - A library is never unloaded (abi_stable leaks it), so references into it stay valid.

use std::path::Path;

use abi_stable::library::{lib_header_from_path, LibraryError};
use coremcp_plugin_api::{ApiVersion, Manifest, PluginModRef};

use super::host_api::host_api;
use super::vetting::Vetting;

/// A loaded, initialised plugin.
pub struct Library {
    pub module: PluginModRef,
    pub manifest: Manifest,
}

impl std::fmt::Debug for Library {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Library")
            .field("group", &self.manifest.group)
            .field("plugin_version", &self.manifest.plugin_version)
            .finish_non_exhaustive()
    }
}

pub use crate::error::LoadError;

/// Loads and initialises the installed library at `path`, which must declare group `group`:
/// a copy of its vetted bytes is what is mapped.
pub fn load(path: &Path, group: &str, vetting: &Vetting) -> Result<Library, LoadError> {
    let copy = vetting.vetted_copy(path)?;
    // The mapping outlives the copy's file, which goes when `copy` does.
    let (module, manifest) = open(&copy.path, path)?;
    if manifest.group != group {
        return Err(LoadError::GroupMismatch {
            path: path.to_owned(),
            declared: manifest.group,
            expected: group.to_owned(),
        });
    }
    module.init()(host_api())
        .into_result()
        .map_err(|error| LoadError::Init {
            path: path.to_owned(),
            error,
        })?;
    Ok(Library { module, manifest })
}

/// Checks a library and reads its manifest without initialising it (for installing or
/// indexing it, which records its bytes anew); errors name `shown`.
pub fn inspect(path: &Path, shown: &Path, vetting: &Vetting) -> Result<Manifest, LoadError> {
    vetting.vet(path, shown)?;
    open(path, shown).map(|(_, manifest)| manifest)
}

/// The version gate, abi_stable's layout check and the manifest, in that order, of a file that
/// passed its vetting.
fn open(path: &Path, shown: &Path) -> Result<(PluginModRef, Manifest), LoadError> {
    let host = ApiVersion::current();
    // dlopen runs the library's static initialisers (a Rust cdylib has none of its own);
    // nothing else of the plugin runs until the checks below pass.
    let header = lib_header_from_path(path).map_err(|e| condense(shown, host, e))?;
    let declared = header.version_strings().to_string();
    match ApiVersion::parse(&declared) {
        Some(plugin) if host.accepts(plugin) => {}
        _ => {
            return Err(LoadError::Incompatible {
                path: shown.to_owned(),
                plugin: declared,
                host,
            })
        }
    }
    let module = header
        .init_root_module::<PluginModRef>()
        .map_err(|e| condense(shown, host, e))?;
    let text = module.manifest()()
        .into_result()
        .map_err(|e| LoadError::Manifest {
            path: shown.to_owned(),
            reason: e.to_string(),
        })?;
    let manifest: Manifest =
        serde_json::from_str(text.as_str()).map_err(|e| LoadError::Manifest {
            path: shown.to_owned(),
            reason: e.to_string(),
        })?;
    Ok((module, manifest))
}

/// Turns abi_stable's error into one line.
fn condense(path: &Path, host: ApiVersion, err: LibraryError) -> LoadError {
    match err {
        LibraryError::IncompatibleVersionNumber { actual_version, .. } => LoadError::Incompatible {
            path: path.to_owned(),
            plugin: actual_version.to_string(),
            host,
        },
        LibraryError::AbiInstability(report) => LoadError::Layout {
            path: path.to_owned(),
            host,
            detail: layout_summary(&report.to_string()),
        },
        // The loader's own message (it names the file: say it once).
        LibraryError::OpenError { err, path: opened } => LoadError::Open {
            path: path.to_owned(),
            reason: one_line(strip_path(&err.to_string(), &opened)),
        },
        LibraryError::GetSymbolError { symbol, .. } => LoadError::Open {
            path: path.to_owned(),
            reason: format!(
                "it exports no Core MCP plugin (no symbol {}): not a plugin library",
                String::from_utf8_lossy(&symbol).trim_end_matches('\0')
            ),
        },
        other => LoadError::Open {
            path: path.to_owned(),
            reason: one_line(&other.to_string()),
        },
    }
}

/// `message` without a leading `PATH: ` (the dynamic loader's messages start with the file).
fn strip_path<'a>(message: &'a str, path: &Path) -> &'a str {
    let text = path.to_string_lossy();
    message
        .strip_prefix(text.as_ref())
        .and_then(|rest| rest.strip_prefix(':'))
        .map_or(message, str::trim_start)
}

/// The gist of abi_stable's layout report (which runs to kilobytes): its `Error:` lines with
/// what was expected and found, e.g. `mismatched type (expected PluginMod, found FutureMod)`.
fn layout_summary(report: &str) -> String {
    let lines: Vec<&str> = report.lines().map(str::trim).collect();
    let after = |from: usize, label: &str| -> Option<String> {
        let at = lines[from..].iter().position(|l| *l == label)? + from;
        let value = lines.get(at + 1)?;
        Some(value.chars().take(80).collect())
    };
    let mut found: Vec<String> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if let Some(message) = line.strip_prefix("Error:") {
            let mut item = message.trim().to_owned();
            if let (Some(e), Some(f)) = (after(i, "Expected:"), after(i, "Found:")) {
                item.push_str(&format!(" (expected {e}, found {f})"));
            }
            if !found.contains(&item) {
                found.push(item);
            }
        }
    }
    match found.len() {
        0 => one_line(report),
        1 | 2 => found.join("; "),
        n => format!("{}; and {} more", found[..2].join("; "), n - 2),
    }
}

/// The first meaningful line of a long report, capped at 300 characters.
fn one_line(report: &str) -> String {
    let line = report
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("unknown error");
    let mut out: String = line.chars().take(300).collect();
    if line.chars().count() > 300 || report.lines().filter(|l| !l.trim().is_empty()).count() > 1 {
        out.push_str(" …");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_reports_are_summarised() {
        let report = "Compared <this>:\n    PluginMod\nTo <other>:\n    FutureMod\n1 error(s).\n\n\
                      Error:mismatched type\nExpected:\n    PluginMod\nFound:\n    FutureMod\n\
                      Error:incompatible type size\nExpected:\n    24\nFound:\n    8\n\
                      Error:mismatched type\nExpected:\n    PluginMod\nFound:\n    FutureMod\n";
        assert_eq!(
            layout_summary(report),
            "mismatched type (expected PluginMod, found FutureMod); incompatible type size (expected 24, found 8)"
        );
        assert_eq!(
            layout_summary("Compared <this>:\nwhatever"),
            "Compared <this>: …"
        );
    }

    #[test]
    fn one_line_condenses() {
        assert_eq!(one_line("\n\n  first\nsecond\n"), "first …");
        assert_eq!(one_line("only"), "only");
        assert_eq!(one_line(&"x".repeat(400)).chars().count(), 302);
    }

    #[test]
    fn a_file_that_is_not_a_library_is_one_line() {
        let dir = std::env::temp_dir().join(format!("coremcp-loader-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("libcoremcp_junk.so");
        std::fs::write(&path, b"not an ELF file").expect("write");
        // Nobody installed it: refused before anything else.
        let err = load(&path, "junk", &Vetting::structure_only()).expect_err("refused");
        assert!(matches!(err, LoadError::NotRecorded { .. }), "{err}");
        let err = inspect(&path, &path, &Vetting::structure_only()).expect_err("refused");
        assert!(matches!(err, LoadError::Malformed { .. }), "{err}");
        assert_eq!(
            err.to_string(),
            format!(
                "{}: not a whole plugin library, so it was not loaded: not an ELF file (no ELF \
                 magic number)",
                path.display()
            )
        );
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }
}
