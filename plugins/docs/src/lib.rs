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

#[cfg(feature = "docs-write")]
mod atomic;
#[cfg(any(feature = "docs-read", feature = "docs-write"))]
mod front_matter;
#[cfg(any(feature = "docs-read", feature = "docs-write"))]
mod repo;
#[cfg(all(test, any(feature = "docs-read", feature = "docs-write")))]
mod testing;
mod tools;

use coremcp_plugin_api::sdk::Group;

/// The group table, in catalog order.
pub static GROUP: Group = Group {
    id: "docs",
    version: env!("CARGO_PKG_VERSION"),
    tools: &[tools::docs_read::TOOL, tools::docs_write::TOOL],
    init: None,
};

coremcp_plugin_api::export_plugin!(GROUP);

#[cfg(test)]
mod tests {
    use super::GROUP;
    use coremcp_plugin_api::abi::CallCtx;
    use coremcp_plugin_api::sdk::{codes, Args, Ctx};
    use std::sync::atomic::AtomicBool;

    #[test]
    fn the_table_follows_the_catalog_and_every_schema_is_a_closed_object() {
        let names: Vec<&str> = GROUP.tools.iter().map(|t| t.name).collect();
        assert_eq!(names, ["docs_read", "docs_write"]);
        assert_eq!(GROUP.id, "docs");
        for tool in GROUP.tools {
            let schema: serde_json::Value =
                serde_json::from_str(tool.input_schema).expect("schema is JSON");
            assert_eq!(schema["type"], "object", "{}", tool.name);
            assert_eq!(schema["additionalProperties"], false, "{}", tool.name);
            assert!(schema["properties"]["path"].is_object(), "{}", tool.name);
            assert!(schema["properties"]["repo"].is_object(), "{}", tool.name);
            assert!(schema["properties"]["project"].is_object(), "{}", tool.name);
            assert!(
                schema["properties"].get("remote_host").is_none(),
                "{}",
                tool.name
            );
            assert!(tool.remote_host, "{}", tool.name);
        }
        let read = &GROUP.tools[0];
        assert_eq!(read.annotations.read_only_hint, Some(true));
        let write = &GROUP.tools[1];
        assert_eq!(write.annotations.read_only_hint, Some(false));
        assert_eq!(write.annotations.destructive_hint, Some(true));
        assert_eq!(write.annotations.idempotent_hint, Some(false));
        assert_eq!(write.annotations.open_world_hint, Some(false));
        let write_schema: serde_json::Value =
            serde_json::from_str(write.input_schema).expect("JSON");
        assert_eq!(
            write_schema["required"],
            serde_json::json!(["path", "body"])
        );
        assert_eq!(
            write_schema["properties"]["mode"]["enum"],
            serde_json::json!(["create", "replace", "upsert"])
        );
    }

    #[test]
    fn each_tool_names_its_feature_and_whether_this_build_has_it() {
        assert_eq!(
            GROUP.tools[0].feature,
            Some(("docs-read", cfg!(feature = "docs-read")))
        );
        assert_eq!(
            GROUP.tools[1].feature,
            Some(("docs-write", cfg!(feature = "docs-write")))
        );
    }

    /// Calls a tool's handler directly, outside a host (no configuration).
    fn call(index: usize, args: serde_json::Value) -> coremcp_plugin_api::ToolError {
        let cancelled = AtomicBool::new(false);
        let raw = CallCtx {
            deadline_unix_ms: u64::MAX,
            cancelled: &cancelled,
        };
        let args = Args(args.as_object().cloned().expect("object"));
        (GROUP.tools[index].handler)(&Ctx::new(&raw), args).expect_err("fails outside a host")
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
            let err = call(index, args);
            let built = GROUP.tools[index].feature.is_some_and(|(_, on)| on);
            if built {
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
