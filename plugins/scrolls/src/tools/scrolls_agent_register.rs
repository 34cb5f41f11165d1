//! `scrolls_agent_register`: register or refresh an agent identity.

use coremcp_plugin_sdk::prelude::*;

use crate::agents::{self, Profile, AGENT};
use crate::args::{AgentName, Text, Token};
use crate::SERVICE;

pub const TOOL: Tool =
    Tool::typed("scrolls_agent_register", &typed(handler)).hints(Hints::IDEMPOTENT);

/// Register or refresh an agent by name (an upsert; sets last_seen_at).
#[derive(Debug, Args)]
pub struct Register {
    /// ^[a-z0-9][a-z0-9._-]{0,63}$, e.g. claude-code-1
    name: AgentName,
    /// e.g. claude_code or human
    kind: Option<Token>,
    /// e.g. ["rust"]
    #[arg(max_items = 50)]
    capabilities: Option<Vec<Token>>,
    /// the host it runs on
    host: Option<Token>,
    /// what it is for
    #[arg(max_len = 20000)]
    description: Option<Text>,
}

fn handler(_: &Ctx<'_>, args: Register) -> Result<Value, ToolError> {
    let capabilities: Option<Vec<String>> = args
        .capabilities
        .map(|c| c.into_iter().map(|t| t.0).collect());
    let profile = Profile {
        kind: args.kind.as_ref().map(Token::as_str),
        capabilities: capabilities.as_deref(),
        host: args.host.as_ref().map(Token::as_str),
        description: args.description.as_ref().map(Text::as_str),
    };
    SERVICE.run(|tx| {
        let (row, created) = agents::register(tx, args.name.as_str(), &profile)?;
        let mut agent = AGENT.json(&row)?;
        agent["created"] = created.into();
        Ok(agents::answer(agent, 0))
    })
}
