//! Test support: a temporary tree removed on drop, and roots confined to it.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use coremcp_plugin_kit::Roots;

/// A folder under the system temp dir holding `root/` (the configured root) and `outside/`.
pub struct Tree {
    top: PathBuf,
}

impl Tree {
    pub fn new(label: &str) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let top = std::env::temp_dir().join(format!(
            "coremcp-files-{label}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&top);
        std::fs::create_dir_all(top.join("root")).expect("create root");
        std::fs::create_dir_all(top.join("outside")).expect("create outside");
        std::fs::write(top.join("outside/secret.txt"), "needle outside\n").expect("write");
        Self { top }
    }

    /// The root folder (canonical).
    pub fn root(&self) -> PathBuf {
        self.top
            .join("root")
            .canonicalize()
            .expect("canonical root")
    }

    pub fn outside(&self) -> PathBuf {
        self.top.join("outside")
    }

    /// Writes `content` at `rel` under the root, creating folders.
    pub fn write(&self, rel: &str, content: impl AsRef<[u8]>) -> &Self {
        let path = self.top.join("root").join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, content).expect("write file");
        self
    }

    /// A symlink at `rel` under the root pointing to `target`.
    pub fn symlink(&self, target: &Path, rel: &str) -> &Self {
        std::os::unix::fs::symlink(target, self.top.join("root").join(rel)).expect("symlink");
        self
    }

    pub fn roots(&self) -> Roots {
        Roots::new(vec![self.root()]).expect("roots")
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.top);
    }
}
