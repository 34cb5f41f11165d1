//! `core_status`: the diagnostics of the Core MCP that answers the call — the `/api/status`
//! document, asked of the host (`host_call("status")`), so the two never differ.

use coremcp_plugin_sdk::prelude::*;

pub const TOOL: Tool = Tool::typed("core_status", &typed(handler)).hints(Hints::READ);

/// This Core MCP's state: version, mode, groups, relays and routes, remote_host targets,
/// upstream servers, your recent failed calls.
#[derive(Debug, Args)]
pub struct Status {
    /// default all
    #[arg(max_items = 6)]
    include: Vec<Part>,
}

/// A part of the status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ArgEnum)]
pub enum Part {
    Features,
    Groups,
    Relays,
    Hosts,
    Upstreams,
    Errors,
}

fn handler(_: &Ctx<'_>, args: Status) -> Result<Value, ToolError> {
    let all = args.include.is_empty();
    let wants = |part: Part| all || args.include.contains(&part);
    let doc = coremcp_plugin_sdk::host_call("status", &json!({"hosts": wants(Part::Hosts)}))?;
    let mut out = select(&doc, &wants);
    fit(&mut out);
    Ok(out)
}

/// The lists that yield, first to last, when the status outgrows an answer (a team's Registry
/// may name thousands of hosts): whole entries are left out from the end of each, and
/// `<list>_omitted` counts them; `include` asks for fewer parts.
const YIELDING: [&str; 7] = [
    "hosts",
    "upstreams",
    "routes",
    "relays",
    "features",
    "recent_errors",
    "groups",
];

fn fit(out: &mut Value) {
    use coremcp_plugin_sdk::budget::{fit_array, result_budget};
    // Room is kept for the counts of what was left out, which are added at the end.
    let omitted: Vec<(&str, usize)> = YIELDING
        .iter()
        .map(|list| (*list, fit_array(out, list, result_budget() - 400)))
        .collect();
    for (list, n) in omitted.into_iter().filter(|(_, n)| *n > 0) {
        out[format!("{list}_omitted")] = n.into();
    }
}

/// The parts of the status document `wants` asks for; version, mode and sessions always.
pub fn select(doc: &Value, wants: &dyn Fn(Part) -> bool) -> Value {
    let mut out = Map::new();
    for key in ["version", "mode", "sessions"] {
        if let Some(value) = doc.get(key) {
            out.insert(key.into(), value.clone());
        }
    }
    let groups = doc["groups"].as_array().cloned().unwrap_or_default();
    if wants(Part::Groups) {
        out.insert("groups".into(), groups.clone().into());
    }
    if wants(Part::Features) {
        let features: Vec<Value> = groups
            .iter()
            .flat_map(|g| {
                let id = g["id"].clone();
                g["features"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
                    .into_iter()
                    .map(move |mut f| {
                        f["group"] = id.clone();
                        f
                    })
            })
            .collect();
        out.insert("features".into(), features.into());
    }
    if wants(Part::Relays) {
        for key in ["relays", "routes"] {
            out.insert(
                key.into(),
                doc.get(key).cloned().unwrap_or_else(|| json!([])),
            );
        }
    }
    if wants(Part::Hosts) {
        match (doc.get("hosts"), doc.get("hosts_error")) {
            (Some(hosts), _) => {
                out.insert("hosts".into(), hosts.clone());
            }
            (None, Some(error)) => {
                out.insert("hosts".into(), json!([]));
                out.insert("hosts_error".into(), error.clone());
            }
            (None, None) => {
                out.insert("hosts".into(), json!([]));
            }
        }
    }
    if wants(Part::Upstreams) {
        let upstream = doc.get("upstream").cloned().unwrap_or_else(|| json!([]));
        out.insert("upstreams".into(), upstream);
    }
    if wants(Part::Errors) {
        // The host gives the calling principal only its own.
        let errors = doc
            .get("recent_errors")
            .cloned()
            .unwrap_or_else(|| json!([]));
        out.insert("recent_errors".into(), errors);
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_of_hosts_yield_first_and_say_how_many() {
        let hosts: Vec<Value> = (0..3000)
            .map(|i| json!({"name": format!("host-{i}"), "url": format!("https://h{i}.example.invalid/mcp")}))
            .collect();
        let doc = json!({"version": "1", "mode": "stdio", "sessions": 1, "hosts": hosts,
            "groups": [{"id": "ops", "features": []}]});
        let mut out = select(&doc, &|_| true);
        fit(&mut out);
        assert!(
            coremcp_plugin_sdk::budget::chars(&out) <= coremcp_plugin_sdk::budget::result_budget()
        );
        let shown = out["hosts"].as_array().map_or(0, Vec::len);
        assert_eq!(out["hosts_omitted"], 3000 - shown);
        assert_eq!(
            out["groups"].as_array().map(Vec::len),
            Some(1),
            "the rest is whole"
        );
    }

    #[test]
    fn parts_are_selected_from_the_one_document() {
        let doc = json!({
            "version": "1.2.3", "mode": "proxy", "sessions": 1,
            "groups": [{"id": "docs", "state": "loaded",
                        "features": [{"name": "docs-read", "enabled": true}]},
                       {"id": "git", "state": "not_loaded"}],
            "relays": [{"url": "http://r:1/mcp"}], "routes": [], "upstream": [{"id": "time"}],
            "hosts_error": "the registry group is not part of this session",
            "recent_errors": [{"tool": "git_push", "message": "rejected"}]
        });
        let all = select(&doc, &|_| true);
        assert_eq!(
            all["features"],
            json!([{"name": "docs-read", "enabled": true, "group": "docs"}])
        );
        assert_eq!(all["upstreams"][0]["id"], "time");
        assert_eq!(all["recent_errors"][0]["tool"], "git_push");
        assert_eq!(all["hosts"], json!([]));
        assert!(all["hosts_error"].as_str().is_some());
        let only = select(&doc, &|p| p == Part::Relays);
        let keys: Vec<&String> = only.as_object().expect("object").keys().collect();
        assert_eq!(keys, ["version", "mode", "sessions", "relays", "routes"]);
    }
}
