//! YAML front matter: splitting a document into front matter and body, reading the front matter
//! as JSON, editing it, and writing it back with untouched keys kept byte for byte.
//!
//! Design: values are parsed with `serde_norway` (the maintained fork of `serde_yaml` 0.9, same
//! API, libyaml-based, so real YAML — quoting, block scalars, nesting, lists — is read right and
//! its errors carry positions). A YAML library alone would re-serialise the whole front matter on
//! every write and lose comments, quoting style and layout, so on top of it the front matter is
//! cut into one raw text block per top-level key (a key line at column 0 plus its continuation
//! lines). A block is trusted only when parsing it alone gives exactly that key and value, in the
//! same order as the whole parse; otherwise (anchors, flow style, odd indentation) every key is
//! re-serialised. Unchanged keys are written back from their raw block, changed keys are
//! re-serialised in place, new keys are appended; the result is parsed again and compared with
//! the intended keys and values, and re-serialised whole if anything differs.
//!
//! Invariants:
//! - A document starts with front matter exactly when its first line is `---`; the front matter
//!   ends at the next line that is `---` or `...`. An opening line without a closing one, YAML
//!   that does not parse, and YAML that is not a mapping are [`Malformed`], with a line number
//!   counted in the whole file.
//! - Key order is kept; unknown keys are never dropped.
//! - A rendered front matter always parses back to exactly the keys and values it was given.

use std::fmt;

use serde_json::{Map, Value as Json};
use serde_norway::{Mapping, Value as Yaml};

/// Front matter that cannot be read; documents carrying it are never rewritten.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed {
    /// 1-based line in the whole file.
    pub line: usize,
    pub message: String,
}

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "malformed front matter at line {}: {}",
            self.line, self.message
        )
    }
}

/// A document cut into its front matter (if any) and its body.
#[derive(Debug, Clone)]
pub struct Document<'a> {
    pub front: Option<FrontMatter>,
    /// docs_write takes the body from its caller and reads only the front matter.
    #[cfg_attr(not(feature = "docs-read"), allow(dead_code))]
    pub body: &'a str,
}

/// One top-level key of the front matter.
#[derive(Debug, Clone)]
struct Entry {
    key: Yaml,
    value: Yaml,
    /// The key's text as found in the file, while it is unchanged and trusted.
    #[cfg_attr(not(feature = "docs-write"), allow(dead_code))]
    raw: Option<String>,
}

/// The front matter of a document: its keys in order, with their original text where known.
#[derive(Debug, Clone, Default)]
pub struct FrontMatter {
    /// Comment and blank lines before the first key.
    #[cfg_attr(not(feature = "docs-write"), allow(dead_code))]
    preamble: String,
    entries: Vec<Entry>,
}

/// Parses a whole document. Text without an opening `---` line has no front matter.
pub fn parse(text: &str) -> Result<Document<'_>, Malformed> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let Some(first) = lines.next() else {
        return Ok(Document {
            front: None,
            body: text,
        });
    };
    if !is_fence(first, false) {
        return Ok(Document {
            front: None,
            body: text,
        });
    }
    let mut offset = first.len();
    for line in lines {
        if is_fence(line, true) {
            let yaml = &text[first.len()..offset];
            let rest = &text[offset + line.len()..];
            // The blank line that separates front matter from the body belongs to neither.
            let body = rest
                .strip_prefix("\r\n")
                .or_else(|| rest.strip_prefix('\n'))
                .unwrap_or(rest);
            return Ok(Document {
                front: Some(FrontMatter::parse(yaml, 2)?),
                body,
            });
        }
        offset += line.len();
    }
    Err(Malformed {
        line: 1,
        message: "the opening --- has no closing --- line".to_owned(),
    })
}

/// Whether `line` is `---` (or, closing, `...`), ignoring trailing whitespace.
fn is_fence(line: &str, closing: bool) -> bool {
    let line = line.trim_end();
    line == "---" || (closing && line == "...")
}

