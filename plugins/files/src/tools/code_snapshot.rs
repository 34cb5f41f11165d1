//! `code_snapshot`: a structural outline of a code tree — per file its language and symbols
//! (modules, types, functions, methods with their container, signatures, line ranges), read
//! with tree-sitter grammars for Rust, Python, TypeScript (and TSX), JavaScript and Go.
//!
//! Invariants:
//! - The snapshot path resolves inside the roots; the walk follows no symlink, skips hidden
//!   entries and honours `.gitignore`.
//! - The output depends only on the files' contents and paths: files sorted by path, symbols by
//!   position, no times, so two snapshots of one commit are equal whatever threads do.
//! - Files of other languages are listed by path only (no `language`, no `symbols`); files
//!   larger than [`MAX_PARSE_BYTES`] are listed with a `note` instead of symbols.
//! - An answer always fits: the whole snapshot when it does, else a summary (counts,
//!   languages, the largest files) with the files that fit, whole (`save`).
//! - `save_to` stores the whole snapshot in the Registry (`registry_snapshot_save` through the
//!   host, so it reaches the Registry wherever the call runs) at the checkout's HEAD commit,
//!   and answers the summary and where it was stored.

mod languages;
mod save;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use coremcp_plugin_kit::Roots;
use coremcp_plugin_sdk::args::{ArgError, ArgType};
use coremcp_plugin_sdk::{codes, typed, Args, Ctx, Hints, Tool, ToolError};
use ignore::WalkState;
use serde::Serialize;
use serde_json::Value;

pub use languages::{Detail, Language, Symbol};

use crate::walk::{self, Globs};

const DEFAULT_MAX_FILES: usize = 1000;
/// Files larger than this are listed without symbols.
pub const MAX_PARSE_BYTES: u64 = 1024 * 1024;
/// Parsing threads at most (the host's pool runs other calls too).
const MAX_THREADS: usize = 8;

pub const TOOL: Tool = Tool::typed("code_snapshot", &typed(handler)).hints(Hints::READ);

fn handler(ctx: &Ctx<'_>, params: Params) -> Result<Value, ToolError> {
    let roots = Roots::from_host()?;
    // The commit is read first: a path outside a checkout is refused before any parsing.
    let at = match &params.save_to {
        Some(_) => Some(save::head(ctx, &roots, params.path.as_deref())?),
        None => None,
    };
    let snapshot = snapshot(&roots, &params, ctx.raw().cancelled)?;
    match (&params.save_to, at) {
        (Some(source), Some(at)) => save::save(ctx, &snapshot, source, &at),
        _ => Ok(save::inline(snapshot)),
    }
}

/// Snapshot of a code tree (.gitignore-aware): files, language, symbols (kind, name, parent,
/// signature, lines) for Rust, Python, TS, JS, Go. Too big: a summary; save_to keeps it all.
#[derive(Debug, Clone, Args)]
pub struct Params {
    /// folder/file in the roots (default the first)
    pub path: Option<String>,
    /// globs, e.g. *.rs, src/**
    pub include: Vec<String>,
    /// globs to skip
    pub exclude: Vec<String>,
    /// only these languages
    pub languages: Vec<LanguageName>,
    /// outline, +signatures (default), +doc comments (full)
    #[arg(default = Detail::Signatures)]
    pub detail: Detail,
    /// max files (default 1000)
    #[arg(min = 1, max = 20000, default = DEFAULT_MAX_FILES)]
    pub max_files: usize,
    /// Registry source ref to store it under
    pub save_to: Option<String>,
}

/// A language `code_snapshot` reads, by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LanguageName(pub String);

impl ArgType for LanguageName {
    fn schema() -> Value {
        serde_json::json!({"type": "string", "enum": Language::NAMES})
    }

    fn from_value(value: Value, at: &str) -> Result<Self, ArgError> {
        let name = String::from_value(value, at)?;
        if Language::NAMES.contains(&name.as_str()) {
            return Ok(Self(name));
        }
        Err(ArgError::new(
            at,
            format!(
                "unknown language {name:?} (expected one of: {})",
                Language::NAMES.join(", ")
            ),
        ))
    }
}

