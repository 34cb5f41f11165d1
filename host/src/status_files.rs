//! Where running `coremcp stdio --status-listen` processes say where their status is: one file
//! per process, `<data>/status/<pid>.json` (`{"pid", "url", "started_unix_ms", "cwd"}`), so
//! `coremcp status` can find every one on this machine.
//!
//! Invariants: a file is written whole (to a temporary name, then renamed), so a reader never
//! sees half of one; the process removes its own file when it ends normally, and a reader
//! treats a file whose process is gone (or is another program now) as stale and removes it.

use std::io;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

/// The folder of the address files under a data folder.
pub fn folder(data_dir: &Path) -> PathBuf {
    data_dir.join("status")
}

/// This process's address file; removed when dropped.
pub struct StatusFile {
    path: PathBuf,
}

impl StatusFile {
    /// Writes this process's file: its status is at `url`.
    pub fn write(data_dir: &Path, url: &str) -> io::Result<Self> {
        let dir = folder(data_dir);
        std::fs::create_dir_all(&dir)?;
        let pid = std::process::id();
        let path = dir.join(format!("{pid}.json"));
        let started = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let cwd = std::env::current_dir()
            .map(|d| d.to_string_lossy().into_owned())
            .unwrap_or_default();
        let text = json!({"pid": pid, "url": url, "started_unix_ms": started, "cwd": cwd});
        let partial = dir.join(format!(".{pid}.json.partial"));
        std::fs::write(&partial, format!("{text}\n"))?;
        std::fs::rename(&partial, &path)?;
        Ok(Self { path })
    }
}

impl Drop for StatusFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The address files of the processes still running, oldest first; stale ones are removed.
pub fn running(data_dir: &Path) -> Vec<Value> {
    let Ok(entries) = std::fs::read_dir(folder(data_dir)) else {
        return Vec::new();
    };
    let mut found: Vec<Value> = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let parsed = std::fs::read_to_string(&path)
            .ok()
            .and_then(|text| serde_json::from_str::<Value>(&text).ok());
        let alive = parsed
            .as_ref()
            .and_then(|file| file["pid"].as_u64())
            .is_some_and(is_coremcp);
        match (parsed, alive) {
            (Some(file), true) => found.push(file),
            _ => {
                tracing::debug!(file = %path.display(), "removing a stale status file");
                let _ = std::fs::remove_file(&path);
            }
        }
    }
    found.sort_by_key(|file| file["started_unix_ms"].as_u64());
    found
}

/// Whether `pid` is a running Core MCP (not a process that took a dead one's number).
fn is_coremcp(pid: u64) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .ok()
        .and_then(|cmdline| {
            let program = cmdline.split(|b| *b == 0).next()?.to_vec();
            let program = String::from_utf8_lossy(&program).into_owned();
            Some(
                Path::new(&program)
                    .file_name()?
                    .to_string_lossy()
                    .contains("coremcp"),
            )
        })
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_lives_as_long_as_its_guard_and_stale_ones_are_dropped() {
        let dir = std::env::temp_dir().join(format!("coremcp-status-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let file = StatusFile::write(&dir, "http://127.0.0.1:1/").expect("write");
        let path = folder(&dir).join(format!("{}.json", std::process::id()));
        assert!(path.exists());
        // A pid that cannot be running, and a file that is not JSON.
        std::fs::write(folder(&dir).join("999999999.json"), r#"{"pid": 999999999}"#).expect("w");
        std::fs::write(folder(&dir).join("7.json"), "{not json").expect("write");
        // This test runs in a binary named coremcp-…, so its own file is a live one.
        let live = running(&dir);
        assert_eq!(live.len(), 1, "{live:?}");
        assert_eq!(live[0]["pid"], std::process::id());
        assert_eq!(live[0]["url"], "http://127.0.0.1:1/");
        assert!(!folder(&dir).join("999999999.json").exists());
        assert!(!folder(&dir).join("7.json").exists());
        drop(file);
        assert!(!path.exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
