//! Core MCP's outgoing HTTP: what every kind of peer is reached with — relays and
//! `remote_host` targets (`coremcp-relay`), Consul, and upstream MCP servers over HTTP
//! (`coremcp-upstream`). The one HTTP/1.1 client, over TCP or TLS ([`client`]), the
//! `text/event-stream` parser ([`events`]) and a two-future race ([`race`]), none of which
//! knows about MCP; what every MCP client of ours speaks over Streamable HTTP ([`mcp`]); and
//! OAuth 2.1 both ways ([`oauth`]).
//!
//! This crate never listens, never reads the environment or a configuration (its callers hand
//! it URLs, deadlines and the names of the variables it words errors with), and knows nothing
//! of relays, upstream servers, sessions or plugins: it builds on `coremcp-wire` alone.

pub mod client;
pub mod events;
#[cfg(test)]
mod fuzz;
pub mod mcp;
pub mod oauth;
pub mod race;
