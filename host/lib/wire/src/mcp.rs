//! MCP protocol facts: version negotiation, the `initialize` answer, the server instructions,
//! and the limits of ARCHITECTURE.md, "Limits".

use crate::rpc::json_string;

/// The version this Core MCP speaks as a client (to upstream servers and relays), which every
/// server of the 2025 era understands.
pub const PREFERRED_VERSION: &str = "2025-06-18";

/// Every version we negotiate, the latest first.
pub const SUPPORTED_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// What a client that offers a version we do not speak is answered with: the latest we
/// support, as the specification asks (the client then decides whether it can go on).
pub(crate) const LATEST_VERSION: &str = SUPPORTED_VERSIONS[0];

/// A tool result handed to the model is cut to this many characters.
pub const MAX_RESULT_CHARS: usize = 20_000;
/// A tool description longer than this is cut.
pub const MAX_DESCRIPTION_CHARS: usize = 1_000;
/// A tool whose input schema is longer than this (as JSON text) is not listed.
pub const MAX_SCHEMA_CHARS: usize = 8_000;
/// A stdio line longer than this without a newline is discarded.
pub const MAX_LINE_BYTES: usize = 8 * 1024 * 1024;

/// The version to answer a client that offered `offered`: itself when we speak it, else the
/// latest we do.
pub fn negotiate(offered: Option<&str>) -> &'static str {
    offered
        .and_then(|v| SUPPORTED_VERSIONS.iter().find(|s| **s == v))
        .copied()
        .unwrap_or(LATEST_VERSION)
}

/// The server capabilities (JSON text): tools and logging, and — when upstream servers are
/// configured (`surface`) — their prompts, resources and completion.
pub fn capabilities(surface: bool) -> &'static str {
    match surface {
        false => "{\"tools\":{\"listChanged\":true},\"logging\":{}}",
        true => concat!(
            "{\"tools\":{\"listChanged\":true},\"logging\":{},",
            "\"prompts\":{\"listChanged\":true},\"resources\":{\"listChanged\":true},",
            "\"completions\":{}}"
        ),
    }
}

/// Which meta tools a session lists (`--groups`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Menu {
    /// None: every tool is listed (`all`, or a list of groups).
    Plain,
    /// The group switches, and search and call (`dynamic`).
    Dynamic,
    /// Search and call only (`search`).
    Search,
}

/// The `initialize` result, for the negotiated `version` and the session's groups; `surface`
/// as in [`capabilities`]; `budget` as in [`instructions`].
pub fn initialize_result(
    version: &str,
    groups: &[&str],
    menu: Menu,
    surface: bool,
    budget: usize,
) -> String {
    format!(
        concat!(
            "{{\"protocolVersion\":{},",
            "\"capabilities\":{},",
            "\"serverInfo\":{{\"name\":\"coremcp\",\"title\":\"Core MCP\",\"version\":{}}},",
            "\"instructions\":{}}}"
        ),
        json_string(version),
        capabilities(surface),
        json_string(env!("CARGO_PKG_VERSION")),
        json_string(&instructions(groups, menu, budget)),
    )
}

/// What the server tells an agent its groups are for, and how its meta tools reach them.
/// `budget`: the session's result budget in characters ([`crate::budget`]).
pub fn instructions(groups: &[&str], menu: Menu, budget: usize) -> String {
    let mut text =
        String::from("Core MCP gives you the tools of this development environment, in groups:\n");
    for id in groups {
        match coremcp_catalog::group(id) {
            Some(g) => text.push_str(&format!("- {} ({}): {}.\n", g.title, g.id, g.purpose)),
            None => text.push_str(&format!("- {id}: an additional group installed here.\n")),
        }
    }
    match menu {
        Menu::Plain => {}
        Menu::Dynamic => text.push_str(
            "This session lists only the groups it has enabled: call groups_list to see them \
             all and groups_enable to add the ones your work needs (groups_disable drops them). \
             Any tool is also reached at once with tools_search (find it) and tools_call (call \
             it by name).\n",
        ),
        Menu::Search => text.push_str(
            "This session lists few tools: find the one for a task with tools_search, then call \
             it by name with tools_call. Every tool of these groups is reached that way.\n",
        ),
    }
    text.push_str(&format!(
        "A tool that fails answers with an error result that says what was wrong; fix the \
         arguments or carry on with other tools. A result holds at most {budget} characters: \
         a longer list or text says how to get the rest (a cursor or an offset). Local file \
         and git tools are confined to the configured roots. Upstream MCP tools (named \
         mcp__<server>__<tool>) are NOT confined: they belong to other MCP servers the user \
         configured, their arguments go to those servers verbatim, and the first call to such \
         a server may ask the human for approval.",
    ));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation() {
        assert_eq!(negotiate(Some("2025-06-18")), "2025-06-18");
        assert_eq!(negotiate(Some("2025-11-25")), "2025-11-25");
        assert_eq!(negotiate(Some("2025-03-26")), "2025-03-26");
        assert_eq!(negotiate(Some("2024-11-05")), "2024-11-05");
        // An offer we do not speak (a later revision, a typo, none): the latest we do.
        assert_eq!(LATEST_VERSION, "2025-11-25");
        assert_eq!(negotiate(Some("2026-07-28")), LATEST_VERSION);
        assert_eq!(negotiate(Some("2099-01-01")), LATEST_VERSION);
        assert_eq!(negotiate(Some("garbage")), LATEST_VERSION);
        assert_eq!(negotiate(None), LATEST_VERSION);
    }

    #[test]
    fn initialize_result_is_json_without_nulls() {
        let text = initialize_result(
            "2025-06-18",
            &["publishing", "fixture"],
            Menu::Plain,
            false,
            10_000,
        );
        let value: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
        assert_eq!(value["capabilities"]["tools"]["listChanged"], true);
        assert!(!text.contains("null"));
        let instructions = value["instructions"].as_str().expect("instructions");
        assert!(instructions.contains("Publishing (publishing)"));
        assert!(instructions.contains("fixture: an additional group"));
        assert!(instructions
            .contains("Upstream MCP tools (named mcp__<server>__<tool>) are NOT confined"));
        // The agent is told its session's budget.
        assert!(instructions.contains("A result holds at most 10000 characters"));
    }
}
