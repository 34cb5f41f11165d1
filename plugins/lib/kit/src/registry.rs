//! What local groups read of the Registry through the host (`host_call("registry.call")`):
//! a source found in a `registry_source_list` page, and its checkout on one machine. One
//! reading, so `repo_setup` and the docs tools agree on which checkout is this machine's.

use coremcp_plugin_sdk::prelude::{json, Value};
use coremcp_plugin_sdk::{codes, host_call, ToolError};

/// Calls Registry tool `tool` with `args` through the host.
pub fn call(tool: &str, args: Value) -> Result<Value, ToolError> {
    host_call("registry.call", &json!({"tool": tool, "args": args}))
}

/// Source `reference` (`PROJECT/name`) in a `registry_source_list` page; `not_found` naming
/// it, prefixed with `what` (the argument that named it, or nothing).
pub fn source<'a>(page: &'a Value, reference: &str, what: &str) -> Result<&'a Value, ToolError> {
    page["items"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|s| s["ref"] == reference)
        .ok_or_else(|| {
            ToolError::new(
                codes::NOT_FOUND,
                format!("{what}no Registry source {reference} (registry_source_list shows them)"),
            )
        })
}

/// Where `source` (listed with `include_checkouts`) is checked out on host `host`.
pub fn checkout_on<'a>(source: &'a Value, host: &str) -> Option<&'a str> {
    checkout_record(source, host).and_then(|c| c["path"].as_str())
}

/// The record of `source`'s checkout on host `host` (`path`, `branch`, the `url` it was made
/// from).
pub fn checkout_record<'a>(source: &'a Value, host: &str) -> Option<&'a Value> {
    source["checkouts"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["host"] == host)
}

/// The hosts `source` is checked out on.
pub fn checkout_hosts(source: &Value) -> Vec<&str> {
    source["checkouts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["host"].as_str())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_and_its_checkout_on_a_host() {
        let page = json!({"items": [
            {"ref": "CORE/docs", "checkouts": [
                {"host": "a", "path": "/a/docs"}, {"host": "b", "path": "/b/docs"}]},
            {"ref": "CORE/code"},
        ]});
        let docs = source(&page, "CORE/docs", "").expect("found");
        assert_eq!(checkout_on(docs, "b"), Some("/b/docs"));
        assert_eq!(checkout_on(docs, "c"), None);
        assert_eq!(checkout_hosts(docs), ["a", "b"]);
        let code = source(&page, "CORE/code", "").expect("found");
        assert_eq!(checkout_on(code, "a"), None);
        let e = source(&page, "CORE/none", "argument \"repo\": ").expect_err("absent");
        assert_eq!(e.code.as_str(), codes::NOT_FOUND);
        assert!(e
            .message
            .starts_with("argument \"repo\": no Registry source CORE/none"));
    }
}
