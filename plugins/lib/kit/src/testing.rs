//! Test support for plugins' own tests: a temporary folder `top/` holding the folder a tool may
//! reach (`top/<inside>/`) and one beside it that it must not (`top/outside/`), removed on drop.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::Roots;

/// A temporary tree with an inside folder and an outside one.
pub struct TempTree {
    top: PathBuf,
    inside: &'static str,
}

impl TempTree {
    /// Creates `top/<inside>/` and `top/outside/`, the latter holding `outside_file` with
    /// `outside_content`.
    pub fn new(
        label: &str,
        inside: &'static str,
        outside_file: &str,
        outside_content: &str,
    ) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let top = std::env::temp_dir().join(format!(
            "coremcp-{label}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&top);
        std::fs::create_dir_all(top.join(inside)).expect("create the inside folder");
        std::fs::create_dir_all(top.join("outside")).expect("create the outside folder");
        std::fs::write(top.join("outside").join(outside_file), outside_content)
            .expect("write the outside file");
        Self { top, inside }
    }

    /// The inside folder (canonical).
    pub fn inside(&self) -> PathBuf {
        self.top
            .join(self.inside)
            .canonicalize()
            .expect("canonical inside folder")
    }

    pub fn outside(&self) -> PathBuf {
        self.top.join("outside")
    }

    /// Roots confined to the inside folder.
    pub fn roots(&self) -> Roots {
        Roots::new(vec![self.inside()]).expect("roots")
    }

    /// Writes `content` at `rel` inside, creating folders.
    pub fn write(&self, rel: &str, content: impl AsRef<[u8]>) -> &Self {
        let path = self.top.join(self.inside).join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, content).expect("write file");
        self
    }

    /// A symlink at `rel` inside pointing to `target`.
    pub fn symlink(&self, target: &Path, rel: &str) -> &Self {
        std::os::unix::fs::symlink(target, self.top.join(self.inside).join(rel)).expect("symlink");
        self
    }

    /// The text of the file at `rel` inside.
    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.inside().join(rel)).expect("read file")
    }

    /// The sorted entry names of a folder inside (hidden ones included).
    pub fn names(&self, rel: &str) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.inside().join(rel))
            .expect("read dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }
}

impl Drop for TempTree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.top);
    }
}
