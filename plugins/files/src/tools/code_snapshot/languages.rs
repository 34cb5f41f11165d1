//! The languages `code_snapshot` understands and how a symbol is read out of each one's
//! tree-sitter syntax tree.
//!
//! Invariants: a file's symbols come in source order (a container before what it holds); only
//! declarations are reported, never what is inside a function body; a nested symbol names its
//! container in `parent`; signatures are one line (whitespace collapsed, at most
//! [`MAX_SIGNATURE_CHARS`] characters) and doc comments at most [`MAX_DOC_CHARS`].

use serde::Serialize;
use tree_sitter::{Node, Parser};

/// Longest signature kept; longer ones end with `…`.
pub const MAX_SIGNATURE_CHARS: usize = 300;
/// Longest doc comment kept; longer ones end with `…`.
pub const MAX_DOC_CHARS: usize = 1000;
/// Containers nested deeper than this are not descended (a guard for generated code).
const MAX_NESTING: usize = 64;

/// A language with a grammar. TypeScript covers `.ts` and `.tsx` (two grammars, one name).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Language {
    Rust,
    Python,
    TypeScript,
    Tsx,
    JavaScript,
    Go,
}

impl Language {
    /// The names the `languages` argument takes.
    pub const NAMES: [&'static str; 5] = ["rust", "python", "typescript", "javascript", "go"];

    const ALL: [Language; 6] = [
        Language::Rust,
        Language::Python,
        Language::TypeScript,
        Language::Tsx,
        Language::JavaScript,
        Language::Go,
    ];

    /// The language of a file, by extension.
    pub fn of_path(path: &str) -> Option<Self> {
        let name = path.rsplit('/').next().unwrap_or(path);
        let (_, ext) = name.rsplit_once('.')?;
        Some(match ext {
            "rs" => Language::Rust,
            "py" | "pyi" => Language::Python,
            "ts" | "mts" | "cts" => Language::TypeScript,
            "tsx" => Language::Tsx,
            "js" | "mjs" | "cjs" | "jsx" => Language::JavaScript,
            "go" => Language::Go,
            _ => return None,
        })
    }

    /// The name shown in snapshots and taken by the `languages` argument.
    pub fn name(self) -> &'static str {
        match self {
            Language::Rust => "rust",
            Language::Python => "python",
            Language::TypeScript | Language::Tsx => "typescript",
            Language::JavaScript => "javascript",
            Language::Go => "go",
        }
    }

    fn index(self) -> usize {
        Self::ALL.iter().position(|l| *l == self).unwrap_or(0)
    }

    fn grammar(self) -> tree_sitter::Language {
        match self {
            Language::Rust => tree_sitter_rust::LANGUAGE.into(),
            Language::Python => tree_sitter_python::LANGUAGE.into(),
            Language::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            Language::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
            Language::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
            Language::Go => tree_sitter_go::LANGUAGE.into(),
        }
    }
}

/// How much each symbol carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, coremcp_plugin_sdk::ArgEnum)]
pub enum Detail {
    /// Kind, name, parent and lines.
    Outline,
    /// Plus the declaration's header.
    Signatures,
    /// Plus the doc comment (or Python docstring).
    Full,
}

/// One declaration.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Symbol {
    /// `function`, `method`, `struct`, `enum`, `union`, `trait`, `impl`, `class`, `interface`,
    /// `type`, `module`, `const`, `static`, `variable` or `macro`.
    pub kind: &'static str,
    pub name: String,
    /// The name of the container (impl, trait, class, interface, module) holding it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub doc: Option<String>,
    /// 1-based, inclusive.
    pub start_line: usize,
    pub end_line: usize,
}

/// One parser per language, made on first use (one set per thread).
#[derive(Default)]
pub struct Parsers {
    parsers: [Option<Parser>; 6],
}

/// A file's outline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outline {
    pub symbols: Vec<Symbol>,
    /// Whether tree-sitter had to recover from syntax errors.
    pub syntax_errors: bool,
}

