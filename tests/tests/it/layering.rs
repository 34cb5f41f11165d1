//! The host's layering holds: its crates depend one way (ARCHITECTURE.md, "Invariants"), and
//! inside each host crate no file imports, directly or through others, a file that imports it.
//!
//! The scan reads the sources as text, which is enough for how this repository writes imports:
//! `crate::a::b` paths (alone or in `crate::{…}` groups), `super::` paths and groups, and a
//! parent's bare `child::` paths to a module it declares. Unit-test modules are left out: a
//! test may look anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn repository() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the repository")
        .to_owned()
}

/// The library crates under `host/lib/`, by folder, and the host crates each may use.
const ALLOWED: [(&str, &[&str]); 5] = [
    ("wire", &[]),
    ("net", &["wire"]),
    ("upstream", &["wire", "net"]),
    ("relay", &["wire", "net"]),
    ("engine", &["wire", "net"]),
];

/// The host crates a manifest depends on (`coremcp-<lib>`), and whether it names the binary's
/// package (`coremcp`).
fn host_dependencies(manifest: &str) -> (BTreeSet<String>, bool) {
    let mut libs = BTreeSet::new();
    let mut binary = false;
    for line in manifest.lines().map(str::trim) {
        let name = line.split(['=', '.', ' ']).next().unwrap_or("");
        if name == "coremcp" {
            binary = true;
        }
        if let Some(lib) = name.strip_prefix("coremcp-") {
            if ALLOWED.iter().any(|(l, _)| *l == lib) {
                libs.insert(lib.to_owned());
            }
        }
    }
    (libs, binary)
}

#[test]
fn the_host_crates_depend_one_way_and_nothing_on_the_binary() {
    let root = repository();
    for (lib, allowed) in ALLOWED {
        let manifest = std::fs::read_to_string(root.join("host/lib").join(lib).join("Cargo.toml"))
            .expect("manifest");
        let (uses, binary) = host_dependencies(&manifest);
        let wrong: Vec<&String> = uses
            .iter()
            .filter(|u| !allowed.contains(&u.as_str()))
            .collect();
        assert!(wrong.is_empty(), "coremcp-{lib} depends on {wrong:?}");
        assert!(!binary, "coremcp-{lib} depends on the binary's crate");
    }
    // No manifest of the workspace but the binary's own names the binary's package.
    let workspace = std::fs::read_to_string(root.join("Cargo.toml")).expect("workspace");
    for member in workspace
        .split("members = [")
        .nth(1)
        .and_then(|rest| rest.split(']').next())
        .expect("members")
        .split('"')
        .skip(1)
        .step_by(2)
        .filter(|m| *m != "host")
    {
        let manifest =
            std::fs::read_to_string(root.join(member).join("Cargo.toml")).expect("manifest");
        assert!(
            !host_dependencies(&manifest).1,
            "{member} depends on the binary's crate"
        );
    }
}

/// The module path of a file under a crate's `src/` (`session/call.rs` → `session::call`).
fn module_of(relative: &Path) -> Vec<String> {
    let mut parts: Vec<String> = relative
        .with_extension("")
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// Every `.rs` file under `dir`, relative to it.
fn sources(dir: &Path, under: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(under).expect("read dir").flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(dir, &path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path.strip_prefix(dir).expect("under").to_owned());
        }
    }
}

