//! Code snapshot format 1, the one contract between the tool that writes snapshots
//! (`code_snapshot`, Code and files group) and the one that stores and serves them
//! (`registry_snapshot_save` / `registry_snapshot_get`, Registry group): the version, the
//! counts, checking a payload before it is stored, its content hash, and the views a stored
//! snapshot is served in (summary, outline, full), filtered by path and cut to a size.
//!
//! Invariants:
//! - A stored snapshot is format 1: what `code_snapshot` returns (`files: [{path, language?,
//!   symbols?: [{kind, name, parent?, signature?, doc?, start_line, end_line}], …}]` plus
//!   `counts`, `root`, `truncated`), or the same with an explicit `format_version: 1`, `lang`
//!   for `language` and `stats` for `counts` (what CI producers write). Stored content always
//!   carries `format_version: 1`, has no `null` members, and its keys are sorted, so equal
//!   snapshots have equal text and equal hashes.
//! - [`counts`] is the one definition of `counts`: the writer's own counts equal it.
//! - A view cut to size drops whole files from the end, never part of one, so it is always
//!   valid JSON; it then says `truncated: true` with how many files it left out.

use std::collections::{BTreeMap, HashSet};

use coremcp_plugin_sdk::args::invalid;
use coremcp_plugin_sdk::budget::{chars, fit_array};
use coremcp_plugin_sdk::ToolError;
use serde_json::{json, Map, Value};

/// The snapshot format `code_snapshot` writes and the only one the Registry stores.
pub const FORMAT_VERSION: u32 = 1;

/// A payload that passed [`check`].
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    /// The snapshot as stored: canonical JSON text.
    pub content: String,
    /// FNV-1a 64 of `content`, 16 hex digits.
    pub content_hash: String,
    /// The payload's own `stats` (or `counts`), else [`counts`] of its files.
    pub stats: Value,
    /// [`counts`] of its files.
    pub counts: Value,
}

/// What a view of a stored snapshot holds of each file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, coremcp_plugin_sdk::ArgEnum)]
pub enum Detail {
    /// Counts only, no file list.
    Summary,
    /// Paths, languages, and each symbol's kind, name, parent and lines.
    Outline,
    /// Every file as saved.
    Full,
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Checks a snapshot payload (the `snapshot` argument) and prepares it for storing.
pub fn check(snapshot: &Map<String, Value>) -> Result<Checked, ToolError> {
    match snapshot.get("format_version") {
        // code_snapshot's own output carries no version: it is format 1.
        None | Some(Value::Null) => {}
        Some(v) if v.as_u64() == Some(FORMAT_VERSION.into()) => {}
        Some(v) => {
            return Err(invalid(
                "snapshot.format_version",
                format!(
                    "{v} is not supported: this Registry stores code_snapshot format \
                     {FORMAT_VERSION}"
                ),
            ))
        }
    }
    let files = match snapshot.get("files") {
        Some(Value::Array(files)) => files,
        Some(other) => {
            return Err(invalid(
                "snapshot.files",
                format!("must be an array of files, not {}", kind_of(other)),
            ))
        }
        None => {
            return Err(invalid(
                "snapshot",
                "has no \"files\" array: pass the object code_snapshot returns \
                 ({files: [{path, language, symbols}], counts, …})",
            ))
        }
    };
    let mut seen = HashSet::new();
    for (i, file) in files.iter().enumerate() {
        let at = format!("snapshot.files[{i}]");
        let Some(file) = file.as_object() else {
            return Err(invalid(
                &at,
                format!("must be an object with a path, not {}", kind_of(file)),
            ));
        };
        let path = match file.get("path") {
            Some(Value::String(p)) if !p.is_empty() => p,
            _ => return Err(invalid(&format!("{at}.path"), "must be a non-empty string")),
        };
        if !seen.insert(path.as_str()) {
            return Err(invalid(
                &format!("{at}.path"),
                format!("{path:?} is listed twice"),
            ));
        }
        for key in ["language", "lang"] {
            if let Some(v) = file.get(key).filter(|v| !v.is_null() && !v.is_string()) {
                return Err(invalid(
                    &format!("{at}.{key}"),
                    format!("must be a string, not {}", kind_of(v)),
                ));
            }
        }
        match file.get("symbols") {
            None | Some(Value::Null) => {}
            Some(Value::Array(symbols)) => check_symbols(&format!("{at}.symbols"), symbols)?,
            Some(other) => {
                return Err(invalid(
                    &format!("{at}.symbols"),
                    format!("must be an array, not {}", kind_of(other)),
                ))
            }
        }
    }
    let counts = counts(files);
    let stats = match (snapshot.get("stats"), snapshot.get("counts")) {
        (Some(Value::Object(stats)), _) => Value::Object(stats.clone()),
        (Some(other), _) if !other.is_null() => {
            return Err(invalid(
                "snapshot.stats",
                format!("must be an object, not {}", kind_of(other)),
            ))
        }
        (_, Some(Value::Object(c))) => Value::Object(c.clone()),
        _ => counts.clone(),
    };
    let mut stored = Value::Object(snapshot.clone());
    strip_nulls(&mut stored);
    stored["format_version"] = json!(FORMAT_VERSION);
    let content = stored.to_string();
    Ok(Checked {
        content_hash: fnv1a64(&content),
        content,
        stats,
        counts,
    })
}

fn check_symbols(at: &str, symbols: &[Value]) -> Result<(), ToolError> {
    for (j, symbol) in symbols.iter().enumerate() {
        let here = format!("{at}[{j}]");
        let named = symbol.as_object().is_some_and(|s| {
            s.get("kind").is_some_and(Value::is_string)
                && s.get("name").is_some_and(Value::is_string)
        });
        if !named {
            return Err(invalid(
                &here,
                "must be an object with string kind and name",
            ));
        }
        if let Some(children) = symbol.get("children").and_then(Value::as_array) {
            check_symbols(&format!("{here}.children"), children)?;
        }
    }
    Ok(())
}

/// Removes every `null` object member and array element, recursively.
fn strip_nulls(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            map.values_mut().for_each(strip_nulls);
        }
        Value::Array(items) => {
            items.retain(|v| !v.is_null());
            items.iter_mut().for_each(strip_nulls);
        }
        _ => {}
    }
}

