//! The Registry as the host reads it: the hosts that accept forwarded calls, i.e. the enabled
//! Registry hosts with a Core MCP address. `remote_host` resolves a name through [`resolve`].
//!
//! The host has no store of its own: it asks the Registry plugin, through the same ABI call an
//! agent's `registry_host_list` takes, with `has_core_mcp: true` and every page followed. So the
//! Registry plugin stays the one owner of its data, on SQLite or PostgreSQL alike.
//!
//! Invariants: a lookup never loads anything but the Registry group; every page request has a
//! deadline; a Registry that answers something unexpected is an error naming what was wrong,
//! never an empty list.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use coremcp_plugin_api::CallCtx;
use serde_json::{json, Value};

use coremcp_engine::loader::LoadError;
use coremcp_engine::PluginSet;

/// The Registry tool the lookup calls.
const HOST_LIST: &str = "registry_host_list";
/// Pages followed at most (200 hosts each).
const MAX_PAGES: usize = 50;

/// A host that accepts forwarded calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteHost {
    pub name: String,
    /// The http(s) address of its Core MCP.
    pub url: String,
}

/// Why a lookup failed.
#[derive(Debug, thiserror::Error)]
pub enum LookupError {
    #[error("the registry group is not part of this session (see --groups), so remote hosts cannot be looked up")]
    NotSelected,
    #[error("the Registry is not available: {0}")]
    Unavailable(#[from] LoadError),
    #[error("the Registry could not list hosts: {0}")]
    Failed(String),
    #[error("the Registry answered: {message} ({code})")]
    Tool { code: String, message: String },
    #[error("unknown remote_host \"{name}\": {}", known_hosts(.known))]
    Unknown { name: String, known: Vec<String> },
    /// A Registry host that is not a forwarding target, and why.
    #[error("remote_host \"{name}\" {why}")]
    NotATarget { name: String, why: String },
}

fn known_hosts(known: &[String]) -> String {
    if known.is_empty() {
        "no Registry host accepts forwarded calls (add one with registry_host_add and a core_mcp_url)"
            .to_owned()
    } else {
        format!("hosts that accept forwarded calls: {}", known.join(", "))
    }
}

/// Every enabled Registry host with a Core MCP address, in the Registry's order (by name).
pub fn forwarding_targets(
    plugins: &Arc<PluginSet>,
    timeout: Duration,
) -> Result<Vec<RemoteHost>, LookupError> {
    let filter = json!({"has_core_mcp": true, "status": "enabled"});
    list_hosts(plugins, &filter, timeout)?
        .iter()
        .map(|item| remote_host(item).map_err(LookupError::Failed))
        .collect()
}

/// Every Registry host `registry_host_list` answers for `filter` (its arguments but paging),
/// every page followed, each within `timeout`.
pub fn list_hosts(
    plugins: &Arc<PluginSet>,
    filter: &Value,
    timeout: Duration,
) -> Result<Vec<Value>, LookupError> {
    let mut hosts = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let mut args = filter.clone();
        if !args.is_object() {
            args = json!({});
        }
        args["limit"] = json!(200);
        if let Some(cursor) = &cursor {
            args["cursor"] = Value::from(cursor.as_str());
        }
        let page = call(plugins, HOST_LIST, &args, timeout)?;
        let (items, next) = parse_page(&page).map_err(LookupError::Failed)?;
        hosts.extend(items);
        match next {
            Some(next) => cursor = Some(next),
            None => return Ok(hosts),
        }
    }
    Err(LookupError::Failed(format!(
        "more than {MAX_PAGES} pages of hosts; stopped"
    )))
}

/// Calls the Registry's `tool` with `args` in this process, within `timeout`; its answer's
/// JSON text.
pub fn call(
    plugins: &Arc<PluginSet>,
    tool: &str,
    args: &Value,
    timeout: Duration,
) -> Result<String, LookupError> {
    let index = plugins.route(tool).ok_or(LookupError::NotSelected)?;
    call_in(plugins, index, tool, args, timeout)
}

