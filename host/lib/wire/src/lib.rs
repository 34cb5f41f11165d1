//! The wire of Core MCP: what a message is and what it may say, with no I/O.
//!
//! JSON-RPC framing ([`rpc`]), the MCP facts and limits ([`mcp`]), a session's result
//! [`budget`], the 2026 envelope and the sealed `requestState` ([`modern`]), how tools and
//! results are written ([`render`]), who may call what ([`policy`]), the names more than one
//! part checks ([`names`], [`client_name`]), the [`cork`] a thread holds over a burst of
//! answers, and the [`tasks`] extension's messages.
//!
//! This crate does no I/O — it never opens a file or a socket, starts a process or loads a
//! library — and knows nothing of sessions, transports, plugins, relays or upstream servers:
//! every other host crate builds on it, and it builds on none of them.

pub mod budget;
pub mod client_name;
pub mod cork;
#[cfg(test)]
mod fuzz;
pub mod id_scan;
pub mod mcp;
pub mod modern;
pub mod names;
pub mod policy;
pub mod render;
pub mod rpc;
pub mod tasks;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
