//! The outgoing HTTP every kind of peer uses: relays and `remote_host` targets
//! ([`coremcp_relay`]), Consul, and upstream MCP servers over HTTP ([`coremcp_upstream`]). The
//! one HTTP/1.1 client, over TCP or TLS ([`client`]), the `text/event-stream` parser
//! ([`events`]) and a two-future race ([`race`]); none of them knows about MCP.

pub mod client;
pub mod events;
#[cfg(test)]
mod fuzz;
pub mod mcp;
pub mod oauth;
pub mod race;
