//! The path of a `mcp__<id>__<tool>` call (ARCHITECTURE.md: the path of one call, "Policy"): grant
//! → approval → the upstream server, then the result cap.
//!
//! Invariants:
//! - Nothing reaches the server unless a grant names the caller, and, where approval is
//!   required, a human accepted this server's current connection through elicitation. A client
//!   that cannot be asked, a decline, an error or no answer all fail closed.
//! - A decline is remembered for the session and the connection: the agent's retry is refused
//!   with the same text without asking the human again.
//! - A server that is down answers at once with its state and reason; one still connecting is
//!   waited for within the call's deadline.
//! - A result never carries `null` optional fields and its text is capped at 20 000 characters.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::ask::AskError;
use super::outcome::{Detached, Mrtr, Outcome};
use super::Inner;
use crate::calls::Call;
use coremcp_engine::pool;
use coremcp_upstream::approval::{self, Answer};
use coremcp_upstream::hub::Target;
use coremcp_upstream::publish::cap_result;
use coremcp_upstream::rpc::UpstreamError;
use coremcp_upstream::supervisor::Connection;
use coremcp_upstream::wait::Done;
use coremcp_wire::render;
use coremcp_wire::rpc;

/// Time kept back from the call's deadline so the server's timeout is reported first.
pub(super) const MARGIN: Duration = Duration::from_millis(250);

impl Inner {
    /// Runs one upstream call: its result, or how it goes on.
    pub(super) fn run_upstream(
        self: &Arc<Self>,
        call: &Arc<Call>,
        target: &Target,
        args: &str,
        mrtr: Option<&Mrtr>,
    ) -> Outcome {
        match self.upstream_call(call, target, args, mrtr) {
            Ok(outcome) => outcome,
            Err(None) => Outcome::Cancelled,
            Err(Some(text)) => Outcome::Result(render::call_error_text(&text)),
        }
    }

    /// `Err(Some(text))` is an error result; `Err(None)` means the call was cancelled.
    fn upstream_call(
        self: &Arc<Self>,
        call: &Arc<Call>,
        target: &Target,
        args: &str,
        mrtr: Option<&Mrtr>,
    ) -> Result<Outcome, Option<String>> {
        let full = call.tool.as_str();
        let hub = &self.upstreams;
        // The route granted it (crate::route::decide).
        let id = target.server.id();
        let conn = target.server.connection(call.deadline).map_err(|why| {
            Some(format!(
                "{full} is unavailable: the MCP server \"{id}\" {why}"
            ))
        })?;
        published(target, full).map_err(Some)?;
        // A 2026 retry's state is checked before anything else is done with it.
        let opened = match mrtr.and_then(|m| m.state.as_deref()) {
            None => None,
            Some(token) => match self.open_state(call, args, token) {
                Ok(claims) => Some(claims),
                Err(refusal) => return Ok(Outcome::Refused(refusal)),
            },
        };
        if hub.policy().needs_approval(id) && !conn.approved_for(&self.caller) {
            match mrtr {
                None => self.approve(call, &conn, id, &target.tool, args)?,
                Some(mrtr) => {
                    // Only a state of our own question answers it (a server's goes back to it).
                    let ours = opened.as_ref().filter(|c| c.u.is_none());
                    // A client that takes tasks is asked in one: it goes on meanwhile.
                    if ours.is_none() && mrtr.tasks && mrtr.can_elicit {
                        if let Some(outcome) = self.approval_task(call, &conn, target, args) {
                            return Ok(outcome);
                        }
                    }
                    if let Some(outcome) =
                        self.approve_modern(call, &conn, id, &target.tool, args, mrtr, ours)?
                    {
                        return Ok(outcome);
                    }
                }
            }
        }
        let left = call
            .deadline
            .saturating_duration_since(Instant::now())
            .saturating_sub(MARGIN);
        if call.cancelled.load(Ordering::Relaxed) {
            return Err(None); // cancelled, or past its deadline, while it was being prepared
        }
        let params = call_params(
            &target.tool,
            args,
            mrtr,
            opened.as_ref(),
            conn.client.is_modern(),
        );
        // (A 2026 client's call waits: an `input_required` answer is relayed from here.)
        if mrtr.is_none() && !call.is_task() && detachable(&conn, left) {
            return self.send_detached(call, &conn, id, &params.to_string());
        }
        let timeout = conn.client.timeout().min(left);
        let mut params = params;
        let mut rounds = 0;
        loop {
            let answer =
                conn.client
                    .request("tools/call", params.clone(), timeout, &call.cancelled);
            match answer {
                Ok(result) if is_input_required(&result) && mrtr.is_none() => {
                    // A 2025 client is asked the server's questions as requests of ours, and
                    // the call is made again with the answers.
                    rounds += 1;
                    let (responses, state) = self.ask_for_upstream(call, id, &result, rounds)?;
                    params["inputResponses"] = responses;
                    match state {
                        Some(state) => params["requestState"] = Value::from(state),
                        None => {
                            if let Some(object) = params.as_object_mut() {
                                object.remove("requestState");
                            }
                        }
                    }
                }
                answer => return self.upstream_answer(answer, call, &conn, target, args, mrtr),
            }
        }
    }

