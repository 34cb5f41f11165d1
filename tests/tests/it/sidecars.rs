//! Listing without loading: each library's manifest is kept beside it
//! (`libcoremcp_<group>.so.manifest.json`), a listing reads those and maps no plugin, and a
//! sidecar that does not describe its library — stale, damaged, or lying — is never what a call
//! runs on.

use std::path::Path;

use coremcp_tests::{
    index_plugins, is_error, library, plugins, run_program, Server, TempDir, WAIT,
};
use serde_json::{json, Value};

fn sidecar(dir: &Path, group: &str) -> std::path::PathBuf {
    dir.join(format!("libcoremcp_{group}.so.manifest.json"))
}

fn listing(server: &mut Server) -> Value {
    server.request("tools/list", json!({}))["result"]["tools"].clone()
}

#[test]
fn a_listing_reads_the_manifests_beside_the_libraries_and_loads_no_plugin() {
    // Installed (the harness indexes them): each library has its sidecar.
    let dir = plugins(&["publishing", "fixture"]);
    for group in ["publishing", "fixture"] {
        assert!(sidecar(dir.path(), group).is_file(), "{group}'s sidecar");
    }
    let mut server = Server::start(dir.path(), &[], &[]);
    server.initialize();
    let from_sidecars = listing(&mut server);
    assert_eq!(
        server.mapped_plugins(),
        Vec::<String>::new(),
        "listed from the sidecars"
    );
    let echoed = server.call("fixture_echo", json!({"a": 1}));
    assert!(!is_error(&echoed), "{echoed}");
    assert_eq!(
        server.mapped_plugins(),
        ["libcoremcp_fixture.so"],
        "the first call loads its group, and only it"
    );
    let published = server.call("publishing", json!({"args": ["1"]}));
    assert!(published.get("content").is_some(), "{published}");
    assert_eq!(
        listing(&mut server),
        from_sidecars,
        "the libraries list the same, byte for byte"
    );
    let leftovers: Vec<String> = std::fs::read_dir(dir.path())
        .expect("list")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".tmp"))
        .collect();
    assert_eq!(leftovers, Vec::<String>::new());
}

#[test]
fn a_sidecar_that_lies_is_corrected_by_the_library_at_the_first_call() {
    let dir = plugins(&["fixture"]);
    let (code, out, err) = index_plugins(dir.path());
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("indexed fixture"), "{out}");
    // A tool the library does not have, with the library's size and mtime left as they are.
    let path = sidecar(dir.path(), "fixture");
    let text = std::fs::read_to_string(&path).expect("read");
    let (head, rest) = text
        .split_once('\n')
        .expect("lines: the head, the entries, the manifest");
    let (entries, manifest) = rest
        .trim_end_matches('\n')
        .rsplit_once('\n')
        .expect("the manifest is the last line");
    let mut record: Value = serde_json::from_str(head).expect("json");
    let ghost = json!({"name": "fixture_ghost", "description": "Not in the library.",
                       "inputSchema": {"type": "object"}})
    .to_string();
    record["tools"]
        .as_array_mut()
        .expect("tools")
        .push(json!("fixture_ghost"));
    record["entry_lens"]
        .as_array_mut()
        .expect("entry lengths")
        .push(json!(ghost.len()));
    record["features"]
        .as_array_mut()
        .expect("features")
        .push(Value::Null);
    std::fs::write(&path, format!("{record}\n{entries}\n{ghost}\n{manifest}\n")).expect("write");

    let mut server = Server::start(dir.path(), &[], &[]);
    server.initialize();
    assert!(server.tool_names().contains(&"fixture_ghost".to_owned()));
    assert_eq!(server.mapped_plugins(), Vec::<String>::new());
    // Calling it loads the library, which does not have it: refused, and the client hears
    // that the list changed.
    let answer = server.request(
        "tools/call",
        json!({"name": "fixture_ghost", "arguments": {}}),
    );
    let refused = answer["error"]["code"] == -32602 || is_error(&answer["result"]);
    assert!(refused, "{answer}");
    server.notification("notifications/tools/list_changed", WAIT);
    let names = server.tool_names();
    assert!(!names.contains(&"fixture_ghost".to_owned()), "{names:?}");
    assert!(names.contains(&"fixture_echo".to_owned()), "{names:?}");
    drop(server);

    // The host wrote the library's own manifest back.
    let mut again = Server::start(dir.path(), &[], &[]);
    again.initialize();
    assert!(!again.tool_names().contains(&"fixture_ghost".to_owned()));
}

#[test]
fn a_stale_sidecar_is_not_trusted_and_a_damaged_library_is_refused() {
    let dir = plugins(&["publishing", "fixture"]);
    let (code, out, err) = index_plugins(dir.path());
    assert_eq!(code, 0, "{out}{err}");
    // The fixture library cut short after it was indexed: its sidecar no longer describes it.
    let lib = dir.path().join("libcoremcp_fixture.so");
    let bytes = std::fs::read(&lib).expect("read");
    let cut = dir.path().join(".cut");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).expect("write");
    std::fs::rename(&cut, &lib).expect("rename");

    let mut server = Server::start(dir.path(), &[], &[]);
    server.initialize();
    let names = server.tool_names();
    assert!(names.contains(&"publishing".to_owned()), "{names:?}");
    assert!(
        !names.iter().any(|n| n.starts_with("fixture_")),
        "the damaged group is not listed from its stale sidecar: {names:?}"
    );
    assert_eq!(
        server.mapped_plugins(),
        Vec::<String>::new(),
        "the damaged file was refused before it was mapped; publishing came from its sidecar"
    );
    server.wait_stderr("not a whole plugin library", WAIT);
}

#[test]
fn index_reports_each_file_and_install_writes_the_sidecar() {
    let dir = plugins(&["fixture"]);
    std::fs::write(dir.path().join("libcoremcp_junk.so"), b"not a library").expect("junk");
    let (code, out, _) = index_plugins(dir.path());
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("indexed fixture 0.1.0 (7 tools)"), "{out}");
    assert!(
        out.contains("not indexed:")
            && out.contains("libcoremcp_junk.so: not a whole plugin library"),
        "{out}"
    );
    assert!(sidecar(dir.path(), "fixture").is_file());
    assert!(!sidecar(dir.path(), "junk").exists());

    // `plugins install` puts the sidecar beside the library it installs.
    let install = TempDir::new("install");
    std::fs::create_dir_all(install.path().join("bin")).expect("bin");
    let bin = install.path().join("bin/coremcp");
    std::fs::copy(coremcp_tests::coremcp(), &bin).expect("copy");
    let (code, out, err) = run_program(
        &bin,
        &[
            "plugins",
            "install",
            &library("fixture_swap_v1").to_string_lossy(),
        ],
        &[],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        sidecar(&install.path().join("plugins"), "swap").is_file(),
        "{out}"
    );
    let mut server = Server::start_program(&bin, &[], &[]);
    server.initialize();
    assert!(server.tool_names().contains(&"swap_hello".to_owned()));
    assert_eq!(server.mapped_plugins(), Vec::<String>::new());
}
