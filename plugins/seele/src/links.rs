//! Links parsed from a node's Markdown when it is written: inline links `[text](target)` and
//! reference definitions `[label]: target` outside fenced code, as `references`; and the paths
//! the front matter's `supersedes` names (a string or a list of strings), as `supersedes`.
//!
//! Invariants: only links into the tree are kept (see [`crate::path::resolve_link`]), each
//! (target, rel) once, in the order they appear; a node never links to itself.

use serde_json::{Map, Value};

use crate::path::resolve_link;

/// How a node refers to another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rel {
    References,
    Supersedes,
}

impl Rel {
    pub fn as_str(self) -> &'static str {
        match self {
            Rel::References => "references",
            Rel::Supersedes => "supersedes",
        }
    }
}

/// The links of the node at `path` with this body and front matter.
pub fn parse(path: &str, body: &str, front_matter: &Map<String, Value>) -> Vec<(String, Rel)> {
    let mut out: Vec<(String, Rel)> = Vec::new();
    let mut add = |target: &str, rel: Rel| {
        if let Some(to) = resolve_link(path, target) {
            if to != path && !out.iter().any(|(t, r)| *t == to && *r == rel) {
                out.push((to, rel));
            }
        }
    };
    let mut fenced = false;
    for line in body.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // `[label]: target` at the start of a line.
        if let Some(rest) = trimmed.strip_prefix('[') {
            if let Some((_, after)) = rest.split_once("]:") {
                if let Some(target) = after.split_whitespace().next() {
                    add(target.trim_matches(['<', '>']), Rel::References);
                    continue;
                }
            }
        }
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let end = after.find([')', ' ', '\t']).unwrap_or(after.len());
            add(after[..end].trim_matches(['<', '>']), Rel::References);
            rest = &after[end..];
        }
    }
    match front_matter.get("supersedes") {
        Some(Value::String(s)) => add(&format!("/{s}"), Rel::Supersedes),
        Some(Value::Array(list)) => {
            for s in list.iter().filter_map(Value::as_str) {
                add(&format!("/{s}"), Rel::Supersedes);
            }
        }
        _ => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn links_are_read_from_markdown_and_front_matter() {
        let body = "See [failover](failover.md) and [ops](/ops/oncall#pager).\n\
                    [web](https://example.com) [self](relays.md)\n\
                    ```\n[not](in-code.md)\n```\n\
                    [ref]: ../runbooks/restart.md \"Restart\"\n\
                    again [failover](./failover)";
        let fm = json!({"supersedes": ["core/old-relays"]});
        let links = parse("core/arch/relays", body, fm.as_object().expect("object"));
        let got: Vec<(&str, &str)> = links
            .iter()
            .map(|(t, r)| (t.as_str(), r.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("core/arch/failover", "references"),
                ("ops/oncall", "references"),
                ("core/runbooks/restart", "references"),
                ("core/old-relays", "supersedes"),
            ]
        );
    }
}
