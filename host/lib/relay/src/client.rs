//! An MCP client over Streamable HTTP to another Core MCP (a relay or a `remote_host`
//! target): `server/discover` once, and then — when the peer speaks 2026-07-28 — sessionless
//! `tools/call` requests; with an older peer, `initialize` once and the calls on its session.
//! Either way on a kept-alive connection, each call answered as JSON or as an SSE stream.
//!
//! The peer's 2026 `resultType: "complete"` is taken off its result, so what is passed on
//! reads the same whatever era the agent speaks (our own outbox adds it back for a 2026 one).
//!
//! Invariants:
//! - The peer's answer to a call comes back unchanged: its `result` object as JSON text, or its
//!   JSON-RPC error code, message and `data` ([`Reply`]), read by the reader every client of
//!   ours shares (`coremcp_net::mcp`). Nothing is retried after the call was sent, except when
//!   the peer says it did not run it: the session is unknown (HTTP 404) — it is set up again
//!   once and the call resent — or the credential was refused (HTTP 401) — an OAuth token is
//!   fetched anew once and the call resent.
//! - Only a failure to connect is reported as such ([`HttpError::is_before_send`]); an answer
//!   refusing `initialize` on a live peer is an error of the peer like any other.
//! - The credential goes only to a peer the operator configured (`trusted`): the static
//!   `COREMCP_RELAY_TOKEN`, or an OAuth token of `coremcp_net::oauth::client`, fetched by the
//!   call's deadline before the set-up starts; a sign-in that fails is neither a connect failure
//!   nor a call that may have run ([`HttpError::SignIn`]).
//! - Setting up — the connect, `server/discover` and `initialize` together — has one short
//!   deadline of its own (the connect timeout, `--relay-connect-timeout`), and a peer that
//!   sends no answer to it (or drops the connection) within that time counts as one that could
//!   not be connected to: no tool call was sent, so the call may go to the next relay. A hung
//!   peer therefore costs a new client the connect timeout, never the call's whole deadline.

use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use serde_json::value::RawValue;
use serde_json::{json, Value};

use coremcp_net::client::{Conn, HttpError, Response, Url};
use coremcp_net::mcp::{self, Framing, ReadError};
use coremcp_wire::mcp::PREFERRED_VERSION;

/// What the peer answered to a call.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// The `result` object, as the peer wrote it.
    Result(String),
    /// A JSON-RPC error, its `data` (JSON text) kept as the peer sent it.
    Error {
        code: i64,
        message: String,
        data: Option<String>,
    },
}

/// How this process proves itself to the peers the operator configured (relays, routes, and
/// the `remote_host` URLs `--peer` allows: [`super::peers`]); set once at start.
pub enum Credential {
    /// `COREMCP_RELAY_TOKEN`, as the `Authorization` value.
    Static(String),
    /// `COREMCP_RELAY_OAUTH_*`: a token per peer from the client credentials grant.
    OAuth(coremcp_net::oauth::client::ClientCredentials),
}

static CREDENTIAL: std::sync::OnceLock<Option<Credential>> = std::sync::OnceLock::new();

/// Sets the credential the peers are sent (`None`: none). The first call wins.
pub fn set_credential(credential: Option<Credential>) {
    let _ = CREDENTIAL.set(credential.map(|c| match c {
        Credential::Static(token) => Credential::Static(format!("Bearer {token}")),
        oauth => oauth,
    }));
}

/// Whether a credential is configured for the peers.
pub(crate) fn has_credential() -> bool {
    matches!(CREDENTIAL.get(), Some(Some(_)))
}

fn credential() -> Option<&'static Credential> {
    CREDENTIAL.get().and_then(Option::as_ref)
}

/// One MCP client of one peer.
pub struct McpClient {
    url: Url,
    /// Whether the operator configured this peer: only then is the bearer token sent.
    trusted: bool,
    conn: Option<Conn>,
    session: Option<String>,
    /// Whether the peer speaks 2026-07-28; `None` until asked.
    modern: Option<bool>,
    next_id: u64,
}

/// The version Core MCPs speak between themselves when both can.
const MODERN: &str = "2026-07-28";

impl McpClient {
    /// A client of the peer at `url`; `trusted`: the operator configured it, so it is sent
    /// the bearer token.
    pub fn new(url: Url, trusted: bool) -> Self {
        Self {
            url,
            trusted,
            conn: None,
            session: None,
            modern: None,
            next_id: 1,
        }
    }

