//! Test support: a temporary documentation repository (`top/repo/`) with a folder beside it
//! (`top/outside/`), removed on drop.

use std::ops::Deref;
use std::path::PathBuf;

use coremcp_plugin_kit::testing::TempTree;

use crate::repo::Repo;

pub struct Tree(TempTree);

impl Tree {
    pub fn new(label: &str) -> Self {
        Self(TempTree::new(
            &format!("docs-{label}"),
            "repo",
            "secret.md",
            "---\nsecret: 1\n---\nsecret\n",
        ))
    }

    /// The repository folder (canonical).
    pub fn repo(&self) -> PathBuf {
        self.0.inside()
    }

    /// The repository as a tool sees it.
    pub fn open(&self) -> Repo {
        Repo::open("docs", &self.repo()).expect("open repo")
    }
}

impl Deref for Tree {
    type Target = TempTree;

    fn deref(&self) -> &TempTree {
        &self.0
    }
}
