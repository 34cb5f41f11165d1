//! Damaged plugin libraries — a copy cut short, a file whose relocations are garbage — are
//! refused in one line by every command, and never take the host down with them.

use std::path::Path;
use std::time::Duration;

use coremcp_tests::http::Serve;
use coremcp_tests::{is_error, library, plugin_status, plugins, run, text, Server, TempDir, WAIT};
use serde_json::json;

/// Replaces `path` with its first `keep` bytes (an interrupted copy).
fn truncate(path: &Path, keep: usize) {
    let bytes = std::fs::read(path).expect("read library");
    std::fs::write(path, &bytes[..keep]).expect("write truncated");
}

/// The file offset and size of the named section of an ELF64 little-endian file.
fn section(bytes: &[u8], wanted: &str) -> (usize, usize) {
    let u16_at = |at: usize| u16::from_le_bytes([bytes[at], bytes[at + 1]]) as usize;
    let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4")) as usize;
    let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8")) as usize;
    let (shoff, entsize, count, names) = (u64_at(40), u16_at(58), u16_at(60), u16_at(62));
    let header = |i: usize| shoff + i * entsize;
    let names_at = u64_at(header(names) + 24);
    (0..count)
        .find_map(|i| {
            let name_at = names_at + u32_at(header(i));
            let end = bytes[name_at..].iter().position(|b| *b == 0)?;
            (&bytes[name_at..name_at + end] == wanted.as_bytes())
                .then(|| (u64_at(header(i) + 24), u64_at(header(i) + 32)))
        })
        .unwrap_or_else(|| panic!("no section {wanted}"))
}

/// Writes a copy of `from` whose dynamic relocations point far outside the library: a whole,
/// well-formed file (every part inside it) that crashes the dynamic loader while it relocates.
fn with_wild_relocations(from: &Path, to: &Path) {
    let mut bytes = std::fs::read(from).expect("read library");
    let (offset, size) = section(&bytes, ".rela.dyn");
    for (n, entry) in bytes[offset..offset + size]
        .chunks_exact_mut(24)
        .enumerate()
    {
        entry[..8].copy_from_slice(&(0x7fff_0000_0000u64 + n as u64 * 24).to_le_bytes());
    }
    std::fs::write(to, bytes).expect("write damaged copy");
}

fn dir_arg(dir: &TempDir) -> String {
    dir.path().to_string_lossy().into_owned()
}