    /// Whether this client can carry another call without reconnecting.
    pub fn reusable(&mut self) -> bool {
        (self.session.is_some() || self.modern == Some(true))
            && self.conn.as_mut().is_some_and(Conn::alive)
    }

    /// Calls `tool` with `arguments` (a JSON object's text) on the peer, with `meta` (the
    /// hop's keys, [`super::hop::Outgoing::meta`]) as the call's `_meta`.
    pub fn call_tool(
        &mut self,
        tool: &str,
        arguments: &str,
        meta: &serde_json::Map<String, Value>,
        deadline: Instant,
        cancelled: &AtomicBool,
        connect_timeout: Duration,
    ) -> Result<Reply, HttpError> {
        let arguments = RawValue::from_string(arguments.to_owned())
            .map_err(|e| HttpError::Url(format!("the arguments are not JSON: {e}")))?;
        // An OAuth token is fetched (if none is held) by the call's deadline, not the set-up's:
        // the provider is not the peer.
        self.sign_in(deadline)?;
        // One deadline for the whole set-up, however many of its steps this client still needs.
        let setup = Setup::new(deadline, connect_timeout, self.url.authority.clone());
        if self.modern.is_none() {
            self.discover(&setup, cancelled)?;
        }
        let mut setup = Some(setup);
        let mut fresh_session = false;
        loop {
            let modern = self.modern == Some(true);
            if self.session.is_none() && !modern {
                // A session the peer forgot is set up again under a deadline of its own.
                let setup = setup.take().unwrap_or_else(|| {
                    Setup::new(deadline, connect_timeout, self.url.authority.clone())
                });
                self.handshake(&setup, cancelled)
                    .map_err(|e| setup.failed(e, "initialize"))?;
                fresh_session = true;
            }
            let id = self.take_id();
            let mut request = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                                 "params": {"name": tool, "arguments": &arguments}});
            if !meta.is_empty() {
                request["params"]["_meta"] = Value::Object(meta.clone());
            }
            if modern {
                request["params"] = coremcp_wire::modern::with_envelope(
                    std::mem::take(&mut request["params"]),
                    None,
                );
            }
            match self.request(&request, id, deadline, cancelled, connect_timeout)? {
                Answer::Reply(Reply::Result(result)) if modern => {
                    return Ok(Reply::Result(without_result_type(result)))
                }
                Answer::Reply(reply) => return Ok(reply),
                Answer::UnknownSession if !fresh_session => {
                    // The peer restarted or ended the session; it did not run this call.
                    self.session = None;
                }
                Answer::UnknownSession => {
                    return Err(HttpError::Answer(
                        "the peer refused a session it had just created (HTTP 404)".into(),
                    ))
                }
            }
        }
    }

    fn take_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// Asks the peer whether it speaks 2026-07-28 (`server/discover`); any answer but a
    /// discovery naming it means it does not. A peer that cannot be reached is an error.
    fn discover(&mut self, setup: &Setup, cancelled: &AtomicBool) -> Result<(), HttpError> {
        let id = self.take_id();
        let request = json!({"jsonrpc": "2.0", "id": id, "method": coremcp_wire::modern::DISCOVER,
                             "params": coremcp_wire::modern::discover_params()});
        self.modern = Some(true);
        let answer = self.request(
            &request,
            id,
            setup.deadline,
            cancelled,
            setup.connect_left(),
        );
        let modern = matches!(&answer, Ok(Answer::Reply(Reply::Result(result)))
            if serde_json::from_str::<Value>(result).is_ok_and(|r| coremcp_wire::modern::offers_modern(&r)));
        self.modern = Some(modern);
        match answer {
            Err(e) if e.is_before_send() || Setup::unanswered(&e) => {
                self.modern = None;
                Err(setup.failed(e, "server/discover"))
            }
            // Any answer, even a refusal, says the peer is there and not a 2026 one.
            _ => Ok(()),
        }
    }

    fn handshake(&mut self, setup: &Setup, cancelled: &AtomicBool) -> Result<(), HttpError> {
        let (deadline, connect_timeout) = (setup.deadline, setup.connect_left());
        let id = self.take_id();
        let request = json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
            "protocolVersion": PREFERRED_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "coremcp", "version": env!("CARGO_PKG_VERSION")}
        }});
        match self.request(&request, id, deadline, cancelled, connect_timeout)? {
            Answer::Reply(Reply::Result(_)) => {}
            Answer::Reply(Reply::Error { code, message, .. }) => {
                return Err(HttpError::Answer(format!(
                    "initialize was refused ({code}): {message}"
                )))
            }
            Answer::UnknownSession => {
                return Err(HttpError::Answer("initialize answered HTTP 404".into()))
            }
        }
        if self.session.is_none() {
            return Err(HttpError::Answer(
                "initialize answered without an Mcp-Session-Id".into(),
            ));
        }
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let body = initialized.to_string();
        let headers = self.headers(&initialized, deadline)?;
        let headers: Vec<(&str, &str)> = headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        let conn = self
            .conn
            .as_mut()
            .ok_or(HttpError::Answer("no connection".into()))?;
        let mut response = conn.exchange(
            &self.url,
            "POST",
            &headers,
            body.as_bytes(),
            deadline,
            cancelled,
        )?;
        let status = response.status;
        response.read_all(deadline, cancelled)?;
        if !(200..300).contains(&status) {
            return Err(HttpError::Answer(format!(
                "notifications/initialized answered HTTP {status}"
            )));
        }
        Ok(())
    }

    /// The headers of `request`, with this client's credential (an OAuth token fetched by
    /// `deadline` if none is held).
    fn headers(
        &self,
        request: &Value,
        deadline: Instant,
    ) -> Result<Vec<(String, String)>, HttpError> {
        let modern = self.modern == Some(true);
        let version = if modern { MODERN } else { PREFERRED_VERSION };
        let mut headers = mcp::headers(
            Some(version),
            self.session.as_deref(),
            modern.then_some(request),
        );
        if let Some(bearer) = self.authorization(deadline)? {
            headers.push(("Authorization".to_owned(), bearer));
        }
        Ok(headers)
    }

    /// The `Authorization` value this peer is sent, if any: only a peer the operator
    /// configured gets the credential (an OAuth token fetched by `deadline` if none is held).
    fn authorization(&self, deadline: Instant) -> Result<Option<String>, HttpError> {
        match (self.trusted, credential()) {
            (true, Some(Credential::Static(bearer))) => Ok(Some(bearer.clone())),
            (true, Some(Credential::OAuth(client))) => {
                let url = self.url_text();
                client.authorization(&url, deadline).map(Some).map_err(|e| {
                    HttpError::SignIn(format!("cannot sign in to {url} with OAuth: {e}"))
                })
            }
            (false, _) | (true, None) => Ok(None),
        }
    }

    /// Makes sure an OAuth token for this peer is held (nothing to do for another credential,
    /// so a static token's call pays nothing here).
    fn sign_in(&self, deadline: Instant) -> Result<(), HttpError> {
        match (self.trusted, credential()) {
            (true, Some(Credential::OAuth(_))) => self.authorization(deadline).map(drop),
            _ => Ok(()),
        }
    }

    /// This peer's URL as configured (the resource its OAuth tokens are for).
    fn url_text(&self) -> String {
        let scheme = if self.url.tls { "https" } else { "http" };
        format!("{scheme}://{}{}", self.url.authority, self.url.path)
    }

    /// The peer refused this client's credential (HTTP 401): an OAuth token is dropped so the
    /// next request gets a new one; whether there was one to drop.
    fn refused_credential(&self) -> bool {
        match (self.trusted, credential()) {
            (true, Some(Credential::OAuth(client))) => {
                client.forget(&self.url_text());
                true
            }
            _ => false,
        }
    }

    /// Sends one request (connecting first if needed) and waits for the answer with `id`.
    fn request(
        &mut self,
        request: &Value,
        id: u64,
        deadline: Instant,
        cancelled: &AtomicBool,
        connect_timeout: Duration,
    ) -> Result<Answer, HttpError> {
        match self.request_once(request, id, deadline, cancelled, connect_timeout) {
            // Refused at the door (401), so it did not run: once more with a new OAuth token
            // (the provider may have rotated its keys, or the token been revoked).
            Err(HttpError::Unauthorized(_)) if self.refused_credential() => self
                .request_once(request, id, deadline, cancelled, connect_timeout)
                .map_err(|e| match e {
                    HttpError::Unauthorized(text) => HttpError::Answer(text),
                    other => other,
                }),
            Err(HttpError::Unauthorized(text)) => Err(HttpError::Answer(text)),
            other => other,
        }
    }

    fn request_once(
        &mut self,
        request: &Value,
        id: u64,
        deadline: Instant,
        cancelled: &AtomicBool,
        connect_timeout: Duration,
    ) -> Result<Answer, HttpError> {
        if !self.conn.as_mut().is_some_and(Conn::alive) {
            self.conn = Some(Conn::connect(&self.url, connect_timeout)?);
        }
        let body = request.to_string();
        let headers = self.headers(request, deadline)?;
        let headers: Vec<(&str, &str)> = headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        let url = self.url.clone();
        let conn = self
            .conn
            .as_mut()
            .ok_or(HttpError::Answer("no connection".into()))?;
        let outcome = (|| {
            let mut response =
                conn.exchange(&url, "POST", &headers, body.as_bytes(), deadline, cancelled)?;
            let session = response.header("mcp-session-id").map(str::to_owned);
            let answer = read_answer(&mut response, self.trusted, id, deadline, cancelled)?;
            Ok((session, answer))
        })();
        match outcome {
            Ok((session, answer)) => {
                if session.is_some() {
                    self.session = session;
                }
                Ok(answer)
            }
            Err(e) => {
                // The connection is in an unknown state: never reuse it.
                self.conn = None;
                Err(e)
            }
        }
    }
}