/// A source without its inline unit-test module and its line comments.
fn code_of(text: &str) -> String {
    let text = text
        .split("#[cfg(test)]\nmod tests {")
        .next()
        .unwrap_or_default();
    let text = text
        .split("#[cfg(test)]\npub(crate) mod tests {")
        .next()
        .unwrap_or_default();
    text.lines()
        .map(|l| l.find("//").map_or(l, |at| &l[..at]))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The identifier paths of a `{…}` group (`a::b, c::{d, e}, self` → `a::b`, `c`, `self`):
/// enough to name the files a group reaches.
fn group_paths(group: &str) -> Vec<String> {
    group
        .split([',', '{', '}'])
        .map(|item| item.split(" as ").next().unwrap_or("").trim())
        .filter(|item| !item.is_empty() && *item != "*")
        .map(|item| item.trim_end_matches("::").to_owned())
        .collect()
}

/// The `a::b::c` identifier path that starts `text`.
fn path_at(text: &str) -> String {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
        .next()
        .unwrap_or("")
        .trim_end_matches(':')
        .to_owned()
}

/// Which files each file of the crate in `dir` imports.
fn imports(dir: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    sources(dir, dir, &mut files);
    let modules: BTreeMap<Vec<String>, String> = files
        .iter()
        .map(|f| (module_of(f), f.to_string_lossy().into_owned()))
        .collect();
    // The file a module path lands in: its longest prefix that is a file of the crate.
    let resolve = |path: &[String]| {
        (1..=path.len())
            .rev()
            .find_map(|n| modules.get(&path[..n]).cloned())
    };
    // Modules of their own file that only tests compile (`#[cfg(test)] mod fuzz;`).
    let mut test_only = BTreeSet::new();
    for file in &files {
        let text = std::fs::read_to_string(dir.join(file)).expect("source");
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        for pair in lines.windows(2) {
            let child = pair[1]
                .trim_start_matches("pub(crate) ")
                .strip_prefix("mod ")
                .and_then(|rest| rest.strip_suffix(';'));
            if let (true, Some(child)) = (pair[0] == "#[cfg(test)]", child) {
                let mut module = module_of(file);
                module.push(child.to_owned());
                test_only.extend(modules.get(&module).cloned());
            }
        }
    }
    let mut edges = BTreeMap::new();
    for file in files
        .iter()
        .filter(|f| !test_only.contains(&*f.to_string_lossy()))
    {
        let name = file.to_string_lossy().into_owned();
        let code = code_of(&std::fs::read_to_string(dir.join(file)).expect("source"));
        let here = module_of(file);
        let is_root = matches!(
            file.file_stem().and_then(|s| s.to_str()),
            Some("mod" | "lib" | "main")
        );
        // What `super` means here: the parent of this file's module.
        let parent: Vec<String> = if is_root {
            here.clone()
        } else {
            here[..here.len().saturating_sub(1)].to_vec()
        };
        let mut reached: Vec<Vec<String>> = Vec::new();
        for (prefix, base) in [("crate::", Vec::new()), ("super::", parent.clone())] {
            for (at, _) in code.match_indices(prefix) {
                let before = code[..at].chars().next_back();
                if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                    continue;
                }
                let mut base = base.clone();
                let mut rest = &code[at + prefix.len()..];
                while let Some(more) = rest.strip_prefix("super::") {
                    base.pop();
                    rest = more;
                }
                let paths = match rest.strip_prefix('{') {
                    Some(group) => group_paths(group.split('}').next().unwrap_or("")),
                    None => vec![path_at(rest)],
                };
                for path in paths {
                    let mut full = base.clone();
                    full.extend(
                        path.split("::")
                            .filter(|s| !s.is_empty() && *s != "self")
                            .map(str::to_owned),
                    );
                    reached.push(full);
                }
            }
        }
        // A parent's bare path to a module it declares (`mod call;` … `call::run()`).
        for line in code.lines().map(str::trim) {
            let declared = line
                .trim_start_matches("pub(crate) ")
                .trim_start_matches("pub(super) ")
                .trim_start_matches("pub ")
                .strip_prefix("mod ")
                .and_then(|rest| rest.strip_suffix(';'));
            if let Some(child) = declared {
                let used = code.match_indices(&format!("{child}::")).any(|(at, _)| {
                    !code[..at]
                        .chars()
                        .next_back()
                        .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':')
                });
                if used {
                    let mut full = here.clone();
                    full.push(child.to_owned());
                    reached.push(full);
                }
            }
        }
        let targets: BTreeSet<String> = reached
            .iter()
            .filter_map(|path| resolve(path))
            .filter(|target| *target != name && !test_only.contains(target))
            .collect();
        edges.insert(name, targets);
    }
    edges
}

/// A circle of imports, if any: the files on it, in order.
fn circle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        file: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        done: &mut BTreeSet<String>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| p == file) {
            let mut found = path[at..].to_vec();
            found.push(file.to_owned());
            return Some(found);
        }
        if done.contains(file) {
            return None;
        }
        path.push(file.to_owned());
        for next in edges.get(file).into_iter().flatten() {
            if let Some(found) = visit(next, edges, done, path) {
                return Some(found);
            }
        }
        path.pop();
        done.insert(file.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    edges
        .keys()
        .find_map(|file| visit(file, edges, &mut done, &mut Vec::new()))
}

#[test]
fn no_host_crate_has_an_import_circle() {
    let root = repository();
    let crates = std::iter::once(PathBuf::from("host/src")).chain(
        ALLOWED
            .iter()
            .map(|(lib, _)| Path::new("host/lib").join(lib).join("src")),
    );
    for dir in crates {
        let edges = imports(&root.join(&dir));
        // The scan sees imports at all: the session's call path reaches the route.
        if dir.ends_with("host/src") {
            let call = edges.get("session/call.rs").expect("session/call.rs");
            assert!(call.contains("route.rs"), "{call:?}");
        }
        if let Some(found) = circle(&edges) {
            panic!(
                "{}: an import circle: {}",
                dir.display(),
                found.join(" -> ")
            );
        }
    }
}

/// The scan finds a circle where there is one, through a group, `super` and a parent's bare
/// path to its child.
#[test]
fn the_scan_finds_a_circle_where_there_is_one() {
    let dir = std::env::temp_dir().join(format!("coremcp-layering-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("a")).expect("dir");
    let write = |file: &str, text: &str| std::fs::write(dir.join(file), text).expect("write");
    write("lib.rs", "mod a;\nmod b;\n");
    write("a/mod.rs", "mod c;\npub fn f() { c::g(); }\n");
    write("a/c.rs", "use crate::{b::h, x};\npub fn g() {}\n");
    write("b.rs", "pub fn h() { super::a::f(); }\n");
    let edges = imports(&dir);
    let found = circle(&edges).expect("a circle");
    assert!(found.contains(&"b.rs".to_owned()), "{found:?}");
    write(
        "b.rs",
        "pub fn h() {}\n#[cfg(test)]\nmod tests { use super::super::a::f; }\n",
    );
    assert_eq!(
        circle(&imports(&dir)),
        None,
        "a test module may look anywhere"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
