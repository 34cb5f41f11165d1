//! `files_search`: ripgrep-style content search over a tree inside the roots, built on
//! ripgrep's own libraries (`ignore`'s parallel walker, `grep-regex`, `grep-searcher`).
//!
//! Invariants:
//! - The searched path resolves inside the roots; the walk follows no symlink, skips hidden
//!   entries unless `include_hidden`, honours `.gitignore`, and skips binary files (a NUL byte).
//! - Results are the first `max_results` matches in (path, line) order whatever order the
//!   threads finish in, so the same tree and arguments always give the same answer; `truncated`
//!   is true exactly when more matches exist. Memory stays bounded by about twice
//!   `max_results` matches: files that can no longer make the cut are dropped or not read.
//! - A page holds whole matches and fits the result budget; `next_cursor` (the path and line
//!   of its last match) resumes after it, so following the cursors returns every match once.
//! - A bad regex is an `invalid_arguments` error carrying the regex error.
//! - A pattern is at most [`MAX_PATTERN_CHARS`] characters, and the compiled matcher is
//!   bounded ([`REGEX_SIZE_LIMIT`], [`DFA_SIZE_LIMIT`]): a huge literal or an exploding regex is
//!   refused with a clear error instead of taking gigabytes.

use std::collections::BTreeMap;
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use coremcp_plugin_kit::Roots;
use coremcp_plugin_sdk::{codes, typed, Args, Ctx, Hints, Tool, ToolError};
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::WalkState;
use serde::Serialize;
use serde_json::Value;

use crate::walk::{self, Globs};

const DEFAULT_MAX_RESULTS: usize = 200;
/// Characters kept free in an answer for its `next_cursor`.
const CURSOR_ROOM: usize = 1_200;
/// A line longer than this many characters is cut, with `…` appended.
pub const MAX_LINE_CHARS: usize = 300;
/// Walk errors (unreadable folders) reported at most.
const MAX_ERRORS: usize = 10;
/// The longest pattern searched, in characters.
pub const MAX_PATTERN_CHARS: usize = 10_000;
/// The most memory one compiled regex may take.
pub const REGEX_SIZE_LIMIT: usize = 16 << 20;
/// The most memory the lazy DFA of one search may take.
pub const DFA_SIZE_LIMIT: usize = 16 << 20;

pub const TOOL: Tool = Tool::typed("files_search", &typed(handler)).hints(Hints::READ);

fn handler(ctx: &Ctx<'_>, params: Params) -> Result<Value, ToolError> {
    let roots = Roots::from_host()?;
    let found = search(&roots, &params, ctx.raw().cancelled)?;
    coremcp_plugin_sdk::to_json(&found)
}

/// Search file contents like ripgrep: regex or literal, smart case, context lines; skips
/// binary, hidden and .gitignore'd files. By path and line.
#[derive(Debug, Clone, Args)]
pub struct Params {
    /// Rust regex (or text with literal)
    pub pattern: String,
    /// folder/file in the roots (default the first)
    pub path: Option<String>,
    /// pattern is plain text
    #[arg(default)]
    pub literal: bool,
    /// default: smart case
    pub case_sensitive: Option<bool>,
    /// globs, e.g. *.rs
    pub include: Vec<String>,
    /// globs to skip
    pub exclude: Vec<String>,
    /// context lines (default 0)
    #[arg(min = 0, max = 5, default = 0)]
    pub context_lines: usize,
    /// default 200
    #[arg(min = 1, max = 2000, default = DEFAULT_MAX_RESULTS)]
    pub max_results: usize,
    /// hidden entries too
    #[arg(default)]
    pub include_hidden: bool,
    /// next_cursor
    pub cursor: Option<String>,
}

/// What a search found.
#[derive(Debug, Serialize)]
pub struct Found {
    pub counts: Counts,
    pub matches: Vec<Hit>,
    pub truncated: bool,
    /// Where the next page starts (the same arguments and this `cursor`), when more exist.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// The searched folder or file, canonical.
    pub root: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
}

#[derive(Debug, Serialize, PartialEq, Eq)]
pub struct Counts {
    /// Files read (fewer than the tree holds when the search stopped at `max_results`).
    pub files_searched: usize,
    /// Files with a returned match.
    pub files_matched: usize,
    /// Matches returned.
    pub matches: usize,
}

/// One matching line.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Hit {
    pub path: String,
    /// 1-based.
    pub line: u64,
    pub text: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub before: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<String>,
}