    /// Sends a 2025 client's call on from the thread that read it when nothing about it can
    /// wait: the server is connected now, over stdio, no human must be asked, and the answer
    /// can be sent by the server's reader thread ([`detachable`]). The write never blocks
    /// ([`coremcp_upstream::pipe`]). `None`: the call goes to a pool thread, which may wait.
    pub(super) fn upstream_now(
        self: &Arc<Self>,
        call: &Arc<Call>,
        target: &Target,
        args: &str,
    ) -> Option<Outcome> {
        let conn = target.server.connected_now()?;
        let id = target.server.id();
        let left = call
            .deadline
            .saturating_duration_since(Instant::now())
            .saturating_sub(MARGIN);
        let asks = self.upstreams.policy().needs_approval(id) && !conn.approved_for(&self.caller);
        let published = target.server.tools().names.contains_key(call.tool.as_str());
        if asks || !published || !detachable(&conn, left) || call.cancelled.load(Ordering::Relaxed)
        {
            return None;
        }
        // The arguments as the client wrote them (a JSON object the envelope's parse checked):
        // no `Value` is built on this path.
        let mut params = String::with_capacity(32 + target.tool.len() + args.len());
        params.push_str("{\"name\":");
        rpc::push_json_string(&mut params, &target.tool);
        params.push_str(",\"arguments\":");
        params.push_str(args);
        params.push('}');
        Some(match self.send_detached(call, &conn, id, &params) {
            Ok(outcome) => outcome,
            Err(None) => Outcome::Cancelled,
            Err(Some(text)) => Outcome::Result(render::call_error_text(&text)),
        })
    }

    /// What an upstream `tools/call` answered, as the outcome of the call.
    fn upstream_answer(
        &self,
        answer: Result<Value, UpstreamError>,
        call: &Call,
        conn: &Arc<Connection>,
        target: &Target,
        args: &str,
        mrtr: Option<&Mrtr>,
    ) -> Result<Outcome, Option<String>> {
        let (full, id) = (call.tool.as_str(), target.server.id());
        match answer {
            Ok(result) if coremcp_wire::tasks::is_task(&result) => {
                self.upstream_task(call, conn, target, result, mrtr)
            }
            Ok(result) if is_input_required(&result) => match mrtr {
                Some(mrtr) => Ok(match super::outcome::undeclared(&result, mrtr, id) {
                    Some(refusal) => Outcome::Refused(refusal),
                    None => Outcome::Result(self.relay_input_required(call, args, &result)),
                }),
                None => Ok(Outcome::Result(render::call_error_text(
                    &super::outcome::input_required_for_legacy(full, id),
                ))),
            },
            // (`request` took the 2026 fields off already.)
            Ok(result) => Ok(Outcome::Result(finish(result, call.budget))),
            Err(UpstreamError::Cancelled { .. }) => Err(None),
            Err(UpstreamError::Http { source, .. }) if source.is_before_send() => {
                let why = source.to_string();
                target.server.report_lost(why.clone());
                Err(Some(format!(
                    "{full} failed: the MCP server \"{id}\" cannot be reached ({why}); it was not \
                     called, and Core MCP is reconnecting to it"
                )))
            }
            Err(e) => Err(Some(failed(full, id, &e))),
        }
    }

