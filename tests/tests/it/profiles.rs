//! The build profiles as installed by `scripts/build` (scripts/test builds both and passes the
//! `dist` folder in `COREMCP_TEST_DIST`): the full profile serves every built tool; the
//! secondary one lists the document tools, which answer that they are not in this build, while
//! every other group works; and a full install with the docs plugin deleted behaves the same.

use std::path::{Path, PathBuf};

use coremcp_tests::{is_error, run_program, text, Server, TempDir};
use serde_json::{json, Value};

/// Every tool the groups built here provide.
const BUILT: &[&str] = &[
    "registry_theme_list",
    "registry_theme_add",
    "registry_theme_update",
    "registry_project_list",
    "registry_project_add",
    "registry_project_update",
    "registry_source_list",
    "registry_source_add",
    "registry_source_update",
    "registry_host_list",
    "registry_host_add",
    "registry_host_update",
    "registry_snapshot_save",
    "registry_snapshot_get",
    "docs_read",
    "docs_write",
    "git_status",
    "git_diff",
    "git_log",
    "git_show",
    "git_branch_list",
    "git_add",
    "git_commit",
    "git_push",
    "files_search",
    "files_list",
    "code_snapshot",
    "sql_query",
    "notepad_get",
    "notepad_set",
    "notepad_delete",
    "notepad_list",
    "notepad_bulk_set",
    "notepad_cleanup",
    "session_register",
    "session_heartbeat",
    "session_close",
    "session_close_stale",
    "session_list_active",
    "session_get",
    "session_list_recorded",
    "publishing",
];

/// Every built tool: the list above, and the whole of Scrolls (all 50), Seele (all 4), Ops
/// (all 6) and Docker (all 5), in their catalog order.
fn built() -> Vec<String> {
    let scrolls = coremcp_catalog::SCROLLS.names();
    let seele = coremcp_catalog::SEELE.names();
    let ops = coremcp_catalog::OPS.names();
    let docker = coremcp_catalog::DOCKER.names();
    BUILT
        .iter()
        .copied()
        .chain(scrolls)
        .chain(seele)
        .chain(ops)
        .chain(docker)
        .map(str::to_owned)
        .collect()
}

fn dist(profile: &str) -> Option<PathBuf> {
    let root = coremcp_tests::external(
        "COREMCP_TEST_DIST",
        "it needs the profiles that scripts/build --dist lays out",
    )?;
    let dir = PathBuf::from(root).join(profile);
    assert!(
        dir.join("bin/coremcp").exists(),
        "{} is not built",
        dir.display()
    );
    Some(dir)
}

/// A copy of an installed profile that a test may change.
fn copy_install(from: &Path) -> TempDir {
    let dir = TempDir::new("profile");
    for sub in ["bin", "plugins"] {
        std::fs::create_dir_all(dir.path().join(sub)).expect("mkdir");
        for entry in std::fs::read_dir(from.join(sub)).expect("read install") {
            let entry = entry.expect("entry");
            std::fs::copy(entry.path(), dir.path().join(sub).join(entry.file_name()))
                .expect("copy");
        }
    }
    dir
}

fn server(install: &Path, root: &Path) -> Server {
    let bin = install.join("bin/coremcp");
    let root = root.to_string_lossy().into_owned();
    let mut server =
        Server::start_program(&bin, &["--root", &root], &[("COREMCP_PUBLISH_CMD", "echo")]);
    server.initialize();
    server
}

fn sorted(mut names: Vec<String>) -> Vec<String> {
    names.sort();
    names
}

#[test]
fn the_full_profile_serves_every_built_tool() {
    let Some(full) = dist("full") else {
        return;
    };
    let work = TempDir::new("work");
    let mut server = server(&full, work.path());
    let expected: Vec<String> = built();
    assert_eq!(sorted(server.tool_names()), sorted(expected));
    // The published list of the full profile is the ledger: a changed, missing or unexpected
    // tool fails here.
    let listed = server.request("tools/list", json!({}))["result"].clone();
    crate::golden::check(
        "full-tools-list.json",
        &format!("{}\n", serde_json::to_string_pretty(&listed).expect("json")),
    );
    let (code, stdout, _) = run_program(&full.join("bin/coremcp"), &["tools", "--json"], &[]);
    assert_eq!(code, 0);
    let rows: Vec<serde_json::Value> = serde_json::from_str(&stdout).expect("json");
    for name in built() {
        let row = rows.iter().find(|r| r["name"] == name).expect("listed");
        assert_eq!(row["available"], true, "{row}");
    }
    let (_, plugins, _) = run_program(&full.join("bin/coremcp"), &["plugins"], &[]);
    let docs = plugins
        .lines()
        .find(|l| l.starts_with("docs"))
        .expect("docs row");
    assert!(
        docs.contains("docs-read,docs-write"),
        "compiled features shown: {docs}"
    );
}