/// FNV-1a, 64 bits, as 16 lowercase hex digits: a stable content fingerprint (not a
/// security hash; equal snapshots are what it tells apart).
pub fn fnv1a64(text: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{hash:016x}")
}

/// A file's language (`language`, or `lang` as CI producers write it).
fn language(file: &Value) -> Option<&str> {
    file.get("language")
        .or_else(|| file.get("lang"))
        .and_then(Value::as_str)
}

fn symbol_count(symbols: &[Value]) -> usize {
    symbols
        .iter()
        .map(|s| {
            1 + s
                .get("children")
                .and_then(Value::as_array)
                .map_or(0, |c| symbol_count(c))
        })
        .sum()
}

/// `{files, code_files, symbols}` of `files`.
pub fn counts(files: &[Value]) -> Value {
    let code_files = files.iter().filter(|f| language(f).is_some()).count();
    let symbols: usize = files
        .iter()
        .filter_map(|f| f.get("symbols").and_then(Value::as_array))
        .map(|s| symbol_count(s))
        .sum();
    json!({"files": files.len(), "code_files": code_files, "symbols": symbols})
}

/// Files per language, by language name.
pub fn languages(files: &[Value]) -> Value {
    let mut out: BTreeMap<&str, usize> = BTreeMap::new();
    for file in files {
        if let Some(lang) = language(file) {
            *out.entry(lang).or_default() += 1;
        }
    }
    json!(out)
}

/// A `paths` entry as a path prefix: `./` and trailing `/` dropped; `""` and `.` mean all.
pub fn path_prefix(text: &str) -> String {
    let mut p = text.trim();
    while let Some(rest) = p.strip_prefix("./") {
        p = rest;
    }
    let p = p.trim_end_matches('/');
    if p == "." {
        String::new()
    } else {
        p.to_owned()
    }
}

/// Whether `path` is one of `prefixes` or lies under one (whole path segments: `src` matches
/// `src/a.rs`, not `srcx/a.rs`). No prefixes means every path.
pub fn path_matches(path: &str, prefixes: &[String]) -> bool {
    prefixes.is_empty()
        || prefixes.iter().any(|p| {
            p.is_empty()
                || path == p
                || (path.len() > p.len()
                    && path.starts_with(p.as_str())
                    && path.as_bytes()[p.len()] == b'/')
        })
}

