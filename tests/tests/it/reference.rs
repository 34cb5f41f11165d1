//! The tool reference page, `docs/tools.md`, generated from what the groups' tables publish
//! (`tools/list` of every group built in this workspace) and the catalog (groups, where each
//! tool runs, `remote_host`, the machine-changing guard, the tools not built yet). The test
//! fails when the page is stale; `COREMCP_UPDATE_GOLDEN=1` rewrites it.

use std::fmt::Write as _;
use std::path::PathBuf;

use coremcp_catalog::{Guard, GROUPS};
use coremcp_plugin_api::Runs;
use coremcp_tests::{plugins, Server};
use serde_json::{json, Value};

/// The groups this workspace builds (all their default features on).
const BUILT_GROUPS: &[&str] = &[
    "registry",
    "docs",
    "notepad",
    "session",
    "scrolls",
    "seele",
    "git",
    "files",
    "publishing",
    "ops",
    "docker",
];

#[test]
fn the_tool_reference_page_is_current() {
    let dir = plugins(BUILT_GROUPS);
    let mut server = Server::start(dir.path(), &[], &[]);
    server.initialize();
    let listed = server.request("tools/list", json!({}))["result"]["tools"].clone();
    let tools = listed.as_array().expect("tools");
    let page = render(tools);
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/tools.md");
    if std::env::var_os("COREMCP_UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, &page).expect("write docs/tools.md");
        return;
    }
    let current = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        current == page,
        "docs/tools.md is stale: regenerate it with COREMCP_UPDATE_GOLDEN=1 cargo test -p \
         coremcp-tests --test it reference, then review the diff"
    );
}

fn render(tools: &[Value]) -> String {
    let built = tools.len();
    let total: usize = GROUPS.iter().map(|g| g.tools.len()).sum();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Tool reference\n\n\
         Generated from the groups' tables and the catalog (`plugin-api/catalog`) by \
         `tests/tests/it/reference.rs`; do not edit by hand. After changing a table, run \
         `COREMCP_UPDATE_GOLDEN=1 cargo test -p coremcp-tests --test it reference`.\n\n\
         {built} of the catalog's {total} tools are built. **Runs** says where a call runs: \
         `local` (the Core MCP on the agent's machine), `forwarded` (the relays when configured, \
         else this process on the store) or `registry` (where the agent runs). **Changes the \
         machine**: over HTTP such a call needs a grant (`COREMCP_GRANTS`, see ARCHITECTURE.md)."
    );
    for group in GROUPS {
        let _ = writeln!(
            out,
            "\n## {} (`{}`)\n\n{}.",
            group.title,
            group.id,
            capital(group.purpose)
        );
        let mut missing = Vec::new();
        for entry in group.tools {
            let Some(tool) = tools.iter().find(|t| t["name"] == entry.name) else {
                missing.push(format!("`{}`", entry.name));
                continue;
            };
            let settings = group.settings(entry);
            let runs = match settings.runs {
                Runs::Local => "local",
                Runs::Forwarded => "forwarded",
                Runs::Registry => "registry",
            };
            let mut guard = describe(entry.guard);
            if let Some(escalation) = entry.escalation {
                guard.push_str(&format!(
                    "; with `{}: true` {}, which over HTTP only a grant naming the tool allows",
                    escalation.argument, escalation.hands_over
                ));
            }
            let _ = writeln!(
                out,
                "\n### `{}`\n\n{}\n\nRuns: {runs} · remote_host: {} · hints: {} · changes the \
                 machine: {guard}\n",
                entry.name,
                tool["description"].as_str().unwrap_or_default(),
                if settings.remote_host { "yes" } else { "no" },
                hints(&tool["annotations"]),
            );
            arguments(&mut out, &tool["inputSchema"]);
            let _ = writeln!(
                out,
                "\n{}",
                crate::continuation::of(entry.name, &tool["inputSchema"])
            );
        }
        if !missing.is_empty() {
            let _ = writeln!(out, "\nNot built yet: {}.", missing.join(", "));
        }
    }
    out
}

fn capital(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

fn hints(annotations: &Value) -> String {
    let on = |name: &str| annotations[name] == json!(true);
    let mut words = Vec::new();
    if on("readOnlyHint") {
        words.push("read-only");
    } else if on("destructiveHint") {
        words.push("destructive");
    } else {
        words.push("writes");
    }
    if on("idempotentHint") {
        words.push("idempotent");
    }
    if on("openWorldHint") {
        words.push("open world");
    }
    words.join(", ")
}

fn arguments(out: &mut String, schema: &Value) {
    let Some(properties) = schema["properties"].as_object().filter(|p| !p.is_empty()) else {
        let _ = writeln!(out, "No arguments.");
        return;
    };
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let _ = writeln!(out, "| Argument | Type | Description |\n|---|---|---|");
    for (name, property) in properties {
        let mark = if required.contains(&name.as_str()) {
            " (required)"
        } else {
            ""
        };
        let description = property["description"]
            .as_str()
            .unwrap_or_default()
            .replace('|', "\\|");
        let _ = writeln!(
            out,
            "| `{name}`{mark} | {} | {description} |",
            kind(property)
        );
    }
}

/// A property's type with its limits, in a few words.
fn kind(property: &Value) -> String {
    let mut text = match property["type"].as_str() {
        Some("array") => format!("array of {}", kind(&property["items"])),
        Some(other) => other.to_owned(),
        None => "any".to_owned(),
    };
    if let Some(values) = property["enum"].as_array() {
        let values: Vec<String> = values
            .iter()
            .map(|v| format!("`{}`", v.as_str().unwrap_or("?")))
            .collect();
        text = format!("{text}: {}", values.join(" \\| "));
    }
    let limit = |min: &str, max: &str| match (property[min].as_u64(), property[max].as_u64()) {
        (Some(a), Some(b)) => Some(format!("{a}–{b}")),
        (Some(a), None) => Some(format!("≥ {a}")),
        (None, Some(b)) => Some(format!("≤ {b}")),
        (None, None) => None,
    };
    let limits: Vec<String> = [
        limit("minimum", "maximum"),
        limit("minLength", "maxLength").map(|l| format!("{l} chars")),
        limit("minItems", "maxItems").map(|l| format!("{l} items")),
    ]
    .into_iter()
    .flatten()
    .collect();
    if !limits.is_empty() {
        text = format!("{text} ({})", limits.join(", "));
    }
    if let Some(default) = property.get("default") {
        text = format!("{text}, default `{default}`");
    }
    text
}

/// A guard in words, for the reference.
fn describe(guard: Guard) -> String {
    match guard {
        Guard::Reads => "no".to_owned(),
        Guard::Always => "yes".to_owned(),
        Guard::WhenFalse(arg) => format!("with `{arg}: false`"),
        Guard::WhenTrue(arg) => format!("with `{arg}: true`"),
        Guard::UnlessOneOf(arg, values) => format!(
            "unless `{arg}` is {}",
            values
                .iter()
                .map(|v| format!("`{v}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Guard::WhenGiven(args) => format!(
            "no, but over HTTP giving {} (where code, credentials or calls go) needs a grant naming the tool",
            args.iter()
                .map(|a| format!("`{a}`"))
                .collect::<Vec<_>>()
                .join(" or ")
        ),
        Guard::AnyOf(guards) => guards
            .iter()
            .map(|g| describe(*g))
            .collect::<Vec<_>>()
            .join(", or "),
    }
}