/// The characters of a `tools/list` answer as the client receives it (compact JSON).
fn listed_chars(server: &mut Server) -> (usize, Value) {
    let answer = server.request("tools/list", json!({}));
    let result = answer["result"].clone();
    (
        serde_json::to_string(&result)
            .expect("json")
            .chars()
            .count(),
        result,
    )
}

/// Every session pays for its tool list on every turn: the full list of the 107 tools stays
/// under 90 000 characters and a dynamic session starts under 4 000. The golden file records
/// the sizes, per group too, so a change that grows them shows in review.
#[test]
fn the_tool_lists_stay_within_their_budget() {
    let Some(full) = dist("full") else {
        return;
    };
    let work = TempDir::new("work");
    let mut all = server(&full, work.path());
    let (full_chars, listed) = listed_chars(&mut all);
    let tools = listed["tools"].as_array().expect("tools");
    assert_eq!(tools.len(), 107);
    for tool in tools {
        // What it does and what it answers, in a sentence or two: "Commit history." is not one
        // an agent can act on, and a page of text crowds the list.
        let description = tool["description"].as_str().unwrap_or_default();
        assert!(
            (30..=300).contains(&description.chars().count()),
            "{}: a description of {} characters: {description:?}",
            tool["name"],
            description.chars().count()
        );
        let properties = tool["inputSchema"]["properties"]
            .as_object()
            .expect("props");
        for (name, property) in properties {
            assert!(
                property["description"]
                    .as_str()
                    .is_some_and(|d| !d.is_empty()),
                "{}: argument {name} is not described",
                tool["name"]
            );
        }
    }
    let mut report = format!("full tools/list: {full_chars} characters (budget 90000)\n");
    let mut by_group: Vec<(&str, usize)> = coremcp_catalog::GROUPS
        .iter()
        .map(|g| {
            let chars = tools
                .iter()
                .filter(|t| {
                    coremcp_catalog::group_of(t["name"].as_str().unwrap_or("")).map(|o| o.id)
                        == Some(g.id)
                })
                .map(|t| serde_json::to_string(t).expect("json").chars().count())
                .sum();
            (g.id, chars)
        })
        .collect();
    by_group.sort_by_key(|(_, chars)| std::cmp::Reverse(*chars));
    for (id, chars) in &by_group {
        report.push_str(&format!("  {id}: {chars}\n"));
    }
    let root = work.path().to_string_lossy().into_owned();
    let mut dynamic = Server::start_program(
        &full.join("bin/coremcp"),
        &["--root", &root, "--groups", "dynamic"],
        &[],
    );
    dynamic.initialize();
    let (start_chars, _) = listed_chars(&mut dynamic);
    report.push_str(&format!(
        "dynamic start: {start_chars} characters (budget 4000)\n"
    ));
    assert!(full_chars < 90_000, "{report}");
    assert!(start_chars < 4_000, "{report}");
    crate::golden::check("tools-list-sizes.txt", &report);
}

/// The document tools are listed and answer the named-feature error; the rest works.
fn check_without_docs(install: &Path) {
    let work = TempDir::new("work");
    std::fs::write(work.path().join("a.txt"), "needle").expect("write");
    let mut server = server(install, work.path());
    let names = server.tool_names();
    assert!(names.contains(&"docs_read".to_owned()) && names.contains(&"docs_write".to_owned()));
    let listed = server.request("tools/list", json!({}))["result"]["tools"].clone();
    for tool in listed.as_array().expect("tools") {
        let name = tool["name"].as_str().expect("name");
        if let Some(feature) = name
            .strip_prefix("docs_")
            .map(|verb| format!("docs-{verb}"))
        {
            let description = tool["description"].as_str().expect("description");
            assert!(
                description.contains(&format!("needs the \"{feature}\" feature")),
                "{description}"
            );
            let result = server.call(name, json!({"path": "a.md", "body": "x"}));
            assert!(is_error(&result));
            assert_eq!(
                text(&result),
                format!("{name} is not in this build: it needs the \"{feature}\" feature")
            );
        }
    }
    let found = server.call("files_search", json!({"pattern": "needle"}));
    assert!(!is_error(&found), "{found}");
    let listed = server.call("files_list", json!({}));
    assert!(!is_error(&listed), "{listed}");
    let published = server.call("publishing", json!({"args": ["{\"ok\":true}"]}));
    assert_eq!(
        published["structuredContent"],
        json!({"ok": true}),
        "{published}"
    );
    let status = server.call("git_status", json!({}));
    assert!(
        text(&status).contains("not a git repository"),
        "git answers for itself: {status}"
    );
    // The store-backed groups work on the embedded store of this machine.
    let key = format!("profile-{}", std::process::id());
    let set = server.call(
        "notepad_set",
        json!({"scope": "global", "key": key, "value": "v"}),
    );
    assert!(!is_error(&set), "{set}");
    let got = server.call("notepad_get", json!({"scope": "global", "key": key}));
    assert_eq!(got["structuredContent"]["value"], "v", "{got}");
}