/// Builds the matcher: smart case unless `case_sensitive` says otherwise.
pub fn matcher(params: &Params) -> Result<RegexMatcher, ToolError> {
    let what = if params.literal {
        "literal text"
    } else {
        "regex"
    };
    let chars = params.pattern.chars().count();
    if chars > MAX_PATTERN_CHARS {
        return Err(ToolError::new(
            codes::INVALID_ARGUMENTS,
            format!(
                "argument \"pattern\" ({what}) is {chars} characters; the most searched is \
                 {MAX_PATTERN_CHARS}: search for a distinctive part of it"
            ),
        ));
    }
    let mut builder = RegexMatcherBuilder::new();
    builder
        .line_terminator(Some(b'\n'))
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(DFA_SIZE_LIMIT)
        .fixed_strings(params.literal);
    match params.case_sensitive {
        Some(true) => builder.case_insensitive(false).case_smart(false),
        Some(false) => builder.case_insensitive(true).case_smart(false),
        None => builder.case_smart(true),
    };
    builder.build(&params.pattern).map_err(|e| {
        let text = e.to_string();
        let message = if text.contains("size limit") {
            format!(
                "argument \"pattern\" ({what}) is too large to search: it compiles past the \
                 {} MB limit ({})",
                REGEX_SIZE_LIMIT >> 20,
                text.trim()
            )
        } else if params.literal {
            format!("argument \"pattern\" (literal text) cannot be searched: {text}")
        } else {
            format!("argument \"pattern\" is not a valid regex: {text}")
        };
        ToolError::new(codes::INVALID_ARGUMENTS, message)
    })
}