#[test]
fn a_truncated_library_is_refused_by_every_command_and_the_host_keeps_serving() {
    let dir = plugins(&["files", "fixture"]);
    let file = dir.path().join("libcoremcp_files.so");
    truncate(&file, 20_000);
    let refusal = format!(
        "{}: not a whole plugin library, so it was not loaded: ",
        file.display()
    );

    // coremcp call: a tool error (exit 1) naming the file, not a dead process.
    let (code, out, err) = run(
        &["call", "files_list", "{}", "--plugins", &dir_arg(&dir)],
        &[],
    );
    assert_eq!(code, 1, "stdout: {out}\nstderr: {err}");
    assert!(
        out.contains(&refusal) || err.contains(&refusal),
        "{out}\n{err}"
    );
    assert!(
        err.contains("past the end of the file (20000 bytes)"),
        "{err}"
    );

    // coremcp plugins: the file's row says why; the other group loads.
    let row = plugin_status(dir.path(), "files");
    assert!(row.contains(&format!("failed: {refusal}")), "{row}");
    assert!(
        row.contains("(a copy cut short? install it again)"),
        "{row}"
    );
    assert!(plugin_status(dir.path(), "fixture").ends_with("loaded"));

    // coremcp stdio: listed groups serve, the damaged one answers with the reason.
    let mut server = Server::start(dir.path(), &[], &[]);
    server.initialize();
    assert!(server.tool_names().contains(&"fixture_echo".to_owned()));
    let result = server.call("files_list", json!({}));
    assert!(is_error(&result), "{result}");
    assert!(text(&result).contains(&refusal), "{result}");
    assert!(server
        .call("fixture_echo", json!({}))
        .get("isError")
        .is_none());

    // coremcp serve: every session survives.
    let serve = Serve::start(dir.path(), &[]);
    let mut client = serve.client();
    client.initialize();
    let result = client.call("files_list", json!({}));
    assert!(text(&result).contains(&refusal), "{result}");
    let mut other = serve.client();
    other.initialize();
    assert!(other
        .call("fixture_echo", json!({}))
        .get("isError")
        .is_none());
    assert!(client
        .call("fixture_echo", json!({}))
        .get("isError")
        .is_none());

    // coremcp plugins install: refused before anything is put in place.
    let target = TempDir::new("install-target");
    let (code, _, err) = run(
        &[
            "plugins",
            "install",
            &file.to_string_lossy(),
            "--plugins",
            &dir_arg(&target),
        ],
        &[],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not installed: "), "{err}");
    assert!(err.contains("not a whole plugin library"), "{err}");
    let left: Vec<_> = std::fs::read_dir(target.path()).expect("dir").collect();
    assert!(left.is_empty(), "nothing written: {left:?}");
}

#[test]
fn a_truncated_file_renamed_over_a_loaded_library_is_refused_on_reload() {
    let dir = plugins(&["fixture"]);
    let mut server = Server::start(dir.path(), &[], &[]);
    server.initialize();
    assert!(server
        .call("fixture_echo", json!({"n": 1}))
        .get("isError")
        .is_none());

    let staged = dir.path().join(".staged");
    std::fs::copy(library("fixture"), &staged).expect("stage");
    truncate(&staged, 100_000);
    std::fs::rename(&staged, dir.path().join("libcoremcp_fixture.so")).expect("rename");
    server.signal(libc::SIGHUP);
    server.wait_stderr(
        "reload refused the new plugin file, the previous copy keeps serving",
        WAIT,
    );
    let said = server.wait_stderr("not a whole plugin library", WAIT);
    assert!(
        said.contains("past the end of the file (100000 bytes)"),
        "{said}"
    );
    assert_eq!(
        server.call("fixture_echo", json!({"n": 2}))["structuredContent"]["n"],
        2,
        "the previous copy serves on"
    );
}

#[test]
fn a_library_that_crashes_the_loader_kills_only_the_probe() {
    let dir = plugins(&["fixture"]);
    let file = dir.path().join("libcoremcp_git.so");
    with_wild_relocations(&library("git"), &file);
    let data = TempDir::new("probe-data");
    let data_env = [("COREMCP_DATA", data.path().to_str().expect("utf-8"))];

    // Copied in by hand, it has no install record: never mapped, by any command.
    let mut server = Server::start(dir.path(), &[], &data_env);
    server.initialize();
    let result = server.call("git_status", json!({}));
    assert!(is_error(&result), "{result}");
    assert!(
        text(&result).contains(&format!("{}: not installed", file.display())),
        "{result}"
    );
    assert!(server
        .call("fixture_echo", json!({}))
        .get("isError")
        .is_none());
    let (code, out, err) = run(
        &["call", "git_status", "{}", "--plugins", &dir_arg(&dir)],
        &data_env,
    );
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(err.contains("not installed"), "{err}");

    // Installing or indexing it opens it in a probe process, which it kills.
    let (code, out, _) = run(
        &["plugins", "index", "--plugins", &dir_arg(&dir)],
        &data_env,
    );
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("killed by SIGSEGV"), "{out}");
    // A file that crashed is never remembered as passed, nor recorded as installed.
    let record =
        std::fs::read_to_string(data.path().join("plugin-checks.json")).unwrap_or_default();
    assert!(!record.contains("libcoremcp_git.so"), "{record}");
    let result = server.call("git_status", json!({}));
    assert!(text(&result).contains("not installed"), "{result}");
    let (code, _, err) = run(
        &[
            "plugins",
            "install",
            &file.to_string_lossy(),
            "--plugins",
            &dir_arg(&data),
        ],
        &data_env,
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("not installed: ") && err.contains("killed by SIGSEGV"),
        "{err}"
    );
}