impl Parsers {
    /// Parses `source` and reads its symbols.
    pub fn outline(
        &mut self,
        language: Language,
        source: &[u8],
        detail: Detail,
    ) -> Result<Outline, String> {
        let slot = &mut self.parsers[language.index()];
        if slot.is_none() {
            let mut parser = Parser::new();
            parser
                .set_language(&language.grammar())
                .map_err(|e| format!("the {} grammar does not load: {e}", language.name()))?;
            *slot = Some(parser);
        }
        let parser = slot.as_mut().ok_or_else(|| "no parser".to_owned())?;
        let tree = parser
            .parse(source, None)
            .ok_or_else(|| "tree-sitter did not parse the file".to_owned())?;
        let root = tree.root_node();
        let mut reader = Reader {
            language,
            source,
            detail,
            symbols: Vec::new(),
        };
        reader.children(root, None, 0);
        Ok(Outline {
            symbols: reader.symbols,
            syntax_errors: root.has_error(),
        })
    }
}

/// The container a symbol sits in.
struct Parent {
    name: String,
    kind: &'static str,
}

/// What a node is to the outline.
enum Step<'t> {
    /// Not a declaration (or inside one we do not enter).
    Skip,
    /// A wrapper (`export`, a decorated definition, a declaration list): look at its children.
    Descend(Node<'t>),
    /// A declaration; `body` holds nested declarations, `parent` overrides the container name.
    Symbol {
        kind: &'static str,
        name: String,
        body: Option<Node<'t>>,
        parent: Option<String>,
    },
}

fn symbol<'t>(kind: &'static str, name: String) -> Step<'t> {
    Step::Symbol {
        kind,
        name,
        body: None,
        parent: None,
    }
}

fn container<'t>(kind: &'static str, name: String, body: Option<Node<'t>>) -> Step<'t> {
    Step::Symbol {
        kind,
        name,
        body,
        parent: None,
    }
}

/// Nodes that only wrap a declaration; a signature or a doc comment starts at them.
const WRAPPERS: &[&str] = &[
    "export_statement",
    "lexical_declaration",
    "variable_declaration",
    "ambient_declaration",
    "type_declaration",
    "const_declaration",
    "var_declaration",
];

/// Declarations whose whole text is the signature (they have no body).
const SIGNATURE_ONLY: &[&str] = &[
    "function_signature_item",
    "function_signature",
    "method_signature",
    "abstract_method_signature",
    "method_elem",
];

struct Reader<'s> {
    language: Language,
    source: &'s [u8],
    detail: Detail,
    symbols: Vec<Symbol>,
}