/// A whole document: the front matter between `---` lines, a blank line, then the body.
#[cfg(feature = "docs-write")]
pub fn compose(front: &FrontMatter, body: &str) -> Result<String, String> {
    let yaml = front.render()?;
    let mut out = String::with_capacity(yaml.len() + body.len() + 10);
    out.push_str("---\n");
    out.push_str(&yaml);
    out.push_str("---\n\n");
    out.push_str(body);
    Ok(out)
}

impl FrontMatter {
    /// Parses front matter text whose first line is line `first_line` of the file.
    fn parse(yaml: &str, first_line: usize) -> Result<Self, Malformed> {
        let mapping = parse_mapping(yaml, first_line)?;
        let (preamble, blocks) = split_blocks(yaml);
        let trusted = blocks.len() == mapping.len()
            && blocks.iter().zip(&mapping).all(|(block, (key, value))| {
                serde_norway::from_str::<Yaml>(block).is_ok_and(|parsed| match parsed {
                    Yaml::Mapping(one) => {
                        one.len() == 1 && one.iter().all(|(k, v)| k == key && v == value)
                    }
                    _ => false,
                })
            });
        let entries = mapping
            .into_iter()
            .enumerate()
            .map(|(i, (key, value))| Entry {
                key,
                value,
                raw: trusted.then(|| blocks[i].to_owned()),
            })
            .collect();
        Ok(Self {
            preamble: if trusted {
                preamble.to_owned()
            } else {
                String::new()
            },
            entries,
        })
    }

    /// The keys in order, as text.
    #[cfg(test)]
    pub fn keys(&self) -> Vec<String> {
        self.entries.iter().map(|e| key_text(&e.key)).collect()
    }

    /// The front matter as a JSON object (YAML tags dropped, non-text keys written as YAML).
    pub fn to_json(&self) -> Map<String, Json> {
        self.entries
            .iter()
            .map(|e| (key_text(&e.key), yaml_to_json(&e.value)))
            .collect()
    }
}

#[cfg(feature = "docs-write")]
impl FrontMatter {
    /// The value of a top-level key.
    pub fn get(&self, key: &str) -> Option<&Yaml> {
        self.entries
            .iter()
            .find(|e| e.key.as_str() == Some(key))
            .map(|e| &e.value)
    }

    /// Renders the front matter text (without the `---` lines); see the module doc. The text
    /// always parses back to exactly these keys and values, or this is an error.
    pub fn render(&self) -> Result<String, String> {
        let mut out = self.preamble.clone();
        for entry in &self.entries {
            match &entry.raw {
                Some(raw) => out.push_str(raw),
                None => out.push_str(&entry_yaml(&entry.key, &entry.value)?),
            }
        }
        if self.parses_back(&out) {
            return Ok(out);
        }
        let whole: Mapping = self
            .entries
            .iter()
            .map(|e| (e.key.clone(), e.value.clone()))
            .collect();
        let out = serde_norway::to_string(&whole).map_err(|e| e.to_string())?;
        if self.parses_back(&out) {
            return Ok(out);
        }
        Err("the new front matter would not read back as written".to_owned())
    }

    /// Whether `text` parses to exactly these keys and values, in this order.
    fn parses_back(&self, text: &str) -> bool {
        let intended = self.entries.iter().map(|e| (&e.key, &e.value));
        match serde_norway::from_str::<Yaml>(text) {
            Ok(Yaml::Mapping(m)) => m.iter().eq(intended),
            Ok(Yaml::Null) => self.entries.is_empty(),
            _ => false,
        }
    }

