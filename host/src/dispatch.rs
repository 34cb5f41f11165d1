//! Where one tool call runs (DESIGN §4, steps 3–5), decided on the pool thread that will run
//! it: another host's Core MCP (`remote_host`), the relay list (a forwarded group with relays
//! configured), or the group's plugin in this process.
//!
//! Invariants:
//! - `remote_host` never reaches a plugin or a peer: it is taken out of the arguments here, so
//!   the receiving side cannot forward the call again (one hop).
//! - The Registry's tools and `bootstrap` run only where the agent runs; `remote_host` on them is
//!   refused, never ignored.
//! - A peer's answer is passed on as the peer wrote it (result or JSON-RPC error); only a
//!   failure to get one is worded here.
//! - The route of a catalog tool is decided from the catalog, without loading its plugin.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use crate::config::Config;
use crate::forward::client::Reply;
use crate::forward::{self, ForwardError, Relays};
use crate::plugins::PluginSet;
use crate::registry;

/// Where a call goes.
pub enum Destination {
    /// The plugin in this process, with these arguments.
    Plugin(String),
    /// The relay list, with these arguments.
    Relays(Arc<Relays>, String),
    /// Another host's Core MCP at `url`, with these arguments (without `remote_host`).
    Remote {
        host: String,
        url: String,
        args: String,
    },
    /// Refused before running, with the text the model sees.
    Refused(String),
}

impl Destination {
    /// A word for logs.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Plugin(_) => "plugin",
            Self::Relays(..) => "relay",
            Self::Remote { .. } => "remote_host",
            Self::Refused(_) => "refused",
        }
    }
}

/// Decides where `tool` (of the group in `index`) runs with `args` (a JSON object's text).
pub fn destination(
    config: &Config,
    plugins: &Arc<PluginSet>,
    index: usize,
    tool: &str,
    args: &str,
) -> Destination {
    let (remote_host, args) = match take_remote_host(args) {
        Ok(split) => split,
        Err(text) => return Destination::Refused(format!("{tool}: {text}")),
    };
    let group = plugins.slots()[index].catalog;
    if let Some(host) = remote_host {
        let accepted = match group {
            Some(group) => group.settings_of(tool).is_some_and(|s| s.remote_host),
            // Outside the catalog the plugin's manifest says.
            None => plugins
                .load(index)
                .is_ok_and(|l| l.tools().iter().any(|t| t.name == tool && t.remote_host)),
        };
        if !accepted {
            return Destination::Refused(format!(
                "{tool} runs only where the agent runs: it does not take remote_host"
            ));
        }
        return match registry::resolve(plugins, &host, config.call_timeout) {
            Ok(target) => Destination::Remote {
                host,
                url: target.url,
                args,
            },
            Err(e) => Destination::Refused(format!("{tool}: {e}")),
        };
    }
    let forwarded = group.is_some_and(|g| g.runs == coremcp_plugin_api::Runs::Forwarded);
    if forwarded && !config.service_mode {
        if let Some(relays) = forward::relays(config) {
            return Destination::Relays(relays, args);
        }
    }
    Destination::Plugin(args)
}

/// Splits `remote_host` off the arguments. An empty value counts as absent.
fn take_remote_host(args: &str) -> Result<(Option<String>, String), String> {
    if memchr::memmem::find(args.as_bytes(), b"\"remote_host\"").is_none() {
        return Ok((None, args.to_owned()));
    }
    let mut map: Map<String, Value> = serde_json::from_str(args)
        .map_err(|e| format!("the arguments are not a JSON object: {e}"))?;
    let host = match map.remove("remote_host") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.is_empty() => None,
        Some(Value::String(s)) => Some(s),
        Some(other) => {
            return Err(format!(
                "argument \"remote_host\" must be a Registry host name (a string), not {other}"
            ))
        }
    };
    Ok((host, Value::Object(map).to_string()))
}

/// Runs a call on peers and renders the JSON-RPC message that answers request `id`.
pub fn forwarded_answer(id: &str, tool: &str, outcome: Result<Reply, ForwardError>) -> String {
    match outcome {
        Ok(Reply::Result(result)) => crate::rpc::response(id, &result),
        Ok(Reply::Error { code, message }) => crate::rpc::error(Some(id), code, &message),
        Err(e) => crate::rpc::response(
            id,
            &crate::render::call_error_text(&format!("{tool} could not be forwarded: {e}")),
        ),
    }
}

/// Calls the relays or a remote host until `deadline`.
pub fn call_peer(
    destination: &Destination,
    tool: &str,
    deadline: Instant,
    cancelled: &AtomicBool,
) -> Option<Result<Reply, ForwardError>> {
    match destination {
        Destination::Relays(relays, args) => Some(relays.call(tool, args, deadline, cancelled)),
        Destination::Remote { url, args, host } => {
            tracing::debug!(tool, host = %host, "forwarding to remote_host {host}");
            Some(forward::call_remote(url, tool, args, deadline, cancelled))
        }
        _ => None,
    }
}

/// How long before the call's own deadline a peer must have answered, so the answer names
/// the peer that was too slow rather than being the host's generic timeout.
pub fn peer_deadline(deadline: Instant, timeout: Duration) -> Instant {
    deadline - (timeout / 10).min(Duration::from_millis(250))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_host_is_taken_out_of_the_arguments() {
        assert_eq!(
            take_remote_host(r#"{"a":1}"#),
            Ok((None, r#"{"a":1}"#.to_owned()))
        );
        assert_eq!(
            take_remote_host(r#"{"a":1,"remote_host":"devbox-2"}"#),
            Ok((Some("devbox-2".to_owned()), r#"{"a":1}"#.to_owned()))
        );
        assert_eq!(
            take_remote_host(r#"{"remote_host":""}"#),
            Ok((None, "{}".to_owned()))
        );
        let err = take_remote_host(r#"{"remote_host":3}"#).expect_err("number");
        assert!(err.contains("must be a Registry host name"), "{err}");
    }

    #[test]
    fn peers_answers_pass_through_unchanged() {
        let ok = forwarded_answer(
            "7",
            "t",
            Ok(Reply::Result(r#"{"content":[],"isError":true}"#.into())),
        );
        assert_eq!(
            ok,
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[],"isError":true}}"#
        );
        let err = forwarded_answer(
            "7",
            "t",
            Ok(Reply::Error {
                code: -32602,
                message: "bad".into(),
            }),
        );
        let err: Value = serde_json::from_str(&err).expect("json");
        assert_eq!(err["error"]["code"], -32602);
        assert_eq!(err["error"]["message"], "bad");
    }
}
