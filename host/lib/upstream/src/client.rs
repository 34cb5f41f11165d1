//! One upstream server as a blocking MCP client: start or reach it over its transport, agree
//! on the protocol era, `request(method, params, timeout)`, and `tools/list` with paging.
//!
//! The era is probed as the official SDK client does: `server/discover` at 2026-07-28 first
//! (over stdio and Streamable HTTP; a legacy SSE server predates it), and a server that answers
//! it with that version is spoken to in 2026 from then on — every request carries the `_meta`
//! envelope, no session, `subscriptions/listen` for `list_changed` on stdio. Anything else
//! (an error, a result without the version, no answer within [`PROBE`]) falls back to
//! `initialize`.
//!
//! Invariants:
//! - The handshake has [`HANDSHAKE`] (30 s) whatever `requestTimeoutMs` says, after a probe of
//!   at most [`PROBE`]; other requests have the server's `requestTimeoutMs` unless the caller
//!   gives another.
//! - The server must answer `initialize` with a protocol version we speak.
//! - What a 2026 server adds to a result for its clients (`resultType: "complete"`, `ttlMs`,
//!   `cacheScope`) is taken off here, so no 2025 client of ours ever sees it; an
//!   `input_required` result is left whole for the caller.
//! - `tools/list` follows `nextCursor` at most [`MAX_PAGES`] pages and says when it stopped
//!   there.

use std::ffi::OsString;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use coremcp_spawn::Spec;
use serde_json::{json, Value};

use super::config::{ServerConfig, Transport};
use super::http::HttpTransport;
use super::rpc::{Notices, UpstreamError};
use super::sse::SseTransport;
use super::stdio::StdioTransport;
use coremcp_wire::mcp::{PREFERRED_VERSION, SUPPORTED_VERSIONS};
use coremcp_wire::modern::{with_envelope, VERSION as MODERN};

/// How long `initialize` may take (ARCHITECTURE.md, "Limits").
pub(crate) const HANDSHAKE: Duration = Duration::from_secs(30);
/// How long the `server/discover` probe waits before the server is taken for a legacy one
/// that does not answer unknown requests (the SDK client's figure).
pub(crate) const PROBE: Duration = Duration::from_secs(10);
/// The most `tools/list` pages followed (ARCHITECTURE.md, "Limits").
pub const MAX_PAGES: usize = 20;

/// A cancel flag nobody sets, for requests of the client's own.
static NEVER: AtomicBool = AtomicBool::new(false);

enum Link {
    Stdio(StdioTransport),
    Http(HttpTransport),
    Sse(SseTransport),
}

/// A connected upstream server.
pub struct Client {
    link: Link,
    timeout: Duration,
    notices: Arc<Notices>,
    /// `serverInfo` from `initialize` ("name version"), if given.
    pub server_info: Option<String>,
    /// The negotiated protocol version.
    pub version: String,
    /// The server speaks 2026-07-28 with us.
    modern: bool,
    /// The capabilities it declared (`initialize` or `server/discover`).
    pub capabilities: Value,
}

/// The tools a server listed.
#[derive(Debug, Default)]
pub(crate) struct ToolList {
    /// The first items listed (at most what the caller asked to keep).
    pub tools: Vec<Value>,
    /// Items listed past those, counted and dropped at once.
    pub unread: usize,
    /// Why paging stopped before the server said it had no more, if it did.
    pub stopped: Option<PagingStop>,
}

impl ToolList {
    /// Every item the server listed, kept or not.
    pub fn listed(&self) -> usize {
        self.tools.len() + self.unread
    }
}

/// Why `tools/list` paging stopped early.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PagingStop {
    /// [`MAX_PAGES`] pages were read and the server had more.
    Limit,
    /// The server gave a cursor it had given before (it would page forever).
    RepeatedCursor(String),
}

impl ToolList {
    /// The warning to report when paging stopped early.
    pub(crate) fn paging_warning(&self) -> Option<String> {
        let count = self.listed();
        self.stopped.as_ref().map(|stop| match stop {
            PagingStop::Limit => format!(
                "tools/list stopped after {MAX_PAGES} pages ({count} tools); the server has \
                 more, which are not published"
            ),
            PagingStop::RepeatedCursor(cursor) => {
                let shown: String = cursor.chars().take(40).collect();
                format!(
                    "tools/list stopped: the server repeated the cursor {shown:?} (it would page \
                     forever); the {count} tools read until then are the ones published"
                )
            }
        })
    }
}

