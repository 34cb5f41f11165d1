//! Test support: a temporary tree holding `root/` (the configured root) and `outside/`.

use std::ops::Deref;
use std::path::PathBuf;

use coremcp_plugin_kit::testing::TempTree;

pub struct Tree(TempTree);

impl Tree {
    pub fn new(label: &str) -> Self {
        Self(TempTree::new(
            &format!("files-{label}"),
            "root",
            "secret.txt",
            "needle outside\n",
        ))
    }

    /// The root folder (canonical).
    pub fn root(&self) -> PathBuf {
        self.0.inside()
    }
}

impl Deref for Tree {
    type Target = TempTree;

    fn deref(&self) -> &TempTree {
        &self.0
    }
}