impl<'s> Reader<'s> {
    fn text(&self, node: Node<'_>) -> &'s str {
        node.utf8_text(self.source).unwrap_or("")
    }

    fn field_text(&self, node: Node<'_>, field: &str) -> Option<String> {
        node.child_by_field_name(field)
            .map(|n| collapse(self.text(n)))
            .filter(|s| !s.is_empty())
    }

    fn children(&mut self, node: Node<'_>, parent: Option<&Parent>, nesting: usize) {
        if nesting > MAX_NESTING {
            return;
        }
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
        for child in children {
            self.visit(child, parent, nesting);
        }
    }

    fn visit(&mut self, node: Node<'_>, parent: Option<&Parent>, nesting: usize) {
        let step = match self.language {
            Language::Rust => self.rust(node, parent),
            Language::Python => self.python(node, parent),
            Language::Go => self.go(node),
            Language::TypeScript | Language::Tsx | Language::JavaScript => {
                self.script(node, parent)
            }
        };
        match step {
            Step::Skip => {}
            Step::Descend(inner) => self.children(inner, parent, nesting + 1),
            Step::Symbol {
                kind,
                name,
                body,
                parent: own_parent,
            } => {
                let parent_name = own_parent.or_else(|| parent.map(|p| p.name.clone()));
                let symbol = self.symbol(node, kind, name.clone(), parent_name);
                self.symbols.push(symbol);
                if let Some(body) = body {
                    let me = Parent { name, kind };
                    self.children(body, Some(&me), nesting + 1);
                }
            }
        }
    }

    fn rust<'t>(&self, node: Node<'t>, parent: Option<&Parent>) -> Step<'t> {
        let name = || self.field_text(node, "name").unwrap_or_default();
        let in_type = parent.is_some_and(|p| p.kind == "impl" || p.kind == "trait");
        let body = node.child_by_field_name("body");
        match node.kind() {
            "function_item" | "function_signature_item" => {
                symbol(if in_type { "method" } else { "function" }, name())
            }
            "struct_item" => symbol("struct", name()),
            "enum_item" => symbol("enum", name()),
            "union_item" => symbol("union", name()),
            "type_item" => symbol("type", name()),
            "const_item" => symbol("const", name()),
            "static_item" => symbol("static", name()),
            "macro_definition" => symbol("macro", name()),
            "trait_item" => container("trait", name(), body),
            "mod_item" => container("module", name(), body),
            "impl_item" => {
                let ty = self.field_text(node, "type").unwrap_or_default();
                let name = match self.field_text(node, "trait") {
                    Some(tr) => format!("{tr} for {ty}"),
                    None => ty,
                };
                container("impl", name, body)
            }
            "foreign_mod_item" => body.map_or(Step::Skip, Step::Descend),
            _ => Step::Skip,
        }
    }

    fn python<'t>(&self, node: Node<'t>, parent: Option<&Parent>) -> Step<'t> {
        let name = || self.field_text(node, "name").unwrap_or_default();
        match node.kind() {
            "function_definition" => {
                let in_class = parent.is_some_and(|p| p.kind == "class");
                symbol(if in_class { "method" } else { "function" }, name())
            }
            "class_definition" => container("class", name(), node.child_by_field_name("body")),
            "decorated_definition" => Step::Descend(node),
            _ => Step::Skip,
        }
    }

    fn go<'t>(&self, node: Node<'t>) -> Step<'t> {
        let name = || self.field_text(node, "name").unwrap_or_default();
        match node.kind() {
            "package_clause" => {
                let mut cursor = node.walk();
                let name = node
                    .named_children(&mut cursor)
                    .next()
                    .map(|n| self.text(n).to_owned())
                    .unwrap_or_default();
                symbol("module", name)
            }
            "function_declaration" => symbol("function", name()),
            "method_declaration" => {
                let receiver = node
                    .child_by_field_name("receiver")
                    .and_then(|list| {
                        let mut cursor = list.walk();
                        let first = list.named_children(&mut cursor).next();
                        first
                    })
                    .and_then(|param| param.child_by_field_name("type"))
                    .map(|ty| {
                        let text = self.text(ty).trim_start_matches('*');
                        text.split('[').next().unwrap_or(text).trim().to_owned()
                    });
                Step::Symbol {
                    kind: "method",
                    name: name(),
                    body: None,
                    parent: receiver,
                }
            }
            "type_declaration" | "const_declaration" | "var_declaration" | "var_spec_list" => {
                Step::Descend(node)
            }
            "type_spec" | "type_alias" => {
                let ty = node.child_by_field_name("type");
                match ty.map(|t| t.kind()) {
                    Some("struct_type") => symbol("struct", name()),
                    Some("interface_type") => container("interface", name(), ty),
                    _ => symbol("type", name()),
                }
            }
            "const_spec" | "var_spec" => {
                let mut cursor = node.walk();
                let names: Vec<&str> = node
                    .children_by_field_name("name", &mut cursor)
                    .map(|n| self.text(n))
                    .collect();
                let kind = if node.kind() == "const_spec" {
                    "const"
                } else {
                    "variable"
                };
                symbol(kind, names.join(", "))
            }
            "method_elem" => symbol("method", name()),
            _ => Step::Skip,
        }
    }

    fn script<'t>(&self, node: Node<'t>, parent: Option<&Parent>) -> Step<'t> {
        let name = || self.field_text(node, "name").unwrap_or_default();
        let body = node.child_by_field_name("body");
        match node.kind() {
            "function_declaration" | "generator_function_declaration" | "function_signature" => {
                symbol("function", name())
            }
            "class_declaration" | "abstract_class_declaration" => container("class", name(), body),
            "method_definition" | "method_signature" | "abstract_method_signature" => {
                symbol("method", name())
            }
            "interface_declaration" => container("interface", name(), body),
            "type_alias_declaration" => symbol("type", name()),
            "enum_declaration" => symbol("enum", name()),
            "internal_module" | "module" => container("module", name(), body),
            "export_statement" | "ambient_declaration" | "expression_statement" => {
                Step::Descend(node)
            }
            "lexical_declaration" | "variable_declaration"
                if parent.is_none_or(|p| p.kind == "module") =>
            {
                Step::Descend(node)
            }
            "variable_declarator" => {
                let value = node.child_by_field_name("value").map(|v| v.kind());
                let declaration = node.parent();
                let is_const = declaration
                    .and_then(|d| d.child_by_field_name("kind"))
                    .is_some_and(|k| self.text(k) == "const");
                let kind = match value {
                    Some(
                        "arrow_function"
                        | "function_expression"
                        | "function"
                        | "generator_function",
                    ) => "function",
                    _ if is_const => "const",
                    _ => "variable",
                };
                symbol(kind, name())
            }
            _ => Step::Skip,
        }
    }

    fn symbol(
        &self,
        node: Node<'_>,
        kind: &'static str,
        name: String,
        parent: Option<String>,
    ) -> Symbol {
        let start = node.start_position();
        let end = node.end_position();
        // A node ending at column 0 ends with the previous line's newline.
        let end_row = if end.column == 0 && end.row > start.row {
            end.row - 1
        } else {
            end.row
        };
        let signature = (self.detail != Detail::Outline).then(|| self.signature(node));
        let doc = (self.detail == Detail::Full)
            .then(|| self.doc(node))
            .flatten();
        Symbol {
            kind,
            name,
            parent,
            signature: signature.filter(|s| !s.is_empty()),
            doc,
            start_line: start.row + 1,
            end_line: end_row + 1,
        }
    }

    /// The outermost wrapper (`export`, `const …`) starting on the declaration's line.
    fn anchor<'t>(&self, node: Node<'t>) -> Node<'t> {
        let mut anchor = node;
        while let Some(up) = anchor.parent() {
            if WRAPPERS.contains(&up.kind())
                && up.start_position().row == anchor.start_position().row
            {
                anchor = up;
            } else {
                break;
            }
        }
        anchor
    }

    /// The declaration's header: from the anchor to the body (or the end of its first line).
    fn signature(&self, node: Node<'_>) -> String {
        let start = self.anchor(node).start_byte();
        let body = node.child_by_field_name("body").or_else(|| {
            node.child_by_field_name("value")
                .and_then(|v| v.child_by_field_name("body"))
        });
        let end = match body {
            Some(body) if body.start_byte() > start => body.start_byte(),
            _ if SIGNATURE_ONLY.contains(&node.kind()) => node.end_byte(),
            _ => {
                let rest = &self.source[start..node.end_byte().max(start)];
                start + rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len())
            }
        };
        let text = String::from_utf8_lossy(&self.source[start..end.max(start)]);
        let header = collapse(&text);
        let header = header
            .trim_end_matches(['{', ':', ';'])
            .trim_end()
            .to_owned();
        cut(header, MAX_SIGNATURE_CHARS)
    }

    /// The doc comment before a declaration, or a Python docstring.
    fn doc(&self, node: Node<'_>) -> Option<String> {
        if self.language == Language::Python {
            let first = node
                .child_by_field_name("body")
                .and_then(|b| b.named_child(0))
                .filter(|s| s.kind() == "expression_statement")
                .and_then(|s| s.named_child(0))
                .filter(|s| s.kind() == "string")?;
            let text = self.text(first);
            let text = text.trim_start_matches(['r', 'R', 'u', 'U', 'b', 'B', 'f', 'F']);
            let quotes: &[&str] = &["\"\"\"", "'''", "\"", "'"];
            let inner = quotes
                .iter()
                .find_map(|q| text.strip_prefix(q).and_then(|t| t.strip_suffix(q)))
                .unwrap_or(text);
            return tidy(inner.lines().map(str::trim));
        }
        let mut lines: Vec<String> = Vec::new();
        let mut next_row = self.anchor(node).start_position().row;
        let mut sibling = self.anchor(node).prev_sibling();
        while let Some(prev) = sibling {
            sibling = prev.prev_sibling();
            let end = prev.end_position();
            let end_row = if end.column == 0 && end.row > prev.start_position().row {
                end.row - 1
            } else {
                end.row
            };
            if end_row + 1 < next_row {
                break;
            }
            next_row = prev.start_position().row;
            match prev.kind() {
                "attribute_item" | "decorator" => continue,
                "line_comment" | "block_comment" | "comment" => {}
                _ => break,
            }
            let text = self.text(prev).trim();
            let cleaned: Vec<String> = match self.language {
                Language::Rust if text.starts_with("///") && !text.starts_with("////") => {
                    vec![strip_marker(text, "///")]
                }
                Language::Go if text.starts_with("//") => vec![strip_marker(text, "//")],
                _ if text.starts_with("/**") && !text.starts_with("/**/") => block_lines(text),
                _ => break,
            };
            for line in cleaned.into_iter().rev() {
                lines.push(line);
            }
        }
        lines.reverse();
        tidy(lines.iter().map(String::as_str))
    }
}