/// Why connecting failed, with what the server wrote to stderr meanwhile (stdio).
#[derive(Debug)]
pub struct ConnectError {
    pub error: UpstreamError,
    pub warnings: Vec<String>,
    /// The server's recent stderr, when it is a child that wrote some.
    pub stderr: Option<String>,
}

impl ConnectError {
    /// The failure for a report or a server's state: the error, and the recent stderr when
    /// the error does not already carry it.
    pub fn reason(&self) -> String {
        let mut reason = format!("initialize failed: {}", self.error);
        let has_stderr = matches!(
            self.error,
            UpstreamError::Timeout { .. } | UpstreamError::Closed { .. }
        );
        if let (false, Some(stderr)) = (has_stderr, &self.stderr) {
            reason.push_str(&format!("; recent stderr: {stderr}"));
        }
        reason
    }
}

impl Client {
    /// Starts or reaches the server and completes the handshake.
    pub fn connect(config: &ServerConfig) -> Result<Self, Box<ConnectError>> {
        let notices = Arc::new(Notices::default());
        let failed = |error: UpstreamError, notices: &Notices| {
            Box::new(ConnectError {
                error,
                warnings: notices.warnings(),
                stderr: None,
            })
        };
        let link = match &config.transport {
            Transport::Stdio {
                command,
                args,
                env,
                inherit,
                cwd,
            } => {
                let mut spec = Spec::new(command).args(args);
                spec.cwd.clone_from(cwd);
                spec.inherit = inherit.clone();
                spec.env = env
                    .iter()
                    .map(|(k, v)| (OsString::from(k), OsString::from(v)))
                    .collect();
                Link::Stdio(
                    StdioTransport::start(&spec, Arc::clone(&notices))
                        .map_err(|e| failed(e, &notices))?,
                )
            }
            Transport::Http { url, headers } => {
                let headers: Vec<(String, String)> = headers
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                Link::Http(
                    HttpTransport::new(url, &headers, Arc::clone(&notices))
                        .map_err(|e| failed(e, &notices))?,
                )
            }
            Transport::Sse { url, headers } => {
                let headers: Vec<(String, String)> = headers
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                Link::Sse(
                    SseTransport::open(url, &headers, Arc::clone(&notices))
                        .map_err(|e| failed(e, &notices))?,
                )
            }
        };
        let mut client = Self {
            link,
            timeout: config.request_timeout,
            notices,
            server_info: None,
            version: String::new(),
            modern: false,
            capabilities: Value::Null,
        };
        match client.handshake() {
            Ok(()) => Ok(client),
            Err(error) => Err(Box::new(ConnectError {
                error,
                warnings: client.notices.warnings(),
                stderr: client.stderr_excerpt(),
            })),
        }
    }

