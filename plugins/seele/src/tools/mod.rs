//! The four Seele tools, one module each, exporting its table entry as `TOOL`.

pub mod seele_import;
pub mod seele_read;
pub mod seele_search;
pub mod seele_write;

/// The longest title, and the longest body of one node.
pub const MAX_TITLE: usize = 300;
pub const MAX_BODY: usize = 200_000;

coremcp_plugin_sdk::checked_string! {
    /// A node's title: readable text of at most 300 characters.
    Title => |at, v| coremcp_plugin_sdk::rules::line(at, v, MAX_TITLE);
    /// A project key (`CORE`).
    ProjectKey => coremcp_plugin_sdk::rules::project_key;
    /// A theme key (`reliability`).
    ThemeKey => |at, v| coremcp_plugin_sdk::rules::slug(at, v, "theme key", 40, "-", "reliability");
    /// Provenance, `PROJECT/name@sha`: one token.
    SourceRef => |at, v| coremcp_plugin_sdk::rules::token(at, v, 300);
}
