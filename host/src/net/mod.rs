//! The outgoing HTTP both kinds of peer use: relays and `remote_host` targets
//! ([`crate::forward`]) and upstream MCP servers over HTTP ([`crate::upstream`]). A small
//! HTTP/1.1 client ([`http1`]) and the `text/event-stream` parser ([`events`]); neither knows
//! about MCP.

pub mod events;
pub mod http1;