/// A file as `detail` shows it: `Full` as saved; `Outline` keeps the path, the language and
/// each symbol's kind, name, parent and lines (no signatures or docs).
pub fn file_view(file: &Value, detail: Detail) -> Value {
    if detail == Detail::Full {
        return file.clone();
    }
    let mut out = Map::new();
    if let Some(path) = file.get("path") {
        out.insert("path".into(), path.clone());
    }
    if let Some(lang) = language(file) {
        out.insert("language".into(), Value::from(lang));
    }
    if let Some(symbols) = file.get("symbols").and_then(Value::as_array) {
        out.insert("symbols".into(), Value::Array(outline_symbols(symbols)));
    }
    Value::Object(out)
}

fn outline_symbols(symbols: &[Value]) -> Vec<Value> {
    symbols
        .iter()
        .map(|s| {
            let mut out = Map::new();
            for key in ["kind", "name", "parent", "start_line", "end_line"] {
                if let Some(v) = s.get(key) {
                    out.insert(key.into(), v.clone());
                }
            }
            if let Some(children) = s.get("children").and_then(Value::as_array) {
                out.insert("children".into(), Value::Array(outline_symbols(children)));
            }
            Value::Object(out)
        })
        .collect()
}

/// The view of a stored snapshot's `content` (its canonical text) that `detail` asks for:
/// `base` (the record's own fields) plus the counts of the files under `prefixes` (see
/// [`path_matches`]), `paths`, and `languages` (summary) or the snapshot's other top-level
/// fields as `header` (full), then those files as `detail` shows them, cut to `budget`
/// characters by [`fit`].
pub fn view(
    mut base: Map<String, Value>,
    content: &str,
    prefixes: &[String],
    after: Option<&str>,
    detail: Detail,
    budget: usize,
) -> Result<Value, String> {
    let content: Value = serde_json::from_str(content)
        .map_err(|e| format!("the stored content is not JSON: {e}"))?;
    let Value::Object(mut content) = content else {
        return Err("the stored content is not a JSON object".into());
    };
    let path_of = |f: &Value| f.get("path").and_then(Value::as_str).map(str::to_owned);
    let mut files: Vec<Value> = match content.remove("files") {
        Some(Value::Array(files)) => files
            .into_iter()
            .filter(|f| path_of(f).is_some_and(|p| path_matches(&p, prefixes)))
            .collect(),
        _ => Vec::new(),
    };
    // In path order, so a page goes on after the last path it showed.
    files.sort_by_key(|f| path_of(f).unwrap_or_default());
    base.insert("detail".into(), detail.as_str().into());
    base.insert("counts".into(), counts(&files));
    if let Some(after) = after {
        files.retain(|f| path_of(f).is_some_and(|p| p.as_str() > after));
    }
    if !prefixes.is_empty() {
        base.insert("paths".into(), json!(prefixes));
    }
    let files = match detail {
        Detail::Summary => {
            base.insert("languages".into(), languages(&files));
            None
        }
        Detail::Outline => Some(files.iter().map(|f| file_view(f, detail)).collect()),
        Detail::Full => {
            content.remove("format_version");
            base.insert("header".into(), Value::Object(content));
            Some(files)
        }
    };
    Ok(fit(base, files, budget))
}