    /// Sets `key`: in place when it exists (its raw text kept if the value is the same), else
    /// appended.
    pub fn set(&mut self, key: &str, value: Yaml) {
        match self
            .entries
            .iter_mut()
            .find(|e| e.key.as_str() == Some(key))
        {
            Some(entry) if entry.value == value => {}
            Some(entry) => {
                entry.value = value;
                entry.raw = None;
            }
            None => self.entries.push(Entry {
                key: Yaml::String(key.to_owned()),
                value,
                raw: None,
            }),
        }
    }

    /// Adds `key` as the first key (after the leading comments). The key must be absent.
    pub fn set_first(&mut self, key: &str, value: Yaml) {
        self.entries.insert(
            0,
            Entry {
                key: Yaml::String(key.to_owned()),
                value,
                raw: None,
            },
        );
    }

    /// Removes `key`; whether it was there.
    pub fn remove(&mut self, key: &str) -> bool {
        let before = self.entries.len();
        self.entries.retain(|e| e.key.as_str() != Some(key));
        self.entries.len() != before
    }
}

/// Parses the YAML of a front matter as a mapping (empty text or only comments: no keys).
fn parse_mapping(yaml: &str, first_line: usize) -> Result<Mapping, Malformed> {
    if yaml.trim().is_empty() {
        return Ok(Mapping::new());
    }
    let parsed = serde_norway::from_str::<Yaml>(yaml).map_err(|e| {
        let message = e.to_string();
        // A repeated key is reported where its mapping starts: point at the repetition.
        let at = duplicate_line(yaml, &message)
            .or_else(|| e.location().map(|l| l.line()))
            .unwrap_or(1);
        Malformed {
            line: at + first_line - 1,
            message: shift_lines(&message, first_line - 1),
        }
    })?;
    match parsed {
        Yaml::Mapping(mapping) => Ok(mapping),
        Yaml::Null => Ok(Mapping::new()),
        other => Err(Malformed {
            line: first_line,
            message: format!(
                "front matter must be a mapping of keys to values, not {}",
                kind(&other)
            ),
        }),
    }
}

/// The line (1-based in `yaml`) of the second top-level `KEY:` when `message` reports the
/// duplicate key `KEY`.
fn duplicate_line(yaml: &str, message: &str) -> Option<usize> {
    let key = message
        .strip_prefix("duplicate entry with key \"")?
        .split('"')
        .next()?;
    let prefix = format!("{key}:");
    yaml.lines()
        .enumerate()
        .filter(|(_, line)| line.starts_with(&prefix))
        .nth(1)
        .map(|(i, _)| i + 1)
}

/// Rewrites every `line N` in a YAML error message to count from the start of the file.
fn shift_lines(message: &str, by: usize) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find("line ") {
        let (before, after) = rest.split_at(at + "line ".len());
        out.push_str(before);
        let digits = after.len() - after.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        match after[..digits].parse::<usize>() {
            Ok(n) => out.push_str(&(n + by).to_string()),
            Err(_) => out.push_str(&after[..digits]),
        }
        rest = &after[digits..];
    }
    out.push_str(rest);
    out
}

fn kind(value: &Yaml) -> &'static str {
    match value {
        Yaml::Null => "null",
        Yaml::Bool(_) => "a boolean",
        Yaml::Number(_) => "a number",
        Yaml::String(_) => "a string",
        Yaml::Sequence(_) => "a list",
        Yaml::Mapping(_) => "a mapping",
        Yaml::Tagged(_) => "a tagged value",
    }
}

/// Cuts front matter text into the lines before the first key and one block per top-level key
/// (a line starting at column 0 that is not a comment, a list item or a document marker, plus
/// the lines up to the next such line).
fn split_blocks(yaml: &str) -> (&str, Vec<&str>) {
    let mut starts = Vec::new();
    let mut offset = 0;
    for line in yaml.split_inclusive('\n') {
        let starts_key = line
            .chars()
            .next()
            .is_some_and(|c| !matches!(c, ' ' | '\t' | '\r' | '\n' | '#' | '-' | '.'));
        if starts_key {
            starts.push(offset);
        }
        offset += line.len();
    }
    let Some(&first) = starts.first() else {
        return (yaml, Vec::new());
    };
    let blocks = starts
        .iter()
        .zip(starts.iter().skip(1).chain([&yaml.len()]))
        .map(|(&from, &to)| &yaml[from..to])
        .collect();
    (&yaml[..first], blocks)
}

