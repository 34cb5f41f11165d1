//! The Global docs group: `docs_read` and `docs_write` on Markdown documents (YAML front matter
//! plus body) in the documentation repositories named in local configuration.
//!
//! Each tool is built behind its cargo feature (`docs-read`, `docs-write`, both on by default).
//! A build without one still lists the tool; the SDK answers a call to it with `unavailable`
//! naming the feature, before the handler would run.
//!
//! Invariants: every path resolves inside the selected repository
//! ([`coremcp_plugin_kit::Roots`]); a document is only ever replaced whole, atomically; a
//! document whose front matter cannot be read is reported (with its line) and never rewritten;
//! unknown front-matter keys and their order survive every write.

#[cfg(any(feature = "docs-read", feature = "docs-write"))]
mod front_matter;
#[cfg(any(feature = "docs-read", feature = "docs-write"))]
mod repo;
#[cfg(all(test, any(feature = "docs-read", feature = "docs-write")))]
mod testing;
mod tools;

use coremcp_plugin_sdk::{catalog, Group};

/// The group table, in catalog order.
pub static GROUP: Group = Group::new(
    &catalog::DOCS,
    env!("CARGO_PKG_VERSION"),
    &[tools::docs_read::TOOL, tools::docs_write::TOOL],
);

coremcp_plugin_sdk::export_plugin!(GROUP);

#[cfg(test)]
mod tests {
    use super::GROUP;
    use coremcp_plugin_sdk::codes;
    use coremcp_plugin_sdk::testing::{assert_group, call};

    #[test]
    fn the_table_follows_the_catalog() {
        assert_group(&GROUP);
        let write = GROUP.tools[1].handler.schema();
        assert_eq!(write["required"], serde_json::json!(["path", "body"]));
        assert_eq!(
            write["properties"]["mode"]["enum"],
            serde_json::json!(["create", "replace", "upsert"])
        );
    }

    #[test]
    fn each_tool_says_whether_this_build_has_its_feature() {
        assert_eq!(GROUP.tools[0].built, cfg!(feature = "docs-read"));
        assert_eq!(GROUP.tools[1].built, cfg!(feature = "docs-write"));
    }

    #[test]
    fn handlers_outside_a_host_say_what_is_missing() {
        let cases = [
            (0, serde_json::json!({"path": "a.md"}), "docs-read"),
            (
                1,
                serde_json::json!({"path": "a.md", "body": "x"}),
                "docs-write",
            ),
        ];
        for (index, args, feature) in cases {
            let tool = &GROUP.tools[index];
            let err = call(&GROUP, tool.name, args).expect_err("fails outside a host");
            if tool.built {
                // No documentation repository is configured outside a host.
                assert_eq!(err.code.as_str(), codes::NOT_CONFIGURED, "{err}");
                assert!(err.message.contains("--docs DIR"), "{err}");
            } else {
                // The compiled-out handler gives the SDK's own answer.
                assert_eq!(err.code.as_str(), codes::UNAVAILABLE, "{err}");
                assert!(
                    err.message
                        .contains(&format!("needs the \"{feature}\" feature")),
                    "{err}"
                );
            }
        }
    }
}