#[test]
fn the_secondary_profile_lists_the_document_tools_as_not_in_this_build() {
    let Some(secondary) = dist("secondary") else {
        return;
    };
    check_without_docs(&secondary);
    let (_, plugins, _) = run_program(&secondary.join("bin/coremcp"), &["plugins"], &[]);
    let docs = plugins
        .lines()
        .find(|l| l.starts_with("docs"))
        .expect("docs row");
    assert!(docs.contains("(none)"), "no docs feature compiled: {docs}");
}

#[test]
fn deleting_the_docs_plugin_from_a_full_install_gives_the_same_errors() {
    let Some(full) = dist("full") else {
        return;
    };
    let install = copy_install(&full);
    std::fs::remove_file(install.path().join("plugins/libcoremcp_docs.so")).expect("delete");
    check_without_docs(install.path());
}

/// The sections of an ELF file, by name (`readelf -S -W`).
fn sections(file: &Path) -> Vec<String> {
    let (code, out, err) = run_program(
        Path::new("/usr/bin/readelf"),
        &["-S", "-W", &file.to_string_lossy()],
        &[],
    );
    assert_eq!(code, 0, "readelf {}: {err}", file.display());
    out.lines()
        .filter_map(|l| l.split(']').nth(1))
        .filter_map(|rest| rest.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

/// What `scripts/build --release` does to an install (`strip_install` of scripts/lib/strip.sh),
/// done to a copy of the full profile: every library still passes the ABI layout check and the
/// vetting, the manifests written after it are those listing uses, and every group answers.
#[test]
fn a_stripped_profile_loads_and_serves_every_group() {
    let Some(full) = dist("full") else {
        return;
    };
    let install = copy_install(&full);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/lib/strip.sh");
    let command = format!(
        "source '{}' && strip_install '{}'",
        script.display(),
        install.path().display()
    );
    let (code, _, err) = run_program(Path::new("/bin/bash"), &["-c", &command], &[]);
    assert_eq!(code, 0, "strip_install: {err}");
    let bin = install.path().join("bin/coremcp");
    for file in std::iter::once(bin.clone()).chain(
        std::fs::read_dir(install.path().join("plugins"))
            .expect("plugins")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.extension().is_some_and(|e| e == "so")),
    ) {
        let kept = sections(&file);
        // `.debug_gdb_scripts` is loaded with the program (it names gdb's pretty printers).
        assert!(
            !kept
                .iter()
                .any(|s| s.starts_with(".debug_") && s != ".debug_gdb_scripts"),
            "{}: {kept:?}",
            file.display()
        );
        for needed in [".symtab", ".gnu_debuglink"] {
            assert!(
                kept.iter().any(|s| s == needed),
                "{}: {kept:?}",
                file.display()
            );
        }
        let relative = file.strip_prefix(install.path()).expect("inside");
        let debug = install
            .path()
            .join("debug")
            .join(format!("{}.debug", relative.display()));
        assert!(
            sections(&debug).iter().any(|s| s == ".debug_line"),
            "{} keeps the line tables",
            debug.display()
        );
    }
    // The manifests are written for the stripped libraries, as scripts/build does.
    let (code, _, err) = run_program(&bin, &["plugins", "index"], &[]);
    assert_eq!(code, 0, "plugins index: {err}");
    let (code, table, err) = run_program(&bin, &["plugins"], &[]);
    assert_eq!(code, 0, "{err}");
    let loaded = table.lines().filter(|l| l.contains(" loaded")).count();
    assert_eq!(loaded, 11, "every group loads:\n{table}\n{err}");
    check_stripped_groups_answer(install.path());
}

/// A call of each group on the stripped install, through one session.
fn check_stripped_groups_answer(install: &Path) {
    let work = TempDir::new("work");
    std::fs::write(work.path().join("a.txt"), "needle").expect("write");
    let mut server = server(install, work.path());
    assert_eq!(sorted(server.tool_names()), sorted(built()));
    let calls = [
        ("files_search", json!({"pattern": "needle"})),
        ("registry_host_list", json!({})),
        ("notepad_list", json!({"scope": "global"})),
        ("session_list_active", json!({})),
        ("scrolls_project_list", json!({})),
        ("docs_read", json!({"path": "missing.md"})),
    ];
    for (tool, args) in calls {
        let result = server.call(tool, args);
        let shown = text(&result);
        // Each answers for itself: a result, or its own error — never a load failure.
        assert!(
            !shown.contains("unavailable") && !shown.contains("not installed"),
            "{tool}: {result}"
        );
    }
}