/// One `key: value` entry as YAML text, ending with a newline.
#[cfg(feature = "docs-write")]
fn entry_yaml(key: &Yaml, value: &Yaml) -> Result<String, String> {
    let mut one = Mapping::new();
    one.insert(key.clone(), value.clone());
    let mut text = serde_norway::to_string(&one).map_err(|e| e.to_string())?;
    if !text.ends_with('\n') {
        text.push('\n');
    }
    Ok(text)
}

/// A mapping key as text: strings as they are, anything else as its YAML.
fn key_text(key: &Yaml) -> String {
    match key {
        Yaml::String(s) => s.clone(),
        other => serde_norway::to_string(other)
            .map(|s| s.trim_end().to_owned())
            .unwrap_or_default(),
    }
}

/// A YAML value as JSON: tags are dropped, numbers that JSON cannot hold become text.
pub fn yaml_to_json(value: &Yaml) -> Json {
    match value {
        Yaml::Null => Json::Null,
        Yaml::Bool(b) => Json::Bool(*b),
        Yaml::Number(n) => {
            if let Some(i) = n.as_i64() {
                Json::from(i)
            } else if let Some(u) = n.as_u64() {
                Json::from(u)
            } else {
                n.as_f64()
                    .and_then(serde_json::Number::from_f64)
                    .map_or_else(|| Json::String(n.to_string()), Json::Number)
            }
        }
        Yaml::String(s) => Json::String(s.clone()),
        Yaml::Sequence(items) => Json::Array(items.iter().map(yaml_to_json).collect()),
        Yaml::Mapping(map) => Json::Object(
            map.iter()
                .map(|(k, v)| (key_text(k), yaml_to_json(v)))
                .collect(),
        ),
        Yaml::Tagged(tagged) => yaml_to_json(&tagged.value),
    }
}

/// A JSON value as YAML.
#[cfg(feature = "docs-write")]
pub fn json_to_yaml(value: &Json) -> Yaml {
    match value {
        Json::Null => Yaml::Null,
        Json::Bool(b) => Yaml::Bool(*b),
        Json::Number(n) => {
            if let Some(i) = n.as_i64() {
                Yaml::from(i)
            } else if let Some(u) = n.as_u64() {
                Yaml::from(u)
            } else {
                Yaml::from(n.as_f64().unwrap_or(f64::NAN))
            }
        }
        Json::String(s) => Yaml::String(s.clone()),
        Json::Array(items) => Yaml::Sequence(items.iter().map(json_to_yaml).collect()),
        Json::Object(map) => Yaml::Mapping(
            map.iter()
                .map(|(k, v)| (Yaml::String(k.clone()), json_to_yaml(v)))
                .collect(),
        ),
    }
}

