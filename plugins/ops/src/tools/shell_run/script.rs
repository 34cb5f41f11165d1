//! The file a `shell_run` script is run from: written in a folder of its own that only this
//! user may enter (0700; the file 0600), and removed with the folder when the run ends,
//! whatever way it ends.

use std::fs::{self, DirBuilder, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A script written to its private folder; dropping it removes both.
#[derive(Debug)]
pub struct File {
    dir: PathBuf,
    path: PathBuf,
}

impl File {
    /// Writes `script` as `script.<extension>` in a new private folder under the temporary
    /// folder.
    pub fn write(script: &str, extension: &str) -> io::Result<Self> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let base = std::env::temp_dir();
        let dir = loop {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos());
            let dir = base.join(format!("coremcp-script-{}-{nanos}-{n}", std::process::id()));
            // `create` (not `recursive`): a folder someone else made there is never used.
            match DirBuilder::new().mode(0o700).create(&dir) {
                Ok(()) => break dir,
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        };
        let path = dir.join(format!("script.{extension}"));
        let file = Self { dir, path };
        let mut out = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&file.path)?;
        out.write_all(script.as_bytes())?;
        Ok(file)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for File {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_script_is_private_and_gone_after_its_run() {
        let file = File::write("echo hi\n", "sh").expect("written");
        let dir = file.path().parent().expect("folder").to_owned();
        let mode = |p: &Path| fs::metadata(p).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(file.path()), 0o600);
        assert_eq!(fs::read_to_string(file.path()).expect("read"), "echo hi\n");
        let other = File::write("x", "ps1").expect("another");
        assert_ne!(other.path(), file.path());
        assert!(other.path().ends_with("script.ps1"));
        drop(file);
        assert!(!dir.exists(), "removed with its folder");
    }
}
