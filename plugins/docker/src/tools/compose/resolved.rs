//! `up` runs what was checked: Compose resolves the project once (`config`: its own YAML
//! reader, merge keys, YAML 1.1 booleans, `extends`, `include`, `env_file`s and `.env`
//! interpolation — every reading Core MCP could get wrong), the resolved document is judged
//! ([`super::host_access::resolved`]), and `up` is handed exactly that text from a private
//! file, with an empty `--env-file` and the project name fixed by `-p`, so that no second
//! reading of the project's files can disagree with the one that was judged.
//!
//! Invariants:
//! - The resolved file is written in a folder only this process's user can enter (0700), with
//!   mode 0600 (it holds the `env_file` values Compose inlined), and removed when the call
//!   ends, however it ends.
//! - A resolved document that does not parse, or that Compose printed past the kept bytes, is
//!   refused: nothing is run from a document that was not judged whole.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use coremcp_plugin_sdk::prelude::*;

/// The resolved project of one `up`, on disk until dropped.
#[derive(Debug)]
pub struct Resolved {
    folder: PathBuf,
    /// The resolved Compose file.
    pub file: PathBuf,
    /// An empty environment file, so that `up` reads no `.env` again.
    pub env_file: PathBuf,
}

impl Drop for Resolved {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.folder);
    }
}

/// Parses what `config` printed (`printed`: its stdout; `dropped`: bytes past what was kept),
/// judges it with `judge` (every finding refuses `up` unless `allow_host_access`), and writes it
/// for `up`.
pub fn prepare(
    printed: &[u8],
    dropped: u64,
    judge: &dyn Fn(&Value) -> Vec<String>,
    allow_host_access: bool,
) -> Result<Resolved, ToolError> {
    if dropped > 0 {
        return Err(ToolError::new(
            codes::INVALID_ARGUMENTS,
            format!(
                "docker_compose up: the project's resolved configuration is larger than the {} \
                 bytes kept, so it could not be checked whole and was not run",
                printed.len()
            ),
        ));
    }
    let text = std::str::from_utf8(printed).map_err(|_| {
        ToolError::new(
            codes::FAILED,
            "docker_compose up: Compose printed a resolved configuration that is not UTF-8",
        )
    })?;
    let doc: Value = serde_norway::from_str(text).map_err(|e| {
        ToolError::new(
            codes::FAILED,
            format!(
                "docker_compose up: Compose printed a resolved configuration that is not YAML: {e}"
            ),
        )
    })?;
    if !doc["services"].is_object() {
        return Err(ToolError::new(
            codes::FAILED,
            "docker_compose up: Compose's resolved configuration has no services",
        ));
    }
    if !allow_host_access {
        if let Some(first) = judge(&doc).into_iter().next() {
            return Err(super::host_access_refused(&format!(
                "{first} (as Compose resolves the project)"
            )));
        }
    }
    write(text)
}

/// Writes `text` as a resolved Compose file in a private folder of its own.
fn write(text: &str) -> Result<Resolved, ToolError> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let failed = |what: &str, path: &Path, e: std::io::Error| {
        ToolError::new(
            codes::FAILED,
            format!("docker_compose up: {what} {}: {e}", path.display()),
        )
    };
    let folder = std::env::temp_dir().join(format!(
        "coremcp-compose-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    // A folder left by an earlier process of the same pid is ours to replace.
    let _ = std::fs::remove_dir_all(&folder);
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&folder)
        .map_err(|e| failed("creating", &folder, e))?;
    let resolved = Resolved {
        file: folder.join("compose.resolved.yaml"),
        env_file: folder.join("empty.env"),
        folder,
    };
    for (path, bytes) in [(&resolved.file, text.as_bytes()), (&resolved.env_file, b"")] {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .map_err(|e| failed("writing", path, e))?;
        file.write_all(bytes)
            .map_err(|e| failed("writing", path, e))?;
    }
    Ok(resolved)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn what_was_judged_is_what_is_written_and_it_goes_away() {
        let text = "services:\n  web:\n    image: x\n    command: echo $$HOME\n";
        let resolved = prepare(text.as_bytes(), 0, &|_| Vec::new(), false).expect("prepared");
        assert_eq!(std::fs::read_to_string(&resolved.file).expect("read"), text);
        assert_eq!(std::fs::read(&resolved.env_file).expect("read"), b"");
        let mode = |p: &Path| std::fs::metadata(p).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode(&resolved.file), 0o600);
        assert_eq!(mode(resolved.file.parent().expect("folder")), 0o700);
        let folder = resolved.file.parent().expect("folder").to_owned();
        drop(resolved);
        assert!(!folder.exists());
    }

    #[test]
    fn a_document_not_judged_whole_is_never_written() {
        let refuse = |_: &Value| vec!["service web runs privileged".to_owned()];
        let text = b"services:\n  web:\n    privileged: true\n";
        let e = prepare(text, 0, &refuse, false).expect_err("host access");
        assert!(e.message.contains("allow_host_access"), "{}", e.message);
        assert!(prepare(text, 0, &refuse, true).is_ok());
        let e = prepare(text, 10, &|_| Vec::new(), true).expect_err("cut");
        assert!(e.message.contains("checked whole"), "{}", e.message);
        let e = prepare(b"services: [", 0, &|_| Vec::new(), true).expect_err("yaml");
        assert!(e.message.contains("not YAML"), "{}", e.message);
        let e = prepare(b"version: '3'\n", 0, &|_| Vec::new(), true).expect_err("none");
        assert!(e.message.contains("no services"), "{}", e.message);
    }
}