/// Calls `tool` (a tool or an internal entry) of the group in slot `index`, in this process.
pub fn call_in(
    plugins: &Arc<PluginSet>,
    index: usize,
    tool: &str,
    args: &Value,
    timeout: Duration,
) -> Result<String, LookupError> {
    let loaded = plugins.load(index)?;
    let cancelled = AtomicBool::new(false);
    let deadline = SystemTime::now() + timeout;
    let ctx = CallCtx {
        deadline_unix_ms: deadline.duration_since(UNIX_EPOCH).map_or(u64::MAX, |d| {
            u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
        }),
        cancelled: &cancelled,
    };
    let outcome = loaded.library.module.call()(&ctx, tool.into(), args.to_string().as_str().into());
    match outcome.into_result() {
        Ok(text) => Ok(text.as_str().to_owned()),
        Err(e) => Err(LookupError::Tool {
            code: e.code.as_str().to_owned(),
            message: e.message.as_str().to_owned(),
        }),
    }
}

/// The forwarding target named `name`, or an error listing the ones there are.
pub fn resolve(
    plugins: &Arc<PluginSet>,
    name: &str,
    timeout: Duration,
) -> Result<RemoteHost, LookupError> {
    let hosts = forwarding_targets(plugins, timeout)?;
    if let Some(host) = hosts.iter().find(|h| h.name == name) {
        return Ok(host.clone());
    }
    // A host the Registry has but does not forward to is named as such, not as unknown.
    let listed = list_hosts(plugins, &json!({"name": name, "status": "all"}), timeout)?;
    if let Some(host) = listed.iter().find(|h| h["name"] == name) {
        return Err(LookupError::NotATarget {
            name: name.to_owned(),
            why: not_a_target(host),
        });
    }
    Err(LookupError::Unknown {
        name: name.to_owned(),
        known: hosts.into_iter().map(|h| h.name).collect(),
    })
}

/// Why a listed Registry host takes no forwarded calls.
fn not_a_target(host: &Value) -> String {
    if host["enabled"] == false {
        "is disabled in the Registry: registry_host_update with enabled: true takes it back".into()
    } else {
        "has no Core MCP address in the Registry: set its core_mcp_url with registry_host_update"
            .into()
    }
}

/// One page of `registry_host_list`: the hosts and the next cursor.
fn parse_page(text: &str) -> Result<(Vec<Value>, Option<String>), String> {
    let mut page: Value = serde_json::from_str(text)
        .map_err(|e| format!("registry_host_list returned bad JSON: {e}"))?;
    let next = page["next_cursor"].as_str().map(str::to_owned);
    match page.get_mut("items").map(Value::take) {
        Some(Value::Array(items)) => Ok((items, next)),
        _ => Err("registry_host_list returned no \"items\" array".to_owned()),
    }
}

/// A listed host as a forwarding target.
fn remote_host(item: &Value) -> Result<RemoteHost, String> {
    match (item["name"].as_str(), item["core_mcp_url"].as_str()) {
        (Some(name), Some(url)) => Ok(RemoteHost {
            name: name.to_owned(),
            url: url.to_owned(),
        }),
        _ => Err(format!(
            "registry_host_list returned a host without name or core_mcp_url: {item}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_parse_and_bad_pages_say_why() {
        let (items, next) = parse_page(
            r#"{"items":[{"name":"devbox-1","core_mcp_url":"http://127.0.0.2:7070/mcp","version":1}],"next_cursor":"abc"}"#,
        )
        .expect("page");
        let hosts: Vec<RemoteHost> = items
            .iter()
            .map(|i| remote_host(i).expect("host"))
            .collect();
        assert_eq!(
            hosts,
            [RemoteHost {
                name: "devbox-1".into(),
                url: "http://127.0.0.2:7070/mcp".into()
            }]
        );
        assert_eq!(next.as_deref(), Some("abc"));
        assert!(parse_page("{}").expect_err("no items").contains("items"));
        assert!(remote_host(&json!({"name": "x"}))
            .expect_err("no url")
            .contains("core_mcp_url"));
    }

    #[test]
    fn unknown_hosts_list_the_known_ones() {
        let err = LookupError::Unknown {
            name: "nope".into(),
            known: vec!["a".into(), "b".into()],
        };
        assert_eq!(
            err.to_string(),
            "unknown remote_host \"nope\": hosts that accept forwarded calls: a, b"
        );
        let none = LookupError::Unknown {
            name: "nope".into(),
            known: vec![],
        };
        assert!(none.to_string().contains("registry_host_add"), "{none}");
    }
}