    /// Sends the call on a stdio server without waiting; the reader thread answers it.
    fn send_detached(
        self: &Arc<Self>,
        call: &Arc<Call>,
        conn: &Arc<Connection>,
        server: &str,
        params: &str,
    ) -> Result<Outcome, Option<String>> {
        let Some(transport) = conn.client.stdio() else {
            return Err(Some(format!("{}: not a stdio server", call.tool)));
        };
        let id = transport.next_id();
        self.detached_lock().insert(
            Arc::clone(&call.id),
            Detached {
                conn: Arc::clone(conn),
                id,
            },
        );
        let inner = Arc::clone(self);
        let (call_done, conn_done, server_done) =
            (Arc::clone(call), Arc::clone(conn), server.to_owned());
        let done: Done = Box::new(move |outcome| {
            if inner.detached_lock().remove(&*call_done.id).is_none() {
                return; // abandoned: cancelled, or past its deadline
            }
            let text = match outcome {
                Some(Ok(raw)) => match as_written(raw.get(), call_done.budget) {
                    Some(result) => result.to_owned(),
                    None => {
                        let result: Value = serde_json::from_str(raw.get()).unwrap_or(Value::Null);
                        if is_input_required(&result) {
                            render::call_error_text(&super::outcome::input_required_for_legacy(
                                &call_done.tool,
                                &server_done,
                            ))
                        } else {
                            finish(conn_done.client.incoming(result), call_done.budget)
                        }
                    }
                },
                Some(Err(refused)) => {
                    let e = refused.into_error("tools/call");
                    render::call_error_text(&failed(&call_done.tool, &server_done, &e))
                }
                None => {
                    // Gone: say why from a pool thread (the exit status takes a moment).
                    pool::global().spawn(Box::new(move || {
                        let why = conn_done.client.stdio().map_or_else(String::new, |t| {
                            failed(&call_done.tool, &server_done, &t.closed_error("tools/call"))
                        });
                        inner.answer_with(&call_done, &render::call_error_text(&why));
                    }));
                    return;
                }
            };
            inner.answer_with(&call_done, &text);
        });
        match transport.send_detached(id, "tools/call", params, done) {
            Ok(()) => Ok(Outcome::Detached),
            Err(e) => {
                self.detached_lock().remove(&*call.id);
                Err(Some(failed(&call.tool, server, &e)))
            }
        }
    }

    /// Sends `result` as the answer of `call`, unless the watchdog or a cancel claimed it.
    fn answer_with(&self, call: &Call, result: &str) {
        let answer = rpc::response(&call.id, result);
        if self.calls.finish(call, &answer) {
            self.out.send(answer);
            self.calls.answered();
        }
    }

    /// Asks a human (once per connection) whether the server may be used.
    pub(super) fn approve(
        &self,
        call: &Call,
        conn: &Connection,
        id: &str,
        tool: &str,
        args: &str,
    ) -> Result<(), Option<String>> {
        let key = (id.to_owned(), conn.generation);
        let full = call.tool.as_str();
        if self.declined_lock().contains(&key) {
            return Err(Some(approval::declined(id, full)));
        }
        if !self.can_elicit.load(Ordering::Relaxed) {
            return Err(Some(approval::cannot_ask(id, full)));
        }
        let _one_question = conn.asking();
        if conn.approved_for(&self.caller) {
            return Ok(());
        }
        if self.declined_lock().contains(&key) {
            return Err(Some(approval::declined(id, full)));
        }
        let params = approval::request(id, conn.client.server_info.as_deref(), tool, args);
        tracing::info!(server = id, tool = full, "asking the human for approval");
        let answer = self.asks.ask(
            &*self.out,
            "elicitation/create",
            params,
            call.deadline,
            &call.cancelled,
        );
        match answer.as_ref().map(approval::answer) {
            Ok(Answer::Approved) => {
                tracing::info!(server = id, principal = %self.caller.principal(), "the human approved the server");
                conn.approve(&self.caller);
                Ok(())
            }
            Ok(Answer::Dismissed) => {
                tracing::info!(
                    server = id,
                    "the approval question was dismissed; nothing was called"
                );
                Err(Some(approval::dismissed(id, full)))
            }
            Ok(Answer::Declined) => {
                tracing::info!(server = id, "the human declined the server");
                self.declined_lock().insert(key);
                Err(Some(approval::declined(id, full)))
            }
            Err(AskError::Cancelled) => Err(None),
            Err(e) => Err(Some(approval::not_answered(id, full, &e.to_string()))),
        }
    }
}

/// The text a failed call answers with; an answer discarded for its size is logged too (the
/// server misbehaves, and whoever runs Core MCP should hear of it).
/// Whether a call with `left` until its deadline can be sent without a waiting thread: on a
/// 2025 stdio server (`request` adds a 2026 server's envelope), whose own timeout is not the
/// first to come — the call's deadline is, and the watchdog times it out, so nobody needs to
/// wait and the thread that reads the answer sends it.
fn detachable(conn: &Connection, left: std::time::Duration) -> bool {
    conn.client.timeout() >= left && conn.client.stdio().is_some() && !conn.client.is_modern()
}