/// The snapshot format this tool writes: the one the Registry stores.
pub use coremcp_snapshot::FORMAT_VERSION;

#[derive(Debug, Serialize, PartialEq, Eq)]
pub struct Snapshot {
    /// The snapshot format (`registry_snapshot_save` accepts format 1, this one).
    pub format_version: u32,
    pub counts: Counts,
    pub files: Vec<FileOutline>,
    /// The snapshotted folder or file, canonical.
    pub root: String,
    /// Whether more than `max_files` files qualified (the first ones by path are listed).
    pub truncated: bool,
}

#[derive(Debug, Serialize, PartialEq, Eq)]
pub struct Counts {
    /// Files listed.
    pub files: usize,
    /// Listed files in a language with a grammar.
    pub code_files: usize,
    pub symbols: usize,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct FileOutline {
    /// Relative to the snapshot root, `/`-separated.
    pub path: String,
    /// Absent for files without a grammar here.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub language: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub symbols: Option<Vec<Symbol>>,
    /// Present (true) when tree-sitter recovered from syntax errors.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub syntax_errors: bool,
    /// Why a code file has no symbols (too large, unreadable).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Snapshots `params.path`; `cancelled` stops the work with a `cancelled` error.
pub fn snapshot(
    roots: &Roots,
    params: &Params,
    cancelled: &AtomicBool,
) -> Result<Snapshot, ToolError> {
    let root = roots.resolve("path", params.path.as_deref(), None)?;
    let include = Globs::new("include", &params.include)?;
    let exclude = Arc::new(Globs::new("exclude", &params.exclude)?);
    let wanted = |language: Option<Language>| {
        params.languages.is_empty()
            || language.is_some_and(|l| params.languages.iter().any(|n| n.0 == l.name()))
    };

    // 1. Which files: a parallel walk, then sorted, so the cut at max_files is stable.
    let found: Mutex<Vec<(String, PathBuf, Option<Language>)>> = Mutex::new(Vec::new());
    walk::builder(&root, false, exclude)
        .build_parallel()
        .run(|| {
            let (found, include, wanted, root) = (&found, &include, &wanted, root.as_path());
            Box::new(move |entry| {
                if cancelled.load(Ordering::Relaxed) {
                    return WalkState::Quit;
                }
                let Ok(entry) = entry else {
                    return WalkState::Continue;
                };
                if !entry.file_type().is_some_and(|t| t.is_file()) {
                    return WalkState::Continue;
                }
                let rel = walk::relative(root, entry.path());
                if !include.is_empty() && !include.matches(&rel) {
                    return WalkState::Continue;
                }
                let language = Language::of_path(&rel);
                if wanted(language) {
                    found.lock().unwrap_or_else(PoisonError::into_inner).push((
                        rel,
                        entry.into_path(),
                        language,
                    ));
                }
                WalkState::Continue
            })
        });
    let mut files = found.into_inner().unwrap_or_else(PoisonError::into_inner);
    files.sort_by(|a, b| walk::path_order(&a.0, &b.0));
    let truncated = files.len() > params.max_files;
    files.truncate(params.max_files);

    // 2. Outline the code files on a few threads; each result lands at its file's index.
    let outlines: Vec<Mutex<Option<FileOutline>>> =
        files.iter().map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(MAX_THREADS)
        .min(files.len().max(1));
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                let mut parsers = languages::Parsers::default();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= files.len() || cancelled.load(Ordering::Relaxed) {
                        break;
                    }
                    let (rel, path, language) = &files[i];
                    let outline = outline_file(&mut parsers, path, rel, *language, params.detail);
                    *outlines[i].lock().unwrap_or_else(PoisonError::into_inner) = Some(outline);
                }
            });
        }
    });
    if cancelled.load(Ordering::Relaxed) {
        return Err(ToolError::new(
            codes::CANCELLED,
            "code_snapshot stopped: the call was cancelled or ran out of time",
        ));
    }
    let files: Vec<FileOutline> = outlines
        .into_iter()
        .filter_map(|m| m.into_inner().unwrap_or_else(PoisonError::into_inner))
        .collect();
    let counts = Counts {
        files: files.len(),
        code_files: files.iter().filter(|f| f.language.is_some()).count(),
        symbols: files
            .iter()
            .map(|f| f.symbols.as_ref().map_or(0, Vec::len))
            .sum(),
    };
    Ok(Snapshot {
        format_version: FORMAT_VERSION,
        counts,
        files,
        root: root.display().to_string(),
        truncated,
    })
}

