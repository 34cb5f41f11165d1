//! `coremcp serve [--listen ADDR] [--service] [--tokens FILE]`: MCP over Streamable HTTP at
//! `/mcp` (see `crate::http`). Service mode comes in through `config.service_mode`.

use std::path::Path;
use std::process::ExitCode;

use crate::cli::Failure;
use crate::config::Config;

pub fn run(config: Config, listen: &str, tokens: Option<&Path>) -> Result<ExitCode, Failure> {
    crate::http::serve(config, listen, tokens).map_err(|e| {
        if e.is_usage() {
            Failure::usage(e.to_string())
        } else {
            Failure::runtime(e.to_string())
        }
    })?;
    Ok(ExitCode::SUCCESS)
}