pub(super) fn failed(full: &str, server: &str, e: &UpstreamError) -> String {
    if let UpstreamError::TooLarge { bytes, .. } = e {
        tracing::warn!(server = %server, tool = %full, bytes, "an upstream answer over the size limit was discarded: {e}");
    }
    format!("{full} failed: the MCP server \"{server}\": {e}")
}

/// Whether a 2026 server answered that it needs input first.
fn is_input_required(result: &Value) -> bool {
    result.get("resultType").and_then(Value::as_str) == Some("input_required")
}

/// The server's result as it is, when [`finish`] would change nothing in it: an object with
/// a `content` array, no `null` at its top level or in a content item, no `resultType` (what a
/// 2026 server adds), and no more text than the cap even counted as written (escapes
/// included, so never fewer characters than the text has). `None`: it goes through `finish`.
fn as_written(result: &str, limit: usize) -> Option<&str> {
    let top: Fields<'_> = serde_json::from_str(result).ok()?;
    if top.has_null() || top.has_duplicates() || top.get("resultType").is_some() {
        return None;
    }
    // A structured part over the limit is dropped (written, it has at least as many bytes).
    if top
        .get("structuredContent")
        .is_some_and(|s| s.get().len() > limit)
    {
        return None;
    }
    let items: Vec<Fields<'_>> = serde_json::from_str(top.get("content")?.get()).ok()?;
    let mut text = 0;
    for item in &items {
        if item.has_null() {
            return None;
        }
        // Written with its quotes; every character takes at least one byte.
        text += item
            .get("text")
            .map_or(0, |t| t.get().len().saturating_sub(2));
    }
    (text <= limit).then_some(result)
}

/// A JSON object's members as written, in order, without building a `Value` (an object with
/// an escaped key does not read: it goes through `finish`).
struct Fields<'a>(Vec<(&'a str, &'a serde_json::value::RawValue)>);

impl<'a> Fields<'a> {
    fn get(&self, key: &str) -> Option<&'a serde_json::value::RawValue> {
        self.0.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
    }

    fn has_null(&self) -> bool {
        self.0.iter().any(|(_, v)| v.get() == "null")
    }

    fn has_duplicates(&self) -> bool {
        self.0
            .iter()
            .enumerate()
            .any(|(i, (k, _))| self.0[..i].iter().any(|(earlier, _)| earlier == k))
    }
}

impl<'de: 'a, 'a> serde::Deserialize<'de> for Fields<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Visit<'a> {
            type Value = Fields<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(
                self,
                mut map: M,
            ) -> Result<Fields<'a>, M::Error> {
                let mut fields = Vec::with_capacity(4);
                while let Some(entry) = map.next_entry()? {
                    fields.push(entry);
                }
                Ok(Fields(fields))
            }
        }
        d.deserialize_map(Visit(std::marker::PhantomData))
    }
}

/// The server's result as agents get it: optional `null`s left out, text capped at `limit`
/// (the session's budget).
pub(super) fn finish(mut result: Value, limit: usize) -> String {
    if let Some(object) = result.as_object_mut() {
        object.retain(|_, v| !v.is_null());
        if let Some(items) = object.get_mut("content").and_then(Value::as_array_mut) {
            for item in items.iter_mut().filter_map(Value::as_object_mut) {
                item.retain(|_, v| !v.is_null());
            }
        }
    }
    if !result.get("content").is_some_and(Value::is_array) {
        result["content"] = json!([]);
    }
    cap_result(&mut result, limit);
    result.to_string()
}

/// Whether the server publishes the tool now; the error names why not (withheld, or gone).
fn published(target: &Target, full: &str) -> Result<(), String> {
    let tools = target.server.tools();
    if tools.names.contains_key(full) {
        return Ok(());
    }
    let why = tools
        .withheld
        .iter()
        .find(|w| w.tool == target.tool)
        .map_or_else(String::new, |w| {
            format!(": it is withheld because {}", w.reason)
        });
    Err(format!(
        "unknown tool: {full} (the MCP server \"{}\" does not publish it{why})",
        target.server.id()
    ))
}