/// The text of the body's first level-1 ATX heading (`# Title`) outside fenced code blocks.
#[cfg(feature = "docs-write")]
pub fn first_h1(body: &str) -> Option<String> {
    let mut fence: Option<&str> = None;
    for line in body.lines() {
        let indent = line.len() - line.trim_start_matches(' ').len();
        if indent > 3 {
            continue;
        }
        let text = line.trim_start_matches(' ');
        for marker in ["```", "~~~"] {
            if text.starts_with(marker) {
                fence = match fence {
                    None => Some(marker),
                    Some(open) if open == marker => None,
                    other => other,
                };
            }
        }
        if fence.is_some() {
            continue;
        }
        let Some(rest) = text.strip_prefix("# ").or_else(|| text.strip_prefix("#\t")) else {
            continue;
        };
        // An optional closing sequence of #s (preceded by a space) is not part of the title.
        let mut title = rest.trim();
        let unclosed = title.trim_end_matches('#');
        if unclosed.is_empty() || unclosed.ends_with([' ', '\t']) {
            title = unclosed.trim_end();
        }
        if !title.is_empty() {
            return Some(title.to_owned());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn documents_without_front_matter_are_all_body() {
        for text in ["", "# Title\n", "text\n---\nmore\n", " ---\nx: 1\n---\n"] {
            let doc = parse(text).expect("parses");
            assert!(doc.front.is_none(), "{text:?}");
            assert_eq!(doc.body, text);
        }
    }

    #[test]
    fn front_matter_is_read_as_json_with_the_body_after_it() {
        let text = "---\ntitle: \"Hello: world\"\ntags: [a, b]\nnested:\n  deep: 1.5\n  flag: yes\nlist:\n- x\n- y\nempty:\n# a comment\nwhen: 2024-05-01\n---\n\n# Hello\n\nBody.\n";
        let doc = parse(text).expect("parses");
        let front = doc.front.expect("front matter");
        assert_eq!(
            Json::Object(front.to_json()),
            json!({"title": "Hello: world", "tags": ["a", "b"],
                   "nested": {"deep": 1.5, "flag": "yes"}, "list": ["x", "y"],
                   "empty": null, "when": "2024-05-01"})
        );
        assert_eq!(
            front.keys(),
            ["title", "tags", "nested", "list", "empty", "when"]
        );
        assert_eq!(doc.body, "# Hello\n\nBody.\n");
        // CRLF files, `...` as the closing line, and no blank line before the body.
        let doc = parse("---\r\na: 1\r\n...\r\nbody\r\n").expect("parses");
        assert_eq!(
            Json::Object(doc.front.expect("front").to_json()),
            json!({"a": 1})
        );
        assert_eq!(doc.body, "body\r\n");
        // Empty front matter, or only comments.
        for text in ["---\n---\nb", "---\n# nothing yet\n---\nb"] {
            let doc = parse(text).expect("parses");
            assert!(doc.front.expect("front").to_json().is_empty(), "{text:?}");
            assert_eq!(doc.body, "b");
        }
    }

    #[test]
    fn malformed_front_matter_names_its_line_in_the_file() {
        let cases = [
            ("---\ntitle: x\nbody without a close\n", 1, "no closing ---"),
            ("---\ntitle: x\nbad: [unclosed\n---\nbody\n", 4, ""),
            ("---\na: 1\nb: 2\n  c: 3\n---\n", 4, ""),
            ("---\na: 1\na: 2\n---\n", 3, "duplicate"),
            ("---\n- just\n- a list\n---\n", 2, "must be a mapping"),
            ("---\nplain text\n---\n", 2, "must be a mapping"),
        ];
        for (text, line, needle) in cases {
            let err = parse(text).expect_err("malformed");
            assert_eq!(err.line, line, "{text:?}: {err}");
            assert!(err.message.contains(needle), "{text:?}: {err}");
            let shown = err.to_string();
            assert!(
                shown.starts_with(&format!("malformed front matter at line {line}: ")),
                "{shown}"
            );
        }
        // The positions libyaml reports inside the message count from the file's first line.
        let err = parse("---\na: 1\nb: 2\n  c: 3\n---\n").expect_err("malformed");
        assert!(err.message.contains("line 4"), "{err}");
    }

    #[cfg(feature = "docs-write")]
    #[test]
    fn untouched_front_matter_renders_byte_for_byte() {
        let yaml = "# leading comment\ntitle:   'Quoted'   # trailing\ntags:\n  - a\n  - b\nblock: |\n  line one\n  line two\nz: 1\n";
        let text = format!("---\n{yaml}---\nbody");
        let front = parse(&text).expect("parses").front.expect("front");
        assert_eq!(front.render().expect("renders"), yaml);
    }

    #[cfg(feature = "docs-write")]
    #[test]
    fn untrusted_layouts_are_rewritten_whole_and_still_parse_back() {
        // Anchors span keys, so no block parses alone: the whole front matter is re-serialised.
        let yaml = "base: &b {x: 1}\ncopy: *b\n";
        let front = parse(&format!("---\n{yaml}---\n"))
            .expect("parses")
            .front
            .expect("front");
        let rendered = front.render().expect("renders");
        let back = parse(&format!("---\n{rendered}---\n"))
            .expect("parses")
            .front
            .expect("front");
        assert_eq!(back.to_json(), front.to_json());
        assert_eq!(back.keys(), ["base", "copy"]);
        // A flow mapping as the whole front matter.
        let front = parse("---\n{b: 1, a: 2}\n---\n")
            .expect("parses")
            .front
            .expect("front");
        assert_eq!(front.keys(), ["b", "a"]);
        assert_eq!(front.render().expect("renders"), "b: 1\na: 2\n");
    }

    #[test]
    fn error_positions_shift_to_file_lines() {
        assert_eq!(
            shift_lines("bad at line 2 column 3, while parsing at line 1", 1),
            "bad at line 3 column 3, while parsing at line 2"
        );
        assert_eq!(shift_lines("no position", 5), "no position");
        assert_eq!(shift_lines("line x", 5), "line x");
    }

    #[cfg(feature = "docs-write")]
    #[test]
    fn edits_keep_order_and_the_text_of_untouched_keys() {
        let text = "---\n# comment\nzeta: 'kept as written'\ntitle: Old\nalpha:\n  - 1\n  - 2\ndrop: me\n---\n\nbody\n";
        let mut front = parse(text).expect("parses").front.expect("front");
        front.set("title", Yaml::String("New".into()));
        front.set("alpha", json_to_yaml(&json!([1, 2])));
        assert!(front.remove("drop"));
        assert!(!front.remove("absent"));
        front.set("added", json_to_yaml(&json!({"k": [true, null]})));
        assert_eq!(front.keys(), ["zeta", "title", "alpha", "added"]);
        let rendered = front.render().expect("renders");
        assert_eq!(
            rendered,
            "# comment\nzeta: 'kept as written'\ntitle: New\nalpha:\n  - 1\n  - 2\nadded:\n  k:\n  - true\n  - null\n"
        );
        front.set_first("first", Yaml::String("x".into()));
        assert_eq!(front.keys(), ["first", "zeta", "title", "alpha", "added"]);
        let composed = compose(&front, "# Body\n").expect("composes");
        let back = parse(&composed).expect("parses back");
        assert_eq!(back.body, "# Body\n");
        assert_eq!(
            Json::Object(back.front.expect("front").to_json()),
            json!({"first": "x", "zeta": "kept as written", "title": "New",
                   "alpha": [1, 2], "added": {"k": [true, null]}})
        );
    }

    #[cfg(feature = "docs-write")]
    #[test]
    fn title_comes_from_the_first_h1_outside_code() {
        let cases = [
            ("# Title\n", Some("Title")),
            ("intro\n\n## Sub\n# Real  title ##\n", Some("Real  title")),
            (
                "```\n# not a heading\n```\n# After Fence\n",
                Some("After Fence"),
            ),
            ("~~~md\n# no\n~~~\n", None),
            ("    # indented code\n", None),
            ("#hashtag\n", None),
            ("# C# tips\n", Some("C# tips")),
            ("#   \n# Second\n", Some("Second")),
            ("", None),
        ];
        for (body, want) in cases {
            assert_eq!(first_h1(body).as_deref(), want, "{body:?}");
        }
    }
}

/// Property tests (`PROPTEST_CASES` cases each; `scripts/fuzz` runs many more): no text makes
/// the parser panic, and what is rendered or edited parses back to exactly its keys and values.
#[cfg(all(test, feature = "docs-write"))]
mod fuzz {
    use super::*;
    use proptest::collection::vec;
    use proptest::prelude::*;

    fn config() -> ProptestConfig {
        ProptestConfig {
            failure_persistence: None,
            ..ProptestConfig::default()
        }
    }

    /// JSON values front matter holds: scalars, lists and small maps.
    fn value() -> impl Strategy<Value = Json> {
        let leaf = prop_oneof![
            any::<bool>().prop_map(Json::from),
            any::<i32>().prop_map(Json::from),
            "[ -~]{0,16}".prop_map(Json::from),
            "[a-z \\n:#'\"-]{0,24}".prop_map(Json::from),
        ];
        leaf.prop_recursive(2, 12, 4, |inner| {
            prop_oneof![
                vec(inner.clone(), 0..4).prop_map(Json::Array),
                vec(("[a-z]{1,6}", inner), 0..4)
                    .prop_map(|pairs| Json::Object(pairs.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #![proptest_config(config())]

        #[test]
        fn parsing_any_text_never_panics(text in "(---\n)?[ -~\n\t]{0,300}(\n---\n)?[ -~\n]{0,40}") {
            let _ = parse(&text);
        }

        #[test]
        fn what_is_rendered_parses_back(entries in vec(("[a-z_][a-z0-9_]{0,10}", value()), 0..6), body in "[ -~\n]{0,60}") {
            let mut front = FrontMatter::default();
            let mut want = Map::new();
            for (key, value) in &entries {
                front.set(key, json_to_yaml(value));
                want.insert(key.clone(), value.clone());
            }
            let text = compose(&front, &body).map_err(TestCaseError::fail)?;
            let doc = parse(&text).map_err(|m| TestCaseError::fail(format!("{m}: {text}")))?;
            let got = doc.front.map(|f| f.to_json()).unwrap_or_default();
            prop_assert_eq!(got.keys().collect::<Vec<_>>(), want.keys().collect::<Vec<_>>());
            for (key, value) in &want {
                prop_assert_eq!(yaml_to_json(&json_to_yaml(value)), got[key].clone(), "{}", text);
            }
        }

        #[test]
        fn an_edit_changes_one_key_and_keeps_the_others(
            entries in vec(("[a-z][a-z0-9]{0,6}", value()), 1..6),
            comment in "(# [a-z ]{0,20}\n)?",
            edited in value(),
        ) {
            // A document as a person writes it: one line per key, a comment before them.
            let mut yaml = comment.clone();
            let mut want = Map::new();
            for (key, value) in &entries {
                if want.contains_key(key) {
                    continue;
                }
                yaml.push_str(&format!("{key}: {value}\n"));
                want.insert(key.clone(), value.clone());
            }
            let text = format!("---\n{yaml}---\nbody\n");
            // JSON text is YAML as written, nearly always; the rare case that is not is
            // rejected (and proptest fails if that stops being rare).
            let parsed = parse(&text);
            prop_assume!(parsed.is_ok());
            let doc = parsed.map_err(|m| TestCaseError::fail(m.to_string()))?;
            let mut front = doc.front.expect("front matter");
            let before = front.to_json();
            let key = entries[0].0.clone();
            front.set(&key, json_to_yaml(&edited));
            let again = compose(&front, doc.body).map_err(TestCaseError::fail)?;
            let after = parse(&again)
                .map_err(|m| TestCaseError::fail(format!("{m}: {again}")))?
                .front
                .expect("front matter")
                .to_json();
            prop_assert_eq!(after.keys().collect::<Vec<_>>(), before.keys().collect::<Vec<_>>());
            for (k, v) in &before {
                let expected = if *k == key { yaml_to_json(&json_to_yaml(&edited)) } else { v.clone() };
                prop_assert_eq!(&after[k], &expected, "{}", again);
            }
        }
    }
}
