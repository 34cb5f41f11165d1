//! Golden files: the published wire output, compared byte for byte. Run with
//! `COREMCP_UPDATE_GOLDEN=1` to rewrite them after an intended change, then review the diff.

use std::path::PathBuf;

use coremcp_tests::{plugins, Server};
use serde_json::json;

pub(crate) fn check(name: &str, actual: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("golden")
        .join(name);
    if std::env::var_os("COREMCP_UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, actual).expect("write golden file");
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (create it with COREMCP_UPDATE_GOLDEN=1)",
            path.display()
        )
    });
    assert!(
        expected == actual,
        "{} differs from the output; if the change is intended, rerun with COREMCP_UPDATE_GOLDEN=1\n--- actual ---\n{actual}",
        path.display()
    );
}

#[test]
fn published_tools_list() {
    let dir = plugins(&["publishing", "fixture"]);
    let mut server = Server::start(dir.path(), &[], &[]);
    server.initialize();
    let result = server.request("tools/list", json!({}))["result"].clone();
    check(
        "tools-list.json",
        &format!("{}\n", serde_json::to_string_pretty(&result).expect("json")),
    );
}
