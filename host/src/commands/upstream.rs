//! `coremcp upstream [--json]`: connects once to every configured upstream MCP server (in
//! parallel) and reports its state, reason, tools and what would be published or withheld.
//!
//! A diagnostic only: it does not make upstream tools callable by agents. A server that fails
//! is reported, not an error (exit 0); a bad configuration stopped the command earlier (exit 2).

use std::process::ExitCode;

use serde_json::json;

use super::Failure;
use crate::config::Config;
use coremcp_upstream::probe::{probe_all, ServerReport};

pub fn run(config: Config, as_json: bool) -> Result<ExitCode, Failure> {
    let settings = &config.upstream;
    let reports = if settings.enabled {
        probe_all(&settings.servers)
    } else {
        Vec::new()
    };
    let text = if as_json {
        let servers: Vec<_> = reports
            .iter()
            .map(|report| {
                let mut value = report.to_json();
                let granted: serde_json::Map<String, serde_json::Value> = report
                    .published
                    .iter()
                    .map(|name| (name.clone(), json!(granted_to(settings, &report.id, name))))
                    .collect();
                value["grantedTo"] = serde_json::Value::Object(granted);
                value
            })
            .collect();
        format!(
            "{}\n",
            json!({"enabled": settings.enabled, "servers": servers})
        )
    } else if !settings.enabled {
        "the upstream MCP client is off (COREMCP_MCP=false)\n".to_owned()
    } else if reports.is_empty() {
        "no upstream MCP server is configured (mcp.json or COREMCP_MCP_SERVERS)\n".to_owned()
    } else {
        let mut text = reports
            .iter()
            .map(|r| render(settings, r))
            .collect::<Vec<_>>()
            .join("\n");
        let published: Vec<(&str, &str)> = reports
            .iter()
            .flat_map(|r| r.published.iter().map(move |n| (r.id.as_str(), n.as_str())))
            .collect();
        let nobody = published
            .iter()
            .filter(|(id, name)| granted_to(settings, id, name).is_empty())
            .count();
        if nobody > 0 {
            text.push_str(&format!(
                "\n{nobody} of {} published upstream tools nobody may call yet: grants are \
                 default-deny (COREMCP_MCP_GRANTS, e.g. stdio=<server id>)\n",
                published.len()
            ));
        }
        text
    };
    super::print(&text).map_err(|e| Failure::runtime(format!("stdout: {e}")))?;
    Ok(ExitCode::SUCCESS)
}

/// Who may call a published tool (`mcp__<id>__<tool>`) of server `id`.
fn granted_to(settings: &coremcp_upstream::Settings, id: &str, published: &str) -> Vec<String> {
    let tool = published
        .strip_prefix(&format!("mcp__{id}__"))
        .unwrap_or(published);
    settings.grants.granted_to(id, tool)
}

fn render(settings: &coremcp_upstream::Settings, report: &ServerReport) -> String {
    let mut out = format!(
        "{} ({}): {}",
        report.id,
        report.transport,
        report.state.as_str()
    );
    if let Some(server) = &report.server {
        out.push_str(&format!(", {server}"));
    }
    out.push('\n');
    if let Some(reason) = &report.reason {
        out.push_str(&format!("  reason: {reason}\n"));
    }
    if report.state == coremcp_upstream::probe::State::Connected {
        out.push_str(&format!(
            "  {} tools listed, {} would be published, {} withheld\n",
            report.tools,
            report.published.len(),
            report.withheld.len() + report.more_withheld + report.over_limit
        ));
    }
    for name in &report.published {
        let who = granted_to(settings, &report.id, name);
        if who.is_empty() {
            out.push_str(&format!("  + {name}  (not granted to anyone)\n"));
        } else {
            out.push_str(&format!("  + {name}  (granted to: {})\n", who.join(", ")));
        }
    }
    for (published, original) in &report.renamed {
        out.push_str(&format!(
            "  ~ {published} is the server's {original:?} (model APIs refuse that name)\n"
        ));
    }
    for withheld in &report.withheld {
        out.push_str(&format!("  - {}: {}\n", withheld.tool, withheld.reason));
    }
    if report.more_withheld > 0 {
        out.push_str(&format!(
            "  - {} more withheld for such reasons\n",
            report.more_withheld
        ));
    }
    if report.over_limit > 0 {
        out.push_str(&format!(
            "  - {} more past its limit of {} tools (maxTools in its mcp.json entry)\n",
            report.over_limit,
            report.published.len()
        ));
    }
    for warning in &report.warnings {
        out.push_str(&format!("  ! {warning}\n"));
    }
    out
}