#[test]
fn a_file_that_passed_is_not_probed_again_even_when_copied_anew() {
    let dir = plugins(&["fixture"]);
    let data = TempDir::new("probe-record");
    let env = [
        ("COREMCP_DATA", data.path().to_str().expect("utf-8")),
        ("COREMCP_LOG", "debug"),
    ];
    let index = || {
        let (code, _, err) = run(&["plugins", "index", "--plugins", &dir_arg(&dir)], &env);
        assert_eq!(code, 0, "{err}");
        err.contains("plugin probe: ok: group fixture")
    };
    assert!(index(), "a new file is probed");
    assert!(
        !index(),
        "the same file is not: size, mtime and identity match"
    );
    // The same bytes copied again (a rebuild, a re-install): new mtime and inode, same hash.
    let file = dir.path().join("libcoremcp_fixture.so");
    let staged = dir.path().join(".staged");
    std::thread::sleep(Duration::from_millis(20));
    std::fs::copy(library("fixture"), &staged).expect("stage");
    std::fs::rename(&staged, &file).expect("rename");
    assert!(!index(), "same bytes: no probe");
    // Other bytes are probed.
    std::fs::copy(library("fixture_swap_v2"), &staged).expect("stage");
    std::fs::rename(&staged, dir.path().join("libcoremcp_swap.so")).expect("rename");
    let (code, _, err) = run(&["plugins", "index", "--plugins", &dir_arg(&dir)], &env);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("plugin probe: ok: group swap"), "{err}");
    // And loading either is a hash at most, never a probe.
    let (code, _, err) = run(
        &["call", "swap_hello", "{}", "--plugins", &dir_arg(&dir)],
        &env,
    );
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("plugin probe"), "{err}");
}

