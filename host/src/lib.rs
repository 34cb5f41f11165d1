//! Core MCP host: one MCP server for a whole development environment, built as a plugin host.
//!
//! The host owns everything the groups share — transports, routing, limits, logs — and loads
//! each group's dynamic library on demand through the stable ABI of `coremcp-plugin-api`.
//! `main.rs` only turns [`cli::main`] into an exit code; see `ARCHITECTURE.md` for the map.
//!
//! Invariants:
//! - In stdio mode stdout carries nothing but JSON-RPC: logs go to stderr, and fd 1 itself is
//!   pointed at stderr so that a plugin or child that prints cannot corrupt the protocol.
//! - No plugin library is loaded at start-up or by `initialize`; a group loads the first time
//!   a call or a listing needs it, and a group that fails to load never stops the others.
//! - Every call has a deadline; a tool that overruns it gets a timeout answer on time, whatever
//!   the plugin does.
//! - The process is undumpable from its first step ([`hardening`]): no child reads its
//!   environment or memory.

pub mod calls;
pub mod cli;
pub mod commands;
pub mod config;
#[cfg(test)]
mod fuzz;
pub mod hardening;
pub mod host_ops;
pub mod http;
pub mod logging;
pub mod metrics;
pub mod registry;
pub mod route;
pub mod session;
pub mod state_key;
pub mod status_files;
pub mod stdio;
pub mod tasks;