    fn handshake(&mut self) -> Result<(), UpstreamError> {
        if !matches!(self.link, Link::Sse(_)) && self.discover() {
            return Ok(());
        }
        let params = json!({
            "protocolVersion": PREFERRED_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "coremcp", "title": "Core MCP",
                           "version": env!("CARGO_PKG_VERSION")}
        });
        let result = self.request("initialize", params, HANDSHAKE, &NEVER)?;
        let version = result
            .get("protocolVersion")
            .and_then(Value::as_str)
            .unwrap_or("(none)");
        if !SUPPORTED_VERSIONS.contains(&version) {
            return Err(UpstreamError::Protocol(format!(
                "the server answered initialize with protocol version {version}, which Core \
                 MCP does not speak ({})",
                SUPPORTED_VERSIONS.join(", ")
            )));
        }
        self.version = version.to_owned();
        self.capabilities = result["capabilities"].clone();
        let info = &result["serverInfo"];
        self.server_info = info["name"]
            .as_str()
            .map(|name| match info["version"].as_str() {
                Some(v) => format!("{name} {v}"),
                None => name.to_owned(),
            });
        match &self.link {
            Link::Stdio(t) => t.notify("notifications/initialized", None),
            Link::Http(t) => t.notify("notifications/initialized", None),
            Link::Sse(t) => t.notify("notifications/initialized", None),
        }
    }

    /// Probes `server/discover` at 2026-07-28; true when the server speaks it (and from now
    /// on we do too).
    fn discover(&mut self) -> bool {
        if let Link::Http(t) = &self.link {
            t.set_modern(Some(MODERN));
        }
        self.modern = true;
        let answer = self.request(coremcp_wire::modern::DISCOVER, json!({}), PROBE, &NEVER);
        let modern = answer
            .as_ref()
            .is_ok_and(coremcp_wire::modern::offers_modern);
        if !modern {
            self.modern = false;
            if let Link::Http(t) = &self.link {
                t.set_modern(None);
            }
            if let Err(e) = answer {
                tracing::debug!("server/discover probe: {e}; falling back to initialize");
            }
            return false;
        }
        let result = answer.unwrap_or_default();
        self.version = MODERN.to_owned();
        self.capabilities = result["capabilities"].clone();
        let info = &result["_meta"][coremcp_wire::modern::SERVER_INFO_KEY];
        self.server_info = info["name"]
            .as_str()
            .map(|name| match info["version"].as_str() {
                Some(v) => format!("{name} {v}"),
                None => name.to_owned(),
            });
        if let Link::Stdio(t) = &self.link {
            // `list_changed` comes on a subscription in 2026; the answer only ends it.
            let id = t.next_id();
            let filter = json!({"notifications": {"toolsListChanged": true,
                "promptsListChanged": true, "resourcesListChanged": true}});
            let params = with_envelope(filter, None);
            let params = params.to_string();
            let _ = t.send_detached(id, "subscriptions/listen", &params, Box::new(|_| {}));
        }
        true
    }

    /// Whether the server speaks 2026-07-28 with us.
    pub fn is_modern(&self) -> bool {
        self.modern
    }

    /// Asks whether the server is there: `ping`, or `server/discover` in 2026 (no ping).
    pub fn ping(&self, timeout: Duration) -> Result<Value, UpstreamError> {
        match self.modern {
            true => self.request(coremcp_wire::modern::DISCOVER, json!({}), timeout, &NEVER),
            false => self.request("ping", json!({}), timeout, &NEVER),
        }
    }

    /// Sends a request and waits up to `timeout` for its result, or until `cancel` is set.
    /// Safe to call from many threads at once; requests run in parallel. To a 2026 server the
    /// request carries the `_meta` envelope (keys the caller set in `params._meta` kept).
    pub fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
        cancel: &AtomicBool,
    ) -> Result<Value, UpstreamError> {
        let result = self.send(method, self.outgoing(params), timeout, cancel)?;
        Ok(self.incoming(result))
    }

    /// `params` as this server takes them: with the 2026 envelope when it speaks 2026.
    fn outgoing(&self, params: Value) -> Value {
        match self.modern {
            true => with_envelope(params, None),
            false => params,
        }
    }

    /// A result as our clients take it: without what a 2026 server adds for its own clients
    /// (an `input_required` result keeps its `resultType`).
    pub fn incoming(&self, mut result: Value) -> Value {
        if !self.modern {
            return result;
        }
        if let Some(object) = result.as_object_mut() {
            if object.get("resultType").and_then(Value::as_str) == Some("complete") {
                object.remove("resultType");
            }
            object.remove("ttlMs");
            object.remove("cacheScope");
        }
        result
    }

    fn send(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
        cancel: &AtomicBool,
    ) -> Result<Value, UpstreamError> {
        self.send_shaped(method, params, timeout, cancel, None)
    }

    /// Sends a request whose result is read through `shape`.
    fn send_shaped(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
        cancel: &AtomicBool,
        shape: Option<super::shape::Shape>,
    ) -> Result<Value, UpstreamError> {
        match &self.link {
            Link::Stdio(t) => t.request_shaped(method, params, timeout, cancel, shape),
            Link::Http(t) => t.request_shaped(method, params, timeout, cancel, shape),
            Link::Sse(t) => t.request_shaped(method, params, timeout, cancel, shape),
        }
    }

    /// The stdio transport, which can also send a request without waiting for it
    /// ([`StdioTransport::send_detached`]).
    pub fn stdio(&self) -> Option<&StdioTransport> {
        match &self.link {
            Link::Stdio(t) => Some(t),
            Link::Http(_) | Link::Sse(_) => None,
        }
    }

    /// Whether the connection is known to be gone: a stdio server that exited, or a legacy
    /// SSE stream that ended. (A Streamable HTTP server is only found gone by a request.)
    pub fn is_closed(&self) -> bool {
        match &self.link {
            Link::Stdio(t) => t.is_closed(),
            Link::Sse(t) => t.is_closed(),
            Link::Http(_) => false,
        }
    }

    /// The server's per-request timeout (`requestTimeoutMs`, default 30 s).
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The tools the server lists, following `nextCursor` up to [`MAX_PAGES`] pages: the
    /// first `keep` kept, the rest only counted.
    pub(crate) fn list_tools(&self, keep: usize) -> Result<ToolList, UpstreamError> {
        self.list_paged("tools/list", "tools", keep)
    }

    /// Takes note of the tools the server listed (a 2026 call over HTTP mirrors some of its
    /// arguments in headers, as the tool's schema asks).
    pub(crate) fn note_tools(&self, tools: &[Value]) {
        if let Link::Http(t) = &self.link {
            t.note_tools(tools);
        }
    }

    /// Whether the server declared capability `name` (`prompts`, `resources`, `completions`).
    pub fn declares(&self, name: &str) -> bool {
        self.capabilities.get(name).is_some_and(Value::is_object)
    }

    /// The items of a paged list (`prompts/list` → `prompts`, …), as [`Client::list_tools`]:
    /// the first `keep` kept, the rest only counted (a server listing 100 000 costs one page's
    /// parse at a time, never all of them).
    pub(crate) fn list_paged(
        &self,
        method: &str,
        key: &str,
        keep: usize,
    ) -> Result<ToolList, UpstreamError> {
        let mut list = ToolList::default();
        let mut cursor: Option<String> = None;
        let mut seen: Vec<String> = Vec::new();
        for page in 1..=MAX_PAGES {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            // Read as a stream: only the items there is room for become values.
            let room = keep.saturating_sub(list.tools.len());
            let shape = super::shape::list_page(key, room);
            let params = self.outgoing(params);
            let result = self.send_shaped(method, params, self.timeout, &NEVER, Some(shape))?;
            let mut result = self.incoming(result);
            let Some(Value::Array(tools)) = result.get_mut(key).map(Value::take) else {
                return Err(UpstreamError::Protocol(format!(
                    "{method} answered without a {key} array"
                )));
            };
            let counted = result[super::shape::UNREAD].as_u64().unwrap_or(0) as usize;
            list.unread += counted + tools.len().saturating_sub(room);
            list.tools.extend(tools.into_iter().take(room));
            cursor = result
                .get("nextCursor")
                .and_then(Value::as_str)
                .filter(|c| !c.is_empty())
                .map(str::to_owned);
            let Some(next) = &cursor else {
                return Ok(list);
            };
            if seen.contains(next) {
                list.stopped = Some(PagingStop::RepeatedCursor(next.clone()));
                return Ok(list);
            }
            seen.push(next.clone());
            if page == MAX_PAGES {
                list.stopped = Some(PagingStop::Limit);
            }
        }
        Ok(list)
    }

    /// Whether the server sent `notifications/tools/list_changed` since the last look.
    pub(crate) fn take_list_changed(&self) -> bool {
        self.notices.take_list_changed()
    }

    /// What the connection noticed besides answers (discarded lines, ignored messages).
    pub fn warnings(&self) -> Vec<String> {
        self.notices.warnings()
    }

    /// Why a closed connection ended: a stdio server's exit status and recent stderr.
    pub(crate) fn exit_reason(&self) -> String {
        match &self.link {
            Link::Stdio(t) => t.exit_reason(),
            Link::Sse(_) => "the server ended its event stream".to_owned(),
            Link::Http(_) => "the connection was lost".to_owned(),
        }
    }

    /// The server's recent stderr (stdio only).
    pub(crate) fn stderr_excerpt(&self) -> Option<String> {
        match &self.link {
            Link::Stdio(t) => t.stderr_excerpt(),
            Link::Http(_) | Link::Sse(_) => None,
        }
    }
}
