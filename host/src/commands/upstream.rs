//! `coremcp upstream [--json]`: connects once to every configured upstream MCP server (in
//! parallel) and reports its state, reason, tools and what would be published or withheld.
//!
//! A diagnostic only: it does not make upstream tools callable by agents. A server that fails
//! is reported, not an error (exit 0); a bad configuration stopped the command earlier (exit 2).

use std::process::ExitCode;

use serde_json::json;

use crate::cli::Failure;
use crate::config::Config;
use crate::upstream::probe::{probe_all, ServerReport};

pub fn run(config: Config, as_json: bool) -> Result<ExitCode, Failure> {
    let settings = &config.upstream;
    let reports = if settings.enabled {
        probe_all(&settings.servers)
    } else {
        Vec::new()
    };
    let text = if as_json {
        let servers: Vec<_> = reports.iter().map(ServerReport::to_json).collect();
        format!(
            "{}\n",
            json!({"enabled": settings.enabled, "servers": servers})
        )
    } else if !settings.enabled {
        "the upstream MCP client is off (COREMCP_MCP=false)\n".to_owned()
    } else if reports.is_empty() {
        "no upstream MCP server is configured (mcp.json or COREMCP_MCP_SERVERS)\n".to_owned()
    } else {
        reports.iter().map(render).collect::<Vec<_>>().join("\n")
    };
    super::print(&text).map_err(|e| Failure::runtime(format!("stdout: {e}")))?;
    Ok(ExitCode::SUCCESS)
}

fn render(report: &ServerReport) -> String {
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
    if report.state == crate::upstream::probe::State::Connected {
        out.push_str(&format!(
            "  {} tools listed, {} would be published, {} withheld\n",
            report.tools,
            report.published.len(),
            report.withheld.len()
        ));
    }
    for name in &report.published {
        out.push_str(&format!("  + {name}\n"));
    }
    for withheld in &report.withheld {
        out.push_str(&format!("  - {}: {}\n", withheld.tool, withheld.reason));
    }
    for warning in &report.warnings {
        out.push_str(&format!("  ! {warning}\n"));
    }
    out
}