/// The params of an upstream `tools/call`: to a 2026 server (`modern`), the capabilities our
/// client declared that we pass on (elicitation), the tasks extension always — a task is
/// passed on to a client that takes tasks, and waited for by Core MCP for one that does not
/// (`upstream_tasks.rs`) — and on a retry the server's own state with the answers.
fn call_params(
    tool: &str,
    args: &str,
    mrtr: Option<&Mrtr>,
    opened: Option<&coremcp_wire::modern::state::Claims>,
    modern: bool,
) -> Value {
    let arguments: Value = serde_json::from_str(args).unwrap_or_else(|_| json!({}));
    let mut params = json!({"name": tool, "arguments": arguments});
    if !modern {
        return params;
    }
    let mut capabilities = coremcp_wire::tasks::capabilities();
    if mrtr.is_some_and(|m| m.can_elicit) {
        capabilities["elicitation"] = json!({});
    }
    params["_meta"] = json!({ coremcp_wire::modern::CAPABILITIES_KEY: capabilities });
    if let Some(mrtr) = mrtr {
        if let Some(upstream) = opened.and_then(|c| c.u.clone()) {
            if let Some(responses) = &mrtr.responses {
                params["inputResponses"] = responses.clone();
            }
            if !upstream.is_empty() {
                params["requestState"] = json!(upstream);
            }
        }
    }
    params
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAX: usize = coremcp_wire::budget::MAX;

    #[test]
    fn results_lose_their_nulls_and_are_capped() {
        let out: Value = serde_json::from_str(&finish(
            json!({
                "content": [{"type": "text", "text": "x".repeat(30_000), "annotations": null}],
                "structuredContent": null,
                "isError": null
            }),
            MAX,
        ))
        .expect("json");
        assert!(out.get("structuredContent").is_none() && out.get("isError").is_none());
        let text = out["content"][0]["text"].as_str().expect("text");
        assert!(text.contains("[truncated by Core MCP"), "{}", &text[..100]);
        assert!(out["content"][0].get("annotations").is_none());
        let empty: Value = serde_json::from_str(&finish(json!({}), MAX)).expect("json");
        assert_eq!(empty, json!({"content": []}));
    }

    /// A result goes on as written exactly when `finish` would give the same JSON value.
    #[test]
    fn a_result_goes_on_as_written_only_when_finish_would_change_nothing() {
        let long = "x".repeat(20_001);
        let cases = [
            (r#"{"content":[{"type":"text","text":"Echo: hi"}]}"#, true),
            (
                r#"{"content":[],"isError":true,"structuredContent":{"a":null}}"#,
                true,
            ),
            (
                r#"{ "content" : [ {"type":"image","data":"AA==","mimeType":"image/png"} ] }"#,
                true,
            ),
            (
                r#"{"content":[{"type":"text","text":"a"}],"isError":null}"#,
                false,
            ),
            (
                r#"{"content":[{"type":"text","text":"a","annotations":null}]}"#,
                false,
            ),
            (r#"{"isError":false}"#, false),
            (r#"{"content":{"type":"text"}}"#, false),
            (r#"{"content":["text"]}"#, false),
            (r#"{"content":[],"resultType":"input_required"}"#, false),
            (
                r#"{"content":[],"content":[{"type":"text","text":"b"}]}"#,
                false,
            ),
            (
                r#"{"con\u0074ent":[{"type":"text","text":"a","x":null}]}"#,
                false,
            ),
            ("[1,2]", false),
            ("null", false),
        ];
        for (result, unchanged) in cases {
            assert_eq!(as_written(result, MAX).is_some(), unchanged, "{result}");
            if unchanged {
                let value: Value = serde_json::from_str(result).expect("json");
                let finished: Value =
                    serde_json::from_str(&finish(value.clone(), MAX)).expect("json");
                assert_eq!(finished, value, "{result}");
            }
        }
        let capped = format!(r#"{{"content":[{{"type":"text","text":"{long}"}}]}}"#);
        assert!(
            as_written(&capped, MAX).is_none(),
            "over the cap: finish cuts it"
        );
        let at_cap = format!(
            r#"{{"content":[{{"type":"text","text":"{}"}}]}}"#,
            &long[2..]
        );
        assert!(as_written(&at_cap, MAX).is_some());
        // A smaller session's budget: the same result goes through `finish`, which cuts it.
        assert!(as_written(&at_cap, 10_000).is_none());
        let cut: Value = serde_json::from_str(&finish(
            serde_json::from_str(&at_cap).expect("json"),
            10_000,
        ))
        .expect("json");
        let shown = cut["content"][0]["text"]
            .as_str()
            .map_or(0, |t| t.chars().count());
        assert!((9_990..=10_000).contains(&shown), "{shown}");
        // A structured part over the limit is dropped by `finish`, so it is not as written.
        let structured = format!(
            r#"{{"content":[{{"type":"text","text":"ok"}}],"structuredContent":{{"s":"{}"}}}}"#,
            &long[..12_000]
        );
        assert!(as_written(&structured, MAX).is_some());
        assert!(as_written(&structured, 10_000).is_none());
    }
}
