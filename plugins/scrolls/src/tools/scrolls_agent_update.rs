//! `scrolls_agent_update`: patch an agent; pause or retire it.

use coremcp_plugin_sdk::prelude::*;
use coremcp_store::plugin::{json_text, json_value};

use crate::agents::AGENT;
use crate::args::{AgentName, Text, Token};
use crate::SERVICE;

pub const TOOL: Tool =
    Tool::typed("scrolls_agent_update", &typed(handler)).hints(Hints::IDEMPOTENT);

/// Patch an agent: only given fields change; pause or retire with status.
#[derive(Debug, Args)]
pub struct Update {
    /// agent name
    name: AgentName,
    /// what it is
    kind: Option<Clearable<Token>>,
    /// replaces all
    #[arg(max_items = 50)]
    capabilities: Option<Vec<Token>>,
    /// "" clears
    host: Option<Clearable<Token>>,
    /// "" clears
    #[arg(max_len = 20000)]
    description: Option<Clearable<Text>>,
    /// active, paused or retired
    status: Option<AgentStatus>,
    /// version read
    #[arg(min = 1)]
    expected_version: Option<u64>,
}

/// An agent's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ArgEnum)]
pub enum AgentStatus {
    Active,
    Paused,
    Retired,
}

fn handler(_: &Ctx<'_>, args: Update) -> Result<Value, ToolError> {
    let capabilities = args
        .capabilities
        .map(|c| Value::from(c.into_iter().map(|t| t.0).collect::<Vec<_>>()));
    SERVICE.run(|tx| {
        let agent = AGENT.update(
            tx,
            "name",
            &[args.name.as_str()],
            args.expected_version,
            |_, row| {
                // Compared as JSON: the store may keep another spelling of the same list.
                let old = json_value(row.get_opt_text("capabilities")?);
                let capabilities = capabilities
                    .as_ref()
                    .filter(|c| **c != old)
                    .map(|c| json_text(c).into());
                Ok(vec![
                    (
                        "kind",
                        args.kind
                            .as_ref()
                            .map(|c| c.value().map(Token::as_str).into()),
                    ),
                    ("capabilities", capabilities),
                    (
                        "host",
                        args.host
                            .as_ref()
                            .map(|c| c.value().map(Token::as_str).into()),
                    ),
                    (
                        "description",
                        args.description
                            .as_ref()
                            .map(|c| c.value().map(Text::as_str).into()),
                    ),
                    ("status", args.status.map(|s| s.as_str().into())),
                ])
            },
        )?;
        Ok(crate::agents::answer(agent, 0))
    })
}