#[test]
fn a_library_changed_in_place_after_it_was_installed_is_refused_and_the_others_keep_serving() {
    use std::os::unix::fs::FileExt;
    let dir = plugins(&["fixture", "notepad"]);
    let data = TempDir::new("changed-data");
    let data_arg = dir_arg(&data);
    // The install record: scripts/build and plugins install write it; index does the same here.
    let (code, out, err) = run(
        &[
            "plugins",
            "index",
            "--plugins",
            &dir_arg(&dir),
            "--data",
            &data_arg,
        ],
        &[],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    let file = dir.path().join("libcoremcp_fixture.so");
    let original = std::fs::read(&file).expect("read");
    let modified = std::fs::metadata(&file)
        .and_then(|m| m.modified())
        .expect("mtime");
    // Two bytes of code changed in place: same size, and the mtime set back.
    let (code_at, code_size) = section(&original, ".text");
    let at = code_at + code_size / 2;
    let handle = std::fs::OpenOptions::new()
        .write(true)
        .open(&file)
        .expect("open for writing");
    handle
        .write_all_at(&[original[at] ^ 0xff, original[at + 1] ^ 0xff], at as u64)
        .expect("damage");
    handle.set_modified(modified).expect("set mtime back");
    drop(handle);
    assert_eq!(
        std::fs::metadata(&file).expect("meta").len(),
        original.len() as u64
    );

    let mut server = Server::start(dir.path(), &["--data", &data_arg], &[]);
    server.initialize();
    let refused = server.call("fixture_echo", json!({"message": "hi"}));
    assert!(is_error(&refused), "{refused}");
    assert!(
        text(&refused).contains("changed since it was installed")
            && text(&refused).contains("coremcp plugins install")
            && text(&refused).contains("coremcp plugins index"),
        "{refused}"
    );
    // Nothing of it was mapped, and the other group serves.
    assert!(
        !server
            .mapped_plugins()
            .contains(&"libcoremcp_fixture.so".to_owned()),
        "{:?}",
        server.mapped_plugins()
    );
    server.ok(
        "notepad_set",
        json!({"scope": "global", "key": "still", "value": "serving"}),
    );
    drop(server);

    // The installed bytes back: it serves again.
    std::fs::write(&file, &original).expect("restore");
    let mut server = Server::start(dir.path(), &["--data", &data_arg], &[]);
    server.initialize();
    let echoed = server.call("fixture_echo", json!({"message": "hi"}));
    assert!(!is_error(&echoed), "{echoed}");
}

#[test]
fn an_installed_library_is_probed_when_indexed_and_only_hashed_at_its_first_load() {
    let dir = plugins(&["fixture"]);
    let index_data = TempDir::new("index-data");
    let (code, _, err) = run(
        &["plugins", "index", "--plugins", &dir_arg(&dir)],
        &[
            ("COREMCP_DATA", index_data.path().to_str().expect("utf-8")),
            ("COREMCP_LOG", "debug"),
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("plugin probe: ok: group fixture"),
        "the vetting runs at index time: {err}"
    );
    // A user who never loaded it (a data folder of its own): its first call checks the bytes
    // against the install record and opens no probe.
    let fresh = TempDir::new("fresh-data");
    let env = [
        ("COREMCP_DATA", fresh.path().to_str().expect("utf-8")),
        ("COREMCP_LOG", "debug"),
    ];
    let (code, _, err) = run(
        &["call", "fixture_echo", "{}", "--plugins", &dir_arg(&dir)],
        &env,
    );
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("plugin loaded group=fixture"), "{err}");
    assert!(!err.contains("plugin probe"), "no probe at load: {err}");
    // Remembered: the next process does not hash it either (it is the known file).
    let record = std::fs::read_to_string(fresh.path().join("plugin-checks.json"))
        .expect("the record of files that passed");
    assert!(record.contains("libcoremcp_fixture.so"), "{record}");
}

/// The fourth trust rung's plugin edges: a damaged library whose sidecar was removed (so no
/// install record vouches for it) is never loaded — it would pass the probe and crash the host
/// at its first call — and a library overwritten in place after it was loaded (what `cp` over
/// it does) never runs: what runs is the private copy of the vetted bytes, and a SIGHUP
/// reloads through the same gate, refusing the changed file.
#[test]
fn a_library_with_no_install_record_or_changed_under_the_host_never_runs() {
    use std::os::unix::fs::FileExt;
    let dir = plugins(&["fixture", "notepad"]);
    let file = dir.path().join("libcoremcp_fixture.so");
    let original = std::fs::read(&file).expect("read");
    // Damaged in its code (it opens fine: a probe would pass it), and its sidecar removed.
    let (code_at, code_size) = section(&original, ".text");
    let damaged: Vec<u8> = original
        .iter()
        .enumerate()
        .map(|(i, b)| {
            if (code_at..code_at + code_size).contains(&i) {
                0xcc
            } else {
                *b
            }
        })
        .collect();
    std::fs::write(&file, &damaged).expect("damage");
    std::fs::remove_file(dir.path().join("libcoremcp_fixture.so.manifest.json")).expect("rm");
    let serve = Serve::start(dir.path(), &[]);
    let mut client = serve.client();
    client.initialize();
    // Never loaded, its group's tools are not known, and the start said why.
    let refused = client.request(
        "tools/call",
        json!({"name": "fixture_echo", "arguments": {"n": 1}}),
    );
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    serve.wait_stderr("libcoremcp_fixture.so: not installed", WAIT);
    let mut other = serve.client();
    other.initialize();
    let noted = other.call(
        "notepad_set",
        json!({"scope": "global", "key": "k", "value": "still serving"}),
    );
    assert!(!is_error(&noted), "{noted}");
    drop(serve);

    // Installed as built, loaded, then overwritten in place by a copy of other bytes.
    std::fs::write(&file, &original).expect("restore");
    let (code, out, err) = coremcp_tests::index_plugins(dir.path());
    assert_eq!(code, 0, "{out}{err}");
    let mut server = Server::start(dir.path(), &[], &[]);
    server.initialize();
    assert!(!is_error(&server.call("fixture_echo", json!({"n": 2}))));
    let handle = std::fs::OpenOptions::new()
        .write(true)
        .open(&file)
        .expect("open in place");
    handle
        .write_all_at(&damaged, 0)
        .expect("overwrite in place");
    drop(handle);
    // The loaded code is not the file's: calls go on, answered by the vetted bytes.
    for n in 3..6 {
        let echoed = server.call("fixture_echo", json!({"n": n}));
        assert_eq!(echoed["structuredContent"]["n"], n, "{echoed}");
    }
    // A reload looks at the file through the same gate: refused, the loaded copy serves on.
    server.signal(libc::SIGHUP);
    server.wait_stderr(
        "reload refused the new plugin file, the previous copy keeps serving",
        WAIT,
    );
    server.wait_stderr("changed since it was installed", WAIT);
    let echoed = server.call("fixture_echo", json!({"n": 7}));
    assert_eq!(echoed["structuredContent"]["n"], 7, "{echoed}");
}
