//! Atomic replacement of a file: the new content goes to a temporary file in the same folder,
//! is flushed to disk, and is renamed over the target, so readers see the old document or the
//! new one, never a part of either.
//!
//! Invariants: the temporary file is hidden (`.NAME.coremcp-….tmp`), created exclusively, and
//! removed whenever the write fails before the rename; a replaced file keeps its permissions.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Writes `bytes` to `path` atomically (the folder must exist).
pub fn write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let (dir, name) = match (path.parent(), path.file_name()) {
        (Some(dir), Some(name)) => (dir, name.to_string_lossy()),
        _ => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the path names no file",
            ))
        }
    };
    let temp = temp_path(dir, &name);
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&temp)?;
    let written = (|| {
        file.write_all(bytes)?;
        if let Ok(meta) = fs::metadata(path) {
            if meta.is_file() {
                file.set_permissions(meta.permissions())?;
            }
        }
        file.sync_all()?;
        fs::rename(&temp, path)
    })();
    drop(file);
    if let Err(e) = written {
        let _ = fs::remove_file(&temp);
        return Err(e);
    }
    // Make the rename itself durable; the new content is in place either way.
    File::open(dir).and_then(|d| d.sync_all())
}

fn temp_path(dir: &Path, name: &str) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    dir.join(format!(
        ".{name}.coremcp-{}-{}.tmp",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A scratch folder, removed on drop.
    struct Tree(PathBuf);

    impl Tree {
        fn new(label: &str) -> Self {
            let dir =
                std::env::temp_dir().join(format!("coremcp-kit-{label}-{}", std::process::id()));
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(&dir).expect("scratch folder");
            Self(dir)
        }

        fn repo(&self) -> PathBuf {
            self.0.clone()
        }

        fn names(&self, _: &str) -> Vec<String> {
            let mut names: Vec<String> = fs::read_dir(&self.0)
                .expect("list")
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            names
        }
    }

    impl Drop for Tree {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn replaces_content_keeps_permissions_and_leaves_no_temp_files() {
        let tree = Tree::new("atomic");
        let path = tree.repo().join("doc.md");
        write(&path, b"one\n").expect("create");
        assert_eq!(fs::read(&path).expect("read"), b"one\n");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).expect("chmod");
        write(&path, b"two\n").expect("replace");
        assert_eq!(fs::read(&path).expect("read"), b"two\n");
        let mode = fs::metadata(&path).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o640);
        assert_eq!(tree.names(""), ["doc.md"]);
    }

    #[test]
    fn a_failed_write_leaves_the_target_and_no_temp_file() {
        let tree = Tree::new("atomic-fail");
        // Renaming a file over a non-empty folder fails after the temp file was written.
        let target = tree.repo().join("folder.md");
        fs::create_dir_all(target.join("inside")).expect("mkdir");
        let err = write(&target, b"new\n").expect_err("cannot replace a folder");
        assert_ne!(err.kind(), io::ErrorKind::NotFound, "{err}");
        assert!(target.join("inside").is_dir());
        assert_eq!(tree.names(""), ["folder.md"]);
        // A missing folder: nothing is created.
        let err = write(&tree.repo().join("nodir/x.md"), b"x").expect_err("no folder");
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        assert_eq!(tree.names(""), ["folder.md"]);
    }
}
