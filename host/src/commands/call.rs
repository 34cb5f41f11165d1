//! `coremcp call TOOL [JSON]`: one call through the same session path an agent's call takes;
//! the result on stdout, exit 1 when the tool reports an error, 2 when the call is refused.

use std::process::ExitCode;
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{json, Value};

use super::Failure;
use crate::config::Config;
use crate::session::{Outbox, Session};
use coremcp_engine::PluginSet;
use coremcp_upstream::hub::Upstreams;
use coremcp_wire::policy::Caller;

struct ChannelOutbox(Mutex<Sender<String>>);

impl Outbox for ChannelOutbox {
    fn send(&self, message: String) {
        let _ = self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .send(message);
    }
}

pub fn run(config: Config, tool: &str, arguments: Option<&str>) -> Result<ExitCode, Failure> {
    let args: Value = match arguments {
        None => json!({}),
        Some(text) => serde_json::from_str(text)
            .map_err(|e| Failure::usage(format!("the JSON arguments do not parse: {e}")))?,
    };
    if !args.is_object() {
        return Err(Failure::usage(format!(
            "the JSON arguments must be an object, like {{\"key\": \"value\"}}; got {args}"
        )));
    }
    let wait = config.call_timeout + Duration::from_secs(10);
    let plugins = Arc::new(PluginSet::discover(&config.engine()).map_err(Failure::usage)?);
    let (tx, rx) = mpsc::channel();
    // An upstream tool is called as the stdio client would call it (its grants apply).
    let upstreams = if tool.starts_with("mcp__") {
        Upstreams::start(&config.upstream)
    } else {
        Upstreams::none()
    };
    let session = Session::new(
        config,
        plugins,
        upstreams,
        Caller::Stdio,
        Arc::new(ChannelOutbox(Mutex::new(tx))),
    );
    // The lifecycle an agent's session goes through: initialize (answered as id 0 and not
    // waited for: it is answered before the call is even read), then the call.
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                            "params": {"protocolVersion": coremcp_wire::mcp::PREFERRED_VERSION,
                                       "capabilities": {},
                                       "clientInfo": {"name": "coremcp call",
                                                      "version": env!("CARGO_PKG_VERSION")}}});
    session.handle(initialize.to_string().as_bytes());
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                         "params": {"name": tool, "arguments": args}});
    session.handle(request.to_string().as_bytes());
    loop {
        let message = rx.recv_timeout(wait).map_err(|_| {
            Failure::runtime(format!("{tool}: no answer within {} s", wait.as_secs()))
        })?;
        let reply: Value = serde_json::from_str(&message)
            .map_err(|e| Failure::runtime(format!("bad answer: {e}")))?;
        if reply.get("id") != Some(&json!(1)) {
            continue; // a notification (log message)
        }
        if let Some(error) = reply.get("error") {
            let message = error["message"].as_str().unwrap_or("unknown error");
            return Err(Failure::usage(message.to_owned()));
        }
        let result = &reply["result"];
        let text = result["content"][0]["text"].as_str().unwrap_or_default();
        if result["isError"] == json!(true) {
            eprintln!("{text}");
            return Ok(ExitCode::from(1));
        }
        let shown = match result.get("structuredContent") {
            Some(structured) => serde_json::to_string_pretty(structured)
                .map_err(|e| Failure::runtime(e.to_string()))?,
            None => text.to_owned(),
        };
        super::print(&format!("{shown}\n"))
            .map_err(|e| Failure::runtime(format!("stdout: {e}")))?;
        return Ok(ExitCode::SUCCESS);
    }
}