fn outline_file(
    parsers: &mut languages::Parsers,
    path: &Path,
    rel: &str,
    language: Option<Language>,
    detail: Detail,
) -> FileOutline {
    let mut out = FileOutline {
        path: rel.to_owned(),
        language: language.map(Language::name),
        symbols: None,
        syntax_errors: false,
        note: None,
    };
    let Some(language) = language else {
        return out;
    };
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.len() > MAX_PARSE_BYTES => {
            out.note = Some(format!(
                "not parsed: {} bytes is more than the {} byte limit",
                meta.len(),
                MAX_PARSE_BYTES
            ));
            return out;
        }
        Ok(_) => {}
        Err(e) => {
            out.note = Some(format!("not read: {e}"));
            return out;
        }
    }
    let source = match std::fs::read(path) {
        Ok(source) => source,
        Err(e) => {
            out.note = Some(format!("not read: {e}"));
            return out;
        }
    };
    match parsers.outline(language, &source, detail) {
        Ok(outline) => {
            out.symbols = Some(outline.symbols);
            out.syntax_errors = outline.syntax_errors;
        }
        Err(e) => out.note = Some(format!("not parsed: {e}")),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Tree;
    use coremcp_plugin_sdk::CallCtx;
    use serde_json::json;

    fn params(args: Value) -> Result<Params, ToolError> {
        coremcp_plugin_sdk::testing::parse(args)
    }

    fn run(tree: &Tree, args: Value) -> Result<Snapshot, ToolError> {
        snapshot(&tree.roots(), &params(args)?, &AtomicBool::new(false))
    }

    /// Files as `path language symbol-count`.
    fn shown(snapshot: &Snapshot) -> Vec<String> {
        snapshot
            .files
            .iter()
            .map(|f| {
                format!(
                    "{} {} {}",
                    f.path,
                    f.language.unwrap_or("-"),
                    f.symbols
                        .as_ref()
                        .map_or("-".to_owned(), |s| s.len().to_string())
                )
            })
            .collect()
    }

    fn sample() -> Tree {
        let tree = Tree::new("snapshot");
        tree.write(
            "src/lib.rs",
            "pub mod a;\nstruct S;\nimpl S {\n    fn new() -> Self { S }\n}\n",
        )
        .write("src/a.rs", "pub fn a() {}\n")
        .write("tools/run.py", "def run():\n    pass\n")
        .write("web/app.ts", "export function app(): void {}\n")
        .write("web/view.tsx", "export const View = () => <div/>;\n")
        .write("web/legacy.js", "function old() {}\n")
        .write("cmd/main.go", "package main\nfunc main() {}\n")
        .write("README.md", "# readme\n")
        .write(".gitignore", "gen/\n")
        .write("gen/big.rs", "fn generated() {}\n")
        .write(".hidden/x.rs", "fn hidden() {}\n")
        .write("broken.rs", "fn ok() {}\nfn broken( {\n");
        tree
    }

    #[test]
    fn files_languages_and_filters() {
        let tree = sample();
        let cases = [
            (
                json!({}),
                vec![
                    "README.md - -",
                    "broken.rs rust 1",
                    "cmd/main.go go 2",
                    "src/a.rs rust 1",
                    "src/lib.rs rust 4",
                    "tools/run.py python 1",
                    "web/app.ts typescript 1",
                    "web/legacy.js javascript 1",
                    "web/view.tsx typescript 1",
                ],
            ),
            (
                json!({"languages": ["typescript", "go"]}),
                vec![
                    "cmd/main.go go 2",
                    "web/app.ts typescript 1",
                    "web/view.tsx typescript 1",
                ],
            ),
            (
                json!({"include": ["src", "*.py"], "exclude": ["a.rs"]}),
                vec!["src/lib.rs rust 4", "tools/run.py python 1"],
            ),
            (
                json!({"path": "web", "exclude": ["*.ts*"]}),
                vec!["legacy.js javascript 1"],
            ),
            (json!({"path": "src/a.rs"}), vec!["a.rs rust 1"]),
        ];
        for (args, expected) in cases {
            let snapshot = run(&tree, args.clone()).unwrap_or_else(|e| panic!("{args}: {e}"));
            assert_eq!(shown(&snapshot), expected, "{args}");
            assert!(!snapshot.truncated);
            assert_eq!(snapshot.counts.files, expected.len());
        }
        let all = run(&tree, json!({})).expect("snapshot");
        assert_eq!(all.counts.code_files, 8);
        assert_eq!(all.counts.symbols, 12);
        let broken = all
            .files
            .iter()
            .find(|f| f.path == "broken.rs")
            .expect("broken.rs");
        assert!(broken.syntax_errors);
        let lib = all
            .files
            .iter()
            .find(|f| f.path == "src/lib.rs")
            .expect("lib.rs");
        let symbols = lib.symbols.as_ref().expect("symbols");
        assert_eq!(
            symbols
                .iter()
                .map(|s| (s.kind, s.name.as_str(), s.start_line))
                .collect::<Vec<_>>(),
            [
                ("module", "a", 1),
                ("struct", "S", 2),
                ("impl", "S", 3),
                ("method", "new", 4)
            ]
        );
        assert_eq!(symbols[3].parent.as_deref(), Some("S"));
        assert_eq!(symbols[3].signature.as_deref(), Some("fn new() -> Self"));
    }

    #[test]
    fn the_registry_stores_what_it_writes_with_the_same_counts() {
        let written =
            serde_json::to_value(run(&sample(), json!({})).expect("snapshot")).expect("json");
        let payload = written.as_object().expect("object");
        let checked = coremcp_snapshot::check(payload).expect("format 1");
        assert_eq!(checked.counts, written["counts"]);
        let files = written["files"].as_array().expect("files");
        assert_eq!(coremcp_snapshot::counts(files), written["counts"]);
    }

    #[test]
    fn detail_levels() {
        let tree = Tree::new("detail");
        tree.write("a.rs", "/// Says hi.\npub fn hi() {}\n");
        let symbol = |detail: &str| {
            let snapshot = run(&tree, json!({"detail": detail})).expect("snapshot");
            snapshot.files[0].symbols.as_ref().expect("symbols")[0].clone()
        };
        let outline = symbol("outline");
        assert_eq!((outline.signature, outline.doc), (None, None));
        let signatures = symbol("signatures");
        assert_eq!(signatures.signature.as_deref(), Some("pub fn hi()"));
        assert_eq!(signatures.doc, None);
        let full = symbol("full");
        assert_eq!(full.doc.as_deref(), Some("Says hi."));
        assert_eq!((full.start_line, full.end_line), (2, 2));
    }

    #[test]
    fn max_files_cuts_by_path_and_two_snapshots_are_equal() {
        let tree = sample();
        let snapshot = run(&tree, json!({"max_files": 3})).expect("snapshot");
        assert_eq!(
            shown(&snapshot),
            ["README.md - -", "broken.rs rust 1", "cmd/main.go go 2"]
        );
        assert!(snapshot.truncated);
        let one = run(&tree, json!({"detail": "full"})).expect("snapshot");
        let two = run(&tree, json!({"detail": "full"})).expect("snapshot");
        assert_eq!(one, two);
        // This crate's own sources: many files on several threads, still the same twice.
        let here =
            Roots::new(vec![std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))]).expect("roots");
        let p = params(json!({"path": "src"})).expect("params");
        let first = snapshot_json(&here, &p);
        let second = snapshot_json(&here, &p);
        assert_eq!(first, second);
        assert!(
            first.contains(r#""kind":"function","name":"search""#),
            "files_search's search()"
        );
    }

    fn snapshot_json(roots: &Roots, p: &Params) -> String {
        let snapshot = super::snapshot(roots, p, &AtomicBool::new(false)).expect("snapshot");
        assert!(snapshot.counts.symbols > 50, "{:?}", snapshot.counts);
        serde_json::to_string(&snapshot).expect("json")
    }

    #[test]
    fn paths_stay_inside_the_roots_and_save_to_needs_a_checkout() {
        let tree = sample();
        tree.symlink(&tree.outside(), "out")
            .symlink(&tree.root().join("loop2"), "loop1")
            .symlink(&tree.root().join("loop1"), "loop2");
        std::fs::write(tree.outside().join("evil.rs"), "fn evil() {}\n").expect("write");
        let all = run(&tree, json!({})).expect("snapshot");
        assert!(
            all.files.iter().all(|f| !f.path.starts_with("out/")),
            "symlinks not followed"
        );
        let outside = tree.outside().display().to_string();
        let cases = [
            (json!({"path": "../outside"}), "\"..\" is not allowed"),
            (
                json!({"path": outside}),
                "an absolute path outside the roots",
            ),
            (json!({"path": "out"}), "leads outside the roots"),
            (json!({"path": "loop1"}), "a symlink loop"),
        ];
        for (args, needle) in cases {
            let err = run(&tree, args.clone()).expect_err("refused");
            assert!(err.message.contains(needle), "{args}: {err}");
        }
        let err = params(json!({"languages": ["cobol"]})).expect_err("unknown language");
        assert_eq!(err.code.as_str(), codes::INVALID_ARGUMENTS);

        let cancelled = AtomicBool::new(false);
        let raw = CallCtx {
            deadline_unix_ms: u64::MAX,
            cancelled: &cancelled,
        };
        let err = save::head(&Ctx::new(&raw), &tree.roots(), None).expect_err("no checkout");
        assert_eq!(err.code.as_str(), codes::INVALID_ARGUMENTS);
        assert!(err.message.contains("\"save_to\""), "{err}");
        assert!(err.message.contains("not inside a git checkout"), "{err}");
    }

    #[test]
    fn a_snapshot_too_big_to_answer_is_a_summary_with_the_files_that_fit() {
        let file = |i: usize| FileOutline {
            path: format!("src/m{i:04}.rs"),
            language: Some("rust"),
            symbols: Some(Vec::new()),
            syntax_errors: false,
            note: Some("n".repeat(i % 50)),
        };
        let files: Vec<FileOutline> = (0..3000).map(file).collect();
        let snapshot = Snapshot {
            format_version: FORMAT_VERSION,
            counts: Counts {
                files: 3000,
                code_files: 3000,
                symbols: 0,
            },
            files,
            root: "/r".into(),
            truncated: false,
        };
        let out = save::inline(snapshot);
        assert!(
            coremcp_plugin_sdk::budget::chars(&out) <= coremcp_plugin_sdk::budget::result_budget()
        );
        let shown = out["files"].as_array().map_or(0, Vec::len);
        assert!(shown > 100, "{shown}");
        assert_eq!(out["files_omitted"], 3000 - shown);
        assert_eq!(out["truncated"], true);
        assert_eq!(out["languages"], json!({"rust": 3000}));
        assert_eq!(out["counts"]["files"], 3000);
        assert_eq!(
            out["files"][0]["path"], "src/m0000.rs",
            "in path order, whole"
        );
        assert!(out["hint"].as_str().is_some_and(|h| h.contains("save_to")));
    }
}