/// `base` with `files` (under key `files`, unless `None`: a summary) cut from the end so the
/// whole result serialises to at most `budget` characters, plus `truncated`, and when files
/// were left out `omitted_files`, `omitted_by_folder` (each folder holding files left out, with
/// how many: what `paths` reaches them by) and a `note` saying how to see them.
pub fn fit(base: Map<String, Value>, files: Option<Vec<Value>>, budget: usize) -> Value {
    // The most the folders of the files left out take of the answer (none in a tiny one).
    let folders_room = match budget >= 1_000 {
        true => (budget / 5).min(3_000),
        false => 0,
    };
    let total = files.as_ref().map_or(0, Vec::len);
    let note = |omitted: usize| {
        format!(
            "{omitted} of {total} files left out to stay within max_chars ({budget}): pass \
             next_cursor as cursor for the next files, or paths with folders of \
             omitted_by_folder to read them, or ask for less detail"
        )
    };
    let mut result = Value::Object(base);
    result["truncated"] = json!(false);
    let Some(files) = files else {
        return result;
    };
    let paths: Vec<String> = files
        .iter()
        .map(|f| f["path"].as_str().unwrap_or_default().to_owned())
        .collect();
    let first = files.first().cloned();
    result["files"] = Value::Array(files);
    // Room for the largest marker it might carry, so adding it keeps the result in budget.
    let marker = chars(
        &json!({"truncated": true, "omitted_files": total, "note": note(total),
                               "omitted_by_folder": {}, "omitted_folders_more": total}),
    ) + folders_room;
    let cursor_room = paths.iter().map(String::len).max().unwrap_or(0) * 2 + 40;
    let mut omitted = fit_array(
        &mut result,
        "files",
        budget.saturating_sub(marker + cursor_room),
    );
    // A page is never empty while files remain: the first stays (a file too large for the
    // answer yields its own largest parts, `coremcp_plugin_sdk::budget::fit_record`).
    if let (Some(first), true) = (first, omitted == total && total > 0) {
        result["files"] = json!([first]);
        omitted -= 1;
    }
    if omitted > 0 {
        result["truncated"] = json!(true);
        result["omitted_files"] = json!(omitted);
        result["note"] = json!(note(omitted));
        // The path of the last file shown: the next page starts after it.
        let shown = result["files"].as_array().map_or(0, Vec::len);
        if let Some(last) = shown.checked_sub(1).and_then(|i| paths.get(i)) {
            result["next_cursor"] = json!(coremcp_plugin_sdk::page::encode_cursor(&[last]));
        }
    }
    if omitted > 0 && folders_room > 0 {
        // The files left out were cut from the end; name their folders (in path order) while
        // they fit, so `paths` reaches every one of them.
        let shown = result["files"].as_array().map_or(0, Vec::len);
        // One folder level below what the files left out share: a walk down by `paths`
        // narrows a level at a time and reaches every file (a file directly in that shared
        // folder is named itself).
        let left: Vec<String> = paths.into_iter().skip(shown).collect();
        let shared = shared_folder(&left);
        let mut folders: Vec<(String, usize)> = Vec::new();
        for path in left {
            let rest = &path[shared.len()..];
            let folder = match rest.split_once('/') {
                Some((next, _)) => format!("{shared}{next}/"),
                None => path.clone(),
            };
            match folders.last_mut() {
                Some((last, count)) if *last == folder => *count += 1,
                _ => folders.push((folder, 1)),
            }
        }
        let mut by_folder = Map::new();
        let mut used = 2;
        let mut more = 0;
        for (folder, count) in folders {
            let cost = folder.len() + 12;
            if more == 0 && used + cost <= folders_room {
                used += cost;
                by_folder.insert(folder, json!(count));
            } else {
                more += 1;
            }
        }
        result["omitted_by_folder"] = Value::Object(by_folder);
        if more > 0 {
            result["omitted_folders_more"] = json!(more);
        }
    }
    result
}