enum Answer {
    Reply(Reply),
    UnknownSession,
}

/// The set-up of a client (connect, `server/discover`, `initialize`) under its one deadline.
struct Setup {
    /// The connect timeout's end, or the call's deadline when that is sooner.
    deadline: Instant,
    timeout: Duration,
    authority: String,
}

impl Setup {
    fn new(call_deadline: Instant, timeout: Duration, authority: String) -> Self {
        Self {
            deadline: call_deadline.min(Instant::now() + timeout),
            timeout,
            authority,
        }
    }

    /// What is left of the set-up's time, for a connect.
    fn connect_left(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    /// Whether `error` means the peer let the set-up go unanswered: no answer in time, or the
    /// connection lost while sending or waiting. Its answers (an HTTP refusal, say) are not.
    fn unanswered(error: &HttpError) -> bool {
        matches!(error, HttpError::Timeout | HttpError::Send(_))
    }

    /// `error` of the set-up step `step`: one the peer left unanswered becomes a connect
    /// failure, since no tool call was sent.
    fn failed(&self, error: HttpError, step: &str) -> HttpError {
        if !Self::unanswered(&error) {
            return error;
        }
        let reason = match error {
            HttpError::Timeout => format!(
                "no answer to {step} within the {} connect timeout (--relay-connect-timeout)",
                seconds(self.timeout)
            ),
            other => format!("{step}: {other}"),
        };
        HttpError::Connect {
            addr: self.authority.clone(),
            reason,
        }
    }
}

/// `2 s`, `0.5 s`.
fn seconds(duration: Duration) -> String {
    let secs = duration.as_secs_f64();
    if secs.fract() == 0.0 {
        format!("{secs:.0} s")
    } else {
        format!("{secs} s")
    }
}

/// The answer to request `id` in `response` (a JSON body or an SSE stream), read as every
/// client of ours reads one (`coremcp_net::mcp`), the reply kept as the peer wrote it.
fn read_answer(
    response: &mut Response<'_>,
    trusted: bool,
    id: u64,
    deadline: Instant,
    cancelled: &AtomicBool,
) -> Result<Answer, HttpError> {
    let on_message = |bytes: &[u8], _: Framing| parse_reply(bytes, id).map_err(|e| e.to_string());
    match mcp::read_answer(response, Some(id), true, deadline, cancelled, on_message) {
        Ok(mcp::Read::Reply(reply)) => Ok(Answer::Reply(reply)),
        Ok(mcp::Read::UnknownSession) => Ok(Answer::UnknownSession),
        Ok(mcp::Read::Accepted) => Err(HttpError::Answer(format!(
            "request {id} was answered 202 Accepted, with no response"
        ))),
        // A peer's stream is never resumed: its response is on the POST's own stream.
        Ok(mcp::Read::Resume { .. }) => {
            Err(HttpError::Answer(ReadError::StreamEnded(id).to_string()))
        }
        Err(ReadError::Http(e)) => Err(e),
        Err(ReadError::Status {
            status: 401,
            excerpt,
        }) if trusted => Err(HttpError::Unauthorized(format!("HTTP 401: {excerpt}"))),
        Err(ReadError::Status { status, excerpt }) => {
            let why = match (status, trusted) {
                (401 | 403, false) => {
                    " (no token was sent: this URL comes from a Registry record and is not one \
                     the operator allowed; start coremcp with --peer URL or COREMCP_PEERS to \
                     send it COREMCP_RELAY_TOKEN)"
                }
                _ => "",
            };
            Err(HttpError::Answer(format!("HTTP {status}: {excerpt}{why}")))
        }
        Err(other) => Err(HttpError::Answer(other.to_string())),
    }
}

/// A result object's text without a leading `"resultType":"complete"` (which is where our
/// peers put it).
fn without_result_type(result: String) -> String {
    const KEY: &str = "{\"resultType\":\"complete\"";
    match result.strip_prefix(KEY) {
        Some(rest) => match rest.strip_prefix(',') {
            Some(rest) => format!("{{{rest}"),
            None => format!("{{{rest}"),
        },
        None => result,
    }
}

/// The reply in a JSON-RPC message if it answers `id`; `None` for anything else (a
/// notification or a request of the peer).
fn parse_reply(body: &[u8], id: u64) -> Result<Option<Reply>, HttpError> {
    #[derive(serde::Deserialize)]
    struct Message<'a> {
        #[serde(default)]
        id: Option<Value>,
        #[serde(borrow, default)]
        result: Option<&'a RawValue>,
        #[serde(default)]
        error: Option<ErrorObject>,
    }
    #[derive(serde::Deserialize)]
    struct ErrorObject {
        code: i64,
        message: String,
        #[serde(default)]
        data: Option<Box<RawValue>>,
    }
    let message: Message<'_> = serde_json::from_slice(body)
        .map_err(|e| HttpError::Answer(format!("the answer is not a JSON-RPC message: {e}")))?;
    if message.id != Some(Value::from(id)) {
        return Ok(None);
    }
    match (message.result, message.error) {
        (Some(result), _) => Ok(Some(Reply::Result(result.get().to_owned()))),
        (None, Some(error)) => Ok(Some(Reply::Error {
            code: error.code,
            message: error.message,
            data: error.data.map(|d| d.get().to_owned()),
        })),
        (None, None) => Err(HttpError::Answer(format!(
            "the response to request {id} has neither result nor error"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_are_picked_by_id_and_kept_as_written() {
        let reply = parse_reply(
            br#"{"jsonrpc":"2.0","id":3,"result":{"content":[],"isError":true}}"#,
            3,
        )
        .expect("parse");
        assert_eq!(
            reply,
            Some(Reply::Result(r#"{"content":[],"isError":true}"#.into()))
        );
        let error = parse_reply(
            br#"{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"no"}}"#,
            3,
        )
        .expect("parse");
        assert_eq!(
            error,
            Some(Reply::Error {
                code: -32602,
                message: "no".into(),
                data: None,
            })
        );
        // An error's data is kept as the peer wrote it.
        let with_data = parse_reply(
            br#"{"jsonrpc":"2.0","id":3,"error":{"code":-32022,"message":"v","data":{"supported":["x"]}}}"#,
            3,
        )
        .expect("parse");
        assert_eq!(
            with_data,
            Some(Reply::Error {
                code: -32022,
                message: "v".into(),
                data: Some(r#"{"supported":["x"]}"#.into()),
            })
        );
        assert_eq!(
            parse_reply(br#"{"jsonrpc":"2.0","method":"notifications/message"}"#, 3)
                .expect("parse"),
            None
        );
        assert!(parse_reply(b"nope", 3).is_err());
        assert_eq!(
            without_result_type(r#"{"resultType":"complete","content":[]}"#.into()),
            r#"{"content":[]}"#
        );
        assert_eq!(
            without_result_type(r#"{"resultType":"complete"}"#.into()),
            "{}"
        );
        assert_eq!(
            without_result_type(r#"{"content":[]}"#.into()),
            r#"{"content":[]}"#
        );
    }
}