fn strip_marker(line: &str, marker: &str) -> String {
    let rest = line.strip_prefix(marker).unwrap_or(line);
    rest.strip_prefix(' ').unwrap_or(rest).trim_end().to_owned()
}

fn block_lines(text: &str) -> Vec<String> {
    let inner = text
        .strip_prefix("/**")
        .unwrap_or(text)
        .strip_suffix("*/")
        .unwrap_or(text);
    inner
        .lines()
        .map(|l| {
            let l = l.trim();
            let l = l.strip_prefix('*').unwrap_or(l);
            l.strip_prefix(' ').unwrap_or(l).trim_end().to_owned()
        })
        .collect()
}

/// Joins doc lines, dropping blank lines at either end; `None` when nothing is left.
fn tidy<'a>(lines: impl Iterator<Item = &'a str>) -> Option<String> {
    let lines: Vec<&str> = lines.collect();
    let first = lines.iter().position(|l| !l.trim().is_empty())?;
    let last = lines.iter().rposition(|l| !l.trim().is_empty())?;
    Some(cut(lines[first..=last].join("\n"), MAX_DOC_CHARS))
}

/// Whitespace runs become one space; the ends are trimmed.
fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// At most `max` characters, with `…` when cut.
fn cut(text: String, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(kind, name, parent, start_line, end_line)`.
    type Row<'a> = (&'a str, &'a str, Option<&'a str>, usize, usize);

    fn outline(language: Language, source: &str, detail: Detail) -> Vec<Symbol> {
        let outline = Parsers::default()
            .outline(language, source.as_bytes(), detail)
            .expect("parses");
        assert!(
            !outline.syntax_errors,
            "{language:?} sample has syntax errors"
        );
        outline.symbols
    }

    fn check(language: Language, source: &str, expected: &[Row<'_>]) {
        let got = outline(language, source, Detail::Outline);
        let rows: Vec<Row<'_>> = got
            .iter()
            .map(|s| {
                assert!(
                    s.signature.is_none() && s.doc.is_none(),
                    "outline is bare: {s:?}"
                );
                (
                    s.kind,
                    s.name.as_str(),
                    s.parent.as_deref(),
                    s.start_line,
                    s.end_line,
                )
            })
            .collect();
        assert_eq!(rows, expected, "{language:?}");
    }

    /// A symbol's name and one of its texts.
    type Pair = (String, String);

    /// `name → signature` and `name → doc` for the symbols that have one.
    fn headers(language: Language, source: &str) -> (Vec<Pair>, Vec<Pair>) {
        let symbols = outline(language, source, Detail::Full);
        let signatures = symbols
            .iter()
            .filter_map(|s| Some((s.name.clone(), s.signature.clone()?)))
            .collect();
        let docs = symbols
            .iter()
            .filter_map(|s| Some((s.name.clone(), s.doc.clone()?)))
            .collect();
        (signatures, docs)
    }

    fn has(pairs: &[Pair], name: &str, value: &str) -> bool {
        pairs.iter().any(|(n, v)| n == name && v == value)
    }

    const RUST: &str = r##"//! Crate doc.
use std::fmt;

/// A point.
/// Two lines.
#[derive(Debug)]
pub struct Point<T> {
    x: T,
}

pub enum Shape { A, B }

pub trait Area {
    fn area(&self) -> f64;
    fn name(&self) -> String {
        String::new()
    }
}

impl<T> fmt::Display for Point<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn inner() {}
        Ok(())
    }
}

mod nested {
    pub const MAX: usize = 3;
    pub fn helper(
        a: u32,
        b: u32,
    ) -> u32 where u32: Copy {
        a + b
    }
}

static COUNT: u32 = 0;
type Alias = Vec<u8>;
macro_rules! m { () => {} }
"##;
    const PYTHON: &str = r##""""Module doc."""
import os

MAX = 3

class Greeter(Base):
    """Greets people."""

    def __init__(self, name):
        self.name = name

    @staticmethod
    def hello(a: int) -> str:
        def inner():
            pass
        return "hi"

def top(x, y=2):
    return x
"##;
    const GO: &str = r##"package main

import "fmt"

// Greeter greets.
type Greeter struct {
	Name string
}

type Speaker interface {
	Speak() string
}

type ID = int

const (
	A = 1
	B = 2
)

var x, y = 1, 2

// Speak says hello.
func (g *Greeter) Speak() string {
	return "hi"
}

func main() {
	fmt.Println("x")
}
"##;
    const TYPESCRIPT: &str = r##"import { x } from "y";

/** Shape of a thing. */
export interface Shape {
  area(): number;
  name: string;
}

export type Id = string | number;

export enum Color { Red, Green }

export abstract class Base<T> implements Shape {
  constructor(private readonly id: Id) {}
  area(): number {
    return 0;
  }
  abstract name: string;
}

export function make(id: Id): Base<number> {
  return null as any;
}

export const double = (n: number): number => n * 2;
const LIMIT = 10;

namespace Util {
  export function help() {}
}
"##;
    const TSX: &str = r##"export function View(props: { title: string }) {
  return <div>{props.title}</div>;
}
export default class Page extends React.Component {
  render() { return <View title="x" />; }
}
"##;
    const JAVASCRIPT: &str = r##"// plain comment
function add(a, b) { return a + b; }
class Counter {
  increment() { this.n++; }
  static create() { return new Counter(); }
}
let state = 0;
var legacy = function () {};
module.exports = { add };
"##;

    #[test]
    fn rust_items_impls_traits_and_modules() {
        check(
            Language::Rust,
            RUST,
            &[
                ("struct", "Point", None, 7, 9),
                ("enum", "Shape", None, 11, 11),
                ("trait", "Area", None, 13, 18),
                ("method", "area", Some("Area"), 14, 14),
                ("method", "name", Some("Area"), 15, 17),
                ("impl", "fmt::Display for Point<T>", None, 20, 25),
                ("method", "fmt", Some("fmt::Display for Point<T>"), 21, 24),
                ("module", "nested", None, 27, 35),
                ("const", "MAX", Some("nested"), 28, 28),
                ("function", "helper", Some("nested"), 29, 34),
                ("static", "COUNT", None, 37, 37),
                ("type", "Alias", None, 38, 38),
                ("macro", "m", None, 39, 39),
            ],
        );
        let (signatures, docs) = headers(Language::Rust, RUST);
        assert!(
            has(&signatures, "Point", "pub struct Point<T>"),
            "{signatures:?}"
        );
        assert!(
            has(&signatures, "area", "fn area(&self) -> f64"),
            "{signatures:?}"
        );
        assert!(
            has(
                &signatures,
                "helper",
                "pub fn helper( a: u32, b: u32, ) -> u32 where u32: Copy"
            ),
            "{signatures:?}"
        );
        assert!(has(
            &signatures,
            "fmt::Display for Point<T>",
            "impl<T> fmt::Display for Point<T>"
        ));
        assert_eq!(
            docs,
            [("Point".to_owned(), "A point.\nTwo lines.".to_owned())]
        );
    }

    #[test]
    fn python_classes_methods_and_docstrings() {
        check(
            Language::Python,
            PYTHON,
            &[
                ("class", "Greeter", None, 6, 16),
                ("method", "__init__", Some("Greeter"), 9, 10),
                ("method", "hello", Some("Greeter"), 13, 16),
                ("function", "top", None, 18, 19),
            ],
        );
        let (signatures, docs) = headers(Language::Python, PYTHON);
        assert!(
            has(&signatures, "Greeter", "class Greeter(Base)"),
            "{signatures:?}"
        );
        assert!(
            has(&signatures, "hello", "def hello(a: int) -> str"),
            "{signatures:?}"
        );
        assert_eq!(docs, [("Greeter".to_owned(), "Greets people.".to_owned())]);
    }

    #[test]
    fn go_packages_types_methods_and_specs() {
        check(
            Language::Go,
            GO,
            &[
                ("module", "main", None, 1, 1),
                ("struct", "Greeter", None, 6, 8),
                ("interface", "Speaker", None, 10, 12),
                ("method", "Speak", Some("Speaker"), 11, 11),
                ("type", "ID", None, 14, 14),
                ("const", "A", None, 17, 17),
                ("const", "B", None, 18, 18),
                ("variable", "x, y", None, 21, 21),
                ("method", "Speak", Some("Greeter"), 24, 26),
                ("function", "main", None, 28, 30),
            ],
        );
        let (signatures, docs) = headers(Language::Go, GO);
        assert!(
            has(&signatures, "Greeter", "type Greeter struct"),
            "{signatures:?}"
        );
        assert!(
            has(&signatures, "Speaker", "type Speaker interface"),
            "{signatures:?}"
        );
        assert!(
            has(&signatures, "Speak", "func (g *Greeter) Speak() string"),
            "{signatures:?}"
        );
        assert!(has(&docs, "Greeter", "Greeter greets."), "{docs:?}");
        assert!(has(&docs, "Speak", "Speak says hello."), "{docs:?}");
        assert_eq!(docs.len(), 2, "{docs:?}");
    }

    #[test]
    fn typescript_and_tsx_declarations() {
        check(
            Language::TypeScript,
            TYPESCRIPT,
            &[
                ("interface", "Shape", None, 4, 7),
                ("method", "area", Some("Shape"), 5, 5),
                ("type", "Id", None, 9, 9),
                ("enum", "Color", None, 11, 11),
                ("class", "Base", None, 13, 19),
                ("method", "constructor", Some("Base"), 14, 14),
                ("method", "area", Some("Base"), 15, 17),
                ("function", "make", None, 21, 23),
                ("function", "double", None, 25, 25),
                ("const", "LIMIT", None, 26, 26),
                ("module", "Util", None, 28, 30),
                ("function", "help", Some("Util"), 29, 29),
            ],
        );
        check(
            Language::Tsx,
            TSX,
            &[
                ("function", "View", None, 1, 3),
                ("class", "Page", None, 4, 6),
                ("method", "render", Some("Page"), 5, 5),
            ],
        );
        let (signatures, docs) = headers(Language::TypeScript, TYPESCRIPT);
        assert!(
            has(
                &signatures,
                "Base",
                "export abstract class Base<T> implements Shape"
            ),
            "{signatures:?}"
        );
        assert!(
            has(
                &signatures,
                "double",
                "export const double = (n: number): number =>"
            ),
            "{signatures:?}"
        );
        assert!(has(
            &signatures,
            "make",
            "export function make(id: Id): Base<number>"
        ));
        assert_eq!(docs, [("Shape".to_owned(), "Shape of a thing.".to_owned())]);
    }

    #[test]
    fn javascript_functions_classes_and_bindings() {
        check(
            Language::JavaScript,
            JAVASCRIPT,
            &[
                ("function", "add", None, 2, 2),
                ("class", "Counter", None, 3, 6),
                ("method", "increment", Some("Counter"), 4, 4),
                ("method", "create", Some("Counter"), 5, 5),
                ("variable", "state", None, 7, 7),
                ("function", "legacy", None, 8, 8),
            ],
        );
        let (signatures, docs) = headers(Language::JavaScript, JAVASCRIPT);
        assert!(
            has(&signatures, "add", "function add(a, b)"),
            "{signatures:?}"
        );
        assert!(docs.is_empty(), "a plain comment is no doc: {docs:?}");
    }

    #[test]
    fn languages_by_extension() {
        let cases = [
            ("a/b.rs", Some(Language::Rust)),
            ("x.pyi", Some(Language::Python)),
            ("x.ts", Some(Language::TypeScript)),
            ("x.tsx", Some(Language::Tsx)),
            ("x.mjs", Some(Language::JavaScript)),
            ("x.jsx", Some(Language::JavaScript)),
            ("x.go", Some(Language::Go)),
            ("Makefile", None),
            ("x.md", None),
            ("dir.rs/file", None),
        ];
        for (path, expected) in cases {
            assert_eq!(Language::of_path(path), expected, "{path}");
        }
        assert_eq!(Language::Tsx.name(), "typescript");
    }

    #[test]
    fn signatures_and_docs_are_bounded() {
        let long = format!("fn f({}) {{}}\n", "a: u8, ".repeat(100));
        let symbols = outline(Language::Rust, &long, Detail::Signatures);
        let signature = symbols[0].signature.as_deref().expect("signature");
        assert_eq!(signature.chars().count(), MAX_SIGNATURE_CHARS + 1);
        assert!(signature.ends_with('…'));
    }
}
