//! Test support: a temporary documentation repository (`top/repo/`) with a folder beside it
//! (`top/outside/`), removed on drop.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::repo::Repo;

pub struct Tree {
    top: PathBuf,
}

impl Tree {
    pub fn new(label: &str) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let top = std::env::temp_dir().join(format!(
            "coremcp-docs-{label}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&top);
        std::fs::create_dir_all(top.join("repo")).expect("create repo");
        std::fs::create_dir_all(top.join("outside")).expect("create outside");
        std::fs::write(
            top.join("outside/secret.md"),
            "---\nsecret: 1\n---\nsecret\n",
        )
        .expect("write outside");
        Self { top }
    }

    /// The repository folder (canonical).
    pub fn repo(&self) -> PathBuf {
        self.top
            .join("repo")
            .canonicalize()
            .expect("canonical repo")
    }

    pub fn outside(&self) -> PathBuf {
        self.top.join("outside")
    }

    /// The repository as a tool sees it.
    pub fn open(&self) -> Repo {
        Repo::open("docs", &self.repo()).expect("open repo")
    }

    /// Writes `content` at `rel` in the repository, creating folders.
    pub fn write(&self, rel: &str, content: &str) -> &Self {
        let path = self.repo().join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, content).expect("write file");
        self
    }

    /// A symlink at `rel` in the repository pointing to `target`.
    pub fn symlink(&self, target: &Path, rel: &str) -> &Self {
        std::os::unix::fs::symlink(target, self.repo().join(rel)).expect("symlink");
        self
    }

    #[cfg_attr(not(feature = "docs-write"), allow(dead_code))]
    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.repo().join(rel)).expect("read file")
    }

    /// The sorted entry names of a repository folder (hidden ones included).
    #[cfg_attr(not(feature = "docs-write"), allow(dead_code))]
    pub fn names(&self, rel: &str) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.repo().join(rel))
            .expect("read dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.top);
    }
}