/// Runs a search; `cancelled` stops the walk early with a `cancelled` error.
pub fn search(roots: &Roots, params: &Params, cancelled: &AtomicBool) -> Result<Found, ToolError> {
    let root = roots.resolve("path", params.path.as_deref(), None)?;
    let after = match params.cursor.as_deref() {
        Some(cursor) => {
            let parts = coremcp_plugin_sdk::page::decode_cursor(cursor, 2)?;
            let line = parts[1].parse::<u64>().map_err(|_| {
                coremcp_plugin_sdk::args::invalid("cursor", "is not a cursor this tool returned")
            })?;
            Some((parts[0].clone(), line))
        }
        None => None,
    };
    let matcher = matcher(params)?;
    let include = Globs::new("include", &params.include)?;
    let exclude = Arc::new(Globs::new("exclude", &params.exclude)?);
    let best = Mutex::new(Best::new(params.max_results));
    let files_searched = AtomicUsize::new(0);
    let errors = Mutex::new(Vec::new());
    let walker = walk::builder(&root, params.include_hidden, exclude).build_parallel();
    walker.run(|| {
        let mut searcher = SearcherBuilder::new()
            .binary_detection(BinaryDetection::quit(0))
            .line_number(true)
            .before_context(params.context_lines)
            .after_context(params.context_lines)
            .build();
        let (matcher, include, best, root) = (&matcher, &include, &best, root.as_path());
        let after = &after;
        let (files_searched, errors) = (&files_searched, &errors);
        Box::new(move |entry| {
            if cancelled.load(Ordering::Relaxed) {
                return WalkState::Quit;
            }
            let entry = match entry {
                Ok(entry) => entry,
                Err(err) => {
                    note_error(errors, err.to_string());
                    return WalkState::Continue;
                }
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            let rel = walk::relative(root, entry.path());
            if !include.is_empty() && !include.matches(&rel) {
                return WalkState::Continue;
            }
            // A page after a cursor starts in the cursor's file, after its line.
            let after_line = match after {
                Some((path, line)) => match walk::path_order(&rel, path) {
                    std::cmp::Ordering::Less => return WalkState::Continue,
                    std::cmp::Ordering::Equal => *line,
                    std::cmp::Ordering::Greater => 0,
                },
                None => 0,
            };
            if !lock(best).wanted(&rel) {
                return WalkState::Continue;
            }
            files_searched.fetch_add(1, Ordering::Relaxed);
            let cap = params.max_results + 1;
            let found = search_file(
                &mut searcher,
                matcher,
                entry.path(),
                &rel,
                cap,
                params.context_lines,
                after_line,
            );
            match found {
                Ok(hits) if !hits.is_empty() => lock(best).add(rel, hits),
                Ok(_) => {}
                Err(err) => note_error(errors, format!("{rel}: {err}")),
            }
            WalkState::Continue
        })
    });
    if cancelled.load(Ordering::Relaxed) {
        return Err(ToolError::new(
            codes::CANCELLED,
            "files_search stopped: the call was cancelled or ran out of time",
        ));
    }
    let best = best.into_inner().unwrap_or_else(PoisonError::into_inner);
    let mut more = best.over;
    let mut matches: Vec<Hit> = best.files.into_values().flatten().collect();
    matches.truncate(params.max_results);
    // The page is cut to the answer's room too, whole matches only.
    let mut errors = errors.into_inner().unwrap_or_else(PoisonError::into_inner);
    errors.sort();
    let base = serde_json::json!({
        "counts": {"files_searched": usize::MAX, "files_matched": usize::MAX, "matches": usize::MAX},
        "matches": [], "truncated": true, "root": root.display().to_string(), "errors": errors,
        // Room for the cursor: a long path's hex costs four times its length.
        "next_cursor": "c".repeat(CURSOR_ROOM),
    });
    let fits = coremcp_plugin_sdk::budget::fitting(&matches, &base);
    if fits < matches.len() {
        matches.truncate(fits);
        more = true;
    }
    let next_cursor = more
        .then(|| matches.last())
        .flatten()
        .map(|h| coremcp_plugin_sdk::page::encode_cursor(&[&h.path, &h.line.to_string()]));
    let mut files_matched = 0;
    for (i, hit) in matches.iter().enumerate() {
        if i == 0 || matches[i - 1].path != hit.path {
            files_matched += 1;
        }
    }
    Ok(Found {
        counts: Counts {
            files_searched: files_searched.into_inner(),
            files_matched,
            matches: matches.len(),
        },
        matches,
        truncated: more,
        next_cursor,
        root: root.display().to_string(),
        errors,
    })
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn note_error(errors: &Mutex<Vec<String>>, message: String) {
    let mut errors = lock(errors);
    if errors.len() < MAX_ERRORS {
        errors.push(message);
    }
}

/// A path as a sort key: component by component.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Key(String);

impl Ord for Key {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        walk::path_order(&self.0, &other.0)
    }
}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// The files holding the first `max` matches in (path, line) order seen so far.
struct Best {
    max: usize,
    files: BTreeMap<Key, Vec<Hit>>,
    total: usize,
    /// Set once more than `max` matches are known: the matches past it are not needed.
    over: bool,
}

impl Best {
    fn new(max: usize) -> Self {
        Self {
            max,
            files: BTreeMap::new(),
            total: 0,
            over: false,
        }
    }

    /// Whether a file at `rel` could still contribute to the result.
    fn wanted(&self, rel: &str) -> bool {
        if !self.over {
            return true;
        }
        self.files
            .last_key_value()
            .is_none_or(|(last, _)| walk::path_order(rel, &last.0).is_lt())
    }

    fn add(&mut self, rel: String, hits: Vec<Hit>) {
        self.total += hits.len();
        self.files.insert(Key(rel), hits);
        if self.total > self.max {
            self.over = true;
        }
        // Drop whole files from the end while the rest still holds `max` matches.
        while let Some((_, last)) = self.files.last_key_value() {
            if self.total - last.len() >= self.max {
                self.total -= last.len();
                self.files.pop_last();
            } else {
                break;
            }
        }
    }
}

/// The first `cap` matches of one file with their context, or none for a binary file.
fn search_file(
    searcher: &mut Searcher,
    matcher: &RegexMatcher,
    path: &Path,
    rel: &str,
    cap: usize,
    context: usize,
    after_line: u64,
) -> io::Result<Vec<Hit>> {
    let mut sink = Collector {
        cap,
        after_line,
        context: context as u64,
        lines: BTreeMap::new(),
        matched: Vec::new(),
        stop_after: None,
        binary: false,
    };
    searcher.search_path(matcher, path, &mut sink)?;
    if sink.binary {
        return Ok(Vec::new());
    }
    Ok(sink.hits(rel))
}

/// Records matching lines and every context line the searcher reports, by line number.
struct Collector {
    cap: usize,
    /// Matches at or before this line belong to an earlier page (0: none do).
    after_line: u64,
    context: u64,
    lines: BTreeMap<u64, String>,
    matched: Vec<u64>,
    /// Once `cap` matches are in: the last line still needed (for the last match's context).
    stop_after: Option<u64>,
    binary: bool,
}

impl Collector {
    /// Records one line; false once the search of this file can stop.
    fn record(&mut self, number: u64, bytes: &[u8], is_match: bool) -> bool {
        if self.stop_after.is_some_and(|last| number > last) {
            return false;
        }
        self.lines.insert(number, cut_line(bytes));
        if is_match && self.stop_after.is_none() && number > self.after_line {
            self.matched.push(number);
            if self.matched.len() >= self.cap {
                self.stop_after = Some(number + self.context);
            }
        }
        true
    }

    fn hits(self, rel: &str) -> Vec<Hit> {
        let n = self.context;
        self.matched
            .iter()
            .map(|&line| {
                let around = |range: std::ops::Range<u64>| -> Vec<String> {
                    range.filter_map(|l| self.lines.get(&l).cloned()).collect()
                };
                Hit {
                    path: rel.to_owned(),
                    line,
                    text: self.lines.get(&line).cloned().unwrap_or_default(),
                    before: around(line.saturating_sub(n).max(1)..line),
                    after: around(line + 1..line + 1 + n),
                }
            })
            .collect()
    }
}

impl Sink for Collector {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, m: &SinkMatch<'_>) -> Result<bool, io::Error> {
        let first = m.line_number().unwrap_or(0);
        for (i, line) in m.lines().enumerate() {
            if !self.record(first + i as u64, line, true) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn context(&mut self, _: &Searcher, c: &SinkContext<'_>) -> Result<bool, io::Error> {
        let first = c.line_number().unwrap_or(0);
        for (i, line) in c.bytes().split_inclusive(|&b| b == b'\n').enumerate() {
            if !self.record(first + i as u64, line, false) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn binary_data(&mut self, _: &Searcher, _offset: u64) -> Result<bool, io::Error> {
        self.binary = true;
        Ok(false)
    }
}

/// One line as text: terminator removed, invalid UTF-8 replaced, cut to [`MAX_LINE_CHARS`].
pub fn cut_line(bytes: &[u8]) -> String {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    let text = String::from_utf8_lossy(bytes);
    match text.char_indices().nth(MAX_LINE_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Tree;
    use serde_json::json;

    fn run(tree: &Tree, args: Value) -> Result<Found, ToolError> {
        search(
            &tree.roots(),
            &coremcp_plugin_sdk::testing::parse::<Params>(args)?,
            &AtomicBool::new(false),
        )
    }

    /// Matches as `path:line`.
    fn places(found: &Found) -> Vec<String> {
        found
            .matches
            .iter()
            .map(|h| format!("{}:{}", h.path, h.line))
            .collect()
    }

    fn sample() -> Tree {
        let tree = Tree::new("search");
        tree.write("a.txt", "Needle one\nneedle two\nnothing\na.c\nabc\n")
            .write("src/lib.rs", "fn needle() {}\n// NEEDLE shouting\n")
            .write("src/sub/deep.rs", "let x = needle;\n")
            .write("src-b.txt", "needle in src-b\n")
            .write(".gitignore", "ignored/\n*.log\n")
            .write("ignored/x.txt", "needle ignored\n")
            .write("debug.log", "needle logged\n")
            .write(".hidden/h.txt", "needle hidden\n")
            .write(".dotfile", "needle dot\n")
            .write("bin.dat", b"needle\0binary\n".as_slice());
        tree
    }

    fn check(tree: &Tree, args: Value, expected: &[&str]) {
        let found = run(tree, args.clone()).unwrap_or_else(|e| panic!("{args}: {e}"));
        assert_eq!(places(&found), expected, "{args}");
        assert_eq!(found.counts.matches, expected.len(), "{args}");
    }

    #[test]
    fn literal_regex_case_globs_ignores_and_hidden() {
        let tree = sample();
        let cases = [
            // Smart case: lowercase ignores case; an uppercase letter makes it exact.
            (
                json!({"pattern": "needle"}),
                vec![
                    "a.txt:1",
                    "a.txt:2",
                    "src/lib.rs:1",
                    "src/lib.rs:2",
                    "src/sub/deep.rs:1",
                    "src-b.txt:1",
                ],
            ),
            (json!({"pattern": "Needle"}), vec!["a.txt:1"]),
            (
                json!({"pattern": "needle", "case_sensitive": true}),
                vec![
                    "a.txt:2",
                    "src/lib.rs:1",
                    "src/sub/deep.rs:1",
                    "src-b.txt:1",
                ],
            ),
            (
                json!({"pattern": "NEEDLE", "case_sensitive": false, "path": "src"}),
                vec!["lib.rs:1", "lib.rs:2", "sub/deep.rs:1"],
            ),
            // Literal vs regex.
            (json!({"pattern": "a.c", "literal": true}), vec!["a.txt:4"]),
            (json!({"pattern": "a.c"}), vec!["a.txt:4", "a.txt:5"]),
            (json!({"pattern": "^fn \\w+\\(\\)"}), vec!["src/lib.rs:1"]),
            // Globs: names anywhere, paths from the root, folders pruned.
            (
                json!({"pattern": "needle", "include": ["*.rs"]}),
                vec!["src/lib.rs:1", "src/lib.rs:2", "src/sub/deep.rs:1"],
            ),
            (
                json!({"pattern": "needle", "include": ["*.rs"], "exclude": ["sub"]}),
                vec!["src/lib.rs:1", "src/lib.rs:2"],
            ),
            (
                json!({"pattern": "needle", "exclude": ["src/**", "*.txt"]}),
                Vec::<&str>::new(),
            ),
            // Hidden entries only on request; ignored and binary files never.
            (
                json!({"pattern": "needle", "include_hidden": true, "include": ["*.txt", ".dotfile"]}),
                vec![
                    ".dotfile:1",
                    ".hidden/h.txt:1",
                    "a.txt:1",
                    "a.txt:2",
                    "src-b.txt:1",
                ],
            ),
            // A single file as the path.
            (
                json!({"pattern": "needle", "path": "src/lib.rs"}),
                vec!["lib.rs:1", "lib.rs:2"],
            ),
        ];
        for (args, expected) in cases {
            check(&tree, args, &expected);
        }
    }

    #[test]
    fn pages_fit_the_budget_and_the_cursors_reach_every_match_once() {
        let tree = Tree::new("pages");
        let line = format!("fn hit() {{ {} }}\n", "x".repeat(200));
        for d in 0..12 {
            for f in 0..10 {
                tree.write(&format!("d{d}/f-{f}.rs"), line.repeat(7));
            }
        }
        let (mut seen, mut cursor) = (Vec::new(), None::<String>);
        let mut pages = 0;
        loop {
            let mut args = json!({"pattern": "fn ", "max_results": 2000, "context_lines": 1});
            if let Some(c) = &cursor {
                args["cursor"] = c.clone().into();
            }
            let found = run(&tree, args).expect("search");
            let size =
                coremcp_plugin_sdk::budget::chars(&serde_json::to_value(&found).expect("json"));
            assert!(
                size <= coremcp_plugin_sdk::budget::result_budget(),
                "{size}"
            );
            assert_eq!(found.truncated, found.next_cursor.is_some());
            seen.extend(places(&found));
            pages += 1;
            match found.next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        assert!(pages > 3, "{pages}");
        let mut expected: Vec<String> = Vec::new();
        for d in 0..12 {
            for f in 0..10 {
                for l in 1..=7 {
                    expected.push(format!("d{d}/f-{f}.rs:{l}"));
                }
            }
        }
        expected.sort_by(|a, b| {
            let (pa, la) = a.rsplit_once(':').expect("place");
            let (pb, lb) = b.rsplit_once(':').expect("place");
            walk::path_order(pa, pb).then(la.parse::<u32>().ok().cmp(&lb.parse::<u32>().ok()))
        });
        assert_eq!(seen, expected);
        let bad = run(&tree, json!({"pattern": "fn", "cursor": "zz"})).expect_err("bad cursor");
        assert!(bad.message.contains("\"cursor\""), "{bad}");
    }

    #[test]
    fn context_lines_surround_each_match() {
        let tree = Tree::new("context");
        tree.write("f.txt", "l1\nl2 hit\nl3\nl4\nl5 hit\nl6\n");
        let found = run(&tree, json!({"pattern": "hit", "context_lines": 2})).expect("search");
        let got: Vec<(u64, Vec<String>, Vec<String>)> = found
            .matches
            .iter()
            .map(|h| (h.line, h.before.clone(), h.after.clone()))
            .collect();
        let s = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            got,
            vec![
                (2, s(&["l1"]), s(&["l3", "l4"])),
                (5, s(&["l3", "l4"]), s(&["l6"])),
            ]
        );
        assert_eq!(found.matches[0].text, "l2 hit");
        let none = run(&tree, json!({"pattern": "hit"})).expect("search");
        assert!(none
            .matches
            .iter()
            .all(|h| h.before.is_empty() && h.after.is_empty()));
    }

    #[test]
    fn max_results_keeps_the_first_matches_in_path_order() {
        let tree = Tree::new("max");
        for d in ["c", "a", "b"] {
            for f in ["2", "1"] {
                tree.write(&format!("{d}/{f}.txt"), "hit\nmiss\nhit\nhit\n");
            }
        }
        // 6 files × 3 matches = 18.
        let cases = [
            (
                4,
                true,
                vec!["a/1.txt:1", "a/1.txt:3", "a/1.txt:4", "a/2.txt:1"],
            ),
            (3, true, vec!["a/1.txt:1", "a/1.txt:3", "a/1.txt:4"]),
            (17, true, Vec::new()),
            (18, false, Vec::new()),
            (2000, false, Vec::new()),
        ];
        for (max, truncated, first) in cases {
            let found = run(&tree, json!({"pattern": "hit", "max_results": max})).expect("search");
            assert_eq!(found.truncated, truncated, "max {max}");
            assert_eq!(found.matches.len(), max.min(18), "max {max}");
            assert_eq!(places(&found)[..first.len()], first[..], "max {max}");
            let mut sorted = found.matches.clone();
            sorted.sort_by(|a, b| walk::path_order(&a.path, &b.path).then(a.line.cmp(&b.line)));
            assert_eq!(sorted, found.matches, "sorted by path and line");
        }
        // The same call twice gives the same answer.
        let one = run(&tree, json!({"pattern": "hit", "max_results": 7})).expect("search");
        let two = run(&tree, json!({"pattern": "hit", "max_results": 7})).expect("search");
        assert_eq!(one.matches, two.matches);
        assert_eq!(one.counts.files_matched, 3);
    }

    #[test]
    fn long_lines_are_cut_and_bad_input_is_refused() {
        let tree = Tree::new("bad");
        tree.write(
            "long.txt",
            format!("{}needle{}\n", "x".repeat(400), "y".repeat(400)),
        );
        let found = run(&tree, json!({"pattern": "needle"})).expect("search");
        let text = &found.matches[0].text;
        assert_eq!(text.chars().count(), MAX_LINE_CHARS + 1);
        assert!(text.ends_with('…'));

        let err = run(&tree, json!({"pattern": "a(b"})).expect_err("bad regex");
        assert_eq!(err.code.as_str(), codes::INVALID_ARGUMENTS);
        assert!(
            err.message.contains("regex") && err.message.contains("unclosed group"),
            "{err}"
        );
        let err = run(&tree, json!({"pattern": "x", "include": ["a["]})).expect_err("bad glob");
        assert_eq!(err.code.as_str(), codes::INVALID_ARGUMENTS);
    }

    #[test]
    fn paths_and_walks_stay_inside_the_roots() {
        let tree = Tree::new("escape");
        tree.write("in.txt", "needle inside\n")
            .symlink(&tree.outside(), "out")
            .symlink(&tree.outside().join("secret.txt"), "secret-link.txt")
            .symlink(&tree.root().join("loop2"), "loop1")
            .symlink(&tree.root().join("loop1"), "loop2");
        // The walk does not follow symlinks: nothing from outside shows up.
        let found =
            run(&tree, json!({"pattern": "needle", "include_hidden": true})).expect("search");
        assert_eq!(places(&found), ["in.txt:1"]);
        let outside = tree.outside().display().to_string();
        let cases = [
            (
                json!({"pattern": "x", "path": "../outside"}),
                "\"..\" is not allowed",
            ),
            (
                json!({"pattern": "x", "path": outside}),
                "an absolute path outside the roots",
            ),
            (
                json!({"pattern": "x", "path": "out"}),
                "leads outside the roots",
            ),
            (
                json!({"pattern": "x", "path": "secret-link.txt"}),
                "leads outside the roots",
            ),
            (json!({"pattern": "x", "path": "loop1"}), "a symlink loop"),
        ];
        for (args, needle) in cases {
            let err = run(&tree, args.clone()).expect_err("refused");
            assert!(err.message.contains(needle), "{args}: {err}");
        }
    }

    #[test]
    fn a_cancelled_call_stops() {
        let tree = sample();
        let params = coremcp_plugin_sdk::testing::parse::<Params>(json!({"pattern": "needle"}))
            .expect("params");
        let err = search(&tree.roots(), &params, &AtomicBool::new(true)).expect_err("cancelled");
        assert_eq!(err.code.as_str(), codes::CANCELLED);
    }
}