/// The folder (with its trailing `/`, or `""`) every one of `paths` lies in.
fn shared_folder(paths: &[String]) -> String {
    let Some(first) = paths.first() else {
        return String::new();
    };
    let mut shared = match first.rfind('/') {
        Some(at) => &first[..=at],
        None => "",
    };
    for path in &paths[1..] {
        while !path.starts_with(shared) {
            shared = match shared[..shared.len() - 1].rfind('/') {
                Some(at) => &shared[..=at],
                None => "",
            };
        }
    }
    shared.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(value: Value) -> Map<String, Value> {
        value.as_object().cloned().expect("object")
    }

    /// The shape code_snapshot returns today.
    fn code_snapshot_output() -> Value {
        json!({
            "counts": {"files": 3, "code_files": 2, "symbols": 3},
            "files": [
                {"path": "README.md"},
                {"path": "src/lib.rs", "language": "rust", "symbols": [
                    {"kind": "struct", "name": "S", "signature": "pub struct S", "start_line": 1, "end_line": 1},
                    {"kind": "method", "name": "new", "parent": "S", "doc": "Makes one.", "start_line": 3, "end_line": 5}
                ]},
                {"path": "tools/run.py", "language": "python", "syntax_errors": true, "symbols": [
                    {"kind": "function", "name": "run", "start_line": 1, "end_line": 2}
                ]}
            ],
            "root": "/tmp/x",
            "truncated": false
        })
    }

    #[test]
    fn code_snapshot_output_is_format_1_and_hashes_stably() {
        let checked = check(&obj(code_snapshot_output())).expect("accepted");
        assert_eq!(
            checked.stats,
            json!({"files": 3, "code_files": 2, "symbols": 3})
        );
        assert_eq!(checked.counts, checked.stats);
        let stored: Value = serde_json::from_str(&checked.content).expect("json");
        assert_eq!(stored["format_version"], 1);
        assert_eq!(stored["files"][1]["symbols"][1]["doc"], "Makes one.");
        assert_eq!(checked.content_hash.len(), 16);
        // Key order of the input does not matter; content does.
        let again = check(&obj(serde_json::from_str(
            &code_snapshot_output().to_string(),
        )
        .expect("json")))
        .expect("accepted");
        assert_eq!(again.content_hash, checked.content_hash);
        let mut changed = code_snapshot_output();
        changed["files"][0]["path"] = json!("README.txt");
        assert_ne!(
            check(&obj(changed)).expect("ok").content_hash,
            checked.content_hash
        );
        assert_eq!(fnv1a64(""), "cbf29ce484222325");
        assert_eq!(fnv1a64("a"), "af63dc4c8601ec8c");
    }

    #[test]
    fn ci_shape_with_version_lang_and_stats_is_accepted() {
        let checked = check(&obj(json!({
            "format_version": 1,
            "files": [{"path": "a.go", "lang": "go", "symbols": [{"kind": "function", "name": "main", "parent": null}]}],
            "stats": {"files": 1, "took_ms": 12}
        })))
        .expect("accepted");
        assert_eq!(checked.stats, json!({"files": 1, "took_ms": 12}));
        assert_eq!(
            checked.counts,
            json!({"files": 1, "code_files": 1, "symbols": 1})
        );
        assert!(!checked.content.contains("null"), "{}", checked.content);
    }

    #[test]
    fn bad_payloads_name_the_field() {
        let cases = [
            (
                json!({"format_version": 2, "files": []}),
                "snapshot.format_version",
                "not supported",
            ),
            (
                json!({"format_version": "1", "files": []}),
                "snapshot.format_version",
                "not supported",
            ),
            (json!({"counts": {}}), "snapshot", "no \"files\" array"),
            (json!({"files": {}}), "snapshot.files", "must be an array"),
            (
                json!({"files": ["a.rs"]}),
                "snapshot.files[0]",
                "must be an object",
            ),
            (
                json!({"files": [{"language": "rust"}]}),
                "snapshot.files[0].path",
                "non-empty string",
            ),
            (
                json!({"files": [{"path": "a"}, {"path": "a"}]}),
                "snapshot.files[1].path",
                "listed twice",
            ),
            (
                json!({"files": [{"path": "a", "language": 3}]}),
                "snapshot.files[0].language",
                "must be a string",
            ),
            (
                json!({"files": [{"path": "a", "symbols": {}}]}),
                "snapshot.files[0].symbols",
                "must be an array",
            ),
            (
                json!({"files": [{"path": "a", "symbols": [{"kind": "fn"}]}]}),
                "snapshot.files[0].symbols[0]",
                "kind and name",
            ),
            (
                json!({"files": [], "stats": 3}),
                "snapshot.stats",
                "must be an object",
            ),
        ];
        for (payload, field, needle) in cases {
            let err = check(&obj(payload.clone())).expect_err("refused");
            assert_eq!(err.code.as_str(), "invalid_arguments");
            assert!(
                err.message.contains(&format!("\"{field}\"")),
                "{payload}: {err}"
            );
            assert!(err.message.contains(needle), "{payload}: {err}");
        }
    }

    #[test]
    fn path_prefixes_match_whole_segments() {
        let p = |list: &[&str]| list.iter().map(|s| path_prefix(s)).collect::<Vec<_>>();
        assert!(path_matches("src/a.rs", &p(&["src"])));
        assert!(path_matches("src/a.rs", &p(&["./src/"])));
        assert!(path_matches("src/a.rs", &p(&["src/a.rs"])));
        assert!(!path_matches("srcx/a.rs", &p(&["src"])));
        assert!(!path_matches("src", &p(&["src/a.rs"])));
        assert!(path_matches("x/y", &p(&["."])));
        assert!(path_matches("x/y", &[]));
        assert!(path_matches("web/a.ts", &p(&["src", "web"])));
    }

    #[test]
    fn outlines_keep_names_and_kinds_but_no_bodies() {
        let snapshot = code_snapshot_output();
        let lib = &snapshot["files"][1];
        let outline = file_view(lib, Detail::Outline);
        assert_eq!(
            outline,
            json!({"path": "src/lib.rs", "language": "rust", "symbols": [
                {"kind": "struct", "name": "S", "start_line": 1, "end_line": 1},
                {"kind": "method", "name": "new", "parent": "S", "start_line": 3, "end_line": 5}
            ]})
        );
        assert_eq!(file_view(lib, Detail::Full), *lib);
        assert_eq!(
            file_view(&json!({"path": "a.go", "lang": "go"}), Detail::Outline),
            json!({"path": "a.go", "language": "go"})
        );
        assert_eq!(
            languages(snapshot["files"].as_array().expect("files")),
            json!({"python": 1, "rust": 1})
        );
    }

    #[test]
    fn fitting_drops_whole_files_and_says_so() {
        let files: Vec<Value> = (0..100)
            .map(|i| {
                let folder = if i < 50 { "a" } else { "b" };
                json!({"path": format!("src/{folder}/file{i:03}.rs"), "symbols": [{"kind": "function", "name": "f"}]})
            })
            .collect();
        let base = obj(json!({"source": "CORE/x", "commit": "a".repeat(40)}));
        let all = fit(base.clone(), Some(files.clone()), 100_000);
        assert_eq!(all["truncated"], false);
        assert_eq!(all["files"].as_array().expect("files").len(), 100);
        assert!(all.get("omitted_files").is_none() && all.get("note").is_none());

        for budget in [1000, 2500, 4000] {
            let cut = fit(base.clone(), Some(files.clone()), budget);
            // The next page starts after the last file shown.
            let last = cut["files"]
                .as_array()
                .and_then(|f| f.last())
                .expect("a file");
            let cursor = cut["next_cursor"].as_str().expect("next_cursor");
            assert_eq!(
                coremcp_plugin_sdk::page::decode_cursor(cursor, 1).expect("cursor"),
                vec![last["path"].as_str().expect("path").to_owned()]
            );
            let text = cut.to_string();
            assert!(
                text.chars().count() <= budget,
                "{budget}: {} chars",
                text.len()
            );
            let kept = cut["files"].as_array().expect("files").len();
            assert!(kept < 100, "{budget}");
            assert_eq!(cut["truncated"], true);
            assert_eq!(cut["omitted_files"], 100 - kept);
            assert!(cut["note"].as_str().expect("note").contains("paths"));
            if budget < 1_000 {
                assert!(cut.get("omitted_by_folder").is_none());
            } else {
                let by_folder = cut["omitted_by_folder"].as_object().expect("folders");
                let named: u64 = by_folder.values().filter_map(Value::as_u64).sum();
                let more = cut["omitted_folders_more"].as_u64().unwrap_or(0);
                assert_eq!(more, 0, "{budget}: two folders fit: {cut}");
                if more == 0 {
                    assert_eq!(
                        named,
                        100 - kept as u64,
                        "{budget}: every omitted file's folder"
                    );
                    // One level below what the omitted files share (src/): its folders.
                    assert!(
                        by_folder.keys().all(|k| k == "src/a/" || k == "src/b/"),
                        "{budget}: {by_folder:?}"
                    );
                }
            }
            // The first files, in order.
            if kept > 0 {
                assert_eq!(cut["files"][0]["path"], "src/a/file000.rs");
            }
            // It still parses: the cut never splits a file.
            let _: Value = serde_json::from_str(&text).expect("valid JSON");
        }

        let summary = fit(base, None, 1000);
        assert!(summary.get("files").is_none());
        assert_eq!(summary["truncated"], false);
    }
}
