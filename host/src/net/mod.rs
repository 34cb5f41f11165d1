//! The outgoing HTTP every kind of peer uses: relays and `remote_host` targets
//! ([`crate::forward`]), Consul, and upstream MCP servers over HTTP ([`crate::upstream`]). The
//! one HTTP/1.1 client, over TCP or TLS ([`client`]), the `text/event-stream` parser
//! ([`events`]) and a two-future race ([`race`]); none of them knows about MCP.

pub mod client;
pub mod events;
pub mod mcp;
pub mod race;
