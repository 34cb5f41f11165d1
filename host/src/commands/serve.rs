//! `coremcp serve [--listen ADDR] [--service] [--tokens FILE] [--max-connections-per-client N]`: MCP over Streamable HTTP at
//! `/mcp` (see `crate::http`). Service mode comes in through `config.service_mode`.

use std::process::ExitCode;

use super::Failure;
use crate::config::Config;

pub fn run(config: Config, options: &crate::http::Options<'_>) -> Result<ExitCode, Failure> {
    crate::http::serve(config, options).map_err(|e| {
        if e.is_usage() {
            Failure::usage(e.to_string())
        } else {
            Failure::runtime(e.to_string())
        }
    })?;
    Ok(ExitCode::SUCCESS)
}
